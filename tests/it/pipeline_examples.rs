//! The meson-python and scikit-build-core examples go through the whole
//! pipeline like blasdot: cross-built with zig, repaired, then installed into a
//! real target CPython under qemu-user where their own pytest suites run.
//! Only wheels whose suites passed reach the wheelhouse.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::crosswheel_bin;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
}

/// Runs `crosswheel build` for the Linux identifiers of one example and returns
/// the wheel names in the wheelhouse and the run's stdout and stderr.
fn build_linux_wheels(name: &str) -> (Vec<String>, String, String) {
    let out = tempfile::tempdir().expect("tempdir");
    let output = Command::new(crosswheel_bin())
        .arg("build")
        .arg(example(name))
        .arg("-w")
        .arg(out.path())
        .args(["--archs", "aarch64 ppc64le"])
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .expect("run crosswheel build");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "build of {name} failed:\n{stdout}\n{stderr}"
    );
    (common::wheel_names_in(out.path()), stdout, stderr)
}

fn assert_suites_ran_under_emulation(stdout: &str, stderr: &str, tests: usize) {
    for identifier in ["cp311-manylinux_aarch64", "cp311-manylinux_ppc64le"] {
        let row = stdout
            .lines()
            .find(|line| line.starts_with(identifier))
            .unwrap_or_else(|| panic!("no summary row for {identifier}:\n{stdout}"));
        assert!(row.contains("passed (emulated)"), "{row}");
    }
    // pytest's own report, streamed from the emulated interpreter: the suites
    // really ran, every test of each suite, once per architecture.
    let pytest_results: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains(" passed in "))
        .collect();
    assert_eq!(
        pytest_results.len(),
        2,
        "pytest's result lines missing:\n{stderr}"
    );
    assert!(
        pytest_results
            .iter()
            .all(|line| line.contains(&format!("{tests} passed"))),
        "{pytest_results:?}"
    );
}

#[test]
#[ignore = "slow: the whole pipeline on the examples (zig, qemu)"]
fn meson_python_example_passes_its_suite_on_aarch64_and_ppc64le() {
    let (wheels, stdout, stderr) = build_linux_wheels("mesonproj");
    assert_eq!(
        wheels,
        [
            "mesonproj-0.1.0-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
            "mesonproj-0.1.0-cp311-cp311-manylinux_2_17_ppc64le.manylinux2014_ppc64le.whl",
        ]
    );
    assert_suites_ran_under_emulation(&stdout, &stderr, 4);
}

#[test]
#[ignore = "slow: the whole pipeline on the examples (zig, qemu)"]
fn scikit_build_core_example_passes_its_suite_on_aarch64_and_ppc64le() {
    let (wheels, stdout, stderr) = build_linux_wheels("cmakeproj");
    assert_eq!(
        wheels,
        [
            "cmakeproj-0.1.0-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
            "cmakeproj-0.1.0-cp311-cp311-manylinux_2_17_ppc64le.manylinux2014_ppc64le.whl",
        ]
    );
    assert_suites_ran_under_emulation(&stdout, &stderr, 3);
}
