//! Every PEP 517 hook runs with the same builder variables and the user's `environment`,
//! as under cibuildwheel: setup.py checks `CIBUILDWHEEL` at import, which happens first in
//! `get_requires_for_build_wheel` (cibuildwheel's test_0_basic and test_environment).
//! `environment` is evaluated with the build's own environment first on PATH, and a PATH
//! that puts another `python` before it fails the build with cibuildwheel's words
//! (test_environment's test_overridden_path).

use crate::common;

use std::process::Command;

use common::crosswheel_bin;

/// An in-tree backend that writes what each hook sees to `record`, then fails the build.
const BACKEND: &str = r#"
import json, os

def _record(hook):
    seen = {name: os.environ.get(name) for name in ("CIBUILDWHEEL", "CIBW_TEST_VAR")}
    with open(RECORD, "a") as out:
        out.write(json.dumps({"hook": hook, **seen}) + "\n")

def get_requires_for_build_wheel(config_settings=None):
    _record("get_requires_for_build_wheel")
    return []

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _record("build_wheel")
    raise RuntimeError("recorded; no wheel needed")
"#;

const PYPROJECT: &str = r#"
[build-system]
requires = []
build-backend = "recorder"
backend-path = ["."]

[project]
name = "recorder"
version = "1.0"

[tool.cibuildwheel]
environment = { CIBW_TEST_VAR = "a b c" }
"#;

#[test]
#[ignore = "slow: builds a real project with zig"]
fn get_requires_for_build_wheel_sees_cibuildwheel_and_the_environment_option() {
    let project = tempfile::tempdir().expect("project folder");
    let record = project.path().join("hooks.jsonl");
    std::fs::write(project.path().join("pyproject.toml"), PYPROJECT).expect("pyproject");
    let backend = format!("RECORD = {:?}\n{BACKEND}", record.display().to_string());
    std::fs::write(project.path().join("recorder.py"), backend).expect("backend");

    let out = tempfile::tempdir().expect("output folder");
    let mut command = Command::new(crosswheel_bin());
    command
        .arg("build")
        .arg(project.path())
        .arg("-w")
        .arg(out.path())
        .env("CIBW_BUILD", "cp311-manylinux_aarch64");
    common::without_option_variables(&mut command);
    let output = command.output().expect("run crosswheel build");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let seen = std::fs::read_to_string(&record)
        .unwrap_or_else(|error| panic!("no hook ran ({error}):\n{log}"));
    let hooks: Vec<serde_json::Value> = seen
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    let names: Vec<&str> = hooks.iter().filter_map(|h| h["hook"].as_str()).collect();
    assert_eq!(
        names,
        ["get_requires_for_build_wheel", "build_wheel"],
        "{log}"
    );
    for hook in &hooks {
        assert_eq!(hook["CIBUILDWHEEL"], "1", "{hook}");
        assert_eq!(hook["CIBW_TEST_VAR"], "a b c", "{hook}");
    }
}

/// cibuildwheel's test_overridden_path on macOS: `NEW_PATH` holds a `python` that is not
/// the build's, and `environment` puts it first. The build stops before compiling anything,
/// in one line naming the `python` PATH finds, and writes no wheel.
#[test]
#[ignore = "needs CPython 3.11: scripts/test sets it up"]
fn an_environment_that_puts_another_python_first_on_path_fails_the_build() {
    let project = tempfile::tempdir().expect("project folder");
    std::fs::write(
        project.path().join("pyproject.toml"),
        "[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"setuptools.build_meta\"\n\
         [project]\nname = \"spam\"\nversion = \"0.1\"\n",
    )
    .expect("pyproject");
    let another_bin = tempfile::tempdir().expect("another bin");
    let fake_python = another_bin.path().join("python");
    std::fs::write(&fake_python, "").expect("fake python");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake_python, std::fs::Permissions::from_mode(0o777)).unwrap();

    let out = tempfile::tempdir().expect("output folder");
    let mut command = Command::new(crosswheel_bin());
    common::without_option_variables(&mut command);
    let output = command
        .arg("build")
        .arg(project.path())
        .arg("-w")
        .arg(out.path())
        .env("CIBW_BUILD", "cp311-macosx_arm64")
        .env("NEW_PATH", another_bin.path())
        .env("CIBW_ENVIRONMENT", r#"PATH="$NEW_PATH:$PATH""#)
        .output()
        .expect("run crosswheel build");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    let expected = format!(
        "python available on PATH doesn't match our installed instance: with `environment` applied, PATH finds {} instead of the build environment's ",
        fake_python.display()
    );
    assert_eq!(stderr.matches(&expected).count(), 1, "{stderr}");
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
}

/// cibuildwheel's test_build_isolated_env_pip_version reads pip's version in `before-build`
/// with `importlib.metadata`: the build's own environment has pip as an installed
/// distribution, as cibuildwheel's build venv does (`pip show pip` too), and a `pip
/// uninstall pip` there removes the environment's record of it, never the build python's
/// pip. `before-build` then fails on purpose, so nothing is compiled.
#[test]
#[ignore = "needs CPython 3.11: scripts/test sets it up"]
fn before_build_sees_pip_as_an_installed_distribution() {
    let project = tempfile::tempdir().expect("project folder");
    std::fs::write(
        project.path().join("pyproject.toml"),
        "[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"setuptools.build_meta\"\n\
         [project]\nname = \"spam\"\nversion = \"0.1\"\n",
    )
    .expect("pyproject");
    let check = "import importlib.metadata as m, pip; assert m.version('pip') == pip.__version__, \
                 (m.version('pip'), pip.__version__); print('pip metadata', m.version('pip'))";
    let before_build = format!(
        "python -c \"{check}\" && pip show pip && pip uninstall --yes pip && \
         python -c 'import pip' && false"
    );
    let out = tempfile::tempdir().expect("output folder");
    let mut command = Command::new(crosswheel_bin());
    common::without_option_variables(&mut command);
    let output = command
        .arg("build")
        .arg(project.path())
        .arg("-w")
        .arg(out.path())
        .env("CIBW_BUILD", "cp311-macosx_arm64")
        .env("CIBW_BEFORE_BUILD", &before_build)
        .output()
        .expect("run crosswheel build");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("pip metadata "), "{text}");
    assert!(text.contains("Name: pip"), "{text}");
    assert!(text.contains("Successfully uninstalled pip-"), "{text}");
    assert!(
        text.contains("before-build failed (exit status: 1)"),
        "{text}"
    );
    // The build python's own pip is whole after the uninstall.
    let python = Command::new("python3.11")
        .args(["-m", "pip", "--version"])
        .output()
        .expect("run python3.11");
    assert!(python.status.success(), "{python:?}");
}
