//! Several CPython versions through the whole pipeline: the build runs on the host's
//! CPython of the identifier's version and the test stage on the target CPython of the
//! same version — 3.13 from Debian 13 — while a version with no target CPython (3.12)
//! fails with a hint, or is built untested when `test-skip` says so.
//!
//! Ignored by default: they need host CPythons 3.12 and 3.13 (`python3.X` on PATH,
//! from `uv python find` or among pyenv's versions), which a machine with only its
//! system Python lacks. Run them with
//! `cargo test --release --test pipeline_versions -- --ignored`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::crosswheel_bin;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mesonproj")
}

fn build(out: &Path, identifier: &str, env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(crosswheel_bin());
    command
        .arg("build")
        .arg(example())
        .arg("-w")
        .arg(out)
        .args(["--only", identifier]);
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("run crosswheel build")
}

fn summary_row<'a>(stdout: &'a str, identifier: &str) -> &'a str {
    stdout
        .lines()
        .find(|line| line.starts_with(identifier))
        .unwrap_or_else(|| panic!("no summary row for {identifier}:\n{stdout}"))
}

#[test]
#[ignore = "needs a host CPython 3.13 (python3.13 on PATH, uv or pyenv)"]
fn a_cp313_wheel_is_built_with_cpython_313_and_tested_on_debian_13s() {
    let out = tempfile::tempdir().expect("tempdir");
    let output = build(out.path(), "cp313-manylinux_aarch64", &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        summary_row(&stdout, "cp313-manylinux_aarch64").contains("passed (emulated)"),
        "{stdout}"
    );
    assert!(
        out.path()
            .join("mesonproj-0.1.0-cp313-cp313-manylinux_2_17_aarch64.manylinux2014_aarch64.whl")
            .is_file()
    );
    assert!(
        stderr.lines().any(|line| line.contains("3 passed in ")),
        "{stderr}"
    );
}

#[test]
#[ignore = "needs a host CPython 3.12 (python3.12 on PATH, uv or pyenv)"]
fn a_version_without_a_target_cpython_fails_with_a_hint_unless_its_tests_are_skipped() {
    let out = tempfile::tempdir().expect("tempdir");
    let output = build(out.path(), "cp312-manylinux_aarch64", &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success(), "{stdout}");
    assert!(stdout.contains("no aarch64 CPython 3.12"), "{stdout}");
    assert!(stdout.contains("add it to `test-skip`"), "{stdout}");
    let wheels = std::fs::read_dir(out.path())
        .map(|dir| {
            dir.filter_map(Result::ok)
                .filter(|e| e.path().extension().is_some_and(|x| x == "whl"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(wheels, 0, "an untested wheel reached the wheelhouse");

    let output = build(
        out.path(),
        "cp312-manylinux_aarch64",
        &[("CROSSWHEEL_TEST_SKIP", "cp312-*")],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(
        summary_row(&stdout, "cp312-manylinux_aarch64").contains("not run"),
        "{stdout}"
    );
}
