//! docs/configuration.md documents every option and its environment variable.

use crosswheel::options::{env_var_name, option_names};

#[test]
fn configuration_docs_list_every_option_and_variable() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md");
    let docs = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
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
