//! Which builds run: identifiers, `build`/`skip`, `archs`, `python`, `requires-python`,
//! `--only`, and the CI outputs derived from the selection.

use crosswheel::input::options::{
    CliOverrides, MatrixJobs, OptionsError, Plan, github_matrix, identifiers_json, identifiers_text,
};
use serde_json::Value;

use crate::common::project::Project;

fn resolve_with(
    pyproject: &str,
    cli: &CliOverrides,
    env: &[(&str, &str)],
) -> Result<Plan, OptionsError> {
    Project::with_pyproject(pyproject).resolve(cli, env)
}

fn selected(pyproject: &str, cli: &CliOverrides, env: &[(&str, &str)]) -> Vec<String> {
    match resolve_with(pyproject, cli, env) {
        Ok(plan) => plan.identifiers().map(String::from).collect(),
        Err(err) => panic!("resolving the options failed: {err}"),
    }
}

fn only(identifier: &str) -> CliOverrides {
    CliOverrides {
        only: Some(identifier.to_string()),
        ..CliOverrides::default()
    }
}

const TWO_PYTHONS: &str = "[tool.crosswheel]\npython = [\"cp311\", \"cp312\"]\n";

#[test]
fn builds_are_python_versions_times_targets_in_order() {
    assert_eq!(
        selected(TWO_PYTHONS, &CliOverrides::default(), &[]),
        [
            "cp311-manylinux_aarch64",
            "cp311-manylinux_ppc64le",
            "cp311-macosx_arm64",
            "cp312-manylinux_aarch64",
            "cp312-manylinux_ppc64le",
            "cp312-macosx_arm64",
        ]
    );
}

#[test]
fn build_and_skip_select_with_globs() {
    let pyproject =
        format!("{TWO_PYTHONS}build = \"cp312-* *-macosx_*\"\nskip = \"*-manylinux_ppc64le\"\n");
    assert_eq!(
        selected(&pyproject, &CliOverrides::default(), &[]),
        [
            "cp311-macosx_arm64",
            "cp312-manylinux_aarch64",
            "cp312-macosx_arm64"
        ]
    );
}

#[test]
fn skip_star_skips_everything_unless_empty_is_allowed() {
    let pyproject = format!("{TWO_PYTHONS}skip = \"*\"\n");
    let err = resolve_with(&pyproject, &CliOverrides::default(), &[]).unwrap_err();
    assert!(
        matches!(err, OptionsError::NothingSelected { .. }),
        "{err:?}"
    );
    let cli = CliOverrides {
        allow_empty: true,
        ..CliOverrides::default()
    };
    assert!(selected(&pyproject, &cli, &[]).is_empty());
}

#[test]
fn archs_choose_targets_by_arch_or_id() {
    let pyproject =
        format!("{TWO_PYTHONS}build = \"cp311-*\"\narchs = [\"ppc64le\", \"macos-arm64\"]\n");
    // An architecture is its manylinux and its musllinux target; an id names one.
    assert_eq!(
        selected(&pyproject, &CliOverrides::default(), &[]),
        [
            "cp311-manylinux_ppc64le",
            "cp311-musllinux_ppc64le",
            "cp311-macosx_arm64"
        ]
    );
    let pyproject = format!("{TWO_PYTHONS}build = \"cp311-*\"\ntargets = \"linux-aarch64\"\n");
    assert_eq!(
        selected(&pyproject, &CliOverrides::default(), &[]),
        ["cp311-manylinux_aarch64"]
    );
}

#[test]
fn platform_table_archs_and_python_apply_to_that_platform() {
    let pyproject = format!(
        "{TWO_PYTHONS}[tool.crosswheel.linux]\narchs = \"manylinux_aarch64\"\n[tool.crosswheel.macos]\npython = \"cp312\"\n"
    );
    assert_eq!(
        selected(&pyproject, &CliOverrides::default(), &[]),
        [
            "cp311-manylinux_aarch64",
            "cp312-manylinux_aarch64",
            "cp312-macosx_arm64"
        ]
    );
}

#[test]
fn platform_specific_archs_variable() {
    assert_eq!(
        selected(
            TWO_PYTHONS,
            &CliOverrides::default(),
            &[
                ("CROSSWHEEL_ARCHS_LINUX", "manylinux_ppc64le"),
                ("CROSSWHEEL_SKIP", "cp312-*")
            ]
        ),
        ["cp311-manylinux_ppc64le", "cp311-macosx_arm64"]
    );
}

#[test]
fn requires_python_drops_unsupported_versions() {
    let pyproject = format!("[project]\nname = \"x\"\nrequires-python = \">=3.12\"\n{TWO_PYTHONS}");
    assert_eq!(
        selected(&pyproject, &CliOverrides::default(), &[]),
        [
            "cp312-manylinux_aarch64",
            "cp312-manylinux_ppc64le",
            "cp312-macosx_arm64"
        ]
    );
    let overridden = selected(
        &pyproject,
        &CliOverrides::default(),
        &[("CROSSWHEEL_PROJECT_REQUIRES_PYTHON", "<3.12")],
    );
    assert_eq!(overridden.len(), 3);
    assert!(
        overridden.iter().all(|id| id.starts_with("cp311-")),
        "{overridden:?}"
    );
}

#[test]
fn an_empty_selection_because_of_requires_python_says_so() {
    let pyproject = format!("[project]\nname = \"x\"\nrequires-python = \">=3.13\"\n{TWO_PYTHONS}");
    let err = resolve_with(&pyproject, &CliOverrides::default(), &[]).unwrap_err();
    assert!(
        matches!(err, OptionsError::RequiresPythonExcludesAll { .. }),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "no build selected: requires-python `>=3.13` excludes every CPython the selection names (cp311, cp312): select a version it allows, or pass --allow-empty"
    );
    // Allowed to be empty, it is said once among the notes.
    let cli = CliOverrides {
        allow_empty: true,
        ..CliOverrides::default()
    };
    let plan = resolve_with(&pyproject, &cli, &[]).unwrap();
    assert_eq!(plan.builds.len(), 0);
    assert!(
        plan.notes.iter().any(|note| note
            == "no build selected: requires-python `>=3.13` excludes every CPython the selection names (cp311, cp312)"),
        "{:?}",
        plan.notes
    );
    // A selection that `build` or `skip` empties says that instead.
    let skipped = format!("{pyproject}skip = \"*\"\n");
    let err = resolve_with(&skipped, &CliOverrides::default(), &[]).unwrap_err();
    assert!(
        matches!(err, OptionsError::NothingSelected { .. }),
        "{err:?}"
    );
}

#[test]
fn only_builds_exactly_one_identifier_ignoring_build_skip_archs_and_python() {
    let pyproject =
        format!("{TWO_PYTHONS}build = \"cp311-*\"\nskip = \"*-macosx_*\"\narchs = \"aarch64\"\n");
    assert_eq!(
        selected(&pyproject, &only("cp313-macosx_arm64"), &[]),
        ["cp313-macosx_arm64"]
    );
}

#[test]
fn only_rejects_unknown_identifiers() {
    for bad in ["cp311-musllinux_mips64", "cp311", "pp310-macosx_arm64"] {
        let err = resolve_with(TWO_PYTHONS, &only(bad), &[]).unwrap_err();
        assert!(
            matches!(err, OptionsError::BadOnly { .. }),
            "{bad}: {err:?}"
        );
        assert!(
            err.to_string().starts_with(&format!("--only {bad}:")),
            "{err}"
        );
    }
}

#[test]
fn only_respects_requires_python() {
    let pyproject = "[project]\nname = \"x\"\nrequires-python = \">=3.12\"\n";
    let err = resolve_with(pyproject, &only("cp311-macosx_arm64"), &[]).unwrap_err();
    assert!(err.to_string().contains("excludes CPython 3.11"), "{err}");
}

#[test]
fn printed_identifiers_match_the_plan() {
    let plan = resolve_with(
        TWO_PYTHONS,
        &CliOverrides::default(),
        &[("CROSSWHEEL_BUILD", "cp312-*")],
    )
    .unwrap();
    let text = identifiers_text(&plan);
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        plan.identifiers().collect::<Vec<_>>()
    );
    assert!(text.ends_with('\n'));

    let json = identifiers_json(&plan);
    let entries = json.as_array().expect("an array");
    assert_eq!(entries.len(), plan.builds.len());
    for (entry, build) in entries.iter().zip(&plan.builds) {
        assert_eq!(entry["identifier"], build.identifier.as_str());
        assert_eq!(entry["target"], build.target.id());
        assert_eq!(entry["python"], "3.12");
    }
}

fn matrix_entries(matrix: &Value) -> Vec<&serde_json::Map<String, Value>> {
    matrix["include"]
        .as_array()
        .expect("`include` is an array")
        .iter()
        .map(|entry| entry.as_object().expect("entries are objects"))
        .collect()
}

#[test]
fn matrix_has_one_linux_build_job_per_identifier_and_native_tests_for_macos() {
    let pyproject =
        format!("{TWO_PYTHONS}test-command = \"pytest\"\ntest-skip = \"cp311-macosx_*\"\n");
    let plan = resolve_with(&pyproject, &CliOverrides::default(), &[]).unwrap();
    let matrix = github_matrix(&plan, MatrixJobs::All);
    let entries = matrix_entries(&matrix);

    let builds: Vec<_> = entries.iter().filter(|e| e["job"] == "build").collect();
    let build_ids: Vec<&str> = builds
        .iter()
        .filter_map(|e| e["identifier"].as_str())
        .collect();
    assert_eq!(build_ids, plan.identifiers().collect::<Vec<_>>());
    assert!(
        builds
            .iter()
            .all(|e| e["os"] == "ubuntu-latest" && !e.contains_key("test-on"))
    );

    let tests: Vec<_> = entries.iter().filter(|e| e["job"] == "test").collect();
    let test_ids: Vec<&str> = tests
        .iter()
        .filter_map(|e| e["identifier"].as_str())
        .collect();
    assert_eq!(
        test_ids,
        ["cp312-manylinux_aarch64", "cp312-macosx_arm64"],
        "cp311 macOS is test-skipped; Linux tests run emulated where Debian ships the \
         CPython (3.11), natively on an arm64 runner where it does not (3.12 on aarch64; \
         ppc64le has no GitHub runner and stays `not tested`)"
    );
    assert_eq!(tests[0]["test-on"], "ubuntu-24.04-arm");
    assert_eq!(tests[0]["os"], "ubuntu-24.04-arm");
    assert_eq!(tests[1]["test-on"], "macos-14");
    assert_eq!(tests[1]["os"], "macos-14");
    assert_eq!(
        tests[1]["artifact"],
        builds
            .iter()
            .find(|b| b["identifier"] == "cp312-macosx_arm64")
            .unwrap()["artifact"]
    );
    assert_eq!(entries.len(), builds.len() + tests.len());
    // Every entry names the runner that executes its target natively; ppc64le has none.
    let native_runner = |identifier: &str| {
        builds
            .iter()
            .find(|b| b["identifier"] == identifier)
            .unwrap()["native-runner"]
            .clone()
    };
    assert_eq!(native_runner("cp311-manylinux_aarch64"), "ubuntu-24.04-arm");
    assert_eq!(native_runner("cp311-manylinux_ppc64le"), Value::Null);
    assert_eq!(native_runner("cp311-macosx_arm64"), "macos-14");
}

#[test]
fn matrix_gives_a_musllinux_wheel_no_glibc_test_runner() {
    let cli = {
        let mut cli = CliOverrides::default();
        cli.set("archs", "aarch64");
        cli
    };
    let pyproject = format!("{TWO_PYTHONS}test-command = \"pytest\"\n");
    let plan = resolve_with(&pyproject, &cli, &[]).unwrap();
    let matrix = github_matrix(&plan, MatrixJobs::Test);
    let test_ids: Vec<&str> = matrix_entries(&matrix)
        .iter()
        .filter_map(|e| e["identifier"].as_str())
        .collect();
    // cp312: Debian ships no aarch64 CPython 3.12, so the manylinux wheel goes to an arm64
    // runner; its musllinux twin would not install there.
    assert_eq!(test_ids, ["cp312-manylinux_aarch64"]);
}

#[test]
fn matrix_says_x86_64_runs_natively_on_the_build_runner() {
    let cli = {
        let mut cli = CliOverrides::default();
        cli.set("archs", "manylinux_x86_64");
        cli
    };
    let plan = resolve_with(TWO_PYTHONS, &cli, &[]).unwrap();
    let matrix = github_matrix(&plan, MatrixJobs::All);
    let entries = matrix_entries(&matrix);
    assert!(!entries.is_empty());
    for entry in entries {
        assert_eq!(entry["job"], "build", "{entry:?}");
        assert_eq!(entry["os"], "ubuntu-latest");
        assert_eq!(entry["native-runner"], "ubuntu-latest");
    }
}

#[test]
fn matrix_can_list_build_or_test_jobs_alone() {
    let pyproject = format!("{TWO_PYTHONS}test-command = \"pytest\"\n");
    let plan = resolve_with(&pyproject, &CliOverrides::default(), &[]).unwrap();
    let build = github_matrix(&plan, MatrixJobs::Build);
    let test = github_matrix(&plan, MatrixJobs::Test);
    assert_eq!(matrix_entries(&build).len(), plan.builds.len());
    let test_ids: Vec<&str> = matrix_entries(&test)
        .iter()
        .filter_map(|e| e["identifier"].as_str())
        .collect();
    assert_eq!(
        test_ids,
        [
            "cp311-macosx_arm64",
            "cp312-manylinux_aarch64",
            "cp312-macosx_arm64"
        ]
    );
}

#[test]
fn matrix_without_tests_has_no_test_jobs() {
    let plan = resolve_with(TWO_PYTHONS, &CliOverrides::default(), &[]).unwrap();
    let matrix = github_matrix(&plan, MatrixJobs::Test);
    assert!(matrix_entries(&matrix).is_empty());
}

#[test]
fn without_a_python_option_every_supported_cpython_is_built_within_requires_python() {
    let pyproject = "[project]\nname = \"x\"\nrequires-python = \">=3.10\"\n";
    let linux_aarch64: Vec<String> = selected(pyproject, &CliOverrides::default(), &[])
        .into_iter()
        .filter(|id| id.ends_with("-manylinux_aarch64"))
        .collect();
    assert_eq!(
        linux_aarch64,
        [
            "cp310-manylinux_aarch64",
            "cp311-manylinux_aarch64",
            "cp312-manylinux_aarch64",
            "cp313-manylinux_aarch64",
            "cp314-manylinux_aarch64",
            "cp314t-manylinux_aarch64",
            "cp315-manylinux_aarch64"
        ]
    );
    let newer = "[project]\nname = \"x\"\nrequires-python = \">=3.12\"\n";
    let versions: std::collections::BTreeSet<String> =
        selected(newer, &CliOverrides::default(), &[])
            .iter()
            .map(|id| id.split('-').next().unwrap().to_string())
            .collect();
    assert_eq!(
        versions.into_iter().collect::<Vec<_>>(),
        ["cp312", "cp313", "cp314", "cp314t", "cp315"],
        "a >=3.12 project plans builds instead of `no build selected`"
    );
}
