//! A three-project slice of the compatibility corpus (scripts/compat, tests/compat/projects.toml):
//! real sdists, pinned by sha256, built by the crosswheel binary of this test run for every
//! target, repaired, and tested with each project's own suite under qemu (Linux) or checked
//! statically (macOS). Every cell must come out green, and the report must say so.
//!
//! The slice is the corpus's cheapest projects: a small C extension (markupsafe), a larger
//! endianness-sensitive one with a self-test (bitarray), and one compiling a bundled C
//! library (xxhash); and numpy for one Linux target, the project crosswheel exists for. The
//! full corpus runs outside the test suite: `scripts/compat`.
//!
//! Needs python3 (3.11 or newer, for tomllib) and network access on the first run (the
//! sdists, build and test requirements); later runs use the caches.

use crate::common;

use std::path::Path;
use std::process::Command;

const PROJECTS: [&str; 3] = ["markupsafe", "bitarray", "xxhash"];
const TARGETS: [&str; 3] = ["linux-aarch64", "linux-ppc64le", "macos-arm64"];

#[test]
#[ignore = "slow: builds real projects from the package index, tests them under qemu"]
fn the_cheapest_corpus_projects_build_and_pass_their_own_tests_on_every_target() {
    let report_dir = tempfile::tempdir().expect("a temporary folder");
    let report = report_dir.path().join("COMPATIBILITY.md");
    let stdout = run_compat(&PROJECTS, &TARGETS, None, &report);

    // One line per cell on stdout: `compat: <project> <target> <status> <passed>/<total> ...`.
    for project in PROJECTS {
        for target in TARGETS {
            let prefix = format!("compat: {project} {target} green");
            let line = stdout
                .lines()
                .find(|line| line.starts_with(&prefix))
                .unwrap_or_else(|| panic!("no green line for {project} on {target}:\n{stdout}"));
            if target.starts_with("linux-") {
                let (passed, total) = test_counts(line);
                assert!(
                    total > 0 && passed == total,
                    "{project} on {target} must run its tests under qemu and pass them all: {line}"
                );
            }
        }
    }

    let text = std::fs::read_to_string(&report).expect("scripts/compat wrote its report");
    assert!(
        text.contains("9 green, 9 built"),
        "the report's counts:\n{text}"
    );
    assert!(text.contains("Every cell is green."), "{text}");
}

/// numpy 2.4.6 from its sdist (pinned by sha256 in tests/compat/projects.toml) with its own
/// `[tool.cibuildwheel]` configuration: its before-build installs the target's OpenBLAS,
/// meson builds with the zig wrappers, the repair vendors OpenBLAS and checks every symbol,
/// and under qemu the wheel must report scipy-openblas, compile in the SIMD baseline and
/// dispatch targets of the index's wheel, compute, and pass numpy's fft and linalg
/// regression tests. About 30 minutes on 2 cores; the other targets run in scripts/compat.
#[test]
#[ignore = "slow: builds numpy from its sdist (~30 min on 2 cores), tests it under qemu"]
fn numpy_builds_from_its_own_configuration_for_linux_aarch64_and_passes_under_qemu() {
    let report_dir = tempfile::tempdir().expect("a temporary folder");
    let report = report_dir.path().join("COMPATIBILITY.md");
    let stdout = run_compat(&["numpy"], &["linux-aarch64"], Some(3600), &report);
    let line = stdout
        .lines()
        .find(|line| line.starts_with("compat: numpy linux-aarch64 green"))
        .unwrap_or_else(|| panic!("numpy on linux-aarch64 is not green:\n{stdout}"));
    let (passed, total) = test_counts(line);
    assert!(
        total > 100 && passed == total,
        "numpy's fft and linalg regression tests must run under qemu and pass: {line}"
    );
    assert!(
        line.contains("manylinux_2_17_aarch64"),
        "numpy's wheel is tagged from its symbols, glibc 2.17 as built: {line}"
    );
}

/// Runs scripts/compat on `projects` x `targets` with this run's crosswheel, writing the
/// report to `report`; its stdout (one `compat: <project> <target> <status> ...` line per
/// cell) once every cell is green.
fn run_compat(projects: &[&str], targets: &[&str], timeout: Option<u32>, report: &Path) -> String {
    let python = common::require_tool("python3", "apt-get install python3");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/compat");
    let mut command = Command::new(python);
    command
        .arg(&script)
        .args(["--only", &projects.join(",")])
        .args(["--targets", &targets.join(",")])
        .arg("--crosswheel")
        .arg(common::crosswheel_bin())
        .arg("--report")
        .arg(report)
        .arg("--no-reference");
    if let Some(seconds) = timeout {
        command.args(["--cell-timeout", &seconds.to_string()]);
    }
    let output = command.output().expect("scripts/compat runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "scripts/compat reported cells that are not green:\n{stdout}\n{stderr}"
    );
    stdout
}

/// `passed/total` from a cell line such as `compat: bitarray linux-aarch64 green 612/612 41s ...`.
fn test_counts(line: &str) -> (u32, u32) {
    let field = line
        .split_whitespace()
        .nth(4)
        .unwrap_or_else(|| panic!("no test count in `{line}`"));
    let (passed, total) = field
        .split_once('/')
        .unwrap_or_else(|| panic!("`{field}` is not passed/total in `{line}`"));
    (passed.parse().unwrap(), total.parse().unwrap())
}
