//! `[project] requires-python`: like cibuildwheel, builds for CPython versions the project
//! does not support are left out. A version `3.X` is tested as `3.X.99`, so `>=3.10.2`
//! keeps 3.10 while `<3.10.2` drops it.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use pep508_rs::pep440_rs::{Version, VersionSpecifiers};
use toml::de::{DeTable, DeValue};

use super::EnvSource;
use super::error::{OptionsError, Origin};
use super::schema::REQUIRES_PYTHON_VAR;

/// A PEP 440 specifier set (`>=3.10, !=3.11.*, <4`), read by `pep440_rs` so pre-releases,
/// `===` and local versions mean what pip says they mean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequiresPython {
    specifiers: VersionSpecifiers,
}

impl RequiresPython {
    pub(crate) fn parse(text: &str) -> Result<RequiresPython, String> {
        VersionSpecifiers::from_str(text)
            .map(|specifiers| RequiresPython { specifiers })
            .map_err(|err| {
                // pep440_rs draws a caret under the fault on more lines; errors here are one line.
                let shown = err.to_string();
                let first = shown.lines().next().unwrap_or_default();
                let reason = first
                    .trim_start_matches("Failed to parse version: ")
                    .trim_end_matches(':');
                format!("`{}` is not a PEP 440 specifier set: {reason}", err.line())
            })
    }

    /// Whether CPython `3.minor` satisfies every clause.
    pub(crate) fn allows(&self, minor: u32) -> bool {
        let version = Version::new([3, u64::from(minor), 99]);
        self.specifiers.contains(&version)
    }
}

/// `CROSSWHEEL_PROJECT_REQUIRES_PYTHON`, else `[project] requires-python`: the parsed
/// specifier with its text, for messages.
pub(super) fn read(
    pyproject_path: &Path,
    pyproject_text: Option<&str>,
    env: &impl EnvSource,
) -> Result<Option<(RequiresPython, String)>, OptionsError> {
    let from_env = [REQUIRES_PYTHON_VAR, "CIBW_PROJECT_REQUIRES_PYTHON"]
        .into_iter()
        .find_map(|name| {
            env.var(name)
                .filter(|v| !v.trim().is_empty())
                .map(|text| (text, Origin::Env(name.to_string())))
        });
    let (text, origin) = match from_env {
        Some(found) => found,
        None => match pyproject_text.and_then(|text| project_requires_python(pyproject_path, text))
        {
            Some(found) => found,
            None => return Ok(None),
        },
    };
    RequiresPython::parse(&text)
        .map(|spec| Some((spec, text.clone())))
        .map_err(|message| OptionsError::InvalidValue {
            origin,
            key: "requires-python".to_string(),
            message,
        })
}

/// The `[project] requires-python` string and its line; a malformed pyproject.toml was
/// reported when `[tool.crosswheel]` was read, and a missing value restricts nothing.
fn project_requires_python(path: &Path, text: &str) -> Option<(String, Origin)> {
    let root = DeTable::parse(text).ok()?;
    let DeValue::Table(project) = root.get_ref().get("project")?.get_ref() else {
        return None;
    };
    let value = project.get("requires-python")?;
    let DeValue::String(spec) = value.get_ref() else {
        return None;
    };
    let line = text
        .get(..value.span().start)
        .map_or(1, |before| before.matches('\n').count() + 1);
    Some((
        spec.to_string(),
        Origin::File {
            path: PathBuf::from(path),
            line,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(spec: &str) -> Vec<u32> {
        let parsed = RequiresPython::parse(spec).unwrap();
        (9..=14).filter(|&minor| parsed.allows(minor)).collect()
    }

    #[test]
    fn lower_and_upper_bounds() {
        assert_eq!(allowed(">=3.10"), [10, 11, 12, 13, 14]);
        assert_eq!(allowed(">=3.10, <3.13"), [10, 11, 12]);
        assert_eq!(allowed(">3.11"), [11, 12, 13, 14], "3.11.99 > 3.11");
    }

    #[test]
    fn patch_bounds_follow_cibuildwheel() {
        assert_eq!(allowed(">=3.10.2,<3.12"), [10, 11]);
        assert_eq!(allowed("<3.10.2"), [9]);
    }

    #[test]
    fn wildcards_and_compatible_release() {
        assert_eq!(allowed("!=3.12.*"), [9, 10, 11, 13, 14]);
        assert_eq!(allowed("==3.11.*"), [11]);
        assert_eq!(allowed("~=3.11"), [11, 12, 13, 14]);
        assert_eq!(allowed("~=3.11.0"), [11]);
    }

    #[test]
    fn rejects_what_it_does_not_understand() {
        assert!(RequiresPython::parse("3.10").is_err());
        assert!(RequiresPython::parse("~=3").is_err());
        assert!(RequiresPython::parse(">=3.10,,").is_err());
    }

    #[test]
    fn pre_releases_and_arbitrary_equality_are_pep_440() {
        assert_eq!(allowed(">=3.10rc1"), [10, 11, 12, 13, 14]);
        assert_eq!(allowed("===3.11.99"), [11]);
    }
}
