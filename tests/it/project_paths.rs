//! `{project}` and `{package}` as cibuildwheel fills them: `crosswheel build src/spam`
//! run in a project root builds the package folder `src/spam`; `{project}` is the root
//! (the working directory), `{package}` the package folder, in every option that takes
//! them (cibuildwheel's test_subdir_package). A Linux target builds in its own copy of the
//! root, as in cibuildwheel's container, and there they name the copy.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crosswheel::input::options::{CliOverrides, ProjectPaths, RepairCommand, resolve};

use crate::common::{crosswheel_bin, without_option_variables};

/// A project root holding `bin/` and the package folder `src/spam` (a setuptools project
/// whose pyproject.toml carries `table`).
fn subdir_project(table: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let package = root.path().join("src/spam");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::create_dir_all(root.path().join("bin")).unwrap();
    std::fs::write(
        package.join("setup.py"),
        "from setuptools import setup\nsetup(name='spam', version='0.1.0')\n",
    )
    .unwrap();
    std::fs::write(package.join("pyproject.toml"), table).unwrap();
    root
}

#[test]
fn with_a_package_folder_project_is_the_root_and_package_the_folder_in_every_option() {
    let root = subdir_project(
        r#"
[tool.cibuildwheel]
before-all = "ls {project}/bin {package}"
before-build = "python {project}/bin/before_build.py {package}"
before-test = "ls {package}/test"
test-command = "python {package}/test/run_tests.py {project}"
repair-wheel-command = "cp {wheel} {dest_dir} && ls {project} {package}"
config-settings = { root = "{project}", here = "{package}" }
"#,
    );
    let package = root.path().join("src/spam");
    let cli = CliOverrides {
        only: Some("cp311-manylinux_aarch64".into()),
        project_root: Some(root.path().to_path_buf()),
        ..Default::default()
    };
    let plan = resolve(&package, &cli, &BTreeMap::<String, String>::new()).unwrap();
    let (r, p) = (root.path().display(), package.display());
    assert_eq!(plan.project_root, root.path());
    let options = &plan.builds[0].options;
    assert_eq!(
        options.before_all.as_deref(),
        Some(&*format!("ls {r}/bin {p}"))
    );
    assert_eq!(
        options.before_build.as_deref(),
        Some(&*format!("python {r}/bin/before_build.py {p}"))
    );
    assert_eq!(
        options.before_test.as_deref(),
        Some(&*format!("ls {p}/test"))
    );
    assert_eq!(
        options.test_command_for(&plan.paths()).as_deref(),
        Some(&*format!("python {p}/test/run_tests.py {r}"))
    );
    let RepairCommand::Command(repair) = &options.repair else {
        panic!("repair-wheel-command not read: {:?}", options.repair)
    };
    assert_eq!(repair, &format!("cp {{wheel}} {{dest_dir}} && ls {r} {p}"));
    assert_eq!(
        options.config_settings,
        [
            ("root".to_string(), r.to_string()),
            ("here".to_string(), p.to_string())
        ]
    );
}

#[test]
fn without_a_package_folder_both_name_the_project() {
    let root = subdir_project("[tool.cibuildwheel]\nbefore-build = \"ls {project} {package}\"\n");
    let package = root.path().join("src/spam");
    let cli = CliOverrides {
        only: Some("cp311-manylinux_aarch64".into()),
        ..Default::default()
    };
    let plan = resolve(&package, &cli, &BTreeMap::<String, String>::new()).unwrap();
    assert_eq!(plan.paths(), ProjectPaths::single(&package));
    let p = package.display();
    assert_eq!(
        plan.builds[0].options.before_build.as_deref(),
        Some(&*format!("ls {p} {p}"))
    );
}

/// The `{project}` and `{package}` a Linux `before-all` was given when `crosswheel build
/// PACKAGE` ran in `cwd`; before-all then fails, so nothing is built.
fn before_all_sees(cwd: &Path, package: &str) -> (PathBuf, PathBuf) {
    let mut command = Command::new(crosswheel_bin());
    without_option_variables(&mut command);
    let out = tempfile::tempdir().unwrap();
    let output = command
        .current_dir(cwd)
        .args([
            "build",
            package,
            "--only",
            "cp311-manylinux_aarch64",
            "--output-dir",
        ])
        .arg(out.path())
        .env(
            "CIBW_BEFORE_ALL",
            "echo \"project={project}\"; echo \"package={package}\"; exit 9",
        )
        .output()
        .unwrap();
    assert!(
        !output.status.success(),
        "before-all exits 9, so the build must fail"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let printed = |name: &str| {
        let line = stdout
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("before-all printed no {name}: {stdout}"));
        PathBuf::from(line)
    };
    (printed("project"), printed("package"))
}

/// A Linux target builds in its own copy of the project root, as cibuildwheel's container
/// does at `/project`: `{project}` is the copy, never the user's tree, and keeps its name.
fn assert_is_a_copy_of(project: &Path, root: &Path) {
    assert_ne!(project, root, "{project:?} must be a copy, not the project");
    assert_eq!(project.file_name(), root.file_name());
}

/// What before-all saw when `crosswheel build src/spam` runs in the project root, with
/// `table` in the package's pyproject.toml; and that root (canonical).
fn placeholders_of_src_spam(table: &str) -> (PathBuf, PathBuf, PathBuf) {
    let root = subdir_project(table);
    let root_path = root.path().canonicalize().unwrap();
    let (project, package) = before_all_sees(&root_path, "src/spam");
    (root_path, project, package)
}

#[test]
#[ignore = "needs zig and CPython 3.11: scripts/test sets them up"]
fn a_package_folder_configured_by_cibuildwheel_has_the_working_directory_as_project() {
    let (root, project, package) = placeholders_of_src_spam("[tool.cibuildwheel]\n");
    assert_is_a_copy_of(&project, &root);
    assert_eq!(package, project.join("src/spam"));
}

/// A `[tool.crosswheel]` table beside cibuildwheel's extends it: the cibuildwheel
/// table's paths keep meaning what they mean to cibuildwheel.
#[test]
#[ignore = "needs zig and CPython 3.11: scripts/test sets them up"]
fn a_package_folder_configured_by_both_tables_has_the_working_directory_as_project() {
    let (root, project, package) =
        placeholders_of_src_spam("[tool.cibuildwheel]\n[tool.crosswheel]\n");
    assert_is_a_copy_of(&project, &root);
    assert_eq!(package, project.join("src/spam"));
}

#[test]
#[ignore = "needs zig and CPython 3.11: scripts/test sets them up"]
fn a_package_folder_without_configuration_has_the_working_directory_as_project() {
    let (root, project, package) =
        placeholders_of_src_spam("[build-system]\nrequires = [\"setuptools\"]\n");
    assert_is_a_copy_of(&project, &root);
    assert_eq!(package, project.join("src/spam"));
}

/// README's `crosswheel build examples/blasdot`: crosswheel's own table means its folder.
#[test]
#[ignore = "needs zig and CPython 3.11: scripts/test sets them up"]
fn a_package_folder_with_its_own_tool_crosswheel_table_is_its_own_project() {
    let (root, project, package) = placeholders_of_src_spam("[tool.crosswheel]\n");
    assert_is_a_copy_of(&project, &root.join("src/spam"));
    assert_eq!(package, project);
}

#[test]
#[ignore = "needs zig and CPython 3.11: scripts/test sets them up"]
fn crosswheel_build_of_a_folder_outside_the_working_directory_is_its_own_project() {
    let root = subdir_project("[tool.cibuildwheel]\n");
    let package = root.path().canonicalize().unwrap().join("src/spam");
    let elsewhere = tempfile::tempdir().unwrap();
    let (project, seen_package) = before_all_sees(elsewhere.path(), package.to_str().unwrap());
    assert_is_a_copy_of(&project, &package);
    assert_eq!(seen_package, project);
}

/// cibuildwheel's test_overridden_path on Linux: `before-all` makes `new_path/python` in the
/// project and `environment` puts `$(pwd)/new_path` first on PATH. Each Linux target runs
/// `before-all` in its own copy, so the second target's `mkdir` does not find the first
/// one's folder; each build then stops at the `python` check, naming its copy's
/// `new_path/python`; the user's tree is left as it was.
#[test]
#[ignore = "needs zig and CPython 3.11: scripts/test sets them up"]
fn each_linux_target_runs_before_all_in_its_own_copy_of_the_project() {
    let root = subdir_project("[build-system]\nrequires = [\"setuptools\"]\n");
    let package = root.path().join("src/spam");
    let out = tempfile::tempdir().unwrap();
    let mut command = Command::new(crosswheel_bin());
    without_option_variables(&mut command);
    let output = command
        .arg("build")
        .arg(&package)
        .arg("--output-dir")
        .arg(out.path())
        .env(
            "CIBW_BUILD",
            "cp311-manylinux_aarch64 cp311-manylinux_ppc64le",
        )
        .env(
            "CIBW_BEFORE_ALL",
            "mkdir new_path && touch new_path/python && chmod +x new_path/python",
        )
        .env("CIBW_ENVIRONMENT", r#"PATH="$(pwd)/new_path:$PATH""#)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(!stderr.contains("before-all failed"), "{stderr}");
    for identifier in ["cp311-manylinux_aarch64", "cp311-manylinux_ppc64le"] {
        let failure = stderr
            .lines()
            .find(|line| line.contains(&format!("ERROR {identifier}: ")))
            .unwrap_or_else(|| panic!("no error line for {identifier}: {stderr}"));
        assert!(
            failure.contains("python available on PATH doesn't match our installed instance"),
            "{failure}"
        );
        assert!(
            failure.contains("/spam/new_path/python instead of"),
            "{failure}"
        );
    }
    assert!(
        !package.join("new_path").exists(),
        "the project was written to"
    );
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
}
