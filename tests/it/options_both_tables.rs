//! `[tool.crosswheel]` beside `[tool.cibuildwheel]` extends it: the crosswheel table (its
//! platform tables and overrides too) is read over the whole cibuildwheel table, so its
//! keys win and everything else of the cibuildwheel table applies; one line says both
//! were read, and which keys crosswheel's table decides.

use std::process::Command;

use crosswheel::input::options::{EnvAssignment, Environment, Plan};

use crate::common::project::Project;
use crate::common::{crosswheel_bin, without_option_variables};

fn ids(plan: &Plan) -> Vec<&str> {
    plan.identifiers().collect()
}

fn note<'p>(plan: &'p Plan, start: &str) -> Option<&'p str> {
    plan.notes
        .iter()
        .map(String::as_str)
        .find(|line| line.starts_with(start))
}

fn options<'p>(plan: &'p Plan, identifier: &str) -> &'p crosswheel::input::options::BuildOptions {
    &plan
        .builds
        .iter()
        .find(|build| build.identifier == identifier)
        .unwrap_or_else(|| panic!("no build {identifier} in {:?}", ids(plan)))
        .options
}

/// `environment = { FROM = "<value>" }`.
fn from_env(value: &str) -> Environment {
    Environment {
        assignments: vec![EnvAssignment::literal("FROM", value)],
    }
}

const CIBW: &str = r#"
[project]
name = "demo"
version = "1.0"

[tool.cibuildwheel]
build = "cp311-* cp312-*"
skip = "*-musllinux*"
archs = ["auto64"]
test-command = "pytest tests"
test-requires = "pytest"
before-build = "echo cibuildwheel"
container-engine = "podman"

[tool.cibuildwheel.linux]
archs = ["x86_64", "aarch64"]
before-all = "yum install -y libffi-devel"
environment = { FROM = "cibuildwheel-linux" }

[tool.cibuildwheel.macos]
archs = ["arm64"]
environment = { FROM = "cibuildwheel-macos" }

[[tool.cibuildwheel.overrides]]
select = "cp312-*"
test-command = "pytest tests --cp312"
test-extras = ["cibw"]
"#;

#[test]
fn crosswheel_keys_win_and_the_rest_of_the_cibuildwheel_table_applies() {
    let project = Project::with_pyproject(&format!(
        "{CIBW}\n[tool.crosswheel]\nbuild = \"cp313-*\"\narchs = \"manylinux_ppc64le\"\ntarget-requires = [\"scipy-openblas32\"]\n"
    ));
    let plan = project.plan(&[]);
    // `archs` of [tool.crosswheel] wins over the cibuildwheel table's and its platform
    // tables'; `build` too.
    assert_eq!(ids(&plan), ["cp313-manylinux_ppc64le"]);
    let linux = options(&plan, "cp313-manylinux_ppc64le");
    assert_eq!(linux.test_command.as_deref(), Some("pytest tests"));
    assert_eq!(linux.test_requires, ["pytest"]);
    assert_eq!(
        linux.before_all.as_deref(),
        Some("yum install -y libffi-devel")
    );
    assert_eq!(linux.before_build.as_deref(), Some("echo cibuildwheel"));
    // A key only crosswheel has.
    assert_eq!(linux.target_requires, ["scipy-openblas32"]);
    assert_eq!(
        note(&plan, "reading"),
        Some(
            "reading [tool.cibuildwheel] and [tool.crosswheel] of pyproject.toml ([tool.crosswheel]'s keys win: archs, build)"
        ),
        "{:?}",
        plan.notes
    );
    // What cannot apply to a cross build is still said, whichever table holds it.
    assert_eq!(
        note(&plan, "ignored"),
        Some("ignored (does not apply to cross builds): container-engine")
    );
}

#[test]
fn platform_tables_of_both_apply_crosswheels_over_cibuildwheels() {
    let project = Project::with_pyproject(&format!(
        r#"{CIBW}
[tool.crosswheel]
before-build = "echo crosswheel"

[tool.crosswheel.linux]
environment = {{ FROM = "crosswheel-linux" }}
qemu-cpu = "cortex-a72"

[tool.crosswheel.macos]
test-command = "pytest tests --macos"
"#
    ));
    let plan = project.plan(&[]);
    // cibuildwheel's platform archs stand: crosswheel's table does not set archs.
    assert_eq!(
        ids(&plan),
        [
            "cp311-manylinux_aarch64",
            "cp311-manylinux_x86_64",
            "cp311-macosx_arm64",
            "cp312-manylinux_aarch64",
            "cp312-manylinux_x86_64",
            "cp312-macosx_arm64"
        ]
    );
    let linux = options(&plan, "cp311-manylinux_aarch64");
    // [tool.crosswheel] over [tool.cibuildwheel] ...
    assert_eq!(linux.before_build.as_deref(), Some("echo crosswheel"));
    // ... [tool.crosswheel.linux] over [tool.cibuildwheel.linux] ...
    assert_eq!(linux.environment, from_env("crosswheel-linux"));
    assert_eq!(linux.qemu_cpu.as_deref(), Some("cortex-a72"));
    // ... and a key the crosswheel tables lack is the cibuildwheel table's.
    assert_eq!(linux.test_command.as_deref(), Some("pytest tests"));
    assert_eq!(
        linux.before_all.as_deref(),
        Some("yum install -y libffi-devel")
    );
    let macos = options(&plan, "cp311-macosx_arm64");
    assert_eq!(macos.environment, from_env("cibuildwheel-macos"));
    assert_eq!(macos.test_command.as_deref(), Some("pytest tests --macos"));
    assert_eq!(macos.qemu_cpu, None);
    assert_eq!(
        note(&plan, "reading"),
        Some(
            "reading [tool.cibuildwheel] and [tool.crosswheel] of pyproject.toml ([tool.crosswheel]'s keys win: before-build, linux.environment, macos.test-command)"
        ),
        "{:?}",
        plan.notes
    );
}

#[test]
fn a_crosswheel_key_wins_over_a_cibuildwheel_platform_table() {
    let project = Project::with_pyproject(&format!(
        "{CIBW}\n[tool.crosswheel]\narchs = \"aarch64\"\nenvironment = {{ FROM = \"crosswheel\" }}\n"
    ));
    let plan = project.plan(&[]);
    assert_eq!(
        ids(&plan),
        ["cp311-manylinux_aarch64", "cp312-manylinux_aarch64"]
    );
    assert_eq!(
        options(&plan, "cp311-manylinux_aarch64").environment,
        from_env("crosswheel")
    );
}

#[test]
fn both_override_lists_apply_crosswheels_after() {
    let project = Project::with_pyproject(&format!(
        r#"{CIBW}
[[tool.crosswheel.overrides]]
select = "cp312-manylinux*"
inherit.test-command = "append"
test-command = "echo crosswheel"

[[tool.crosswheel.overrides]]
select = "cp311-*"
test-extras = ["crosswheel"]
"#
    ));
    let plan = project.plan(&[]);
    // cibuildwheel's override, then crosswheel's appending to it.
    assert_eq!(
        options(&plan, "cp312-manylinux_aarch64")
            .test_command
            .as_deref(),
        Some("pytest tests --cp312 && echo crosswheel")
    );
    // Only cibuildwheel's override matches.
    let macos = options(&plan, "cp312-macosx_arm64");
    assert_eq!(macos.test_command.as_deref(), Some("pytest tests --cp312"));
    assert_eq!(macos.test_extras, ["cibw"]);
    // Only crosswheel's.
    let cp311 = options(&plan, "cp311-manylinux_x86_64");
    assert_eq!(cp311.test_command.as_deref(), Some("pytest tests"));
    assert_eq!(cp311.test_extras, ["crosswheel"]);
    assert_eq!(
        note(&plan, "reading"),
        Some(
            "reading [tool.cibuildwheel] and [tool.crosswheel] of pyproject.toml ([tool.crosswheel]'s keys win)"
        )
    );
}

#[test]
fn a_crosswheel_key_wins_over_a_matching_cibuildwheel_override() {
    let project = Project::with_pyproject(&format!(
        "{CIBW}\n[tool.crosswheel]\ntest-command = \"python -m demo.selfcheck\"\n"
    ));
    let plan = project.plan(&[]);
    assert_eq!(
        options(&plan, "cp312-manylinux_aarch64")
            .test_command
            .as_deref(),
        Some("python -m demo.selfcheck")
    );
    // What the cibuildwheel override says besides stays.
    assert_eq!(
        options(&plan, "cp312-manylinux_aarch64").test_extras,
        ["cibw"]
    );
}

#[test]
fn problems_of_both_tables_are_reported_in_one_run() {
    let project = Project::with_pyproject(
        "[tool.cibuildwheel]\ntest-comand = \"pytest\"\n[tool.crosswheel]\nbuild = 3\n",
    );
    let error = project.error(&[]).to_string();
    assert!(error.contains("`test-comand`"), "{error}");
    assert!(error.contains("`build`"), "{error}");
}

/// examples/blasdot as a cibuildwheel user has it: a `[tool.cibuildwheel]` table and one
/// crosswheel override. The cibuildwheel table's `build` still selects (it used to be lost,
/// and 35 identifiers were built).
#[test]
fn one_crosswheel_override_keeps_the_cibuildwheel_selection() {
    let dir = tempfile::tempdir().unwrap();
    let blasdot = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/blasdot/pyproject.toml"),
    )
    .unwrap();
    let project_part = &blasdot[..blasdot.find("[tool.crosswheel]").unwrap()];
    let pyproject = format!(
        r#"{project_part}
[tool.cibuildwheel]
build = "cp311-*"
test-requires = ["pytest"]
test-command = "python -m pytest -q {{project}}/tests"

[[tool.crosswheel.overrides]]
select = "*_{{i686,s390x,armv7l,riscv64}}"
target-libraries = ["scipy-openblas32"]
"#
    );
    std::fs::write(dir.path().join("pyproject.toml"), pyproject).unwrap();
    let mut command = Command::new(crosswheel_bin());
    without_option_variables(&mut command);
    let output = command
        .arg("build")
        .arg(dir.path())
        .arg("--print-build-identifiers")
        .env_remove("CIBW_BUILD")
        .env("TERM", "dumb")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}{stderr}");
    let identifiers: Vec<&str> = stdout.lines().collect();
    assert!(
        !identifiers.is_empty() && identifiers.iter().all(|id| id.starts_with("cp311-")),
        "{stdout}{stderr}"
    );
    assert_eq!(identifiers.len(), 3, "{stdout}{stderr}");
    assert!(
        stderr.contains("reading [tool.cibuildwheel] and [tool.crosswheel] of pyproject.toml"),
        "{stderr}"
    );
}

#[test]
fn a_crosswheel_override_extends_the_cibuildwheel_tables_value() {
    let project = Project::with_pyproject(&format!(
        r#"{CIBW}
[[tool.crosswheel.overrides]]
select = "cp311-*"
inherit.test-command = "prepend"
test-command = "python -c 'import demo'"
inherit.environment = "append"
environment = {{ MORE = "1" }}
"#
    ));
    let plan = project.plan(&[]);
    let linux = options(&plan, "cp311-manylinux_aarch64");
    assert_eq!(
        linux.test_command.as_deref(),
        Some("python -c 'import demo' && pytest tests")
    );
    let names: Vec<&str> = linux
        .environment
        .assignments
        .iter()
        .map(|assignment| assignment.name.as_str())
        .collect();
    assert_eq!(names, ["FROM", "MORE"]);
}

#[test]
fn crosswheels_enable_replaces_cibuildwheels() {
    let pyproject = |crosswheel: &str| {
        format!(
            "[tool.cibuildwheel]\nbuild = \"cp313*\"\narchs = \"aarch64\"\nskip = \"*-musllinux*\"\nenable = [\"cpython-freethreading\"]\n{crosswheel}"
        )
    };
    let plan = Project::with_pyproject(&pyproject("")).plan(&[]);
    assert_eq!(
        ids(&plan),
        ["cp313-manylinux_aarch64", "cp313t-manylinux_aarch64"]
    );
    let plan = Project::with_pyproject(&pyproject("[tool.crosswheel]\nenable = []\n")).plan(&[]);
    assert_eq!(ids(&plan), ["cp313-manylinux_aarch64"]);
}
