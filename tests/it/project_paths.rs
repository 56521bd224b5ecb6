//! `{project}` and `{package}` as cibuildwheel fills them: `crosswheel build src/spam`
//! run in a project root builds the package folder `src/spam`; `{project}` is the root
//! (the working directory), `{package}` the package folder, in every option that takes
//! them (cibuildwheel's test_subdir_package).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crosswheel::support::options::{CliOverrides, ProjectPaths, RepairCommand, resolve};

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

/// What `before-all` printed when `crosswheel build PACKAGE` ran in `cwd`; before-all then
/// fails, so nothing is built.
fn before_all_sees(cwd: &Path, package: &str) -> String {
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
            "echo \"project={project} package={package}\"; exit 9",
        )
        .output()
        .unwrap();
    assert!(
        !output.status.success(),
        "before-all exits 9, so the build must fail"
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The project root (canonical) and what its before-all printed for `{project}` and
/// `{package}` when `crosswheel build src/spam` runs there, with `table` in the root's
/// pyproject.toml.
fn placeholders_of_src_spam(table: &str) -> (std::path::PathBuf, String) {
    let root = subdir_project(table);
    let root_path = root.path().canonicalize().unwrap();
    let seen = before_all_sees(&root_path, "src/spam");
    (root_path, seen)
}

#[test]
fn a_package_folder_configured_by_cibuildwheel_has_the_working_directory_as_project() {
    let (root, seen) = placeholders_of_src_spam("[tool.cibuildwheel]\n");
    let (r, p) = (root.display(), root.join("src/spam").display().to_string());
    assert!(
        seen.contains(&format!("project={r} package={p}")),
        "before-all printed: {seen}"
    );
}

#[test]
fn a_package_folder_without_configuration_has_the_working_directory_as_project() {
    let (root, seen) = placeholders_of_src_spam("[build-system]\nrequires = [\"setuptools\"]\n");
    let (r, p) = (root.display(), root.join("src/spam").display().to_string());
    assert!(
        seen.contains(&format!("project={r} package={p}")),
        "before-all printed: {seen}"
    );
}

/// README's `crosswheel build examples/blasdot`: crosswheel's own table means its folder.
#[test]
fn a_package_folder_with_its_own_tool_crosswheel_table_is_its_own_project() {
    let root = subdir_project("[tool.crosswheel]\n");
    let root_path = root.path().canonicalize().unwrap();
    let seen = before_all_sees(&root_path, "src/spam");
    let p = root_path.join("src/spam");
    let p = p.display();
    assert!(
        seen.contains(&format!("project={p} package={p}")),
        "before-all printed: {seen}"
    );
}

#[test]
fn crosswheel_build_of_a_folder_outside_the_working_directory_is_its_own_project() {
    let root = subdir_project("[tool.cibuildwheel]\n");
    let package = root.path().canonicalize().unwrap().join("src/spam");
    let elsewhere = tempfile::tempdir().unwrap();
    let seen = before_all_sees(elsewhere.path(), package.to_str().unwrap());
    let p = package.display();
    assert!(
        seen.contains(&format!("project={p} package={p}")),
        "before-all printed: {seen}"
    );
}
