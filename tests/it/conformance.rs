//! cibuildwheel's own integration tests with crosswheel standing in for cibuildwheel
//! (scripts/conformance, CONFORMANCE.md): the `quick` subset of tests/conformance/subsets.toml,
//! the applicable tests that take under a minute each here, on Linux (aarch64 and ppc64le,
//! tested under qemu) and macOS arm64 (the static check). Each must pass, and the report
//! must say so. The whole suite runs outside the test suite: `scripts/conformance`.
//!
//! Needs python3 (3.11 or newer, for tomllib) and network access on the first run
//! (cibuildwheel's sdist, pinned by sha256, and the hash-pinned test venv).

use crate::common;

use std::path::Path;
use std::process::Command;

fn quick_subset() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/subsets.toml");
    let text = std::fs::read_to_string(&path).expect("tests/conformance/subsets.toml");
    let subsets: toml::Table = text.parse().expect("subsets.toml is TOML");
    subsets["quick"]["tests"]
        .as_array()
        .expect("quick.tests is an array")
        .iter()
        .map(|test| test.as_str().expect("a node id").to_string())
        .collect()
}

#[test]
#[ignore = "slow: cibuildwheel's sdist and a venv from the package index, zig builds, qemu tests"]
fn cibuildwheels_quick_integration_tests_pass_with_crosswheel_in_its_place() {
    let python = common::require_tool("python3", "apt-get install python3");
    let report_dir = tempfile::tempdir().expect("a temporary folder");
    let report = report_dir.path().join("CONFORMANCE.md");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/conformance");
    let output = Command::new(python)
        .arg(&script)
        .args(["--subset", "quick", "--platforms", "linux,macos"])
        .arg("--crosswheel")
        .arg(common::crosswheel_bin())
        .arg("--report")
        .arg(&report)
        .output()
        .expect("scripts/conformance runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "a quick conformance test failed:\n{stdout}\n{stderr}"
    );
    let text = std::fs::read_to_string(&report).expect("the report was written");
    for test in quick_subset() {
        // A test's row, or its parametrized variants' (`test[pip]`).
        let rows: Vec<&str> = text
            .lines()
            .filter(|line| {
                line.starts_with(&format!("| `{test}`")) || line.starts_with(&format!("| `{test}["))
            })
            .collect();
        assert!(
            !rows.is_empty(),
            "the report has no row for {test}:\n{text}"
        );
        for row in rows {
            assert!(
                row.contains("| passed |") || row.contains("| not applicable |"),
                "{row}"
            );
        }
    }
}
