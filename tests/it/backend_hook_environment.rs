//! Every PEP 517 hook runs with the same builder variables and the user's `environment`,
//! as under cibuildwheel: setup.py checks `CIBUILDWHEEL` at import, which happens first in
//! `get_requires_for_build_wheel` (cibuildwheel's test_0_basic and test_environment).

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
