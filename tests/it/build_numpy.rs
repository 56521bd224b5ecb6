//! numpy as numpy builds itself, end to end, for one Linux target: its sdist (pinned by
//! sha256 in tests/compat/projects.toml), its own `[tool.cibuildwheel]` configuration and
//! before-build (which pip-installs the target's scipy-openblas64), cross-built by the
//! crosswheel binary of this test run, repaired (OpenBLAS vendored, reached through
//! `$ORIGIN`), and tested under qemu with the corpus's recipe: the SIMD baseline and dispatch
//! targets of the index's numpy 2.4.6 aarch64 wheel, scipy-openblas as the BLAS, a 300×300
//! `inv`/`matmul`/`eigvals` check, `numpy.fft`, `numpy.linalg` and `numpy.random`, and
//! numpy's own fft and linalg regression tests. ppc64le and macOS arm64 run in
//! `scripts/compat`.
//!
//! The slowest test of the suite (~15 minutes on 2 cores with cold caches, most of it
//! compiling numpy). Needs python3 (3.11 or newer) and network access on the first run.

use crate::common;

#[test]
#[ignore = "slow: cross-builds numpy from its sdist and tests it under qemu"]
fn numpy_builds_from_its_own_configuration_for_linux_aarch64_and_passes_under_qemu() {
    let (output, _) = common::run_compat(&[
        "--only",
        "numpy",
        "--targets",
        "linux-aarch64",
        "--cell-timeout",
        "3600",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "numpy's cell is not green:\n{stdout}\n{stderr}"
    );
    let line = stdout
        .lines()
        .find(|line| line.starts_with("compat: numpy linux-aarch64 green"))
        .unwrap_or_else(|| panic!("no green line for numpy:\n{stdout}"));
    // `compat: numpy linux-aarch64 green 172/172 1585s cp311-cp311-manylinux_...`
    let fields: Vec<&str> = line.split_whitespace().collect();
    let (passed, total) = fields[4]
        .split_once('/')
        .unwrap_or_else(|| panic!("no test count in `{line}`"));
    assert!(
        passed == total && total.parse::<u32>().unwrap() > 100,
        "numpy's own fft and linalg tests must run and pass under qemu: {line}"
    );
    // numpy's configuration builds aarch64 in the manylinux_2_28 image, where its
    // before-build gets scipy-openblas64's manylinux_2_27 wheel: the vendored OpenBLAS sets
    // the tag, manylinux_2_27 as on the index's own numpy 2.4.6 aarch64 wheel.
    assert!(
        line.ends_with("cp311-cp311-manylinux_2_27_aarch64"),
        "numpy's aarch64 wheel is tagged as numpy's own: {line}"
    );
}
