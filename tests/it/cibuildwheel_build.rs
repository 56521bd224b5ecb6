//! A cibuildwheel user's configuration, unchanged, in a real build: examples/blasdot with a
//! `[tool.cibuildwheel]` table (no `[tool.crosswheel]`) whose `before-build` expands
//! `{project}`, whose `environment` uses `$(...)`, and whose `before-test`,
//! `test-environment` and `environment` values show up in the emulated test's own output;
//! `CIBW_BUILD` picks the identifier, as in a cibuildwheel workflow.

use crate::common;

use std::process::Command;

use common::{blasdot_with_table, crosswheel_bin};

const CIBUILDWHEEL: &str = r#"
[tool.cibuildwheel]
build = "cp3*-*"
skip = ["pp*", "*-musllinux*"]
# The runner's own architecture plus an emulated one, as cibuildwheel users write it.
archs = ["auto64", "aarch64"]
container-engine = "podman"
build-verbosity = 1
# crosswheel's extension: the build links the target's OpenBLAS.
target-requires = ["scipy-openblas32"]
before-build = "echo built-from {project} > {project}/marker.txt"
environment = { FROM_ENVIRONMENT = "env-$(echo substituted)" }
# `pip` and `python` are the test environment's, as in cibuildwheel's test venv.
# `python -m pip` too (cibuildwheel's test_before_test[pip]).
before-test = "pip install --quiet six && python -m pip install --quiet iniconfig && python -c 'import platform, sys, six, iniconfig; print(\"before-test ran on\", platform.machine(), sys.version_info[:2], \"six and iniconfig in the test environment:\", all(m.__file__.startswith(sys.prefix) for m in (six, iniconfig)))' > {project}/before-test.txt"
test-environment = { FROM_TEST_ENVIRONMENT = "test-env-$FROM_ENVIRONMENT" }
# blasdot's [project.optional-dependencies] test = ["pytest"], installed as wheel[test].
test-extras = "test"
test-sources = ["tests"]
test-command = [
  "python -c 'import os, platform; print(\"seen by the test:\", os.environ[\"FROM_ENVIRONMENT\"], os.environ[\"FROM_TEST_ENVIRONMENT\"], platform.machine())'",
  "cat {project}/before-test.txt",
  "cat {project}/marker.txt",
  "python -m pytest -q tests",
]

[tool.cibuildwheel.windows]
archs = ["AMD64"]
"#;

#[test]
#[ignore = "slow: builds and tests blasdot (zig, qemu)"]
fn cibuildwheel_table_builds_and_tests_blasdot_with_its_hooks_and_environments() {
    let project = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    blasdot_with_table(project.path(), CIBUILDWHEEL);
    let mut command = Command::new(crosswheel_bin());
    command
        .arg("build")
        .arg(project.path())
        .arg("-w")
        .arg(out.path())
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .env("CIBW_BUILD", "cp311-manylinux_aarch64");
    common::without_option_variables(&mut command);
    let output = command.output().expect("run crosswheel build");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let all = format!("{stdout}\n{stderr}");
    assert!(output.status.success(), "build failed:\n{all}");

    // Said once each: the table read, the variable used, what does not apply.
    for line in [
        "reading [tool.cibuildwheel] of pyproject.toml (no [tool.crosswheel] table)",
        "using cibuildwheel variables: CIBW_BUILD",
        "ignored (does not apply to cross builds): container-engine, [windows]",
    ] {
        assert_eq!(all.matches(line).count(), 1, "{line:?} in:\n{all}");
    }
    // before-build ran with {project} filled: the target's copy of the project, as a
    // cibuildwheel container's /project, so the user's own tree is left as it was.
    let project_dir = std::path::absolute(project.path()).unwrap();
    assert!(
        !project.path().join("marker.txt").exists(),
        "before-build wrote into the user's project"
    );
    let marker = all
        .lines()
        .find_map(|line| line.trim().strip_prefix("built-from "))
        .unwrap_or_else(|| panic!("the test printed before-build's marker:\n{all}"));
    assert!(
        marker.starts_with('/') && marker != project_dir.to_string_lossy(),
        "{marker}"
    );
    // before-test ran in the test environment: python there is the emulated target CPython,
    // and `pip` and `python -m pip` install into it (not into the host's environment).
    assert!(
        all.contains(
            "before-test ran on aarch64 (3, 11) six and iniconfig in the test environment: True"
        ),
        "{all}"
    );
    // The emulated test's own output shows environment ($(...) evaluated),
    // test-environment (built on environment) and before-test's work.
    assert!(
        all.contains("seen by the test: env-substituted test-env-env-substituted aarch64"),
        "{all}"
    );
    assert!(all.contains("before-test ran on aarch64 (3, 11)"), "{all}");
    // build-verbosity 1 shows the backend's own output.
    assert!(all.contains("running build_ext"), "{all}");
    let wheels = common::wheel_names_in(out.path());
    assert_eq!(
        wheels,
        ["blasdot-0.1.0-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl"]
    );
}
