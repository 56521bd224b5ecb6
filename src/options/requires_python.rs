//! `[project] requires-python`: like cibuildwheel, builds for CPython versions the project
//! does not support are left out. A version `3.X` is tested as `3.X.99`, so `>=3.10.2`
//! keeps 3.10 while `<3.10.2` drops it.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};

use toml::de::{DeTable, DeValue};

use super::EnvSource;
use super::error::{OptionsError, Origin};
use super::schema::REQUIRES_PYTHON_VAR;

/// A PEP 440 specifier set over release numbers (`>=3.10, !=3.11.*, <4`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequiresPython {
    clauses: Vec<Clause>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Clause {
    operator: Operator,
    release: Vec<u64>,
    /// `==3.10.*` / `!=3.10.*`.
    wildcard: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    GreaterEqual,
    Greater,
    LessEqual,
    Less,
    Equal,
    NotEqual,
    Compatible,
}

impl RequiresPython {
    pub(crate) fn parse(text: &str) -> Result<RequiresPython, String> {
        let clauses = text
            .split(',')
            .map(str::trim)
            .filter(|clause| !clause.is_empty())
            .map(Clause::parse)
            .collect::<Result<_, _>>()?;
        Ok(RequiresPython { clauses })
    }

    /// Whether CPython `3.minor` satisfies every clause.
    pub(crate) fn allows(&self, minor: u32) -> bool {
        let version = [3, u64::from(minor), 99];
        self.clauses.iter().all(|clause| clause.allows(&version))
    }
}

impl Clause {
    fn parse(text: &str) -> Result<Clause, String> {
        const OPERATORS: [(&str, Operator); 7] = [
            (">=", Operator::GreaterEqual),
            ("<=", Operator::LessEqual),
            ("==", Operator::Equal),
            ("!=", Operator::NotEqual),
            ("~=", Operator::Compatible),
            (">", Operator::Greater),
            ("<", Operator::Less),
        ];
        let (operator, rest) = OPERATORS
            .iter()
            .find_map(|(symbol, operator)| text.strip_prefix(symbol).map(|rest| (*operator, rest)))
            .ok_or_else(|| format!("`{text}` does not start with >=, >, <=, <, ==, != or ~="))?;
        let rest = rest.trim();
        let (number, wildcard) = match rest.strip_suffix(".*") {
            Some(number) if matches!(operator, Operator::Equal | Operator::NotEqual) => {
                (number, true)
            }
            _ => (rest, false),
        };
        let release = number
            .split('.')
            .map(|part| part.parse::<u64>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| {
                format!("`{text}`: crosswheel understands release versions such as 3.10 or 3.10.*")
            })?;
        if operator == Operator::Compatible && release.len() < 2 {
            return Err(format!("`{text}`: ~= needs at least two version parts"));
        }
        Ok(Clause {
            operator,
            release,
            wildcard,
        })
    }

    fn allows(&self, version: &[u64]) -> bool {
        let ordering = compare(version, &self.release);
        match self.operator {
            Operator::GreaterEqual => ordering != Ordering::Less,
            Operator::Greater => ordering == Ordering::Greater,
            Operator::LessEqual => ordering != Ordering::Greater,
            Operator::Less => ordering == Ordering::Less,
            Operator::Equal if self.wildcard => has_prefix(version, &self.release),
            Operator::Equal => ordering == Ordering::Equal,
            Operator::NotEqual if self.wildcard => !has_prefix(version, &self.release),
            Operator::NotEqual => ordering != Ordering::Equal,
            Operator::Compatible => {
                let prefix = self
                    .release
                    .get(..self.release.len().saturating_sub(1))
                    .unwrap_or_default();
                ordering != Ordering::Less && has_prefix(version, prefix)
            }
        }
    }
}

/// Compares release numbers, padding the shorter with zeros (3.10 == 3.10.0).
fn compare(a: &[u64], b: &[u64]) -> Ordering {
    let length = a.len().max(b.len());
    (0..length)
        .map(|i| {
            let left = a.get(i).copied().unwrap_or(0);
            let right = b.get(i).copied().unwrap_or(0);
            left.cmp(&right)
        })
        .find(|ordering| ordering.is_ne())
        .unwrap_or(Ordering::Equal)
}

fn has_prefix(version: &[u64], prefix: &[u64]) -> bool {
    prefix
        .iter()
        .enumerate()
        .all(|(i, part)| version.get(i).copied().unwrap_or(0) == *part)
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
        assert!(RequiresPython::parse(">=3.10rc1").is_err());
        assert!(RequiresPython::parse("~=3").is_err());
    }
}
