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
