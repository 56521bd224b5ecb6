//! A build that needs numpy's C API compiles against the target's numpy headers without
//! the user listing numpy in `target-requires`: the build machine's numpy describes an
//! x86_64 Linux machine (its `npy_endian.h` includes `<endian.h>`, which macOS lacks).
//! Needs zig and network access on the first run (numpy for the host and the target).

use crate::common;

use std::path::Path;

/// A setuptools project using numpy's C API the way most do: `numpy.get_include()`.
fn numpy_c_api_project(dir: &Path) {
    std::fs::create_dir_all(dir.join("npext")).unwrap();
    std::fs::write(dir.join("npext/__init__.py"), "").unwrap();
    std::fs::write(
        dir.join("npext/_npext.c"),
        r#"#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

static PyObject *zeros(PyObject *self, PyObject *arg) {
    npy_intp n = PyLong_AsSsize_t(arg);
    if (n < 0 && PyErr_Occurred()) return NULL;
    return PyArray_ZEROS(1, &n, NPY_DOUBLE, 0);
}

static PyMethodDef methods[] = {{"zeros", zeros, METH_O, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "npext._npext", NULL, -1, methods};

PyMODINIT_FUNC PyInit__npext(void) {
    import_array();
    return PyModule_Create(&module);
}
"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("pyproject.toml"),
        "[build-system]\nrequires = [\"setuptools>=61\", \"numpy>=2\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"npext\"\nversion = \"1.0\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("setup.py"),
        "import numpy\nfrom setuptools import Extension, setup\n\nsetup(packages=['npext'], ext_modules=[Extension('npext._npext', ['npext/_npext.c'], include_dirs=[numpy.get_include()])])\n",
    )
    .unwrap();
}

#[test]
#[ignore = "slow: a zig build against the target headers"]
fn a_numpy_c_api_extension_for_macos_compiles_against_the_target_numpy() {
    let python = common::distribution_python();
    let env = common::zig_cross_env(&python, "macos-arm64");
    let project = tempfile::tempdir().unwrap();
    numpy_c_api_project(project.path());
    let out = tempfile::tempdir().unwrap();
    let built = common::build_in(&env, &python, project.path(), out.path())
        .unwrap_or_else(|err| panic!("{err}"));
    assert!(
        built
            .path
            .to_string_lossy()
            .ends_with("-cp311-cp311-macosx_11_0_arm64.whl"),
        "{}",
        built.path.display()
    );
    // setuptools prints each compiler command: the -I it used is the target wheel's.
    let log = std::fs::read_to_string(&built.log).unwrap();
    let include = log
        .lines()
        .filter(|line| line.contains("_npext.c"))
        .flat_map(str::split_whitespace)
        .find(|arg| arg.starts_with("-I") && arg.contains("numpy"))
        .unwrap_or_else(|| panic!("no numpy include in the compile command:\n{log}"));
    assert!(
        include.contains("target-wheels") && include.contains("macos-arm64"),
        "{include}"
    );
}

/// The index has no ppc64le wheel of numpy at all. Its headers for ppc64le then come from
/// numpy built for ppc64le from its sdist by crosswheel's own pipeline (as a test
/// requirement is built, into the same cache), never from the build machine's x86_64
/// copy; the extension built against them imports and works under qemu with that numpy.
#[test]
#[ignore = "slow: numpy built for ppc64le from its sdist (about 10 min on 2 cores, once), zig, qemu"]
fn a_numpy_c_api_extension_for_ppc64le_compiles_against_numpy_built_for_ppc64le() {
    let project = tempfile::tempdir().unwrap();
    numpy_c_api_project(project.path());
    let pyproject = project.path().join("pyproject.toml");
    let mut text = std::fs::read_to_string(&pyproject).unwrap();
    text.push_str(
        "\n[tool.crosswheel]\ntest-requires = [\"numpy>=2\"]\ntest-command = \"python -c \\\"import npext._npext as m; assert m.zeros(3).tolist() == [0.0, 0.0, 0.0]\\\"\"\n",
    );
    std::fs::write(&pyproject, text).unwrap();
    let wheelhouse = tempfile::tempdir().unwrap();
    let output = crate::target_libraries::build(
        project.path(),
        "cp311-manylinux_ppc64le",
        wheelhouse.path(),
    );
    let text = crate::target_libraries::text_of(&output);
    assert!(output.status.success(), "{text}");
    assert!(
        // numpy at the release the build environment installed, as on every target.
        text.contains("the index has no linux-ppc64le wheel of numpy==")
            && text.contains("ppc64le.whl, built for linux-ppc64le from its sdist"),
        "{text}"
    );
    assert!(
        !text.contains("the build uses the build machine's"),
        "{text}"
    );
    // Offline, the numpy built here is in the cache: the same build, without the index.
    let offline = tempfile::tempdir().unwrap();
    let mut command = std::process::Command::new(common::crosswheel_bin());
    common::without_option_variables(&mut command);
    let output = command
        .arg("build")
        .arg(project.path())
        .args([
            "--only",
            "cp311-manylinux_ppc64le",
            "--require-tests",
            "--offline",
            "-w",
        ])
        .arg(offline.path())
        .output()
        .expect("crosswheel runs");
    let text = crate::target_libraries::text_of(&output);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("ppc64le.whl, built for linux-ppc64le from its sdist"),
        "{text}"
    );
}

/// The index has no musllinux ppc64le wheel of numpy, nor of the BLAS numpy's own
/// configuration links (scipy-openblas64). numpy is then built for musllinux ppc64le for
/// its headers alone, without a BLAS (`headers_only` in config/target-headers.toml), into a
/// cache of its own, and the extension compiles against it, never against the build
/// machine's x86_64 copy.
#[test]
#[ignore = "slow: numpy built for musllinux ppc64le from its sdist (about 10 min on 2 cores, once), zig"]
fn a_numpy_c_api_extension_for_musllinux_ppc64le_compiles_against_numpy_built_for_its_headers() {
    let project = tempfile::tempdir().unwrap();
    numpy_c_api_project(project.path());
    let wheelhouse = tempfile::tempdir().unwrap();
    let mut command = std::process::Command::new(common::crosswheel_bin());
    common::without_option_variables(&mut command);
    let output = command
        .arg("build")
        .arg(project.path())
        .args(["--only", "cp311-musllinux_ppc64le", "-w"])
        .arg(wheelhouse.path())
        .env("CROSSWHEEL_TEST_SKIP", "*")
        .output()
        .expect("crosswheel runs");
    let text = crate::target_libraries::text_of(&output);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("the index has no musllinux-ppc64le wheel of numpy==")
            && text.contains(
                "ppc64le.whl, built for musllinux-ppc64le from its sdist for its headers alone"
            ),
        "{text}"
    );
    assert!(
        !text.contains("the build uses the build machine's"),
        "{text}"
    );
    let wheels = common::wheel_names_in(wheelhouse.path());
    assert!(
        wheels
            .iter()
            .any(|name| name.contains("musllinux_1_2_ppc64le")),
        "{wheels:?}"
    );
}
