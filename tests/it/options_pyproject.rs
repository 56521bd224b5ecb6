//! How `[tool.crosswheel]`, its platform tables, overrides, `CROSSWHEEL_*` variables and
//! flags combine into each build's options.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crosswheel::input::options::{
    BuildSpec, CliOverrides, EnvPart, FrontendName, Plan, ProjectPaths, RepairCommand, resolve,
};
use crosswheel::target::ToolchainKind;

use crate::common::project::Project;

fn build<'p>(plan: &'p Plan, identifier: &str) -> &'p BuildSpec {
    plan.builds
        .iter()
        .find(|build| build.identifier == identifier)
        .unwrap_or_else(|| {
            panic!(
                "{identifier} not in the plan: {:?}",
                plan.identifiers().collect::<Vec<_>>()
            )
        })
}

const PLATFORM_TABLES: &str = r#"
[project]
name = "demo"

[tool.crosswheel]
build = "cp311-*"
test-command = "pytest {project}/tests"
test-requires = ["pytest", "numpy >= 2"]
target-requires = ["scipy-openblas32"]
environment = { CFLAGS = "-O2 -g0", PATH = "$HOME/bin:$PATH" }

[tool.crosswheel.linux]
test-command = "python -c 'import demo'"
qemu-cpu = "cortex-a72"

[tool.crosswheel.macos]
macos-deployment-target = "12.3"
test-requires = "pytest"
"#;

#[test]
fn platform_tables_replace_top_level_values_for_their_platform_only() {
    let project = Project::with_pyproject(PLATFORM_TABLES);
    let plan = project.plan(&[]);

    let aarch64 = &build(&plan, "cp311-manylinux_aarch64").options;
    assert_eq!(
        aarch64.test_command.as_deref(),
        Some("python -c 'import demo'")
    );
    assert_eq!(aarch64.test_requires, ["pytest", "numpy >= 2"]);
    assert_eq!(aarch64.qemu_cpu.as_deref(), Some("cortex-a72"));
    assert_eq!(aarch64.macos_deployment_target.to_string(), "10.13");

    let macos = &build(&plan, "cp311-macosx_arm64").options;
    assert_eq!(
        macos.test_command.as_deref(),
        Some("pytest {project}/tests")
    );
    assert_eq!(macos.test_requires, ["pytest"]);
    assert_eq!(macos.qemu_cpu, None);
    assert_eq!(macos.macos_deployment_target.to_string(), "12.3");
}

#[test]
fn top_level_values_reach_every_build() {
    let project = Project::with_pyproject(PLATFORM_TABLES);
    let plan = project.plan(&[]);
    assert_eq!(plan.builds.len(), 3);
    for spec in &plan.builds {
        assert_eq!(
            spec.options.target_requires,
            ["scipy-openblas32"],
            "{}",
            spec.identifier
        );
        assert_eq!(spec.python.version(), "3.11");
        assert_eq!(spec.python.to_string(), "cp311");
    }
    assert_eq!(
        plan.config_file.as_deref(),
        Some(project.path().join("pyproject.toml").as_path())
    );
}

#[test]
fn environment_table_keeps_file_order_and_variable_references() {
    let project = Project::with_pyproject(PLATFORM_TABLES);
    let plan = project.plan(&[]);
    let environment = &build(&plan, "cp311-manylinux_ppc64le").options.environment;
    let names: Vec<&str> = environment
        .assignments
        .iter()
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(names, ["CFLAGS", "PATH"]);
    let mut vars = BTreeMap::from([
        ("HOME".to_string(), "/home/me".to_string()),
        ("PATH".to_string(), "/usr/bin".to_string()),
    ]);
    environment.apply(&mut vars, project.path()).unwrap();
    assert_eq!(vars["CFLAGS"], "-O2 -g0");
    assert_eq!(vars["PATH"], "/home/me/bin:/usr/bin");
}

#[test]
fn test_command_placeholders_are_filled_and_quoted() {
    let project = Project::with_pyproject(PLATFORM_TABLES);
    let plan = project.plan(&[]);
    let options = &build(&plan, "cp311-macosx_arm64").options;
    let paths = ProjectPaths::single(Path::new("/src/my project"));
    let command = options.test_command_for(&paths);
    assert_eq!(command.as_deref(), Some("pytest '/src/my project'/tests"));
}

const OVERRIDES: &str = r#"
[tool.crosswheel]
python = ["cp310", "cp311", "cp312"]
archs = ["manylinux_aarch64", "arm64"]
test-command = "pytest"
before-build = "echo base"
config-settings = { setup-args = ["-Dblas=openblas", "-Dlapack=openblas"] }

[[tool.crosswheel.overrides]]
select = "cp310-*"
test-command = "python -m unittest"
qemu-cpu = "max"

[[tool.crosswheel.overrides]]
select = ["*-macosx_*"]
inherit.before-build = "append"
before-build = "echo macos"
inherit.config-settings = "prepend"
config-settings = "builddir=build-mac"
"#;

#[test]
fn overrides_apply_to_the_builds_they_select() {
    let project = Project::with_pyproject(OVERRIDES);
    let plan = project.plan(&[]);

    let old = &build(&plan, "cp310-manylinux_aarch64").options;
    assert_eq!(old.test_command.as_deref(), Some("python -m unittest"));
    assert_eq!(old.qemu_cpu.as_deref(), Some("max"));

    let new = &build(&plan, "cp312-manylinux_aarch64").options;
    assert_eq!(new.test_command.as_deref(), Some("pytest"));
    assert_eq!(new.qemu_cpu, None);
    assert_eq!(new.before_build.as_deref(), Some("echo base"));
}

#[test]
fn overrides_inherit_by_appending_or_prepending() {
    let project = Project::with_pyproject(OVERRIDES);
    let plan = project.plan(&[]);
    let mac = &build(&plan, "cp311-macosx_arm64").options;
    assert_eq!(mac.before_build.as_deref(), Some("echo base && echo macos"));
    let settings: Vec<(&str, &str)> = mac
        .config_settings
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        settings,
        [
            ("builddir", "build-mac"),
            ("setup-args", "-Dblas=openblas"),
            ("setup-args", "-Dlapack=openblas")
        ]
    );
}

/// cibuildwheel 4.3's `inherit` at every level, its own documented examples: the top
/// table over the defaults, a platform table over the top table, and `CIBW_INHERIT` for
/// the variables (an option alone appends; a platform's suffix names its variable).
const EVERY_LEVEL: &str = r#"
[tool.cibuildwheel]
build = "cp311-*"
archs = ["aarch64", "arm64"]
before-all = "make -C third_party_lib"
inherit.audit-requires = "append"
audit-requires = ["twine"]
inherit.test-requires = "prepend"
test-requires = ["pytest"]

[tool.cibuildwheel.linux]
inherit.before-all = "prepend"
before-all = "yum install -y libffi-devel"

[tool.cibuildwheel.macos]
inherit = "before-all"
before-all = "brew install libffi"
"#;

#[test]
fn inherit_works_at_every_level_as_cibuildwheel_4_3_reads_it() {
    let project = Project::with_pyproject(EVERY_LEVEL);
    let plan = project.plan(&[]);
    let linux = &build(&plan, "cp311-manylinux_aarch64").options;
    assert_eq!(
        linux.before_all.as_deref(),
        Some("yum install -y libffi-devel && make -C third_party_lib")
    );
    let mac = &build(&plan, "cp311-macosx_arm64").options;
    assert_eq!(
        mac.before_all.as_deref(),
        Some("make -C third_party_lib && brew install libffi")
    );
    let defaults = Project::with_pyproject(
        "[tool.cibuildwheel]\nbuild = \"cp311-*\"\narchs = [\"aarch64\"]\n",
    )
    .plan(&[]);
    let default_audit = &build(&defaults, "cp311-manylinux_aarch64")
        .options
        .audit_requires;
    let audit = &linux.audit_requires;
    assert_eq!(audit.len(), default_audit.len() + 1, "{audit:?}");
    assert_eq!(audit.last().map(String::as_str), Some("twine"));

    let env = project.plan(&[
        ("CIBW_BEFORE_ALL_LINUX", "echo env-linux"),
        ("CIBW_TEST_REQUIRES", "numpy"),
        ("CIBW_INHERIT", "test-requires; before-all-linux: prepend"),
    ]);
    let linux = &build(&env, "cp311-manylinux_aarch64").options;
    assert_eq!(
        linux.before_all.as_deref(),
        Some("echo env-linux && yum install -y libffi-devel && make -C third_party_lib")
    );
    assert_eq!(linux.test_requires, ["pytest", "numpy"]);
}

#[test]
fn an_inherit_rule_for_a_single_value_in_cibw_inherit_is_refused_by_name() {
    let project = Project::with_pyproject(EVERY_LEVEL);
    let error = project.error(&[("CIBW_INHERIT", "toolchain")]).to_string();
    assert!(
        error.contains("CIBW_INHERIT")
            && error.contains("only commands, lists and tables can be inherited"),
        "{error}"
    );
}

#[test]
fn later_overrides_win_and_both_apply_to_one_build() {
    let project = Project::with_pyproject(OVERRIDES);
    let plan = project.plan(&[]);
    let both = &build(&plan, "cp310-macosx_arm64").options;
    assert_eq!(both.qemu_cpu.as_deref(), Some("max"));
    assert_eq!(both.test_command.as_deref(), Some("python -m unittest"));
    assert_eq!(
        both.before_build.as_deref(),
        Some("echo base && echo macos")
    );
}

#[test]
fn environment_variables_beat_pyproject_and_overrides() {
    let project = Project::with_pyproject(OVERRIDES);
    let plan = project.plan(&[
        ("CROSSWHEEL_TEST_COMMAND", "echo from-env"),
        ("CROSSWHEEL_BUILD", "cp310-*"),
    ]);
    assert_eq!(
        plan.identifiers().collect::<Vec<_>>(),
        ["cp310-manylinux_aarch64", "cp310-macosx_arm64"]
    );
    for spec in &plan.builds {
        assert_eq!(spec.options.test_command.as_deref(), Some("echo from-env"));
    }
}

#[test]
fn platform_specific_variables_beat_general_ones_on_their_platform() {
    let project = Project::with_pyproject(PLATFORM_TABLES);
    let plan = project.plan(&[
        ("CROSSWHEEL_TEST_COMMAND", "echo general"),
        ("CROSSWHEEL_TEST_COMMAND_LINUX", "echo linux"),
    ]);
    assert_eq!(
        build(&plan, "cp311-manylinux_aarch64")
            .options
            .test_command
            .as_deref(),
        Some("echo linux")
    );
    assert_eq!(
        build(&plan, "cp311-macosx_arm64")
            .options
            .test_command
            .as_deref(),
        Some("echo general")
    );
}

#[test]
fn command_line_beats_environment_variables() {
    let project = Project::with_pyproject(PLATFORM_TABLES);
    let mut cli = CliOverrides::default();
    cli.set("archs", "manylinux_ppc64le")
        .set("toolchain", "gcc");
    let plan = project.plan_with(
        &cli,
        &[
            ("CROSSWHEEL_ARCHS", "aarch64 arm64"),
            ("CROSSWHEEL_TOOLCHAIN", "zig"),
        ],
    );
    assert_eq!(
        plan.identifiers().collect::<Vec<_>>(),
        ["cp311-manylinux_ppc64le"]
    );
    assert_eq!(plan.builds[0].options.toolchain, ToolchainKind::Gcc);
}

#[test]
fn empty_variables_do_not_wipe_configured_lists_but_do_clear_commands() {
    let project = Project::with_pyproject(PLATFORM_TABLES);
    let plan = project.plan(&[
        ("CROSSWHEEL_TEST_REQUIRES", ""),
        ("CROSSWHEEL_TEST_COMMAND", ""),
    ]);
    let macos = &build(&plan, "cp311-macosx_arm64").options;
    assert_eq!(macos.test_requires, ["pytest"]);
    assert_eq!(macos.test_command, None);
    assert!(!macos.runs_tests());
}

#[test]
fn repair_is_builtin_unless_replaced_or_disabled() {
    let default = Project::with_pyproject("[tool.crosswheel]\nbuild = \"cp311-*\"\n");
    let plan = default.plan(&[]);
    assert_eq!(plan.builds[0].options.repair, RepairCommand::Builtin);

    let custom = Project::with_pyproject(
        "[tool.crosswheel]\nbuild = \"cp311-*\"\nrepair-wheel-command = \"repairwheel -o {dest_dir} {wheel}\"\n",
    );
    let plan = custom.plan(&[]);
    let repair = &plan.builds[0].options.repair;
    assert_eq!(
        repair
            .command_for("dist/a.whl", "wheelhouse", None)
            .as_deref(),
        Some("repairwheel -o wheelhouse dist/a.whl")
    );

    let plan = custom.plan(&[("CROSSWHEEL_REPAIR_WHEEL_COMMAND", "")]);
    assert_eq!(plan.builds[0].options.repair, RepairCommand::Skip);
}

#[test]
fn environment_string_form_and_pass_through() {
    let project = Project::with_pyproject(
        r#"
[tool.crosswheel]
build = "cp311-manylinux_aarch64"
environment = 'OPT="-O3 -g0" LIB=$PREFIX/lib'
environment-pass = ["CI_TOKEN", "NOT_SET_ANYWHERE"]
"#,
    );
    let plan = project.plan(&[("CI_TOKEN", "s3cret")]);
    let environment = &plan.builds[0].options.environment;
    let names: Vec<&str> = environment
        .assignments
        .iter()
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(names, ["CI_TOKEN", "OPT", "LIB"]);
    assert_eq!(
        environment.assignments[2].value,
        [
            EnvPart::Variable("PREFIX".into()),
            EnvPart::Literal("/lib".into())
        ]
    );
    assert_eq!(
        plan.builds[0].options.environment_pass,
        ["CI_TOKEN", "NOT_SET_ANYWHERE"]
    );
}

#[test]
fn frontend_lists_and_output_dir_forms() {
    let project = Project::with_pyproject(
        r#"
[tool.crosswheel]
build = "cp311-manylinux_aarch64"
build-frontend = { name = "pip", args = ["--no-build-isolation"] }
test-extras = "test,docs"
test-sources = "tests 'data files'"
output-dir = "dist/wheels"
"#,
    );
    let plan = project.plan(&[]);
    let options = &plan.builds[0].options;
    assert_eq!(options.build_frontend.name, FrontendName::Pip);
    assert_eq!(options.build_frontend.args, ["--no-build-isolation"]);
    assert_eq!(options.test_extras, ["test", "docs"]);
    assert_eq!(options.test_sources, ["tests", "data files"]);
    assert_eq!(options.output_dir, project.path().join("dist/wheels"));

    let mut cli = CliOverrides::default();
    cli.set("output-dir", "out");
    let plan = project.plan_with(&cli, &[]);
    assert_eq!(plan.builds[0].options.output_dir, PathBuf::from("out"));
}

#[test]
fn config_file_flag_replaces_pyproject() {
    let project = Project::with_pyproject("[tool.crosswheel]\nbuild = \"cp311-*\"\n");
    let other = project.path().join("ci.toml");
    std::fs::write(
        &other,
        "[tool.crosswheel]\npython = [\"cp311\", \"cp312\"]\nbuild = \"cp312-macosx_arm64\"\n",
    )
    .unwrap();
    let cli = CliOverrides {
        config_file: Some(other.clone()),
        ..CliOverrides::default()
    };
    let plan = project.plan_with(&cli, &[]);
    assert_eq!(
        plan.identifiers().collect::<Vec<_>>(),
        ["cp312-macosx_arm64"]
    );
    assert_eq!(plan.config_file, Some(other));
}

/// cibuildwheel's test_from_sdist: `--config-file {package}/wheel_build_config.toml`.
#[test]
fn config_file_flag_fills_the_package_placeholder() {
    let project = Project::with_pyproject("[tool.crosswheel]\nbuild = \"cp311-*\"\n");
    let inside = project.path().join("wheel_build_config.toml");
    std::fs::write(
        &inside,
        "[tool.cibuildwheel]\nbuild = \"cp312-macosx_arm64\"\n",
    )
    .unwrap();
    let cli = CliOverrides {
        config_file: Some("{package}/wheel_build_config.toml".into()),
        ..CliOverrides::default()
    };
    let plan = project.plan_with(&cli, &[]);
    assert_eq!(
        plan.identifiers().collect::<Vec<_>>(),
        ["cp312-macosx_arm64"]
    );
    assert_eq!(plan.config_file, Some(inside));
}

#[test]
fn a_setup_py_project_without_pyproject_gets_the_defaults() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("setup.py"), "").unwrap();
    let plan = resolve(dir.path(), &CliOverrides::default(), &BTreeMap::new()).unwrap();
    assert_eq!(plan.config_file, None);
    // Every CPython upstream supports (3.15.0 is released), and 3.14's free-threaded build,
    // for three targets, like cibuildwheel.
    let identifiers: Vec<&str> = plan.identifiers().collect();
    assert_eq!(identifiers.len(), 21, "{identifiers:?}");
    for version in [
        "cp310", "cp311", "cp312", "cp313", "cp314", "cp314t", "cp315",
    ] {
        for platform in ["manylinux_aarch64", "manylinux_ppc64le", "macosx_arm64"] {
            let identifier = format!("{version}-{platform}");
            assert!(identifiers.contains(&identifier.as_str()), "{identifier}");
        }
    }
    let options = &plan.builds[0].options;
    assert_eq!(options.toolchain, ToolchainKind::Zig);
    assert_eq!(options.output_dir, PathBuf::from("wheelhouse"));
    assert_eq!(options.build_frontend.name, FrontendName::Build);
    assert_eq!(options.repair, RepairCommand::Builtin);
}

#[test]
fn a_folder_that_is_no_project_is_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let error = resolve(dir.path(), &CliOverrides::default(), &BTreeMap::new()).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{} is not a Python project: it has no pyproject.toml or setup.py",
            dir.path().display()
        )
    );
    let missing = dir.path().join("absent");
    let error = resolve(&missing, &CliOverrides::default(), &BTreeMap::new()).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("no such project folder: {}", missing.display())
    );
}

#[test]
fn gcc_can_be_chosen_for_linux_alone() {
    let project = Project::with_pyproject(
        "[tool.crosswheel]\nbuild = \"cp311-*\"\n[tool.crosswheel.linux]\ntoolchain = \"gcc\"\n",
    );
    let plan = project.plan(&[]);
    assert_eq!(
        build(&plan, "cp311-manylinux_aarch64").options.toolchain,
        ToolchainKind::Gcc
    );
    assert_eq!(
        build(&plan, "cp311-macosx_arm64").options.toolchain,
        ToolchainKind::Zig
    );
}

#[test]
fn test_timeout_is_read_per_build_in_seconds_or_with_a_unit() {
    let project = Project::with_pyproject(
        "[tool.crosswheel]\nbuild = \"cp311-*\"\ntest-timeout = 90\n\n[tool.crosswheel.linux]\ntest-timeout = \"30m\"\n",
    );
    let plan = project.plan(&[]);
    let seconds = |id: &str| {
        build(&plan, id)
            .options
            .test_timeout
            .map(|limit| limit.as_secs())
    };
    assert_eq!(seconds("cp311-manylinux_aarch64"), Some(1800));
    assert_eq!(seconds("cp311-macosx_arm64"), Some(90));
    let plan = project.plan(&[("CROSSWHEEL_TEST_TIMEOUT", "1h30m")]);
    assert_eq!(
        build(&plan, "cp311-macosx_arm64").options.test_timeout,
        Some(std::time::Duration::from_secs(5400))
    );
    let unset = Project::with_pyproject("[tool.crosswheel]\nbuild = \"cp311-*\"\n");
    let plan = unset.plan(&[]);
    assert!(plan.builds.iter().all(|b| b.options.test_timeout.is_none()));
}
