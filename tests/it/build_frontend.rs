//! `build-frontend` in real builds of examples/blasdot (cp311-manylinux_aarch64), from a
//! `[tool.cibuildwheel]` table as a cibuildwheel user has it. The project's setup.py prints
//! `sys.prefix`, so each build's own output shows which environment the backend ran in:
//! - `build[uv]`: an isolated environment in crosswheel's cache, filled by uv;
//! - `pip; args: --no-build-isolation`: the build's own environment, which reads the build
//!   python's (a venv made here with blasdot's build requirements), nothing installed;
//! - `build; args: --no-isolation`: the build python's own environment too, but build
//!   checks the requirements first: a venv without scipy-openblas32 is one error naming it.

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
    let setup = project.path().join("setup.py");
    let text = std::fs::read_to_string(&setup).unwrap();
    std::fs::write(
        &setup,
        format!("{text}\nimport sys\nprint(\"backend ran in:\", sys.prefix)\n"),
    )
    .unwrap();
    project
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
fn pip_without_build_isolation_runs_in_the_build_pythons_own_environment() {
    let scratch = tempfile::tempdir().unwrap();
    // blasdot's setup.py imports scipy_openblas32 on the host to list its requirements.
    let venv = venv_with(scratch.path(), &["setuptools>=77", "scipy-openblas32"]);
    let project = project_with("{ name = \"pip\", args = [\"--no-build-isolation\"] }");
    let (output, all) = build(project.path(), Some(&venv.join("bin")));
    assert!(output.status.success(), "build failed:\n{all}");
    assert!(
        all.contains("build-frontend pip; args: --no-build-isolation: no build isolation: the backend runs in "),
        "{all}"
    );
    assert!(
        all.contains("build requirements are not installed nor checked"),
        "{all}"
    );
    // The build's own environment (docs/hooks.md), which reads the user's venv: the
    // backend found setuptools and scipy-openblas32 there.
    let prefix = backend_prefix(&all);
    assert!(
        prefix.contains("crosswheel-work-") && prefix.ends_with("/env"),
        "{prefix}"
    );
    assert_ne!(Path::new(prefix), venv);
    assert!(!all.contains("installing the build requirements"), "{all}");
}

#[test]
#[ignore = "slow: builds blasdot with zig through pip and uv"]
fn build_without_isolation_checks_the_requirements_first() {
    let scratch = tempfile::tempdir().unwrap();
    let venv = venv_with(scratch.path(), &["setuptools>=77"]);
    let project = project_with("\"build; args: --no-isolation\"");
    let (output, all) = build(project.path(), Some(&venv.join("bin")));
    assert!(!output.status.success(), "{all}");
    let line = all
        .lines()
        .find(|line| line.contains("without build isolation the build python"))
        .unwrap_or_else(|| panic!("{all}"));
    assert!(
        line.contains("lacks scipy-openblas32 (not installed)"),
        "{line}"
    );
    assert!(
        line.contains("or pass -x (--skip-dependency-check)"),
        "{line}"
    );
    assert!(!all.contains("backend ran in:"), "{all}");
}
