//! Test requirements the index has no target wheel of come from the target CPython's own
//! Debian release: numpy on ppc64le is Debian's python3-numpy (with OpenBLAS), and the log
//! says so. Needs the markupsafe fixture, network (pip's index and Debian's archive on
//! first use), apt-get, dpkg-deb and qemu-user.

use crate::common;

use std::fs;
use std::path::PathBuf;

use crosswheel::stages::testing::{TestMode, TestPlatform, TestSpec, test_wheel};
use crosswheel::support::host::Cache;
use crosswheel::support::sysroot::LinuxArch;

fn markupsafe_ppc64le() -> PathBuf {
    common::fixture(
        "markupsafe-3.0.4-cp311-cp311-manylinux2014_ppc64le.manylinux_2_17_ppc64le.manylinux_2_28_ppc64le.whl",
    )
}

/// Imports numpy and markupsafe on the target and checks a BLAS-backed numpy.dot.
const NUMPY_CHECK: &str = r#"python -c "
import platform, numpy, markupsafe
assert platform.machine() == 'ppc64le', platform.machine()
a = numpy.arange(12.0).reshape(3, 4)
assert numpy.dot(a, a.T)[2, 2] == 8*8 + 9*9 + 10*10 + 11*11
assert numpy.dot([1.0, 2.0], [3.0, 4.0]) == 11.0
assert '/usr/lib/python3/dist-packages/numpy' in numpy.__file__, numpy.__file__
print('numpy', numpy.__version__, 'from', numpy.__file__)
""#;

/// A test of the ppc64le markupsafe wheel with `command` and `requires`.
fn spec(
    command: &str,
    requires: &str,
    project: &tempfile::TempDir,
    logs: &tempfile::TempDir,
) -> TestSpec {
    let cache = Cache::from_env().unwrap_or_else(|err| panic!("{err}"));
    TestSpec {
        test_command: command.into(),
        test_requires: vec![requires.into()],
        python_version: crosswheel::python_tag::PythonTag::parse("cp311").unwrap(),
        project_dir: project.path().to_path_buf(),
        cache_dir: cache.root().to_path_buf(),
        log_dir: logs.path().to_path_buf(),
        ..Default::default()
    }
}

#[test]
#[ignore = "slow: Debian downloads, qemu"]
fn numpy_without_a_ppc64le_wheel_comes_from_debian_and_its_dot_works_under_qemu() {
    common::require_tool("apt-get", "run on a Debian or Ubuntu host");
    let project = tempfile::tempdir().expect("project folder");
    let logs = tempfile::tempdir().expect("log folder");
    let spec = spec(NUMPY_CHECK, "numpy", &project, &logs);
    let started = std::time::Instant::now();
    let outcome = test_wheel(
        &markupsafe_ppc64le(),
        TestPlatform::Linux(LinuxArch::Ppc64le),
        &spec,
    )
    .unwrap_or_else(|err| panic!("{err}"));
    eprintln!(
        "[timing] ppc64le test stage with Debian's numpy: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let log = fs::read_to_string(&outcome.log_path).expect("the log exists");
    assert_eq!(outcome.mode, TestMode::Emulated);
    assert!(outcome.passed, "tests failed:\n{log}");
    let source = log
        .lines()
        .find(|line| line.contains("test requirement numpy:"))
        .unwrap_or_else(|| panic!("no source line for numpy:\n{log}"));
    assert!(
        source.contains("Debian package python3-numpy 1:1.24") && source.contains("(bookworm)"),
        "{source}"
    );
    assert!(log.contains("numpy 1.24"), "{log}");
    assert!(
        !log.contains("retrying with pip under the target interpreter"),
        "numpy must not be built under emulation:\n{log}"
    );
}

#[test]
#[ignore = "slow: Debian downloads, qemu"]
fn a_requirement_debian_is_too_old_for_is_named_with_debians_version() {
    common::require_tool("apt-get", "run on a Debian or Ubuntu host");
    let project = tempfile::tempdir().expect("project folder");
    let logs = tempfile::tempdir().expect("log folder");
    let spec = spec("true", "numpy>=99", &project, &logs);
    let err = test_wheel(
        &markupsafe_ppc64le(),
        TestPlatform::Linux(LinuxArch::Ppc64le),
        &spec,
    )
    .expect_err("numpy>=99 cannot be satisfied")
    .to_string();
    assert!(err.starts_with("the test requirement numpy>=99;"), "{err}");
    assert!(err.contains("Debian bookworm has 1.24"), "{err}");
    assert!(err.contains("(python3-numpy)"), "{err}");
    assert!(!err.contains('\n'), "{err}");
}
