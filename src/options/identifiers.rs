//! Build identifiers in cibuildwheel's form (`cp311-manylinux_aarch64`,
//! `cp311-macosx_arm64`): one per CPython version and target (from [`crate::target`]).

use std::fmt;

pub use crate::target::{Platform, TargetData, targets};

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

impl fmt::Display for PythonTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cp3{}{}", self.minor, self.abiflags())
    }
}

/// `cp311-manylinux_aarch64`.
pub fn identifier(python: PythonTag, target: &TargetData) -> String {
    format!("{python}-{}", target.identifier_platform())
}

/// Splits an identifier back into its CPython version and target.
pub fn parse_identifier(identifier: &str) -> Result<(PythonTag, &'static TargetData), String> {
    let (python, platform) = identifier.split_once('-').ok_or_else(|| {
        format!("`{identifier}` is not a build identifier such as `cp311-manylinux_aarch64`")
    })?;
    let python = PythonTag::parse(python)?;
    let target = targets()
        .iter()
        .find(|target| target.identifier_platform() == platform)
        .ok_or_else(|| {
            let known: Vec<String> = targets()
                .iter()
                .map(TargetData::identifier_platform)
                .collect();
            format!(
                "`{identifier}` names no crosswheel target: the platform part must be one of {}",
                known.join(", ")
            )
        })?;
    Ok((python, target))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_targets_parse() {
        let ids: Vec<&str> = targets().iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["linux-aarch64", "linux-ppc64le", "macos-arm64"]);
    }

    #[test]
    fn identifiers_follow_cibuildwheel_naming() {
        let python = PythonTag::parse("cp311").unwrap();
        let names: Vec<String> = targets().iter().map(|t| identifier(python, t)).collect();
        assert_eq!(
            names,
            [
                "cp311-manylinux_aarch64",
                "cp311-manylinux_ppc64le",
                "cp311-macosx_arm64"
            ]
        );
    }

    #[test]
    fn identifier_round_trips() {
        let (python, target) = parse_identifier("cp39-macosx_arm64").unwrap();
        assert_eq!(python.version(), "3.9");
        assert_eq!(target.id, "macos-arm64");
        assert!(parse_identifier("cp311-manylinux_x86_64").is_err());
        assert!(parse_identifier("cp311").is_err());
    }

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
    fn archs_values_name_targets_by_arch_id_alias_or_identifier_platform() {
        let aarch64 = &targets()[0];
        for name in [
            "aarch64",
            "linux-aarch64",
            "manylinux-aarch64",
            "manylinux_aarch64",
        ] {
            assert!(aarch64.is_named(name), "{name}");
        }
        assert!(!aarch64.is_named("arm64"));
    }
}
