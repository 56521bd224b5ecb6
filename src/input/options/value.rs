//! One option value, parsed and checked as soon as it is read (so an error points at the
//! file line, variable or flag it came from), and the `inherit` rules of overrides.

use super::error::Origin;
use super::identifiers::{PythonTag, targets};
use super::schema::Kind;
use super::selector::Selector;
use super::shell::{self, Environment};
use super::types::{BuildFrontend, parse_duration, parse_macos_version};
use crate::target::OsVersion;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Setting {
    List(Vec<String>),
    Text(String),
    Pairs(Vec<(String, String)>),
    Env(Environment),
    Frontend(BuildFrontend),
    /// `macos-deployment-target`, checked against arm64's floor when it was read.
    OsVersion(OsVersion),
    Bool(bool),
    /// A timeout; `None` is "no limit" (`0`, `none` or empty).
    Duration(Option<std::time::Duration>),
    /// `build-verbosity`, already clamped to cibuildwheel's -3..=3.
    Verbosity(i64),
    /// `python`: CPython tags, checked when read.
    Pythons(Vec<PythonTag>),
    /// `build`, `skip`, `test-skip`: compiled when read.
    Selector(Selector),
}

impl Setting {
    // The accessors are total so that no kind mix-up can panic; each option's kind fixes
    // which variant its parser produced.

    pub(crate) fn list(&self) -> Vec<String> {
        match self {
            Setting::List(items) => items.clone(),
            Setting::Text(text) => text.split_whitespace().map(String::from).collect(),
            Setting::OsVersion(version) => vec![version.to_string()],
            Setting::Pairs(_) | Setting::Env(_) | Setting::Frontend(_) => Vec::new(),
            Setting::Bool(_) | Setting::Duration(_) | Setting::Verbosity(_) => {
                vec![self.text()]
            }
            Setting::Pythons(tags) => tags.iter().map(PythonTag::to_string).collect(),
            Setting::Selector(selector) => selector.patterns().to_vec(),
        }
    }

    pub(crate) fn text(&self) -> String {
        match self {
            Setting::Text(text) => text.clone(),
            Setting::List(items) => items.join(" "),
            Setting::Frontend(frontend) => frontend.to_string(),
            Setting::OsVersion(version) => version.to_string(),
            Setting::Bool(flag) => flag.to_string(),
            Setting::Duration(limit) => {
                limit.map_or_else(String::new, |limit| limit.as_secs().to_string())
            }
            Setting::Verbosity(level) => level.to_string(),
            Setting::Pythons(_) | Setting::Selector(_) => self.list().join(" "),
            Setting::Pairs(_) | Setting::Env(_) => String::new(),
        }
    }

    /// A `python` option's tags; none for another kind.
    pub(crate) fn pythons(&self) -> Vec<PythonTag> {
        match self {
            Setting::Pythons(tags) => tags.clone(),
            _ => Vec::new(),
        }
    }

    /// A selector option's patterns; one that selects nothing for another kind.
    pub(crate) fn selector(&self) -> Selector {
        match self {
            Setting::Selector(selector) => selector.clone(),
            _ => Selector::empty(),
        }
    }

    /// A boolean option's value; false for any other kind.
    pub(crate) fn flag(&self) -> bool {
        matches!(self, Setting::Bool(true))
    }

    /// A duration option's limit; `None` when unlimited or another kind.
    pub(crate) fn duration(&self) -> Option<std::time::Duration> {
        match self {
            Setting::Duration(limit) => *limit,
            _ => None,
        }
    }

    /// `build-verbosity`; 0 for another kind (an unset option has its default, 0).
    pub(crate) fn verbosity(&self) -> i64 {
        match self {
            Setting::Verbosity(level) => *level,
            _ => 0,
        }
    }

    pub(crate) fn pairs(&self) -> Vec<(String, String)> {
        match self {
            Setting::Pairs(pairs) => pairs.clone(),
            _ => Vec::new(),
        }
    }

    pub(crate) fn os_version(&self) -> Option<OsVersion> {
        match self {
            Setting::OsVersion(version) => Some(*version),
            _ => None,
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
        Kind::Selector | Kind::Python | Kind::Enable => parse_list(kind, words()),
        // cibuildwheel's `--archs` and `CIBW_ARCHS` take commas as well as spaces.
        Kind::Archs => parse_list(kind, vec![text.to_string()]),
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
        Kind::MacosVersion => Ok(Setting::OsVersion(parse_macos_version(text)?)),
        Kind::Verbosity => {
            let level = text
                .trim()
                .parse::<i64>()
                .map_err(|_| format!("`{}` is not an integer from -3 to 3", text.trim()))?;
            Ok(Setting::Verbosity(verbosity(level)))
        }
        Kind::Duration => Ok(Setting::Duration(
            parse_duration(text)?.map(std::time::Duration::from_secs),
        )),
        Kind::Bool => match text.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => Ok(Setting::Bool(true)),
            "false" | "0" | "no" | "" => Ok(Setting::Bool(false)),
            other => Err(format!("`{other}` is not true or false")),
        },
        Kind::DependencyVersions => Ok(Setting::Text(text.trim().to_string())),
        Kind::Ignored => Ok(Setting::Text(text.to_string())),
    }
}

/// cibuildwheel clamps `build-verbosity` to -3..=3.
pub(crate) fn verbosity(level: i64) -> i64 {
    level.clamp(-3, 3)
}

/// Whether the kind has an array form.
pub(crate) fn accepts_array(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Selector
            | Kind::Archs
            | Kind::Python
            | Kind::Enable
            | Kind::Ignored
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
        Kind::Selector => Ok(Setting::Selector(Selector::new(&split_items(items))?)),
        Kind::Archs => {
            let names: Vec<String> = items
                .iter()
                .flat_map(|item| item.split(|c: char| c == ',' || c.is_whitespace()))
                .filter(|name| !name.is_empty())
                .map(String::from)
                .collect();
            for name in &names {
                check_target_name(name)?;
            }
            Ok(Setting::List(names))
        }
        Kind::Enable => {
            let groups = split_items(items);
            for group in &groups {
                if !super::cibw::enable_values().any(|known| known == group) {
                    let known: Vec<&str> = super::cibw::data()
                        .enable_values
                        .iter()
                        .map(String::as_str)
                        .collect();
                    return Err(format!(
                        "`{group}` is not an enable group: use {}",
                        known.join(", ")
                    ));
                }
            }
            Ok(Setting::List(groups))
        }
        Kind::Python => Ok(Setting::Pythons(
            split_items(items)
                .iter()
                .map(|tag| PythonTag::parse(tag))
                .collect::<Result<_, _>>()?,
        )),
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
        (Setting::Pythons(mut a), Setting::Pythons(b)) => {
            a.extend(b);
            Setting::Pythons(a)
        }
        (Setting::Selector(a), Setting::Selector(b)) => {
            let patterns = [a.patterns(), b.patterns()].concat();
            // Both halves compiled when they were read; so does their union.
            Setting::Selector(Selector::new(&patterns).unwrap_or(b))
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

/// The `archs` keywords (what each builds: `[archs-keywords]` of config/defaults.toml).
pub(crate) const ARCHS_KEYWORDS: [&str; 5] = ["auto", "auto64", "native", "all", "auto32"];

/// An `archs` value: a keyword, a crosswheel target, or an architecture cibuildwheel knows
/// (`x86_64`, `universal2`, `AMD64`, ...), which is kept and reported as not built here.
fn check_target_name(name: &str) -> Result<(), String> {
    let lower = name.to_ascii_lowercase();
    if ARCHS_KEYWORDS.contains(&lower.as_str())
        || targets().iter().any(|t| t.is_named(name))
        || super::cibw::is_known_arch(name)
    {
        return Ok(());
    }
    let arches: Vec<&str> = targets().iter().map(|t| t.arch.as_str()).collect();
    let ids: Vec<&str> = targets().iter().map(|t| t.id.as_str()).collect();
    Err(format!(
        "`{name}` is not an architecture: use auto, auto64, native, all, {}, a target id ({}), or an architecture name of cibuildwheel's",
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
        assert_eq!(
            parse_text(Kind::Archs, "aarch64,x86_64 AMD64").unwrap(),
            list(&["aarch64", "x86_64", "AMD64"])
        );
        assert!(parse_text(Kind::Archs, "auto64,native").is_ok());
        let err = parse_text(Kind::Archs, "sparc").unwrap_err();
        assert!(err.contains("sparc") && err.contains("ppc64le"), "{err}");
    }

    #[test]
    fn python_tags_are_checked() {
        assert_eq!(
            parse_text(Kind::Python, "cp310 cp311").unwrap().pythons(),
            [
                PythonTag::parse("cp310").unwrap(),
                PythonTag::parse("cp311").unwrap()
            ]
        );
        assert!(parse_text(Kind::Python, "3.11").is_err());
    }

    #[test]
    fn selectors_are_compiled_when_read() {
        let selector = parse_text(Kind::Selector, "cp3{10,11}-* *-macosx_*")
            .unwrap()
            .selector();
        assert!(selector.matches("cp311-manylinux_aarch64"));
        assert!(selector.matches("cp313-macosx_arm64"));
        assert!(!selector.matches("cp312-manylinux_aarch64"));
        assert!(parse_text(Kind::Selector, "cp3{10").is_err());
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
