//! One option value, parsed and checked as soon as it is read (so an error points at the
//! file line, variable or flag it came from), and the `inherit` rules of overrides.

use super::error::Origin;
use super::identifiers::{PythonTag, targets};
use super::schema::Kind;
use super::selector::Selector;
use super::shell::{self, Environment};
use super::types::{BuildFrontend, parse_macos_version};

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Setting {
    List(Vec<String>),
    Text(String),
    Pairs(Vec<(String, String)>),
    Env(Environment),
    Frontend(BuildFrontend),
}

impl Setting {
    // The accessors are total so that no kind mix-up can panic; each option's kind fixes
    // which variant its parser produced.

    pub(crate) fn list(&self) -> Vec<String> {
        match self {
            Setting::List(items) => items.clone(),
            Setting::Text(text) => text.split_whitespace().map(String::from).collect(),
            Setting::Pairs(_) | Setting::Env(_) | Setting::Frontend(_) => Vec::new(),
        }
    }

    pub(crate) fn text(&self) -> String {
        match self {
            Setting::Text(text) => text.clone(),
            Setting::List(items) => items.join(" "),
            Setting::Frontend(frontend) => frontend.to_string(),
            Setting::Pairs(_) | Setting::Env(_) => String::new(),
        }
    }

    pub(crate) fn pairs(&self) -> Vec<(String, String)> {
        match self {
            Setting::Pairs(pairs) => pairs.clone(),
            _ => Vec::new(),
        }
    }

    pub(crate) fn environment(&self) -> Environment {
        match self {
            Setting::Env(environment) => environment.clone(),
            _ => Environment::default(),
        }
    }
}

/// A setting and where it was read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Located {
    pub setting: Setting,
    pub origin: Origin,
}

/// How an override combines with the value below it (cibuildwheel's `inherit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inherit {
    None,
    Append,
    Prepend,
}

impl Inherit {
    pub(crate) fn parse(text: &str) -> Option<Inherit> {
        match text {
            "none" => Some(Inherit::None),
            "append" => Some(Inherit::Append),
            "prepend" => Some(Inherit::Prepend),
            _ => None,
        }
    }
}

/// Parses the string form of a value (TOML string, `CROSSWHEEL_*` variable, or flag).
pub(crate) fn parse_text(kind: Kind, text: &str) -> Result<Setting, String> {
    let words = || {
        text.split_whitespace()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    match kind {
        Kind::Selector | Kind::Archs | Kind::Python => parse_list(kind, words()),
        Kind::Words => Ok(Setting::List(words())),
        Kind::CommaList => Ok(Setting::List(
            text.split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(String::from)
                .collect(),
        )),
        Kind::ShellWords => Ok(Setting::List(shell::split_words(text)?)),
        Kind::Command | Kind::Text => Ok(Setting::Text(text.trim().to_string())),
        Kind::Environment => Ok(Setting::Env(shell::parse_environment(text)?)),
        Kind::ConfigSettings => Ok(Setting::Pairs(
            shell::split_words(text)?
                .into_iter()
                .map(|word| match word.split_once('=') {
                    Some((key, value)) => (key.to_string(), value.to_string()),
                    None => (word, String::new()),
                })
                .collect(),
        )),
        Kind::Frontend => Ok(Setting::Frontend(BuildFrontend::parse(text)?)),
        Kind::Choice(choices) => {
            let word = text.trim();
            if choices.contains(&word) {
                Ok(Setting::Text(word.to_string()))
            } else {
                Err(format!("`{word}` is not one of {}", choices.join(", ")))
            }
        }
        Kind::MacosVersion => Ok(Setting::Text(parse_macos_version(text)?)),
    }
}

/// Whether the kind has an array form.
pub(crate) fn accepts_array(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Selector
            | Kind::Archs
            | Kind::Python
            | Kind::Words
            | Kind::CommaList
            | Kind::ShellWords
            | Kind::Command
    )
}

/// Parses the array form of a value.
pub(crate) fn parse_list(kind: Kind, items: Vec<String>) -> Result<Setting, String> {
    match kind {
        Kind::Command => Ok(Setting::Text(join_commands(
            items.iter().map(|item| item.trim()),
        ))),
        Kind::Selector => {
            let patterns = split_items(items);
            Selector::new(&patterns)?;
            Ok(Setting::List(patterns))
        }
        Kind::Archs => {
            let names = split_items(items);
            for name in &names {
                check_target_name(name)?;
            }
            Ok(Setting::List(names))
        }
        Kind::Python => {
            let tags = split_items(items);
            for tag in &tags {
                PythonTag::parse(tag)?;
            }
            Ok(Setting::List(tags))
        }
        _ => Ok(Setting::List(items)),
    }
}

/// Combines an override's value with the one it overrides.
pub(crate) fn inherit(previous: Option<&Setting>, next: Setting, rule: Inherit) -> Setting {
    let Some(previous) = previous else {
        return next;
    };
    let (first, second) = match rule {
        Inherit::None => return next,
        Inherit::Append => (previous.clone(), next),
        Inherit::Prepend => (next, previous.clone()),
    };
    match (first, second) {
        (Setting::Text(a), Setting::Text(b)) => {
            Setting::Text(join_commands([a.as_str(), b.as_str()]))
        }
        (Setting::List(mut a), Setting::List(b)) => {
            a.extend(b);
            Setting::List(a)
        }
        (Setting::Pairs(mut a), Setting::Pairs(b)) => {
            a.extend(b);
            Setting::Pairs(a)
        }
        (Setting::Env(mut a), Setting::Env(b)) => {
            a.assignments.extend(b.assignments);
            Setting::Env(a)
        }
        // Kinds without inherit are refused when the override is read.
        (_, second) => second,
    }
}

fn join_commands<'a>(commands: impl IntoIterator<Item = &'a str>) -> String {
    commands
        .into_iter()
        .filter(|command| !command.is_empty())
        .collect::<Vec<_>>()
        .join(" && ")
}

/// cibuildwheel joins array items with spaces before splitting, so `["cp310-* cp311-*"]`
/// means two patterns.
fn split_items(items: Vec<String>) -> Vec<String> {
    items
        .iter()
        .flat_map(|item| item.split_whitespace())
        .map(String::from)
        .collect()
}

fn check_target_name(name: &str) -> Result<(), String> {
    if matches!(name, "all" | "auto") || targets().iter().any(|t| t.is_named(name)) {
        return Ok(());
    }
    let arches: Vec<&str> = targets().iter().map(|t| t.arch.as_str()).collect();
    let ids: Vec<&str> = targets().iter().map(|t| t.id.as_str()).collect();
    Err(format!(
        "`{name}` is not a crosswheel target: use all, {}, or a target id ({})",
        arches.join(", "),
        ids.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Setting {
        Setting::List(items.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn command_arrays_join_with_and() {
        let setting = parse_list(Kind::Command, vec!["a".into(), "".into(), "b c".into()]).unwrap();
        assert_eq!(setting, Setting::Text("a && b c".into()));
    }

    #[test]
    fn archs_accept_arches_ids_and_all() {
        assert!(parse_text(Kind::Archs, "aarch64 macos-arm64 all").is_ok());
        let err = parse_text(Kind::Archs, "x86_64").unwrap_err();
        assert!(err.contains("x86_64") && err.contains("ppc64le"), "{err}");
    }

    #[test]
    fn python_tags_are_checked() {
        assert_eq!(
            parse_text(Kind::Python, "cp310 cp311").unwrap(),
            list(&["cp310", "cp311"])
        );
        assert!(parse_text(Kind::Python, "3.11").is_err());
    }

    #[test]
    fn extras_split_on_commas() {
        assert_eq!(
            parse_text(Kind::CommaList, "test, docs,").unwrap(),
            list(&["test", "docs"])
        );
    }

    #[test]
    fn config_settings_string_splits_like_a_shell() {
        let setting =
            parse_text(Kind::ConfigSettings, "setup-args='-Dblas=none -Dx=y' flag").unwrap();
        assert_eq!(
            setting.pairs(),
            [
                ("setup-args".to_string(), "-Dblas=none -Dx=y".to_string()),
                ("flag".to_string(), String::new())
            ]
        );
    }

    #[test]
    fn choices_are_enforced() {
        assert!(
            parse_text(Kind::Choice(&["zig", "gcc"]), "clang")
                .unwrap_err()
                .contains("zig, gcc")
        );
    }

    #[test]
    fn inherit_appends_and_prepends_commands_and_lists() {
        let base = Setting::Text("pytest".into());
        let add = Setting::Text("echo done".into());
        assert_eq!(
            inherit(Some(&base), add.clone(), Inherit::Append),
            Setting::Text("pytest && echo done".into())
        );
        assert_eq!(
            inherit(Some(&base), add.clone(), Inherit::Prepend),
            Setting::Text("echo done && pytest".into())
        );
        assert_eq!(inherit(Some(&base), add.clone(), Inherit::None), add);
        assert_eq!(
            inherit(Some(&list(&["a"])), list(&["b"]), Inherit::Append),
            list(&["a", "b"])
        );
    }
}
