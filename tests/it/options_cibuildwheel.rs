//! A cibuildwheel user's configuration works unchanged: `[tool.cibuildwheel]` is read (a
//! `[tool.crosswheel]` table beside it extends it: options_both_tables.rs), `CIBW_*`
//! variables apply where the `CROSSWHEEL_*` one is unset, every option of cibuildwheel's
//! schema is accepted, what cannot apply to a cross build is said once, and every problem
//! is reported in one run.

use std::collections::BTreeMap;

use crosswheel::input::options::{
    CliOverrides, FrontendName, OptionsError, Plan, env_var_warnings,
};

use crate::common::project::Project;

fn ids(plan: &Plan) -> Vec<&str> {
    plan.identifiers().collect()
}

fn note<'p>(plan: &'p Plan, start: &str) -> Option<&'p str> {
    plan.notes
        .iter()
        .map(String::as_str)
        .find(|line| line.starts_with(start))
}

const CIBW: &str = r#"
[project]
name = "demo"
version = "1.0"

[tool.cibuildwheel]
build = "cp311-* cp312-*"
skip = ["*-musllinux*", "pp*"]
archs = ["auto64"]
test-command = "pytest {project}/tests"
test-requires = "pytest"
manylinux-x86_64-image = "manylinux_2_28"
container-engine = "podman"

[tool.cibuildwheel.linux]
archs = ["x86_64", "aarch64", "i686"]
manylinux-aarch64-image = "manylinux2014"
before-all = "yum install -y libffi-devel"

[tool.cibuildwheel.macos]
archs = ["x86_64", "universal2", "arm64"]

[tool.cibuildwheel.windows]
archs = ["AMD64", "ARM64"]
before-build = "pip install delvewheel"

[tool.cibuildwheel.pyodide]
build-frontend = { name = "pyodide-build", args = ["--exports", "whole_archive"] }

[[tool.cibuildwheel.overrides]]
select = "*-manylinux_x86_64"
manylinux-x86_64-image = "manylinux2014"
inherit.xbuild-tools = "append"
xbuild-tools = ["cmake"]
"#;

#[test]
fn cibuildwheel_table_is_read_without_a_crosswheel_one_and_said_so() {
    let project = Project::with_pyproject(CIBW);
    let plan = project.plan(&[]);
    assert_eq!(
        ids(&plan),
        [
            "cp311-manylinux_aarch64",
            "cp311-manylinux_x86_64",
            "cp311-manylinux_i686",
            "cp311-macosx_arm64",
            "cp311-macosx_x86_64",
            "cp311-macosx_universal2",
            "cp312-manylinux_aarch64",
            "cp312-manylinux_x86_64",
            "cp312-manylinux_i686",
            "cp312-macosx_arm64",
            "cp312-macosx_x86_64",
            "cp312-macosx_universal2"
        ]
    );
    assert_eq!(
        note(&plan, "reading"),
        Some("reading [tool.cibuildwheel] of pyproject.toml (no [tool.crosswheel] table)")
    );
    let linux = &plan.builds[0].options;
    assert_eq!(
        linux.before_all.as_deref(),
        Some("yum install -y libffi-devel")
    );
    assert_eq!(linux.test_requires, ["pytest"]);
}

#[test]
fn options_that_do_not_apply_are_reported_once_in_one_line() {
    let project = Project::with_pyproject(CIBW);
    let plan = project.plan(&[]);
    let ignored: Vec<&String> = plan
        .notes
        .iter()
        .filter(|line| line.starts_with("ignored"))
        .collect();
    assert_eq!(
        ignored,
        [
            "ignored (does not apply to cross builds): container-engine, [windows], [pyodide], xbuild-tools"
        ]
    );
}

#[test]
fn architectures_crosswheel_does_not_build_are_kept_and_named() {
    // i686 of CIBW's Linux archs is a target now: nothing of it is left unbuilt.
    let plan = Project::with_pyproject(CIBW).plan(&[]);
    assert!(ids(&plan).contains(&"cp311-manylinux_i686"));
    assert_eq!(note(&plan, "not built here"), None, "{:?}", plan.notes);
    let project = Project::with_pyproject(
        "[tool.cibuildwheel]\nbuild = \"cp311-*\"\n[tool.cibuildwheel.linux]\narchs = [\"i686\", \"AMD64\"]\n",
    );
    let plan = project.plan(&[]);
    let line = note(&plan, "not built here").unwrap_or_else(|| panic!("{:?}", plan.notes));
    assert!(line.starts_with("not built here: AMD64"), "{line}");
}

#[test]
fn archs_keywords_mean_what_cibuildwheel_builds_on_githubs_default_runners() {
    let plan_of = |archs: &str| {
        let project = Project::with_pyproject(&format!(
            "[tool.cibuildwheel]\nbuild = \"cp311-*\"\narchs = {archs}\n"
        ));
        project.plan(&[])
    };
    // Each architecture a keyword names is its manylinux and its musllinux build.
    for keyword in ["auto64", "native", "NATIVE"] {
        assert_eq!(
            ids(&plan_of(&format!("\"{keyword}\""))),
            [
                "cp311-manylinux_x86_64",
                "cp311-musllinux_x86_64",
                "cp311-macosx_arm64"
            ],
            "{keyword}"
        );
    }
    // ubuntu-latest's `auto` adds i686.
    let auto = plan_of("\"auto\"");
    assert_eq!(
        ids(&auto),
        [
            "cp311-manylinux_x86_64",
            "cp311-manylinux_i686",
            "cp311-musllinux_x86_64",
            "cp311-musllinux_i686",
            "cp311-macosx_arm64"
        ]
    );
    assert_eq!(note(&auto, "not built here"), None, "{:?}", auto.notes);
    // The common cibuildwheel spelling: the runner's own architectures plus emulated ones.
    assert_eq!(
        ids(&plan_of("[\"auto64\", \"aarch64\"]")),
        [
            "cp311-manylinux_aarch64",
            "cp311-manylinux_x86_64",
            "cp311-musllinux_x86_64",
            "cp311-musllinux_aarch64",
            "cp311-macosx_arm64"
        ]
    );
    assert_eq!(
        ids(&plan_of("\"all\"")),
        [
            "cp311-manylinux_aarch64",
            "cp311-manylinux_ppc64le",
            "cp311-manylinux_x86_64",
            "cp311-manylinux_s390x",
            "cp311-manylinux_i686",
            "cp311-manylinux_armv7l",
            "cp311-manylinux_riscv64",
            "cp311-musllinux_x86_64",
            "cp311-musllinux_aarch64",
            "cp311-musllinux_ppc64le",
            "cp311-musllinux_s390x",
            "cp311-musllinux_i686",
            "cp311-musllinux_armv7l",
            "cp311-musllinux_riscv64",
            "cp311-macosx_arm64",
            "cp311-macosx_x86_64",
            "cp311-macosx_universal2"
        ]
    );
}

#[test]
fn a_project_without_archs_gets_the_three_cross_targets() {
    let project = Project::with_pyproject("[tool.cibuildwheel]\nbuild = \"cp311-*\"\n");
    assert_eq!(
        ids(&project.plan(&[])),
        [
            "cp311-manylinux_aarch64",
            "cp311-manylinux_ppc64le",
            "cp311-macosx_arm64"
        ]
    );
}

#[test]
fn archs_on_the_command_line_pick_targets() {
    let project = Project::with_pyproject("[tool.cibuildwheel]\nbuild = \"cp311-*\"\n");
    let cli = {
        let mut cli = CliOverrides::default();
        cli.set("archs", "aarch64,arm64");
        cli
    };
    let plan = project.resolve(&cli, &[]).unwrap();
    // An architecture is both C libraries' builds, as in cibuildwheel.
    assert_eq!(
        ids(&plan),
        [
            "cp311-manylinux_aarch64",
            "cp311-musllinux_aarch64",
            "cp311-macosx_arm64"
        ]
    );
    let mut cli = CliOverrides::default();
    cli.set("archs", "auto32");
    cli.allow_empty = true;
    let plan = project.resolve(&cli, &[]).unwrap();
    assert_eq!(ids(&plan), ["cp311-manylinux_i686", "cp311-musllinux_i686"]);
}

#[test]
fn cibw_variables_apply_where_crosswheel_ones_are_unset() {
    let project = Project::with_pyproject(
        "[tool.cibuildwheel]\nbuild = \"cp311-*\"\ntest-command = \"from-file\"\n",
    );
    let plan = project.plan(&[
        ("CIBW_BUILD", "cp312-*"),
        ("CIBW_SKIP", "*-macosx_*"),
        ("CIBW_ARCHS_LINUX", "manylinux_ppc64le"),
        ("CIBW_TEST_COMMAND", "from-cibw"),
        ("CIBW_ENVIRONMENT", "A=1 B=$A$A"),
    ]);
    assert_eq!(ids(&plan), ["cp312-manylinux_ppc64le"]);
    let options = &plan.builds[0].options;
    assert_eq!(options.test_command.as_deref(), Some("from-cibw"));
    let names: Vec<&str> = options
        .environment
        .assignments
        .iter()
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(names, ["A", "B"]);
    assert_eq!(
        note(&plan, "using cibuildwheel variables"),
        Some(
            "using cibuildwheel variables: CIBW_ARCHS_LINUX, CIBW_BUILD, CIBW_SKIP, CIBW_ENVIRONMENT, CIBW_TEST_COMMAND"
        )
    );
}

#[test]
fn crosswheel_variables_beat_cibw_ones_and_platform_variants_beat_both() {
    let project = Project::with_pyproject("[tool.cibuildwheel]\nbuild = \"cp311-*\"\n");
    let plan = project.plan(&[
        ("CIBW_TEST_COMMAND", "cibw"),
        ("CROSSWHEEL_TEST_COMMAND", "crosswheel"),
        ("CIBW_TEST_COMMAND_MACOS", "cibw-macos"),
        ("CIBW_ARCHS", "ppc64le arm64"),
        ("CROSSWHEEL_ARCHS", "manylinux_aarch64 arm64"),
    ]);
    assert_eq!(
        ids(&plan),
        ["cp311-manylinux_aarch64", "cp311-macosx_arm64"]
    );
    assert_eq!(
        plan.builds[0].options.test_command.as_deref(),
        Some("crosswheel")
    );
    assert_eq!(
        plan.builds[1].options.test_command.as_deref(),
        Some("cibw-macos")
    );
    assert_eq!(
        note(&plan, "not using"),
        Some(
            "not using CIBW_ARCHS, CIBW_TEST_COMMAND (the CROSSWHEEL_* variable of the same option is set)"
        )
    );
    // An empty CROSSWHEEL_* list variable counts as unset, so the CIBW_* one applies.
    let plan = project.plan(&[
        ("CROSSWHEEL_ARCHS", ""),
        ("CIBW_ARCHS", "manylinux_ppc64le"),
    ]);
    assert_eq!(ids(&plan), ["cp311-manylinux_ppc64le"]);
}

#[test]
fn cibw_enable_adds_to_the_configured_groups_and_platform_picks_one_platform() {
    let project = Project::with_pyproject(
        "[project]\nname = \"x\"\n[tool.cibuildwheel]\nbuild = \"cp3*-*\"\nskip = \"cp310-* cp311-* cp312-* cp313-*\"\nenable = [\"pypy\"]\n",
    );
    let plan = project.plan(&[("CIBW_ENABLE", "cpython-prerelease graalpy")]);
    let newest_default: Vec<&str> = ids(&plan);
    assert!(
        newest_default.iter().any(|id| id.starts_with("cp316-")),
        "{newest_default:?}"
    );
    assert_eq!(
        note(&plan, "not built: pypy"),
        Some("not built: pypy, graalpy (enable): crosswheel builds CPython wheels only")
    );
    let plan = project.plan(&[("CIBW_PLATFORM", "linux")]);
    assert!(
        ids(&plan).iter().all(|id| id.contains("manylinux")),
        "{:?}",
        ids(&plan)
    );
    let err = project.error(&[("CIBW_PLATFORM", "windows")]).to_string();
    assert!(err.contains("crosswheel builds no windows wheels"), "{err}");
}

#[test]
fn free_threaded_builds_follow_cibuildwheels_identifiers() {
    let linux_ids = |config: &str| -> Vec<String> {
        let project = Project::with_pyproject(&format!(
            "[tool.cibuildwheel]\narchs = \"aarch64\"\n{config}\n"
        ));
        let plan = project.plan(&[]);
        assert!(
            !plan.notes.iter().any(|note| note.contains("free-threaded")),
            "{config}: {:?}",
            plan.notes
        );
        ids(&plan)
            .into_iter()
            .filter(|id| id.ends_with("-manylinux_aarch64"))
            .map(String::from)
            .collect()
    };
    // 3.14's free-threaded build is a default identifier, 3.13's is not.
    assert_eq!(
        linux_ids(""),
        [
            "cp310-manylinux_aarch64",
            "cp311-manylinux_aarch64",
            "cp312-manylinux_aarch64",
            "cp313-manylinux_aarch64",
            "cp314-manylinux_aarch64",
            "cp314t-manylinux_aarch64",
            "cp315-manylinux_aarch64",
        ]
    );
    // `cpython-freethreading` (cibuildwheel 2.x: `free-threaded-support`) adds cp313t.
    for config in [
        "enable = [\"cpython-freethreading\"]",
        "free-threaded-support = true",
    ] {
        let ids = linux_ids(&format!("build = \"cp313*\"\n{config}"));
        assert_eq!(
            ids,
            ["cp313-manylinux_aarch64", "cp313t-manylinux_aarch64"],
            "{config}"
        );
    }
    // Selectors see the `t`: projects skip free-threaded builds with `*t-*`.
    assert_eq!(
        linux_ids("build = \"cp311-* cp314t-*\""),
        ["cp311-manylinux_aarch64", "cp314t-manylinux_aarch64"]
    );
    assert!(
        linux_ids("skip = \"*t-*\"")
            .iter()
            .all(|id| !id.contains("t-")),
    );
    // The prerelease CPython comes with its free-threaded build.
    assert_eq!(
        linux_ids("build = \"cp316*\"\nenable = [\"cpython-prerelease\"]"),
        ["cp316-manylinux_aarch64", "cp316t-manylinux_aarch64"]
    );
}

#[test]
fn the_python_option_names_free_threaded_builds_too() {
    let project = Project::with_pyproject(
        "[tool.crosswheel]\narchs = \"manylinux_aarch64\"\npython = [\"cp313t\", \"cp312\"]\n",
    );
    assert_eq!(
        ids(&project.plan(&[])),
        ["cp312-manylinux_aarch64", "cp313t-manylinux_aarch64"]
    );
    let project = Project::with_pyproject("[tool.crosswheel]\npython = [\"cp312t\"]\n");
    let err = project.error(&[]).to_string();
    assert!(err.contains("free-threaded builds from 3.13 on"), "{err}");
}

#[test]
fn every_problem_of_a_configuration_is_reported_at_once() {
    let project = Project::with_pyproject(
        "[tool.cibuildwheel]\ntest-comand = \"pytest\"\nbuild-verbosity = \"loud\"\n\n[tool.cibuildwheel.linux]\ntoolchian = \"zig\"\n\n[tool.cibuildwheel.windows]\nnot-an-option = 1\n\n[[tool.cibuildwheel.overrides]]\nselect = \"*\"\nskip = \"*\"\n",
    );
    let err = project.error(&[("CIBW_ARCHS", "sparc")]);
    let problems = err.problems();
    let text = err.to_string();
    assert_eq!(problems.len(), 5, "{text}");
    for (expected, line) in [
        ("`test-comand`", 2),
        ("`build-verbosity`", 3),
        ("`toolchian`", 6),
        ("`not-an-option`", 9),
        ("`skip`", 13),
    ] {
        let problem = problems
            .iter()
            .find(|p| p.to_string().contains(expected))
            .unwrap_or_else(|| panic!("no problem about {expected}: {text}"));
        assert!(
            problem
                .to_string()
                .contains(&format!("pyproject.toml:{line}")),
            "{problem}"
        );
    }
    assert!(text.contains("did you mean `test-command`?"), "{text}");
    assert!(text.contains("`crosswheel help config`"), "{text}");
    // The environment problems come once the file's are fixed, all of them together.
    let project = Project::with_pyproject("[tool.cibuildwheel]\n");
    let err = project.error(&[("CIBW_ARCHS", "sparc"), ("CROSSWHEEL_TOOLCHAIN", "msvc")]);
    assert_eq!(err.problems().len(), 2, "{err}");
}

#[test]
fn real_cibuildwheel_options_are_never_taken_for_misspellings() {
    let project = Project::with_pyproject(
        "[tool.cibuildwheel]\nbuild = \"cp311-*\"\naudit-command = \"abi3audit {wheel}\"\nxbuild-tools = []\ntest-runtime = { args = [\"--slow\"] }\npyodide-version = \"0.27\"\ndependency-versions = \"latest\"\n",
    );
    let plan = project.plan(&[]);
    assert_eq!(
        note(&plan, "ignored"),
        Some(
            "ignored (does not apply to cross builds): xbuild-tools, test-runtime, pyodide-version"
        )
    );
}

#[test]
fn ignored_options_set_by_variables_are_named_by_their_variable() {
    let project = Project::with_pyproject("[tool.cibuildwheel]\nbuild = \"cp311-*\"\n");
    let plan = project.plan(&[("CIBW_CONTAINER_ENGINE", "podman")]);
    assert_eq!(
        note(&plan, "ignored"),
        Some("ignored (does not apply to cross builds): CIBW_CONTAINER_ENGINE")
    );
}

/// The glibc each build of `plan` is compiled against, by identifier.
fn glibc_by_identifier(plan: &Plan) -> BTreeMap<&str, String> {
    plan.builds
        .iter()
        .map(|build| {
            (
                build.identifier.as_str(),
                build.target.os_version().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_manylinux_image_sets_the_glibc_its_builds_compile_against() {
    // As a build in the image would: glibc 2.28 for manylinux_2_28, never below the
    // target's lowest (zig's ppc64le starts at 2.19), per architecture and per override.
    let project = Project::with_pyproject(
        "[tool.cibuildwheel]\nbuild = \"cp311-*\"\narchs = [\"aarch64\", \"ppc64le\", \"s390x\"]\n\
         manylinux-ppc64le-image = \"quay.io/pypa/manylinux_2_28_ppc64le:2025.01.04-1\"\n\
         manylinux-s390x-image = \"manylinux2014\"\n\
         [[tool.cibuildwheel.overrides]]\nselect = \"*-manylinux_aarch64\"\nmanylinux-aarch64-image = \"manylinux_2_34\"\n",
    );
    let plan = project.plan(&[("CIBW_SKIP", "*-musllinux*")]);
    assert_eq!(
        glibc_by_identifier(&plan),
        BTreeMap::from([
            ("cp311-manylinux_aarch64", "2.34".to_string()),
            ("cp311-manylinux_ppc64le", "2.28".to_string()),
            ("cp311-manylinux_s390x", "2.17".to_string()),
        ])
    );
    assert_eq!(note(&plan, "ignored"), None, "{:?}", plan.notes);
    // The variable too; manylinux2014 is below ppc64le's lowest glibc.
    let plan = project.plan(&[
        ("CIBW_SKIP", "*-musllinux*"),
        ("CIBW_MANYLINUX_PPC64LE_IMAGE", "manylinux2014"),
    ]);
    assert_eq!(
        glibc_by_identifier(&plan)["cp311-manylinux_ppc64le"],
        "2.19"
    );
}

#[test]
fn an_image_that_names_no_manylinux_policy_is_said_and_the_lowest_glibc_used() {
    let project = Project::with_pyproject(
        "[tool.cibuildwheel]\nbuild = \"cp311-*\"\narchs = [\"ppc64le\"]\nskip = \"*-musllinux*\"\n\
         manylinux-ppc64le-image = \"ghcr.io/acme/builder:3\"\n",
    );
    let plan = project.plan(&[]);
    assert_eq!(
        glibc_by_identifier(&plan)["cp311-manylinux_ppc64le"],
        "2.19"
    );
    assert_eq!(
        note(&plan, "manylinux-ppc64le-image"),
        Some(
            "manylinux-ppc64le-image = ghcr.io/acme/builder:3 names no manylinux policy (manylinux2014, manylinux_2_28, ...): linux-ppc64le is built against glibc 2.19, its lowest"
        )
    );
}

/// cibuildwheel's own switches that mean nothing to a cross build (how it folds its log on
/// CI services, its container and its cache) are named as ignored, never taken silently.
#[test]
fn cibuildwheels_switches_for_its_own_runs_are_named_as_ignored() {
    let project = Project::with_pyproject("[tool.cibuildwheel]\nbuild = \"cp311-*\"\n");
    let plan = project.plan(&[
        ("CIBW_LOG_FOLD_MODE", "disabled"),
        ("CIBW_DEBUG_KEEP_CONTAINER", "1"),
        ("CIBW_CACHE_PATH", "/tmp/cibw-cache"),
    ]);
    assert_eq!(
        note(&plan, "ignored"),
        Some(
            "ignored (does not apply to cross builds): CIBW_DEBUG_KEEP_CONTAINER, CIBW_CACHE_PATH, CIBW_LOG_FOLD_MODE"
        )
    );
    assert!(
        env_var_warnings(["CIBW_LOG_FOLD_MODE"]).is_empty(),
        "a variable cibuildwheel reads is no misspelling"
    );
}

#[test]
fn misspelt_variables_get_a_suggestion() {
    let warnings = env_var_warnings([
        "CROSSWHEEL_TEST_COMAND",
        "CIBW_ARCH_LINUX",
        "CIBW_BUILD",
        "CROSSWHEEL_JOBS",
        "CROSSWHEEL_REQUIRE_TESTS",
        "HOME",
    ]);
    assert_eq!(
        warnings,
        [
            "environment variable CROSSWHEEL_TEST_COMAND names no option, so it has no effect: did you mean CROSSWHEEL_TEST_COMMAND?",
            "environment variable CIBW_ARCH_LINUX names no option, so it has no effect: did you mean CIBW_ARCHS_LINUX?",
        ]
    );
}

#[test]
fn build_frontend_args_are_read_as_the_frontend_reads_them() {
    let project = Project::with_pyproject(
        "[tool.cibuildwheel]\nbuild = \"cp311-manylinux_aarch64\"\nbuild-verbosity = 1\nconfig-settings = { a = \"{project}/x\" }\nbuild-frontend = { name = \"build\", args = [\"-Cb=2\", \"--no-isolation\", \"--config-setting\", \"c=3\", \"-v\"] }\n",
    );
    let plan = project.plan(&[]);
    let project_dir = std::path::absolute(project.path()).unwrap();
    let options = &plan.builds[0].options;
    assert_eq!(
        options.config_settings,
        [
            ("a".to_string(), format!("{}/x", project_dir.display())),
            ("b".to_string(), "2".to_string()),
            ("c".to_string(), "3".to_string()),
        ]
    );
    assert!(!options.build_frontend.parsed.isolation);
    assert!(options.build_frontend.parsed.check_dependencies);
    // build-verbosity and the frontend's -v, as cibuildwheel passes both on.
    assert_eq!(options.build_verbosity, 2);
    assert_eq!(note(&plan, "build-frontend"), None);
}

#[test]
fn a_build_frontend_arg_that_cannot_apply_is_an_error_at_its_line() {
    let project = Project::with_pyproject(
        "[tool.cibuildwheel]\nbuild = \"cp311-manylinux_aarch64\"\n\nbuild-frontend = \"build; args: --sdist\"\n",
    );
    let error = project.error(&[]).to_string();
    assert!(error.contains("pyproject.toml:4"), "{error}");
    assert!(
        error.contains(
            "build-frontend arg `--sdist` has no meaning for crosswheel's cross build with build"
        ),
        "{error}"
    );
}

#[test]
fn project_placeholders_are_filled_in_the_commands_cibuildwheel_fills() {
    let project = Project::with_pyproject(
        "[tool.cibuildwheel]\nbuild = \"cp311-manylinux_aarch64\"\nbefore-all = \"bash {project}/tools/all.sh {package}\"\nbefore-build = \"echo {project}\"\nbefore-test = \"ls {package}\"\nrepair-wheel-command = \"cp {wheel} {dest_dir} # {project}\"\n",
    );
    let plan = project.plan(&[]);
    let dir = std::path::absolute(project.path()).unwrap();
    let dir = dir.display();
    let options = &plan.builds[0].options;
    assert_eq!(
        options.before_all.as_deref(),
        Some(format!("bash {dir}/tools/all.sh {dir}").as_str())
    );
    assert_eq!(
        options.before_build.as_deref(),
        Some(format!("echo {dir}").as_str())
    );
    assert_eq!(
        options.before_test.as_deref(),
        Some(format!("ls {dir}").as_str())
    );
    assert_eq!(
        options
            .repair
            .command_for("/w/a.whl", "/out", None)
            .as_deref(),
        Some(format!("cp /w/a.whl /out # {dir}").as_str())
    );
}

#[test]
fn test_groups_add_their_dependency_group_requirements() {
    let project = Project::with_pyproject(
        "[dependency-groups]\ntest = [\"pytest>=8\", {include-group = \"extra\"}]\nextra = [\"hypothesis\"]\n[tool.cibuildwheel]\nbuild = \"cp311-manylinux_aarch64\"\ntest-requires = [\"numpy\"]\ntest-groups = [\"test\"]\n",
    );
    let plan = project.plan(&[]);
    assert_eq!(
        plan.builds[0].options.test_requires,
        ["numpy", "pytest>=8", "hypothesis"]
    );
    let project = Project::with_pyproject(
        "[dependency-groups]\ntest = []\n[tool.cibuildwheel]\nbuild = \"cp311-manylinux_aarch64\"\ntest-groups = \"docs\"\n",
    );
    // Planning goes on (as cibuildwheel prints identifiers); the tests of the build fail.
    let plan = project.plan(&[]);
    let problem = plan.builds[0]
        .options
        .test_groups_problem
        .as_deref()
        .unwrap_or_default();
    assert!(
        problem.contains("pyproject.toml:5")
            && problem.contains("`docs` is not a dependency group"),
        "{problem}"
    );
    assert!(note(&plan, "warning: ").is_some_and(|line| line.contains(problem)));
}

#[test]
fn verbosity_test_environment_and_dependency_versions_are_read() {
    let project = Project::with_pyproject(
        "[tool.cibuildwheel]\nbuild = \"cp311-manylinux_aarch64\"\nbuild-verbosity = \"2\"\ntest-environment = { GREETING = \"hi $USER\" }\ndependency-versions = { packages = [\"cython==3.1.2\"] }\n[[tool.cibuildwheel.overrides]]\nselect = \"*\"\nbuild-verbosity = 9\n",
    );
    let plan = project.plan(&[]);
    let options = &plan.builds[0].options;
    assert_eq!(options.build_verbosity, 3);
    assert_eq!(options.test_environment.assignments[0].name, "GREETING");
    assert_eq!(
        options.dependency_versions.constraint_lines().unwrap(),
        ["cython==3.1.2"]
    );
}

#[test]
fn macosx_deployment_target_of_the_environment_sets_the_macos_target() {
    let project = Project::with_pyproject(
        "[tool.cibuildwheel]\nbuild = \"cp311-*\"\n[tool.cibuildwheel.macos]\nenvironment = { MACOSX_DEPLOYMENT_TARGET = \"10.14\" }\n[[tool.cibuildwheel.overrides]]\nselect = \"cp312-*\"\nenvironment.MACOSX_DEPLOYMENT_TARGET = \"13.0\"\n",
    );
    let plan = project.plan(&[]);
    let macos = plan
        .builds
        .iter()
        .find(|build| build.identifier == "cp311-macosx_arm64")
        .unwrap();
    assert_eq!(macos.options.macos_deployment_target.to_string(), "11.0");
    let mut vars = BTreeMap::new();
    macos
        .options
        .environment
        .apply(&mut vars, project.path())
        .unwrap();
    assert_eq!(vars["MACOSX_DEPLOYMENT_TARGET"], "11.0");
    assert!(
        note(&plan, "MACOSX_DEPLOYMENT_TARGET=10.14 in `environment`").is_some(),
        "{:?}",
        plan.notes
    );
    let plan = project.plan(&[("CIBW_BUILD", "cp312-macosx_arm64")]);
    assert_eq!(
        plan.builds[0].options.macos_deployment_target.to_string(),
        "13.0"
    );
}

#[test]
fn container_project_paths_name_the_project_folder_in_linux_options() {
    // numpy's own configuration: cibuildwheel's Linux container mounts the project at
    // /project; crosswheel builds the folder itself.
    let project = Project::with_pyproject(
        "[tool.cibuildwheel]\nbuild = \"cp311-*\"\n\
         before-build = \"bash /project/tools/before.sh {project}\"\n\
         config-settings = { setup-args = \"-Dpc=/project/.openblas\" }\n\
         [tool.cibuildwheel.linux]\n\
         environment = { PKG_CONFIG_PATH = \"/project/.openblas\", OTHER = \"/projects/x\" }\n\
         [tool.cibuildwheel.macos]\n\
         environment = { PKG_CONFIG_PATH = \"/project/.openblas\" }\n",
    );
    let plan = project.plan(&[]);
    let folder = std::path::absolute(project.path()).unwrap();
    let folder = folder.to_string_lossy();
    let linux = plan
        .builds
        .iter()
        .find(|build| build.identifier == "cp311-manylinux_aarch64")
        .unwrap();
    let literal = |build: &crosswheel::input::options::BuildSpec, name: &str| -> String {
        let assignment = build
            .options
            .environment
            .assignments
            .iter()
            .find(|a| a.name == name)
            .unwrap();
        match &assignment.value[..] {
            [crosswheel::input::options::EnvPart::Literal(text)] => text.clone(),
            other => panic!("{name}: {other:?}"),
        }
    };
    assert_eq!(
        literal(linux, "PKG_CONFIG_PATH"),
        format!("{folder}/.openblas")
    );
    assert_eq!(literal(linux, "OTHER"), "/projects/x");
    assert_eq!(
        linux.options.before_build.as_deref(),
        Some(format!("bash {folder}/tools/before.sh {folder}").as_str())
    );
    assert_eq!(
        linux.options.config_settings,
        [("setup-args".to_string(), format!("-Dpc={folder}/.openblas"))]
    );
    // On macOS cibuildwheel builds on the host: /project is whatever it is there.
    let macos = plan
        .builds
        .iter()
        .find(|build| build.identifier == "cp311-macosx_arm64")
        .unwrap();
    assert_eq!(literal(macos, "PKG_CONFIG_PATH"), "/project/.openblas");
    assert_eq!(
        macos.options.before_build.as_deref(),
        Some(format!("bash /project/tools/before.sh {folder}").as_str())
    );
}

/// cibuildwheel's `test_setting_arch_on_other_platforms`: with macOS chosen, `archs =
/// aarch64` names nothing macOS has, which is a configuration error in cibuildwheel's
/// words, not an empty run.
#[test]
fn archs_that_the_chosen_platform_lacks_are_cibuildwheels_invalid_archs_option() {
    let project = Project::with_pyproject("[project]\nname = \"x\"\n");
    let err = project.error(&[("CIBW_PLATFORM", "macos"), ("CIBW_ARCHS", "aarch64")]);
    assert!(matches!(err, OptionsError::InvalidArchs { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with("Invalid archs option aarch64: macOS only supports arm64, universal2, x86_64 at the moment"),
        "{text}"
    );
    assert!(text.contains("CIBW_PLATFORM=macos"), "{text}");
    assert!(text.contains("use CIBW_ARCHS_LINUX instead"), "{text}");
    // With no platform chosen, aarch64 is Linux's: built there, nothing to refuse.
    assert!(!project.plan(&[("CIBW_ARCHS", "aarch64")]).builds.is_empty());
}

/// crosswheel's shared lists name both platforms' architectures; with one platform chosen,
/// the other's are neither refused nor reported as not built here.
#[test]
fn a_shared_archs_list_with_one_platform_chosen_reports_nothing_of_the_other() {
    let project = Project::with_pyproject(
        "[project]\nname = \"x\"\n[tool.crosswheel]\narchs = [\"aarch64\", \"ppc64le\", \"arm64\"]\n",
    );
    for (platform, other) in [("linux", "arm64"), ("macos", "aarch64")] {
        let plan = project.plan(&[("CROSSWHEEL_PLATFORM", platform)]);
        assert!(!plan.builds.is_empty(), "{platform}");
        assert!(
            !plan
                .notes
                .iter()
                .any(|note| note.starts_with("not built here") && note.contains(other)),
            "{platform}: {:?}",
            plan.notes
        );
    }
}

/// markupsafe 3.0.3's own `[tool.cibuildwheel]`, as its pyproject.toml holds it.
const MARKUPSAFE_3_0_3: &str = r#"
[tool.cibuildwheel]
enable = "cpython-freethreading"
build-frontend = "build[uv]"

[[tool.cibuildwheel.overrides]]
select = "*-musllinux_riscv64"
# uv is not available
build-frontend = "build"

[tool.cibuildwheel.linux]
archs = ["x86_64", "aarch64", "riscv64"]

[tool.cibuildwheel.macos]
archs = ["x86_64", "arm64"]

[tool.cibuildwheel.windows]
archs = ["auto", "ARM64"]
"#;

/// Unchanged but for `CIBW_BUILD=cp311-*`, markupsafe's configuration plans exactly the
/// eight cp311 identifiers cibuildwheel builds for it: manylinux and musllinux for each
/// Linux architecture, macOS x86_64 and arm64; its override reaches the musllinux riscv64
/// build alone.
#[test]
fn markupsafes_own_configuration_plans_cibuildwheels_eight_cp311_identifiers() {
    let project = Project::with_pyproject(MARKUPSAFE_3_0_3);
    let plan = project.plan(&[("CIBW_BUILD", "cp311-*")]);
    assert_eq!(
        ids(&plan),
        [
            "cp311-manylinux_aarch64",
            "cp311-manylinux_x86_64",
            "cp311-manylinux_riscv64",
            "cp311-musllinux_x86_64",
            "cp311-musllinux_aarch64",
            "cp311-musllinux_riscv64",
            "cp311-macosx_arm64",
            "cp311-macosx_x86_64",
        ]
    );
    assert_eq!(note(&plan, "not built here"), None, "{:?}", plan.notes);
    for build in &plan.builds {
        let expected = if build.identifier == "cp311-musllinux_riscv64" {
            FrontendName::Build
        } else {
            FrontendName::BuildUv
        };
        assert_eq!(
            build.options.build_frontend.name, expected,
            "{}",
            build.identifier
        );
    }
}
