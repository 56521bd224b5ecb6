//! docs/configuration.md documents every option and its environment variable, and carries
//! the options table `crosswheel help config` prints (derived from
//! config/cibuildwheel-options.toml).

use crosswheel::input::options::{
    TABLE_BEGIN, TABLE_END, env_var_name, option_names, options_table,
};

fn docs() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
}

#[test]
fn configuration_docs_list_every_option_and_variable() {
    let docs = docs();
    for option in option_names() {
        assert!(
            docs.contains(&format!("`{option}`")),
            "docs/configuration.md lacks `{option}`"
        );
        let variable = env_var_name(option);
        assert!(
            docs.contains(&variable),
            "docs/configuration.md lacks {variable}"
        );
    }
}

#[test]
fn configuration_docs_carry_the_current_options_table() {
    let docs = docs();
    let start = docs
        .find(TABLE_BEGIN)
        .map(|at| at + TABLE_BEGIN.len() + 1)
        .expect("docs/configuration.md has the options table's start marker");
    let end = docs
        .find(TABLE_END)
        .expect("docs/configuration.md has the options table's end marker");
    assert_eq!(
        docs.get(start..end).unwrap_or_default(),
        options_table(),
        "the options table in docs/configuration.md is out of date: replace it with the output of `crosswheel help config --markdown`"
    );
}

#[test]
fn help_config_prints_every_option_and_help_names_commands() {
    let run = |args: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_crosswheel"))
            .args(args)
            .output()
            .expect("run crosswheel");
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned()
                + &String::from_utf8_lossy(&output.stderr),
        )
    };
    let (ok, text) = run(&["help", "config"]);
    assert!(ok, "{text}");
    for option in option_names() {
        assert!(
            text.contains(&format!("| `{option}` |")),
            "{option}: {text}"
        );
    }
    assert!(
        text.contains(crosswheel::input::options::DOCS_URL),
        "{text}"
    );
    let (ok, text) = run(&["help", "build"]);
    assert!(ok && text.contains("--print-build-identifiers"), "{text}");
    let (ok, text) = run(&["help", "no-such-thing"]);
    assert!(!ok && text.contains("crosswheel help config"), "{text}");
}
