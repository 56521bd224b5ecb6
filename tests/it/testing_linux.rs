//! The Linux test stage end to end: real PyPI wheels with a C extension, installed for
//! the target by the host pip and tested with pytest on a real target CPython.
//! Needs the fixture wheels (see `fixture`), network for pytest on first use, apt-get,
//! dpkg-deb and qemu-user.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use crosswheel::stages::testing::{TestMode, TestOutcome, TestPlatform, TestSpec, test_wheel};
use crosswheel::support::host::Cache;
use crosswheel::support::sysroot::LinuxArch;

/// crosswheel's shared cache, so these tests reuse (or warm) what the tool itself uses.
fn cache_root() -> PathBuf {
    Cache::from_env()
        .unwrap_or_else(|err| panic!("{err}"))
        .root()
        .to_path_buf()
}

const MARKUPSAFE: &str = "3.0.4";

/// The markupsafe wheel for `arch`, pinned in tests/fixtures.lock.
fn markupsafe_wheel(arch: LinuxArch) -> PathBuf {
    let machine = arch.machine();
    common::fixture(&format!(
        "markupsafe-{MARKUPSAFE}-cp311-cp311-manylinux2014_{machine}.manylinux_2_17_{machine}.manylinux_2_28_{machine}.whl"
    ))
}

/// A project whose tests import the installed markupsafe and call its C speedups.
fn project_with_tests(arch: LinuxArch, extra_test: &str) -> tempfile::TempDir {
    let project = tempfile::tempdir().expect("project folder");
    let tests = project.path().join("tests");
    fs::create_dir_all(&tests).expect("tests folder");
    let machine = arch.machine();
    // CPython's multiarch triplet, which names extension modules.
    let multiarch = match arch {
        LinuxArch::Ppc64le => "powerpc64le-linux-gnu".to_string(),
        _ => format!("{machine}-linux-gnu"),
    };
    let body = format!(
        r#"import platform
import markupsafe
from markupsafe import _speedups


def test_runs_on_the_target_machine():
    assert platform.machine() == "{machine}"


def test_c_speedups_escape():
    assert _speedups.__file__.endswith(".cpython-311-{multiarch}.so"), _speedups.__file__
    assert str(_speedups._escape_inner("<a href='x'>")) == "&lt;a href=&#39;x&#39;&gt;"
    assert markupsafe.escape("<b>") == markupsafe.Markup("&lt;b&gt;")


def test_wheel_is_imported_from_the_environment_not_the_project():
    assert "/venv/" in markupsafe.__file__, markupsafe.__file__
{extra_test}"#
    );
    fs::write(tests.join("test_markupsafe.py"), body).expect("write test file");
    project
}

fn run(arch: LinuxArch, project: &Path, logs: &Path) -> TestOutcome {
    let spec = TestSpec {
        test_command: "pytest -v tests && test -d {project}/tests".into(),
        test_requires: vec!["pytest".into()],
        python_version: crosswheel::python_tag::PythonTag::parse("cp311").unwrap(),
        test_sources: vec![PathBuf::from("tests")],
        project_dir: project.to_path_buf(),
        qemu_cpu: None,
        cache_dir: cache_root(),
        log_dir: logs.to_path_buf(),
        ..Default::default()
    };
    let outcome = test_wheel(&markupsafe_wheel(arch), TestPlatform::Linux(arch), &spec)
        .unwrap_or_else(|err| panic!("{err}"));
    eprintln!(
        "[timing] {arch} test stage: {:.2} s ({:?}, passed: {})",
        outcome.duration.as_secs_f64(),
        outcome.mode,
        outcome.passed
    );
    outcome
}

fn log_text(outcome: &TestOutcome) -> String {
    fs::read_to_string(&outcome.log_path).expect("the log exists")
}

#[test]
#[ignore = "slow: test runs under qemu with Debian CPythons"]
fn markupsafe_c_speedups_pass_under_aarch64_emulation() {
    let project = project_with_tests(LinuxArch::Aarch64, "");
    let logs = tempfile::tempdir().expect("log folder");
    let outcome = run(LinuxArch::Aarch64, project.path(), logs.path());
    let log = log_text(&outcome);
    assert_eq!(outcome.mode, TestMode::Emulated);
    assert!(outcome.passed, "tests failed:\n{log}");
    assert!(log.contains("3 passed"), "{log}");
    assert!(outcome.log_path.starts_with(logs.path()));
}

#[test]
#[ignore = "slow: test runs under qemu with Debian CPythons"]
fn markupsafe_c_speedups_pass_under_ppc64le_emulation() {
    let project = project_with_tests(LinuxArch::Ppc64le, "");
    let logs = tempfile::tempdir().expect("log folder");
    let outcome = run(LinuxArch::Ppc64le, project.path(), logs.path());
    let log = log_text(&outcome);
    assert_eq!(outcome.mode, TestMode::Emulated);
    assert!(outcome.passed, "tests failed:\n{log}");
    assert!(log.contains("3 passed"), "{log}");
}

#[test]
#[ignore = "slow: test runs under qemu with Debian CPythons"]
fn injected_failure_is_reported_as_not_passed_with_pytest_output_in_the_log() {
    let failing = "\n\ndef test_injected_failure():\n    assert 1 + 1 == 3, \"injected failure\"\n";
    let project = project_with_tests(LinuxArch::Aarch64, failing);
    let logs = tempfile::tempdir().expect("log folder");
    let outcome = run(LinuxArch::Aarch64, project.path(), logs.path());
    let log = log_text(&outcome);
    assert!(
        !outcome.passed,
        "a failing test must fail the stage:\n{log}"
    );
    assert!(log.contains("injected failure"), "{log}");
    assert!(log.contains("1 failed, 3 passed"), "{log}");
}

#[test]
#[ignore = "slow: test runs under qemu with Debian CPythons"]
fn markupsafe_c_speedups_pass_natively_on_the_host_architecture() {
    let host = LinuxArch::host().expect("a supported host");
    let project = project_with_tests(host, "");
    let logs = tempfile::tempdir().expect("log folder");
    let outcome = run(host, project.path(), logs.path());
    let log = log_text(&outcome);
    assert_eq!(outcome.mode, TestMode::Native);
    assert!(outcome.passed, "tests failed:\n{log}");
    assert!(log.contains("3 passed"), "{log}");
}

#[test]
#[ignore = "slow: test runs under qemu with Debian CPythons"]
fn uninstallable_requirement_is_an_error_naming_the_log() {
    let project = project_with_tests(LinuxArch::Aarch64, "");
    let logs = tempfile::tempdir().expect("log folder");
    let spec = TestSpec {
        test_command: "true".into(),
        test_requires: vec!["crosswheel-no-such-package-for-tests==0.0.1".into()],
        python_version: crosswheel::python_tag::PythonTag::parse("cp311").unwrap(),
        test_sources: Vec::new(),
        project_dir: project.path().to_path_buf(),
        qemu_cpu: None,
        cache_dir: cache_root(),
        log_dir: logs.path().to_path_buf(),
        ..Default::default()
    };
    let err = match test_wheel(
        &markupsafe_wheel(LinuxArch::Aarch64),
        TestPlatform::Linux(LinuxArch::Aarch64),
        &spec,
    ) {
        Err(err) => err.to_string(),
        Ok(outcome) => panic!("installation cannot succeed, got {outcome:?}"),
    };
    eprintln!("[message] {err}");
    assert!(err.starts_with("cannot install "), "{err}");
    assert!(
        err.contains("crosswheel-no-such-package-for-tests"),
        "{err}"
    );
    assert!(err.contains(&logs.path().display().to_string()), "{err}");
}

/// A pure-Python project published only as an sdist, in a folder of its own: neither the
/// index nor Debian has it, so only pip inside the target environment can install it.
fn sdist_only_project(dir: &Path) {
    let mut archive = tar::Builder::new(flate2::write::GzEncoder::new(
        fs::File::create(dir.join("sdistonly-1.0.tar.gz")).unwrap(),
        flate2::Compression::default(),
    ));
    let files: [(&str, &str); 3] = [
        (
            "sdistonly-1.0/pyproject.toml",
            "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"sdistonly\"\nversion = \"1.0\"\n\n[tool.setuptools]\npy-modules = [\"sdistonly\"]\n",
        ),
        ("sdistonly-1.0/sdistonly.py", "ANSWER = 42\n"),
        (
            "sdistonly-1.0/PKG-INFO",
            "Metadata-Version: 2.1\nName: sdistonly\nVersion: 1.0\n",
        ),
    ];
    for (name, text) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        archive
            .append_data(&mut header, name, text.as_bytes())
            .unwrap();
    }
    archive.into_inner().unwrap().finish().unwrap();
}

#[test]
#[ignore = "slow: test runs under qemu with Debian CPythons"]
fn requirement_published_only_as_source_is_installed_by_pip_under_emulation() {
    let links = tempfile::tempdir().expect("find-links folder");
    sdist_only_project(links.path());
    let project = project_with_tests(
        LinuxArch::Aarch64,
        "\n\ndef test_sdist_requirement():\n    import sdistonly\n    assert sdistonly.ANSWER == 42\n",
    );
    let logs = tempfile::tempdir().expect("log folder");
    let spec = TestSpec {
        test_command: "python -c 'import sdistonly, markupsafe._speedups' && pytest -q tests"
            .into(),
        test_requires: vec!["sdistonly==1.0".into(), "pytest".into()],
        python_version: crosswheel::python_tag::PythonTag::parse("cp311").unwrap(),
        test_sources: vec![PathBuf::from("tests")],
        project_dir: project.path().to_path_buf(),
        qemu_cpu: None,
        cache_dir: cache_root(),
        log_dir: logs.path().to_path_buf(),
        environment: [(
            "PIP_FIND_LINKS".to_string(),
            links.path().display().to_string(),
        )]
        .into(),
        ..Default::default()
    };
    let outcome = test_wheel(
        &markupsafe_wheel(LinuxArch::Aarch64),
        TestPlatform::Linux(LinuxArch::Aarch64),
        &spec,
    )
    .unwrap_or_else(|err| panic!("{err}"));
    eprintln!(
        "[timing] aarch64 test stage with pip under emulation: {:.2} s",
        outcome.duration.as_secs_f64()
    );
    let log = log_text(&outcome);
    assert!(
        log.contains("retrying with pip under the target interpreter"),
        "{log}"
    );
    assert!(outcome.passed, "tests failed:\n{log}");
    assert!(log.contains("4 passed"), "{log}");
}
