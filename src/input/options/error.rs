//! Errors of option reading and where a value came from.

use std::fmt;
use std::path::PathBuf;

/// Where a setting was read: every error about a value points here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A TOML file (pyproject.toml, a `--config-file`, or crosswheel's bundled defaults).
    File { path: PathBuf, line: usize },
    /// An environment variable such as `CROSSWHEEL_ARCHS`.
    Env(String),
    /// A command-line flag such as `--archs`.
    Cli(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line } => write!(f, "{}:{line}", path.display()),
            Origin::Env(name) => write!(f, "environment variable {name}"),
            Origin::Cli(flag) => write!(f, "command-line option {flag}"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    #[error("no such project folder: {}", .path.display())]
    NoProject { path: PathBuf },
    #[error(
        "{} is not a Python project: it has no pyproject.toml or setup.py",
        .path.display()
    )]
    NotAProject { path: PathBuf },
    #[error(transparent)]
    Io(#[from] crate::io_error::IoError),
    #[error("{}:{line}: invalid TOML: {message}", .path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{origin}: unknown option `{key}` in {table}{}", suggestion_text(.suggestion))]
    UnknownKey {
        origin: Origin,
        key: String,
        table: String,
        suggestion: Option<String>,
    },
    #[error("{origin}: `{key}` must be {expected}, not {found}")]
    WrongType {
        origin: Origin,
        key: String,
        expected: &'static str,
        found: &'static str,
    },
    #[error("{origin}: invalid `{key}`: {message}")]
    InvalidValue {
        origin: Origin,
        key: String,
        message: String,
    },
    #[error(
        "{origin}: `{key}` cannot be set in {table} (it chooses which builds run, or cibuildwheel's schema keeps it out of overrides): set it in the main table or a platform table"
    )]
    NotOverridable {
        origin: Origin,
        key: String,
        table: String,
    },
    #[error("{origin}: both `archs` and `targets` are set; they are the same option, keep one")]
    ArchsAndTargets { origin: Origin },
    #[error("--only {identifier}: {message}")]
    BadOnly { identifier: String, message: String },
    /// Several problems, each on its own line.
    #[error("{} problems in the configuration (options: `crosswheel help config`):\n{}", .0.len(), several_lines(.0))]
    Several(Vec<OptionsError>),
    #[error(
        "no build selected (build = {build:?}, skip = {skip:?}, archs and python as configured): widen the selection, or pass --allow-empty"
    )]
    NothingSelected { build: String, skip: String },
    /// The selection named builds, and the project's `requires-python` left out every one.
    #[error(
        "no build selected: requires-python `{requires_python}` excludes every CPython the selection names ({excluded}): select a version it allows, or pass --allow-empty"
    )]
    RequiresPythonExcludesAll {
        requires_python: String,
        excluded: String,
    },
    /// cibuildwheel's words, which its users (and its tests) look for.
    #[error(
        "Invalid archs option {}: {platform} only supports {} at the moment (the platform is chosen by {chosen_by}). If you want to set emulation architectures on Linux, use CIBW_ARCHS_LINUX instead.",
        .names.join(", "),
        .supported.join(", ")
    )]
    InvalidArchs {
        names: Vec<String>,
        platform: &'static str,
        supported: Vec<String>,
        chosen_by: String,
    },
}

/// Where a user of the installed binary reads about the options: docs/configuration.md of
/// the repository that Cargo.toml's `repository` names (the unit test
/// `the_docs_url_names_a_page_of_the_repository` holds the page to the file).
pub const DOCS_URL: &str = concat!(
    env!("CARGO_PKG_REPOSITORY"),
    "/blob/main/docs/configuration.md"
);

fn suggestion_text(suggestion: &Option<String>) -> String {
    match suggestion {
        Some(key) => format!(": did you mean `{key}`?"),
        None => format!(": see `crosswheel help config` or {DOCS_URL} for the options"),
    }
}

fn several_lines(errors: &[OptionsError]) -> String {
    errors
        .iter()
        .map(|error| format!("  {error}"))
        .collect::<Vec<_>>()
        .join("\n")
}

impl OptionsError {
    /// `Ok` for no problem, the problem itself for one, [`OptionsError::Several`] for more
    /// (nested lists flattened, repeats dropped).
    pub(crate) fn from_all(errors: Vec<OptionsError>) -> Result<(), OptionsError> {
        let mut flat: Vec<OptionsError> = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for error in errors {
            let items = match error {
                OptionsError::Several(inner) => inner,
                single => vec![single],
            };
            for item in items {
                if seen.insert(item.to_string()) {
                    flat.push(item);
                }
            }
        }
        match flat.len() {
            0 => Ok(()),
            1 => Err(flat.remove(0)),
            _ => Err(OptionsError::Several(flat)),
        }
    }

    /// Each problem of the error (one, or each of [`OptionsError::Several`]).
    pub fn problems(&self) -> Vec<&OptionsError> {
        match self {
            OptionsError::Several(inner) => inner.iter().collect(),
            single => vec![single],
        }
    }
}

/// Keeps the value, or records the problem and gives `None`.
pub(crate) fn keep<T>(
    result: Result<T, OptionsError>,
    problems: &mut Vec<OptionsError>,
) -> Option<T> {
    match result {
        Ok(value) => Some(value),
        Err(error) => {
            problems.push(error);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_docs_url_names_a_page_of_the_repository() {
        let page = DOCS_URL
            .strip_prefix(env!("CARGO_PKG_REPOSITORY"))
            .and_then(|rest| rest.strip_prefix("/blob/main/"))
            .expect("DOCS_URL is a page of the repository Cargo.toml names");
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(page);
        assert!(file.is_file(), "{} does not exist", file.display());
    }
}
