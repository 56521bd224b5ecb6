//! `test-timeout`: a hung emulated suite is killed with its process group (qemu included)
//! within moments of its limit, and what it printed last names the test it was in.
//! Needs the markupsafe fixture, apt-get, dpkg-deb and qemu-user.

use crate::common;

use std::fs;
use std::time::{Duration, Instant};

use crosswheel::stages::testing::{TestPlatform, TestSpec, test_wheel};
use crosswheel::support::host::Cache;
use crosswheel::support::sysroot::LinuxArch;

#[test]
#[ignore = "slow: a test run under qemu"]
fn a_hung_emulated_suite_is_killed_at_its_timeout_naming_the_last_test() {
    let wheel = common::fixture(
        "markupsafe-3.0.4-cp311-cp311-manylinux2014_aarch64.manylinux_2_17_aarch64.manylinux_2_28_aarch64.whl",
    );
    let project = tempfile::tempdir().expect("project folder");
    let logs = tempfile::tempdir().expect("log folder");
    let cache = Cache::from_env().unwrap_or_else(|err| panic!("{err}"));
    let spec = TestSpec {
        // The sleep runs in the emulated interpreter: qemu is the process to kill.
        test_command:
            "python -c \"print('test_one PASSED', flush=True); import time; time.sleep(600)\""
                .into(),
        python_version: crosswheel::python_tag::PythonTag::parse("cp311").unwrap(),
        project_dir: project.path().to_path_buf(),
        cache_dir: cache.root().to_path_buf(),
        log_dir: logs.path().to_path_buf(),
        timeout: Some(Duration::from_secs(5)),
        ..Default::default()
    };
    let outcome = test_wheel(&wheel, TestPlatform::Linux(LinuxArch::Aarch64), &spec)
        .unwrap_or_else(|err| panic!("{err}"));
    let log = fs::read_to_string(&outcome.log_path).expect("the log exists");
    assert!(!outcome.passed, "{log}");
    let timed_out = outcome.timed_out.clone().expect("a timeout");
    assert_eq!(timed_out.after, Duration::from_secs(5));
    assert_eq!(timed_out.last_output.as_deref(), Some("test_one PASSED"));
    assert!(
        timed_out.to_string().starts_with("timed out after 5s"),
        "{timed_out}"
    );
    let took: f64 = log
        .lines()
        .find_map(|line| line.strip_prefix("[crosswheel] test command took "))
        .and_then(|rest| rest.trim_end_matches(" s").parse().ok())
        .unwrap_or_else(|| panic!("no command time in the log:\n{log}"));
    assert!(took < 10.0, "the command ran {took} s:\n{log}");
    assert!(log.contains("killed after 5 s (test-timeout)"), "{log}");
    // Nothing of the suite survives it: no emulated python still sleeping.
    let started = Instant::now();
    let survivors = loop {
        let ps = std::process::Command::new("ps")
            .args(["-eo", "args"])
            .output()
            .expect("ps");
        let text = String::from_utf8_lossy(&ps.stdout).into_owned();
        let left: Vec<String> = text
            .lines()
            .filter(|line| line.contains("print('test_one PASSED'"))
            .map(str::to_string)
            .collect();
        if left.is_empty() || started.elapsed() > Duration::from_secs(3) {
            break left;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(survivors.is_empty(), "still running: {survivors:?}");
}
