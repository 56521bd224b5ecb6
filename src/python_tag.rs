//! A CPython version and ABI as wheel tags and interpreter names spell it (`cp311`,
//! `cp313t`): the one model of "which CPython" from the options to the test stage, so no
//! stage reads a version back out of a string.

use std::fmt;

/// A CPython version and ABI as a wheel tag: `cp311`, or `cp313t` for the free-threaded
/// build of CPython 3.13 (PEP 703), which has its own ABI and so its own wheels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PythonTag {
    minor: u32,
    free_threaded: bool,
}

/// The first CPython with a free-threaded build.
const FIRST_FREE_THREADED_MINOR: u32 = 13;

impl PythonTag {
    /// Parses `cp39`, `cp311`, `cp313t`, ...; crosswheel builds CPython 3 only.
    pub fn parse(tag: &str) -> Result<PythonTag, String> {
        let not_a_tag = || {
            format!(
                "`{tag}` is not a CPython tag: use the form `cp311` (CPython 3.11) or `cp314t` (free-threaded 3.14)"
            )
        };
        let digits = tag.strip_prefix("cp3").ok_or_else(not_a_tag)?;
        let (digits, free_threaded) = match digits.strip_suffix('t') {
            Some(digits) => (digits, true),
            None => (digits, false),
        };
        let minor = digits
            .parse::<u32>()
            .ok()
            .filter(|_| !digits.starts_with('0') || digits == "0")
            .filter(|_| digits.bytes().all(|byte| byte.is_ascii_digit()))
            .ok_or_else(not_a_tag)?;
        if free_threaded && minor < FIRST_FREE_THREADED_MINOR {
            return Err(format!(
                "`{tag}`: CPython has free-threaded builds from 3.13 on (`cp313t`)"
            ));
        }
        Ok(PythonTag {
            minor,
            free_threaded,
        })
    }

    /// Parses the dotted form interpreters are named by: `3.11`, `3.13t` (`python3.13t`), as
    /// `config/debian/releases.toml` lists Debian's CPythons and `--python` flags take them.
    pub fn parse_version(version: &str) -> Result<PythonTag, String> {
        let not_a_version = || {
            format!(
                "`{version}` is not a CPython version: use the form `3.11` or `3.13t` (free-threaded)"
            )
        };
        let minor = version
            .trim()
            .strip_prefix("3.")
            .filter(|minor| !minor.starts_with(['.', '+', '-']))
            .ok_or_else(not_a_version)?;
        PythonTag::parse(&format!("cp3{minor}")).map_err(|_| not_a_version())
    }

    /// CPython 3.`minor` with the GIL (`cp311`): what an interpreter reporting that version
    /// runs.
    pub fn cpython3(minor: u32) -> PythonTag {
        PythonTag {
            minor,
            free_threaded: false,
        }
    }

    /// The next CPython minor version, with this one's ABI (`cp314` after `cp313`).
    pub fn next_minor(self) -> PythonTag {
        PythonTag {
            minor: self.minor + 1,
            free_threaded: self.free_threaded,
        }
    }

    /// The same version with the GIL: what an abi3 wheel, which no free-threaded CPython
    /// loads, is tested on.
    pub fn with_gil(self) -> PythonTag {
        PythonTag {
            minor: self.minor,
            free_threaded: false,
        }
    }

    /// `3.11`: the CPython version, which is also the build python's.
    pub fn version(self) -> String {
        format!("3.{}", self.minor)
    }

    pub fn minor(self) -> u32 {
        self.minor
    }

    pub fn is_free_threaded(self) -> bool {
        self.free_threaded
    }

    /// `3.13t`: the version as the target interpreter's name has it (`python3.13t`).
    pub fn interpreter_version(self) -> String {
        format!("{}{}", self.version(), self.abiflags())
    }

    /// `t` for a free-threaded build, else empty: CPython's `sys.abiflags`.
    pub fn abiflags(self) -> &'static str {
        if self.free_threaded { "t" } else { "" }
    }

    /// The free-threaded build of the same version, where CPython has one.
    pub fn free_threaded(self) -> Option<PythonTag> {
        (self.minor >= FIRST_FREE_THREADED_MINOR).then_some(PythonTag {
            minor: self.minor,
            free_threaded: true,
        })
    }
}

/// Serde's view of a dotted version (`"3.11"`) in crosswheel's data files.
pub(crate) fn deserialize_version<'de, D>(deserializer: D) -> Result<PythonTag, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let text = <String as serde::Deserialize>::deserialize(deserializer)?;
    PythonTag::parse_version(&text).map_err(serde::de::Error::custom)
}

/// [`deserialize_version`] for a list.
pub(crate) fn deserialize_versions<'de, D>(deserializer: D) -> Result<Vec<PythonTag>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let texts = <Vec<String> as serde::Deserialize>::deserialize(deserializer)?;
    texts
        .iter()
        .map(|text| PythonTag::parse_version(text).map_err(serde::de::Error::custom))
        .collect()
}

impl fmt::Display for PythonTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cp3{}{}", self.minor, self.abiflags())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_tags_are_validated() {
        assert_eq!(PythonTag::parse("cp313").unwrap().version(), "3.13");
        let free_threaded = PythonTag::parse("cp313t").unwrap();
        assert_eq!(free_threaded.version(), "3.13");
        assert_eq!(free_threaded.interpreter_version(), "3.13t");
        assert_eq!(free_threaded.to_string(), "cp313t");
        assert!(
            PythonTag::parse("cp312t")
                .unwrap_err()
                .contains("from 3.13 on")
        );
        assert!(PythonTag::parse("cp31t3").is_err());
        assert!(PythonTag::parse("cp313tt").is_err());
        assert!(PythonTag::parse("pp310").is_err());
        assert!(PythonTag::parse("cp3").is_err());
        assert!(PythonTag::parse("cp3x").is_err());
        assert!(PythonTag::parse("cp3011").is_err());
    }

    #[test]
    fn python_tags_sort_by_version_not_text() {
        let mut tags: Vec<PythonTag> = ["cp314t", "cp311", "cp314", "cp39", "cp310"]
            .iter()
            .map(|t| PythonTag::parse(t).unwrap())
            .collect();
        tags.sort();
        let sorted: Vec<String> = tags.iter().map(ToString::to_string).collect();
        assert_eq!(sorted, ["cp39", "cp310", "cp311", "cp314", "cp314t"]);
    }

    #[test]
    fn dotted_versions_name_the_same_tags() {
        assert_eq!(
            PythonTag::parse_version("3.11").unwrap().to_string(),
            "cp311"
        );
        let free_threaded = PythonTag::parse_version("3.13t").unwrap();
        assert_eq!(free_threaded.to_string(), "cp313t");
        assert_eq!(free_threaded.with_gil().interpreter_version(), "3.13");
        for bad in ["3", "3.", "2.7", "3.x", "3.12t", "3.13.1", "cp311"] {
            assert!(PythonTag::parse_version(bad).is_err(), "{bad}");
        }
    }
}
