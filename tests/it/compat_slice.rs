//! A three-project slice of the compatibility corpus (scripts/compat, tests/compat/projects.toml):
//! real sdists, pinned by sha256, built by the crosswheel binary of this test run for every
//! target, repaired, and tested with each project's own suite under qemu (Linux) or checked
//! statically (macOS). Every cell must come out green, and the report must say so.
//!
//! The slice is the corpus's cheapest projects: a small C extension (markupsafe), a larger
//! endianness-sensitive one with a self-test (bitarray), and one compiling a bundled C
//! library (xxhash). The full corpus runs outside the test suite: `scripts/compat`.
//!
//! Needs python3 (3.11 or newer, for tomllib) and network access on the first run (the
//! sdists, build and test requirements); later runs use the caches.

use crate::common;

const PROJECTS: [&str; 3] = ["markupsafe", "bitarray", "xxhash"];
const TARGETS: [&str; 3] = ["linux-aarch64", "linux-ppc64le", "macos-arm64"];

#[test]
#[ignore = "slow: builds real projects from the package index, tests them under qemu"]
fn the_cheapest_corpus_projects_build_and_pass_their_own_tests_on_every_target() {
    let (output, report_text) = common::run_compat(&[
        "--only",
        &PROJECTS.join(","),
        "--targets",
        &TARGETS.join(","),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "scripts/compat reported cells that are not green:\n{stdout}\n{stderr}"
    );

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

    let text = report_text;
    assert!(
        text.contains("9 green, 9 built"),
        "the report's counts:\n{text}"
    );
    assert!(text.contains("Every cell is green."), "{text}");
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
