//! No option is accepted and then ignored: every field of the resolved `BuildOptions` is
//! read by the stage it is for. `readers` destructures `BuildOptions` without `..`, so a new
//! field does not compile until it names where it is read, and the test checks that the
//! named source really reads it (whitespace ignored, so formatting does not matter).

use std::collections::BTreeMap;

use crosswheel::input::options::{BuildOptions, CliOverrides, resolve};

/// Each field with the places that read it: (file, code that reads it). Fields consumed when
/// the plan is resolved (into other fields, or into the notes said once per run) name
/// src/input/options/build_spec.rs, where each build's options are computed.
fn readers(options: &BuildOptions) -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
    let BuildOptions {
        build_frontend: _,
        config_settings: _,
        environment: _,
        environment_pass: _,
        before_all: _,
        before_all_origin: _,
        before_build: _,
        before_test: _,
        repair: _,
        audit_command: _,
        audit_requires: _,
        test_command: _,
        test_requires: _,
        test_groups_problem: _,
        test_extras: _,
        test_sources: _,
        test_skipped: _,
        output_dir: _,
        toolchain: _,
        macos_deployment_target: _,
        qemu_cpu: _,
        target_requires: _,
        target_libraries: _,
        cuda: _,
        build_verbosity: _,
        test_environment: _,
        dependency_versions: _,
        target_python: _,
        macos_sdk: _,
        require_tests: _,
        debian_mirror: _,
        test_timeout: _,
    } = options;
    const PIPELINE: &str = "src/coordination/pipeline/mod.rs";
    const ENVIRONMENT: &str = "src/coordination/pipeline/environment.rs";
    const TEST_STEP: &str = "src/coordination/pipeline/test_step.rs";
    const CONTEXT: &str = "src/coordination/pipeline/context.rs";
    const IDENTIFIER: &str = "src/coordination/pipeline/identifier/mod.rs";
    const BUILD_STEP: &str = "src/coordination/pipeline/identifier/build.rs";
    const REPAIR_STEP: &str = "src/coordination/pipeline/identifier/repair.rs";
    const TARGETS: &str = "src/coordination/pipeline/targets.rs";
    const BUILD_SPEC: &str = "src/input/options/build_spec.rs";
    const TESTING: &str = "src/stages/testing/mod.rs";
    const BACKEND: &str = "src/stages/backend/mod.rs";
    vec![
        (
            "build_frontend",
            vec![
                (BUILD_SPEC, "build_frontend.parsed.config_settings"),
                (BUILD_STEP, "frontend_of(&spec.options.build_frontend)"),
                (BACKEND, "request.frontend"),
            ],
        ),
        (
            "config_settings",
            vec![
                (BUILD_STEP, "config_settings: &spec.options.config_settings"),
                (BACKEND, "request.config_settings"),
            ],
        ),
        (
            "environment",
            vec![
                (ENVIRONMENT, "spec.options.environment.apply("),
                (TESTING, "spec.environment"),
            ],
        ),
        (
            "environment_pass",
            vec![(BUILD_SPEC, "environment_pass.iter()")],
        ),
        ("before_all", vec![(TARGETS, "spec.options.before_all")]),
        (
            "before_all_origin",
            vec![(TARGETS, "spec.options.before_all_origin")],
        ),
        (
            "audit_command",
            vec![
                (IDENTIFIER, "self.spec.options.audit_command.is_empty()"),
                (
                    "src/coordination/pipeline/audit.rs",
                    "applicable(&options.audit_command",
                ),
            ],
        ),
        (
            "audit_requires",
            vec![(
                "src/coordination/pipeline/audit.rs",
                "make_venv(&options.audit_requires",
            )],
        ),
        (
            "before_build",
            vec![(BUILD_STEP, "spec.options.before_build")],
        ),
        (
            "before_test",
            vec![
                (TEST_STEP, "spec.options.before_test"),
                (TESTING, "spec.before_test"),
            ],
        ),
        ("repair", vec![(REPAIR_STEP, "self.spec.options.repair")]),
        (
            "test_command",
            vec![(TEST_STEP, "spec.options.test_command")],
        ),
        (
            "test_requires",
            vec![(TEST_STEP, "spec.options.test_requires")],
        ),
        (
            "test_groups_problem",
            vec![(TEST_STEP, "spec.options.test_groups_problem")],
        ),
        (
            "test_extras",
            vec![
                (TEST_STEP, "spec.options.test_extras"),
                (TESTING, "with_extras(&wheel, &spec.test_extras)"),
            ],
        ),
        (
            "test_sources",
            vec![(TEST_STEP, "spec.options.test_sources")],
        ),
        (
            "test_skipped",
            vec![
                ("src/input/options/mod.rs", "!self.test_skipped"),
                (TEST_STEP, "spec.options.runs_tests()"),
            ],
        ),
        ("output_dir", vec![(PIPELINE, "spec.options.output_dir")]),
        ("toolchain", vec![(BUILD_STEP, "spec.options.toolchain")]),
        (
            "macos_deployment_target",
            vec![(BUILD_SPEC, "options.macos_deployment_target,")],
        ),
        ("qemu_cpu", vec![(TEST_STEP, "spec.options.qemu_cpu")]),
        (
            "target_requires",
            vec![(BUILD_STEP, "spec.options.target_requires")],
        ),
        (
            "target_libraries",
            vec![(TARGETS, "spec.options.target_libraries")],
        ),
        ("cuda", vec![(PIPELINE, "spec.options.cuda")]),
        (
            "build_verbosity",
            vec![
                (BUILD_STEP, "spec.options.build_verbosity"),
                (BACKEND, "request.verbosity"),
            ],
        ),
        (
            "test_environment",
            vec![
                (TEST_STEP, "spec.options.test_environment"),
                (TESTING, "spec.test_environment"),
            ],
        ),
        (
            "target_python",
            vec![
                (TEST_STEP, "spec.options.target_python"),
                (TESTING, "spec.target_python"),
            ],
        ),
        ("macos_sdk", vec![(ENVIRONMENT, "spec.options.macos_sdk")]),
        (
            "require_tests",
            vec![(IDENTIFIER, "self.spec.options.require_tests")],
        ),
        (
            "debian_mirror",
            vec![
                (CONTEXT, "spec.options.debian_mirror"),
                (TESTING, "&spec.network"),
            ],
        ),
        (
            "test_timeout",
            vec![
                (TEST_STEP, "spec.options.test_timeout"),
                (TESTING, "spec.timeout"),
            ],
        ),
        (
            "dependency_versions",
            vec![
                (BUILD_STEP, "spec.options.dependency_versions"),
                (BACKEND, "request.constraints"),
            ],
        ),
    ]
}

fn without_whitespace(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

#[test]
fn every_build_option_is_read_by_a_stage() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("pyproject.toml"),
        "[tool.crosswheel]\nbuild = \"cp311-manylinux_aarch64\"\n",
    )
    .unwrap();
    let plan = resolve(dir.path(), &CliOverrides::default(), &BTreeMap::new()).unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for (field, places) in readers(&plan.builds[0].options) {
        assert!(!places.is_empty(), "`{field}` names no reader");
        for (file, code) in places {
            let source = std::fs::read_to_string(root.join(file))
                .unwrap_or_else(|err| panic!("cannot read {file}: {err}"));
            assert!(
                without_whitespace(&source).contains(&without_whitespace(code)),
                "BuildOptions::{field} is said to be read in {file} by `{code}`, which is not there: a stage must read it (or update this list to where it is read)"
            );
        }
    }
}
