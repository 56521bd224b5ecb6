//! Mistakes in the configuration are reported with the file, the line, the key and a way out.

use crosswheel::input::options::{CliOverrides, OptionsError, Origin};

use crate::common::project::Project;

fn error_for(pyproject: &str, cli: &CliOverrides, env: &[(&str, &str)]) -> (OptionsError, String) {
    let err = Project::with_pyproject(pyproject).error_with(cli, env);
    let message = err.to_string();
    (err, message)
}

fn file_error(pyproject: &str) -> (OptionsError, String) {
    error_for(pyproject, &CliOverrides::default(), &[])
}

fn line_of(origin: &Origin) -> usize {
    match origin {
        Origin::File { line, .. } => *line,
        other => panic!("expected a file origin, got {other}"),
    }
}

#[test]
fn unknown_key_names_file_line_and_closest_option() {
    let (err, message) = file_error(
        "[project]\nname = \"demo\"\n\n[tool.crosswheel]\nbuild = \"cp311-*\"\ntest-comand = \"pytest\"\n",
    );
    let OptionsError::UnknownKey {
        origin,
        key,
        suggestion,
        ..
    } = &err
    else {
        panic!("expected UnknownKey, got {err:?}");
    };
    assert_eq!(line_of(origin), 6);
    assert_eq!(key, "test-comand");
    assert_eq!(suggestion.as_deref(), Some("test-command"));
    assert!(message.contains("pyproject.toml:6"), "{message}");
    assert!(
        message.contains("did you mean `test-command`?"),
        "{message}"
    );
}

#[test]
fn unknown_key_in_platform_table_and_override_is_reported_there() {
    let (_, message) = file_error("[tool.crosswheel.linux]\n\nqemu_cpu = \"max\"\n");
    assert!(message.contains("pyproject.toml:3"), "{message}");
    assert!(message.contains("[tool.crosswheel.linux]"), "{message}");
    assert!(message.contains("did you mean `qemu-cpu`?"), "{message}");

    let (_, message) = file_error(
        "[tool.crosswheel]\n[[tool.crosswheel.overrides]]\nselect = \"*\"\nselcet = \"cp311-*\"\n",
    );
    assert!(message.contains("pyproject.toml:4"), "{message}");
    assert!(message.contains("did you mean `select`?"), "{message}");
}

#[test]
fn unknown_platform_table_suggests_a_platform() {
    let (_, message) = file_error("[tool.crosswheel.macoss]\ntest-command = \"x\"\n");
    assert!(message.contains("did you mean `macos`?"), "{message}");
}

#[test]
fn key_far_from_every_option_points_to_the_docs() {
    let (err, message) = file_error("[tool.crosswheel]\nsomething-else-entirely = \"x\"\n");
    assert!(
        matches!(
            err,
            OptionsError::UnknownKey {
                suggestion: None,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(message.contains("`crosswheel help config`"), "{message}");
    assert!(
        message
            .contains("https://github.com/crosswheel/crosswheel/blob/main/docs/configuration.md"),
        "{message}"
    );
}

#[test]
fn wrong_type_names_key_line_expected_and_found() {
    let (err, message) = file_error("[tool.crosswheel]\nbuild = \"*\"\n\ntest-command = 3\n");
    let OptionsError::WrongType {
        origin, key, found, ..
    } = &err
    else {
        panic!("expected WrongType, got {err:?}");
    };
    assert_eq!(line_of(origin), 4);
    assert_eq!(key, "test-command");
    assert_eq!(*found, "an integer");
    assert!(
        message.contains("must be a string or an array of commands"),
        "{message}"
    );
}

#[test]
fn wrong_type_inside_an_array_points_at_the_item_line() {
    let (err, _) = file_error("[tool.crosswheel]\ntest-requires = [\n  \"pytest\",\n  42,\n]\n");
    let OptionsError::WrongType { origin, found, .. } = &err else {
        panic!("expected WrongType, got {err:?}");
    };
    assert_eq!(line_of(origin), 4);
    assert_eq!(*found, "an array holding an integer");
}

#[test]
fn table_where_a_string_belongs_is_a_type_error() {
    let (err, _) = file_error("[tool.crosswheel]\ntoolchain = { name = \"zig\" }\n");
    assert!(matches!(err, OptionsError::WrongType { .. }), "{err:?}");
}

#[test]
fn invalid_values_say_what_is_accepted() {
    let (_, message) = file_error("[tool.crosswheel]\ntoolchain = \"clang\"\n");
    assert!(
        message.contains("pyproject.toml:2") && message.contains("zig, gcc"),
        "{message}"
    );

    let (_, message) = file_error("[tool.crosswheel]\narchs = \"sparc\"\n");
    assert!(
        message.contains("`sparc` is not an architecture"),
        "{message}"
    );

    let (_, message) = file_error("[tool.crosswheel.macos]\nmacos-deployment-target = \"10.12\"\n");
    assert!(message.contains("below 10.13"), "{message}");

    let (_, message) = file_error("[tool.crosswheel]\npython = [\"3.11\"]\n");
    assert!(message.contains("cp311"), "{message}");

    let (_, message) = file_error("[tool.crosswheel]\nenvironment = \"X=$((1 + 2))\"\n");
    assert!(message.contains("arithmetic expansion"), "{message}");
}

#[test]
fn selection_options_cannot_be_overridden() {
    let (err, message) = file_error(
        "[tool.crosswheel]\n[[tool.crosswheel.overrides]]\nselect = \"cp311-*\"\nskip = \"*\"\n",
    );
    assert!(
        matches!(err, OptionsError::NotOverridable { .. }),
        "{err:?}"
    );
    assert!(message.contains("pyproject.toml:4"), "{message}");
}

#[test]
fn override_without_select_is_rejected() {
    let (_, message) =
        file_error("[tool.crosswheel]\n[[tool.crosswheel.overrides]]\ntest-command = \"x\"\n");
    assert!(message.contains("needs `select`"), "{message}");
}

#[test]
fn inherit_of_a_single_value_is_rejected() {
    let (_, message) = file_error(
        "[[tool.crosswheel.overrides]]\nselect = \"*\"\ninherit = { toolchain = \"append\" }\n",
    );
    assert!(
        message.contains("only commands, lists and tables can be inherited"),
        "{message}"
    );
}

#[test]
fn archs_and_targets_together_are_ambiguous() {
    let (err, _) = file_error("[tool.crosswheel]\narchs = \"aarch64\"\ntargets = \"arm64\"\n");
    assert!(
        matches!(err, OptionsError::ArchsAndTargets { .. }),
        "{err:?}"
    );
}

#[test]
fn toml_syntax_errors_carry_the_line() {
    let (err, message) = file_error("[tool.crosswheel]\nbuild = \"cp311-*\"\ntest-command = \n");
    let OptionsError::Syntax { line, .. } = &err else {
        panic!("expected Syntax, got {err:?}");
    };
    assert_eq!(*line, 3, "{message}");
}

#[test]
fn bad_environment_variable_is_named() {
    let (err, message) = error_for(
        "[tool.crosswheel]\n",
        &CliOverrides::default(),
        &[("CROSSWHEEL_TOOLCHAIN_MACOS", "msvc")],
    );
    assert!(
        matches!(&err, OptionsError::InvalidValue { origin: Origin::Env(name), .. } if name == "CROSSWHEEL_TOOLCHAIN_MACOS"),
        "{err:?}"
    );
    assert!(
        message.contains("environment variable CROSSWHEEL_TOOLCHAIN_MACOS"),
        "{message}"
    );
}

#[test]
fn unknown_command_line_option_suggests_the_closest() {
    let mut cli = CliOverrides::default();
    cli.set("arch", "aarch64");
    let (_, message) = error_for("[tool.crosswheel]\n", &cli, &[]);
    assert!(
        message.contains("--arch") && message.contains("did you mean `archs`?"),
        "{message}"
    );
}

#[test]
fn missing_config_file_is_an_error() {
    let cli = CliOverrides {
        config_file: Some("/nonexistent/crosswheel.toml".into()),
        ..CliOverrides::default()
    };
    let (err, _) = error_for("[tool.crosswheel]\n", &cli, &[]);
    assert!(matches!(err, OptionsError::Io(_)), "{err:?}");
}

#[test]
fn bad_requires_python_points_at_the_project_table() {
    let (_, message) = file_error("[project]\nname = \"x\"\nrequires-python = \"3.10\"\n");
    assert!(
        message.contains("pyproject.toml:3") && message.contains("requires-python"),
        "{message}"
    );
}

#[test]
fn gcc_for_macos_builds_is_refused_before_building() {
    let (_, message) = file_error("[tool.crosswheel]\ntoolchain = \"gcc\"\n");
    assert!(
        message.contains("pyproject.toml:2") && message.contains("no cross gcc exists for macOS"),
        "{message}"
    );
}
