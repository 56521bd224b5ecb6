//! A target's preparation (its catalogue libraries and `before-all`) fails for that target
//! alone: its builds fail at `prepare`, the other targets build, and the summary lists
//! every identifier. What `before-all` installs into /usr/local is the target's.

use crate::common;

use std::path::Path;
use std::process::Command;

#[test]
#[ignore = "slow: builds a C extension with zig for two Linux targets"]
fn a_failed_before_all_fails_its_targets_builds_and_no_other() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(
        project.path().join("pyproject.toml"),
        r#"[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "prepared"
version = "1.0"

[tool.crosswheel]
build = "cp311-manylinux_* cp312-manylinux_*"
archs = ["aarch64", "ppc64le"]
test-skip = "*"
# CROSSWHEEL_HOST is the target's GNU triple: only ppc64le's before-all fails.
before-all = 'test "$CROSSWHEEL_HOST" != powerpc64le-linux-gnu'
"#,
    )
    .unwrap();
    std::fs::write(
        project.path().join("setup.py"),
        "from setuptools import Extension, setup\nsetup(ext_modules=[Extension('prepared', ['prepared.c'])])\n",
    )
    .unwrap();
    std::fs::write(
        project.path().join("prepared.c"),
        "#include <Python.h>\nstatic struct PyModuleDef m = {PyModuleDef_HEAD_INIT, \"prepared\"};\nPyMODINIT_FUNC PyInit_prepared(void) { return PyModule_Create(&m); }\n",
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(common::crosswheel_bin())
        .arg("build")
        .arg(project.path())
        .arg("-w")
        .arg(out.path())
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .expect("run crosswheel build");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    let wheels = common::wheel_names_in(out.path());
    assert_eq!(wheels.len(), 2, "{wheels:?}\n{stdout}\n{stderr}");
    assert!(
        wheels.iter().all(|wheel| wheel.contains("aarch64")),
        "{wheels:?}"
    );
    for identifier in [
        "cp311-manylinux_aarch64",
        "cp311-manylinux_ppc64le",
        "cp312-manylinux_aarch64",
        "cp312-manylinux_ppc64le",
    ] {
        assert!(
            stdout.contains(identifier),
            "the summary lists {identifier}:\n{stdout}\n{stderr}"
        );
    }
    let all = format!("{stdout}\n{stderr}");
    assert_eq!(
        all.matches("preparing linux-ppc64le for its builds")
            .count(),
        1,
        "the cause, naming the target it stopped, is printed once:\n{all}"
    );
    assert!(
        all.contains(
            "linux-ppc64le could not be prepared (the cause is on cp311-manylinux_ppc64le's line)"
        ),
        "the second build of the target points to the first one's line:\n{all}"
    );
}

/// A `before-all` that installs a library into /usr/local, as a project's script does in a
/// cibuildwheel container: the build finds it and the wheel vendors it, and the build
/// machine's /usr/local is untouched (as root, crosswheel gives the command a private one).
#[test]
#[ignore = "slow: builds a C extension with zig and tests it under qemu"]
fn a_library_before_all_installs_into_usr_local_is_the_targets_not_the_build_machines() {
    let installed = Path::new("/usr/local/lib/libcwlocal.so");
    assert!(
        !installed.exists(),
        "{} exists before the run, so this test cannot tell where the run installed",
        installed.display()
    );
    let project = tempfile::tempdir().unwrap();
    std::fs::write(
        project.path().join("pyproject.toml"),
        r#"[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "localdep"
version = "1.0"

[tool.crosswheel]
build = "cp311-manylinux_aarch64"
before-all = """
mkdir -p /usr/local/include /usr/local/lib &&
printf 'int cwlocal_answer(void) { return 42; }\n' > "${TMPDIR:-/tmp}/cwlocal.c" &&
$CC -shared -fPIC -o /usr/local/lib/libcwlocal.so "${TMPDIR:-/tmp}/cwlocal.c" &&
printf 'int cwlocal_answer(void);\n' > /usr/local/include/cwlocal.h
"""
test-command = "python -c \"import localdep; assert localdep.answer() == 42\""
"#,
    )
    .unwrap();
    std::fs::write(
        project.path().join("setup.py"),
        "from setuptools import Extension, setup\n\
         setup(ext_modules=[Extension('localdep', ['localdep.c'], libraries=['cwlocal'])])\n",
    )
    .unwrap();
    std::fs::write(
        project.path().join("localdep.c"),
        "#include <Python.h>\n#include <cwlocal.h>\n\
         static PyObject *answer(PyObject *self, PyObject *args) { return PyLong_FromLong(cwlocal_answer()); }\n\
         static PyMethodDef methods[] = {{\"answer\", answer, METH_NOARGS, NULL}, {NULL}};\n\
         static struct PyModuleDef m = {PyModuleDef_HEAD_INIT, \"localdep\", NULL, -1, methods};\n\
         PyMODINIT_FUNC PyInit_localdep(void) { return PyModule_Create(&m); }\n",
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(common::crosswheel_bin())
        .arg("build")
        .arg(project.path())
        .arg("-w")
        .arg(out.path())
        .output()
        .expect("run crosswheel build");
    let all = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        !installed.exists(),
        "before-all wrote into the build machine's /usr/local:\n{all}"
    );
    assert!(output.status.success(), "{all}");
    assert!(
        all.contains("before-all installed 2 files into its private /usr/local"),
        "{all}"
    );
    let wheels = common::wheel_names_in(out.path());
    assert_eq!(wheels.len(), 1, "{wheels:?}\n{all}");
    let wheel = std::fs::File::open(out.path().join(&wheels[0])).unwrap();
    let archive = zip::ZipArchive::new(wheel).unwrap();
    let names: Vec<String> = archive
        .file_names()
        .map(|name| name.unwrap().into_owned())
        .collect();
    assert!(
        names.iter().any(|name| name.contains("libcwlocal")),
        "the wheel vendors the library before-all built: {names:?}"
    );
}
