//! `build-frontend` in real builds of examples/blasdot (cp311-manylinux_aarch64), from a
//! `[tool.cibuildwheel]` table as a cibuildwheel user has it. The project's setup.py prints
//! `sys.prefix`, so each build's own output shows which environment the backend ran in:
//! - `build[uv]`: an isolated environment in crosswheel's cache, filled by uv;
//! - `pip; args: --no-build-isolation`: the build's own environment, pip and what
//!   `before-build` installed, never what the build python holds; nothing installed;
//! - `build; args: --no-isolation`: the same environment, but build checks the
//!   requirements first: one without scipy-openblas32 is one error naming it.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use common::{blasdot_with_table, crosswheel_bin, plain_header_python};

fn table(frontend: &str) -> String {
    format!(
        "[tool.cibuildwheel]\nbuild-frontend = {frontend}\nbuild-verbosity = 1\ntarget-requires = [\"scipy-openblas32\"]\n"
    )
}

/// blasdot with `frontend`, its setup.py printing the prefix the backend runs in.
fn project_with(frontend: &str) -> tempfile::TempDir {
    let project = tempfile::tempdir().unwrap();
    blasdot_with_table(project.path(), &table(frontend));
    append_to_setup_py(
        project.path(),
        "import sys\nprint(\"backend ran in:\", sys.prefix)",
    );
    project
}

/// `code` at the end of the project's setup.py, so the backend runs it.
fn append_to_setup_py(project: &Path, code: &str) {
    let setup = project.join("setup.py");
    let text = std::fs::read_to_string(&setup).unwrap();
    std::fs::write(&setup, format!("{text}\n{code}\n")).unwrap();
}

fn build(project: &Path, path_first: Option<&Path>) -> (Output, String) {
    let out = tempfile::tempdir().unwrap();
    let mut command = Command::new(crosswheel_bin());
    command
        .arg("build")
        .arg(project)
        .arg("-w")
        .arg(out.path())
        .env("CIBW_BUILD", "cp311-manylinux_aarch64");
    common::without_option_variables(&mut command);
    if let Some(dir) = path_first {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![dir.to_path_buf()];
        dirs.extend(std::env::split_paths(&path));
        command.env("PATH", std::env::join_paths(dirs).unwrap());
    }
    let output = command.output().expect("run crosswheel build");
    let all = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output, all)
}

/// The prefix setup.py printed.
fn backend_prefix(all: &str) -> &str {
    all.lines()
        .find_map(|line| line.strip_prefix("backend ran in: "))
        .unwrap_or_else(|| panic!("setup.py's line is missing:\n{all}"))
}

/// A venv of a CPython 3.11 (pyenv's or uv's, else the distribution's) with `packages`
/// and nothing else.
fn venv_with(dir: &Path, packages: &[&str]) -> std::path::PathBuf {
    let python = plain_header_python().unwrap_or_else(common::distribution_python);
    let venv = dir.join("venv");
    let status = Command::new(&python.executable)
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "creating a venv with {}",
        python.executable.display()
    );
    let status = Command::new(venv.join("bin/python"))
        .args(["-m", "pip", "install", "--quiet"])
        .args(packages)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "installing {packages:?} into {}",
        venv.display()
    );
    std::fs::canonicalize(venv).unwrap()
}

#[test]
#[ignore = "slow: builds blasdot with zig through pip and uv"]
fn build_uv_installs_the_requirements_with_uv_into_an_isolated_environment() {
    let project = project_with("\"build[uv]\"");
    let (output, all) = build(project.path(), None);
    assert!(output.status.success(), "build failed:\n{all}");
    assert!(
        all.contains("build-frontend build[uv]: isolated build environment "),
        "{all}"
    );
    assert!(
        all.contains(", build requirements installed with uv"),
        "{all}"
    );
    let prefix = backend_prefix(&all);
    assert!(prefix.contains("/build-env/"), "{prefix}");
}

#[test]
#[ignore = "slow: builds blasdot with zig through pip and uv"]
fn pip_without_build_isolation_runs_in_the_builds_own_environment_with_what_before_build_installed()
{
    let scratch = tempfile::tempdir().unwrap();
    // The build python holds everything blasdot needs, and a marker package besides: none
    // of it may reach the backend, which sees pip and what before-build installed only,
    // as in cibuildwheel's build venv.
    let venv = venv_with(
        scratch.path(),
        &["setuptools>=77", "scipy-openblas32", "six"],
    );
    let project = project_with(
        "{ name = \"pip\", args = [\"--no-build-isolation\"] }\nbefore-build = \"pip install --quiet setuptools>=77 scipy-openblas32\"",
    );
    append_to_setup_py(
        project.path(),
        "import importlib.util\nprint(\"six visible:\", importlib.util.find_spec(\"six\") is not None)",
    );
    let (output, all) = build(project.path(), Some(&venv.join("bin")));
    assert!(output.status.success(), "build failed:\n{all}");
    assert!(
        all.contains("build-frontend pip; args: --no-build-isolation: no build isolation: the backend runs in the build's own environment "),
        "{all}"
    );
    assert!(
        all.contains("build requirements are not installed nor checked"),
        "{all}"
    );
    let prefix = backend_prefix(&all);
    assert!(
        prefix.contains("crosswheel-work-") && prefix.ends_with("/env"),
        "{prefix}"
    );
    assert_ne!(Path::new(prefix), venv);
    assert!(all.contains("six visible: False"), "{all}");
    assert!(!all.contains("installing the build requirements"), "{all}");
}

#[test]
#[ignore = "slow: builds blasdot with zig through pip and uv"]
fn build_without_isolation_checks_the_requirements_first() {
    let scratch = tempfile::tempdir().unwrap();
    // What the build python has does not count: the build's environment is fresh.
    let venv = venv_with(scratch.path(), &["setuptools>=77", "scipy-openblas32"]);
    let project = project_with(
        "\"build; args: --no-isolation\"\nbefore-build = \"pip install --quiet setuptools>=77\"",
    );
    let (output, all) = build(project.path(), Some(&venv.join("bin")));
    assert!(!output.status.success(), "{all}");
    let line = all
        .lines()
        .find(|line| line.contains("without build isolation the build's environment"))
        .unwrap_or_else(|| panic!("{all}"));
    assert!(
        line.contains("lacks scipy-openblas32 (not installed)"),
        "{line}"
    );
    assert!(
        line.contains("before-build = \"pip install ...\"")
            && line.contains("or pass -x (--skip-dependency-check)"),
        "{line}"
    );
    assert!(!all.contains("backend ran in:"), "{all}");
}
