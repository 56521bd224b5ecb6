//! `crosswheel test WHEEL...`: the test stage alone, for wheels built elsewhere.
//! Each wheel is tested the way this host can: natively, under qemu-user, or — for
//! macOS arm64 wheels anywhere but on an arm64 Mac — by a static load check that
//! says it executed nothing.

use crate::common;

use std::process::{Command, Output};

use common::{crosswheel_bin, fixture};

fn crosswheel_test(wheel: &std::path::Path, test_command: &str) -> Output {
    let logs = tempfile::tempdir().expect("tempdir");
    Command::new(crosswheel_bin())
        .arg("test")
        .arg(wheel)
        .args(["--test-command", test_command])
        .current_dir(logs.path())
        .output()
        .expect("run crosswheel test")
}

/// Whether stdout has the verdict line starting with `verdict`: the test command's own
/// output comes before it on stdout, as cibuildwheel prints a test command's output.
fn has_verdict(output: &Output, verdict: &str) -> bool {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .any(|line| line.starts_with(verdict))
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
#[ignore = "slow: qemu, Debian CPython"]
fn a_linux_aarch64_wheel_runs_its_test_command_under_emulation() {
    let wheel = fixture(
        "markupsafe-3.0.4-cp311-cp311-manylinux2014_aarch64.manylinux_2_17_aarch64.manylinux_2_28_aarch64.whl",
    );
    let output = crosswheel_test(
        &wheel,
        "python -c 'import platform, markupsafe._speedups; assert platform.machine() == \"aarch64\"'",
    );
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        has_verdict(&output, "passed (emulated"),
        "{}",
        text(&output)
    );
}

/// The emulated `python` passes its whole environment on, as a native interpreter does,
/// names that are no shell identifiers included (h5py's test suite marks a test's own
/// subprocess with `IN_SUBPROCESS_<path of the test file>`; without the mark, each test
/// started another, without end).
#[test]
#[ignore = "slow: qemu, Debian CPython"]
fn the_emulated_python_gets_environment_entries_whose_names_are_no_shell_identifiers() {
    let wheel = fixture(
        "markupsafe-3.0.4-cp311-cp311-manylinux2014_aarch64.manylinux_2_17_aarch64.manylinux_2_28_aarch64.whl",
    );
    let output = crosswheel_test(
        &wheel,
        "env 'IN_SUBPROCESS__tmp_crosswheel-test-x_test.py=1' python -c \"import os; assert os.environ.get('IN_SUBPROCESS__tmp_crosswheel-test-x_test.py') == '1', sorted(os.environ)\"",
    );
    assert!(output.status.success(), "{}", text(&output));
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
#[ignore = "slow: a test venv with pip"]
fn a_wheel_for_the_hosts_own_platform_runs_natively() {
    let wheel = fixture(
        "markupsafe-3.0.4-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl",
    );
    let output = crosswheel_test(&wheel, "python -c 'import markupsafe._speedups'");
    assert!(output.status.success(), "{}", text(&output));
    assert!(has_verdict(&output, "passed (native"), "{}", text(&output));
}

#[test]
#[ignore = "slow: qemu, Debian CPython"]
fn a_failing_test_command_fails_the_run_and_names_the_wheel() {
    let wheel = fixture(
        "markupsafe-3.0.4-cp311-cp311-manylinux2014_aarch64.manylinux_2_17_aarch64.manylinux_2_28_aarch64.whl",
    );
    let output = crosswheel_test(&wheel, "python -c 'raise SystemExit(3)'");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("tests failed for") && stderr.contains("markupsafe-3.0.4"),
        "{stderr}"
    );
}

/// On Linux nothing can execute arm64 macOS code; the run must say what it did.
#[cfg(not(all(target_os = "macos", target_arch = "aarch64")))]
#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn a_macos_arm64_wheel_gets_a_static_check_that_says_it_did_not_execute() {
    for name in [
        "numpy-2.2.6-cp311-cp311-macosx_14_0_arm64.whl",
        // The first tag is x86_64; the arm64 one is what gets checked.
        "orjson-3.13.0-cp311-cp311-macosx_10_15_x86_64.macosx_11_0_arm64.macosx_10_15_universal2.whl",
    ] {
        let output = crosswheel_test(&fixture(name), "python -c 'raise SystemExit(1)'");
        assert!(output.status.success(), "{name}: {}", text(&output));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            stdout.starts_with("static check (not executed)"),
            "{stdout}"
        );
        assert!(!stdout.contains("passed"), "{stdout}");
    }
}

/// `crosswheel test` on an empty `demo` wheel tagged `tag`, which must fail with
/// exactly one line on stderr; returns that line.
fn one_line_refusal(tag: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let metadata = common::minimal_metadata("demo", "1.0", tag);
    let files: Vec<(&str, &[u8])> = metadata
        .iter()
        .map(|(name, data)| (name.as_str(), data.as_slice()))
        .collect();
    let wheel = common::make_wheel(dir.path(), &format!("demo-1.0-{tag}.whl"), &files);
    let output = crosswheel_test(&wheel, "true");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    stderr
}

#[test]
fn a_wheel_for_a_platform_without_a_runner_is_a_one_line_error() {
    let stderr = one_line_refusal("cp311-cp311-linux_loongarch64");
    assert!(
        stderr.contains("no test runner for platform linux_loongarch64"),
        "{stderr}"
    );
}

/// A cp313 wheel runs on CPython 3.13 (Debian 13's, under qemu), not on the 3.11 the
/// cp311 wheels use: the target interpreter follows the wheel. (aarch64 only: the
/// mirror this suite was written against lists a ppc64el libc6 for Debian 13 whose .deb
/// it does not serve, so that sysroot cannot be provisioned there.)
#[test]
#[ignore = "slow: qemu, Debian CPython"]
fn a_cp313_wheel_is_tested_on_cpython_313_under_emulation() {
    let name = "markupsafe-3.0.4-cp313-cp313-manylinux2014_aarch64.manylinux_2_17_aarch64.manylinux_2_28_aarch64.whl";
    let check = "python -c 'import sys, platform, markupsafe._speedups; \
                 assert sys.version_info[:2] == (3, 13), sys.version; \
                 assert platform.machine() == \"aarch64\", platform.machine()'";
    let output = crosswheel_test(&fixture(name), check);
    assert!(output.status.success(), "{name}: {}", text(&output));
    assert!(
        has_verdict(&output, "passed (emulated"),
        "{}",
        text(&output)
    );
}

#[test]
fn a_cpython_debian_does_not_ship_is_a_clear_error() {
    let stderr = one_line_refusal("cp312-cp312-manylinux_2_17_aarch64");
    assert!(
        stderr.contains("no aarch64 CPython 3.12") && stderr.contains("3.13 (Debian trixie)"),
        "{stderr}"
    );
}

/// Real cp313 and cp314 wheels from PyPI pass their own self-test on Debian's CPython of
/// their version (trixie's 3.13, forky's 3.14) under qemu, on both Linux targets.
#[test]
#[ignore = "slow: qemu, Debian CPythons"]
fn real_cp313_and_cp314_wheels_pass_their_own_suites_on_both_linux_targets() {
    let check = "python -c 'import sys, platform, bitarray; \
                 result = bitarray.test(verbosity=0); \
                 print(sys.version_info[:2], platform.machine(), result.testsRun, \"tests\"); \
                 sys.exit(not result.wasSuccessful() or result.testsRun < 100)'";
    for (version, python) in [("cp313", (3, 13)), ("cp314", (3, 14))] {
        for arch in ["aarch64", "ppc64le"] {
            let name = format!(
                "bitarray-3.7.2-{version}-{version}-manylinux2014_{arch}.manylinux_2_17_{arch}.manylinux_2_28_{arch}.whl"
            );
            let output = crosswheel_test(&fixture(&name), check);
            let all = text(&output);
            assert!(output.status.success(), "{name}: {all}");
            let expected = format!("({}, {}) {arch} ", python.0, python.1);
            assert!(all.contains(&expected), "{name} ran elsewhere: {all}");
            assert!(has_verdict(&output, "passed (emulated"), "{all}");
        }
    }
}

/// `--target-python` runs the tests on the user's own target CPython instead of Debian's
/// (for versions Debian does not ship): here a real aarch64 root filesystem of CPython 3.13
/// that the test owns, marked so the test command can tell it is the one that ran. The
/// user's folder is never written to.
#[test]
#[ignore = "slow: qemu, Debian CPython"]
fn target_python_runs_the_tests_on_the_users_own_target_cpython() {
    use crosswheel::support::sysroot::{LinuxArch, Sysroot};
    let cache = crosswheel::support::host::Cache::from_env().expect("a cache directory");
    let debian = Sysroot::provision(
        cache.root(),
        LinuxArch::Aarch64,
        crosswheel::python_tag::PythonTag::parse("cp313").unwrap(),
        &crosswheel::support::host::Network::default(),
    )
    .unwrap_or_else(|err| panic!("{err}"));
    let users = tempfile::tempdir().unwrap();
    let root = users.path().join("py313-aarch64");
    let copied = Command::new("cp")
        .arg("-a")
        .arg(debian.root())
        .arg(&root)
        .status()
        .unwrap();
    assert!(copied.success());
    let _ = std::fs::remove_file(root.join(".crosswheel-bytecode"));
    std::fs::write(
        root.join("usr/lib/python3.13/users_own_root.py"),
        "WHERE = 'the user root'\n",
    )
    .unwrap();
    let before = std::fs::read_dir(&root).unwrap().count();

    let wheel = fixture(
        "bitarray-3.7.2-cp313-cp313-manylinux2014_aarch64.manylinux_2_17_aarch64.manylinux_2_28_aarch64.whl",
    );
    let logs = tempfile::tempdir().unwrap();
    let output = Command::new(crosswheel_bin())
        .arg("test")
        .arg(&wheel)
        .arg("--target-python")
        .arg(&root)
        .args([
            "--test-command",
            "python -c 'import users_own_root, bitarray; print(users_own_root.WHERE); \
             bitarray.test(verbosity=0)'",
        ])
        .current_dir(logs.path())
        .output()
        .unwrap();
    let all = text(&output);
    assert!(output.status.success(), "{all}");
    assert!(all.contains("the user root"), "{all}");
    assert!(
        !root.join(".crosswheel-bytecode").exists(),
        "crosswheel wrote into the user's target CPython"
    );
    assert_eq!(std::fs::read_dir(&root).unwrap().count(), before);

    let not_python = Command::new(crosswheel_bin())
        .arg("test")
        .arg(&wheel)
        .arg("--target-python")
        .arg(users.path())
        .args(["--test-command", "true"])
        .current_dir(logs.path())
        .output()
        .unwrap();
    assert!(!not_python.status.success());
    let stderr = String::from_utf8_lossy(&not_python.stderr);
    assert!(
        stderr.contains("is not a target CPython (it has no bin/python3.13 or usr/bin/python3.13)"),
        "{stderr}"
    );
}

/// The Debian archive is the one the user names: a mirror that cannot be reached is one
/// error naming it and the variable, and nothing of the host's APT configuration is used.
#[test]
#[ignore = "slow: Debian downloads, qemu"]
fn the_debian_mirror_variable_chooses_where_target_cpythons_come_from() {
    let cache = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let wheel = fixture(
        "bitarray-3.7.2-cp313-cp313-manylinux2014_aarch64.manylinux_2_17_aarch64.manylinux_2_28_aarch64.whl",
    );
    let output = Command::new(crosswheel_bin())
        .arg("test")
        .arg(&wheel)
        .args(["--test-command", "true"])
        .current_dir(logs.path())
        .env("CROSSWHEEL_CACHE", cache.path())
        .env("CROSSWHEEL_DEBIAN_MIRROR", "http://127.0.0.1:9/debian/")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("crosswheel fetches from Debian's archive at http://127.0.0.1:9/debian"),
        "{stderr}"
    );
    assert!(stderr.contains("CROSSWHEEL_DEBIAN_MIRROR"), "{stderr}");
    assert_eq!(
        stderr
            .lines()
            .filter(|line| line.starts_with("error:"))
            .count(),
        1,
        "{stderr}"
    );
}

/// cibuildwheel's test_testing `test_failing_test` hint: a bare `python -m unittest` (or
/// `pytest`) run from the test folder, without `test-sources`, fails with cibuildwheel's
/// message naming `{project}`, instead of passing with no tests found.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
#[ignore = "slow: a test venv with pip"]
fn a_bare_test_runner_in_the_test_folder_fails_with_cibuildwheels_hint() {
    let wheel = fixture(
        "markupsafe-3.0.4-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl",
    );
    let output = crosswheel_test(&wheel, "python -m unittest");
    let all = text(&output);
    assert!(!output.status.success(), "{all}");
    assert!(
        all.contains(
            "Please specify a path to your tests when invoking pytest using the {project} placeholder"
        ),
        "{all}"
    );
}
