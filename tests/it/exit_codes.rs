//! `crosswheel build` exits as cibuildwheel does (its `errors.py`), so CI scripts that branch
//! on the code work unchanged: 2 a configuration error, 3 nothing to build, 6 a wheel name
//! built twice in one run, 8 a repair command that left no wheel.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::crosswheel_bin;

fn build(project: &Path, args: &[&str]) -> Output {
    Command::new(crosswheel_bin())
        .arg("build")
        .arg(project)
        .args(args)
        .env("TERM", "dumb")
        .env_remove("CIBW_BUILD")
        .env_remove("CIBW_SKIP")
        .output()
        .unwrap()
}

fn all_output(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A one-file C extension project whose `[tool.crosswheel]` table is `table`.
fn project(table: &str) -> tempfile::TempDir {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(
        project.path().join("pyproject.toml"),
        format!(
            "[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"setuptools.build_meta\"\n\
             [project]\nname = \"spam\"\nversion = \"0.1\"\n[tool.crosswheel]\n{table}"
        ),
    )
    .unwrap();
    std::fs::write(
        project.path().join("setup.py"),
        "from setuptools import setup, Extension\nsetup(ext_modules=[Extension(\"spam\", [\"spam.c\"])])\n",
    )
    .unwrap();
    std::fs::write(
        project.path().join("spam.c"),
        "#include <Python.h>\nstatic struct PyModuleDef m = {PyModuleDef_HEAD_INIT, \"spam\"};\n\
         PyMODINIT_FUNC PyInit_spam(void) { return PyModuleDef_Init(&m); }\n",
    )
    .unwrap();
    project
}

#[test]
fn a_configuration_error_exits_with_2() {
    let project = project("test-timeout = \"soon\"\n");
    let output = build(project.path(), &[]);
    assert_eq!(output.status.code(), Some(2), "{}", all_output(&output));
}

#[test]
fn nothing_to_build_exits_with_3() {
    let project = project("build = \"cp27-*\"\n");
    let output = build(project.path(), &[]);
    assert_eq!(output.status.code(), Some(3), "{}", all_output(&output));
}

/// cibuildwheel's test_custom_repair_wheel: a repair command that gives two builds' wheels
/// one name. The first lands; the second is refused, never written over the first.
#[test]
#[ignore = "slow: two real zig builds"]
fn a_wheel_name_built_twice_in_one_run_exits_with_6_and_keeps_the_first() {
    let project = project(
        "archs = [\"manylinux_aarch64\"]\nbuild = [\"cp311-*\", \"cp313-*\"]\ntest-command = \"\"\n\
         repair-wheel-command = \"cp {wheel} {dest_dir}/spam-0.1-cp311-cp311-linux_aarch64.whl\"\n",
    );
    let output = build(project.path(), &["--jobs", "1"]);
    let text = all_output(&output);
    assert_eq!(output.status.code(), Some(6), "{text}");
    assert!(
        text.contains(
            "a wheel named spam-0.1-cp311-cp311-linux_aarch64.whl was already generated in this run"
        ),
        "{text}"
    );
    let kept = project
        .path()
        .join("wheelhouse/spam-0.1-cp311-cp311-linux_aarch64.whl");
    let wheel = std::fs::read(&kept).expect("the first wheel is in the wheelhouse");
    // The cp311 build made it (the cp312 one would carry cpython-312 in its module name).
    assert!(
        wheel
            .windows(b"cpython-311".len())
            .any(|w| w == b"cpython-311"),
        "the wheelhouse holds the second build's wheel"
    );
}

#[test]
#[ignore = "slow: a real zig build"]
fn a_repair_command_that_leaves_no_wheel_exits_with_8() {
    let project = project(
        "archs = [\"manylinux_aarch64\"]\nbuild = \"cp311-*\"\ntest-command = \"\"\nrepair-wheel-command = \"true\"\n",
    );
    let output = build(project.path(), &[]);
    let text = all_output(&output);
    assert_eq!(output.status.code(), Some(8), "{text}");
    assert!(
        text.contains("repair-wheel-command left no wheel"),
        "{text}"
    );
}

/// `--version`, `--help` and a usage error print clap's text and exit with its status (0, 0,
/// 2), and leave no run folder in the temporary directory: compat's header asks
/// `crosswheel --version` once per run.
#[test]
fn version_help_and_usage_errors_leave_no_run_folder() {
    let tmp = tempfile::tempdir().unwrap();
    for (args, code, text) in [
        (&["--version"][..], 0, "crosswheel "),
        (&["--help"][..], 0, "Usage:"),
        (&["build", "--no-such-option"][..], 2, "--no-such-option"),
    ] {
        let output = Command::new(crosswheel_bin())
            .args(args)
            .env("TMPDIR", tmp.path())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(code), "{args:?}");
        assert!(
            all_output(&output).contains(text),
            "{args:?}: {}",
            all_output(&output)
        );
        let left: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(left.is_empty(), "{args:?} left {left:?}");
    }
}
