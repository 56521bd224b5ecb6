//! A target's preparation (its catalogue libraries and `before-all`) fails for that target
//! alone: its builds fail at `prepare`, the other targets build, and the summary lists
//! every identifier.

use crate::common;

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
