//! Build identifiers in cibuildwheel's form (`cp311-manylinux_aarch64`,
//! `cp311-macosx_arm64`): one per CPython version and target.
//!
//! The targets come from `config/targets.toml`, the same data the toolchain reads; only the
//! fields naming a target are used here, so this module does not depend on the toolchain.

use std::fmt;
use std::sync::OnceLock;

use serde::Deserialize;

const TARGETS_TOML: &str = include_str!("../../config/targets.toml");

/// The operating system family of a target; each has its own `[tool.crosswheel.<platform>]`
/// table and `CROSSWHEEL_*_<PLATFORM>` variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    Linux,
    Macos,
}

impl Platform {
    pub const ALL: [Platform; 2] = [Platform::Linux, Platform::Macos];

    /// `linux`, `macos`: the table name and (upper-cased) the variable suffix.
    pub fn name(self) -> &'static str {
        match self {
            Platform::Linux => "linux",
            Platform::Macos => "macos",
        }
    }

    pub fn from_name(name: &str) -> Option<Platform> {
        Platform::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The platform part of an identifier before the architecture, as cibuildwheel spells it.
    fn identifier_prefix(self) -> &'static str {
        match self {
            Platform::Linux => "manylinux",
            Platform::Macos => "macosx",
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A target as the options see it: its id, its names and its platform.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TargetName {
    /// `linux-aarch64`: what `toolchain::Target::parse` accepts.
    pub id: String,
    pub aliases: Vec<String>,
    /// `aarch64`, `ppc64le`, `arm64`.
    pub arch: String,
    #[serde(rename = "os")]
    pub platform: Platform,
}

impl TargetName {
    /// `manylinux_aarch64`, `macosx_arm64`.
    pub fn identifier_platform(&self) -> String {
        format!("{}_{}", self.platform.identifier_prefix(), self.arch)
    }

    /// Whether an `archs` value names this target: its id, an alias, its architecture or its
    /// identifier platform.
    pub fn is_named(&self, name: &str) -> bool {
        let name = name.trim().to_ascii_lowercase();
        self.id == name
            || self.arch == name
            || self.aliases.contains(&name)
            || self.identifier_platform() == name
    }
}

#[derive(Deserialize)]
struct TargetsFile {
    target: Vec<TargetName>,
}

/// All targets, in the order of `config/targets.toml` (the order builds are listed in).
pub fn targets() -> &'static [TargetName] {
    static TARGETS: OnceLock<Vec<TargetName>> = OnceLock::new();
    TARGETS.get_or_init(|| match toml::from_str::<TargetsFile>(TARGETS_TOML) {
        Ok(file) => file.target,
        // The file is compiled in; the unit test `bundled_targets_parse` guards it.
        Err(err) => panic!("config/targets.toml is invalid: {err}"),
    })
}

/// A CPython version as a wheel tag, `cp311`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PythonTag {
    minor: u32,
}

impl PythonTag {
    /// Parses `cp39`, `cp311`, ...; crosswheel builds CPython 3 only and no free-threaded ABI.
    pub fn parse(tag: &str) -> Result<PythonTag, String> {
        let digits = tag.strip_prefix("cp3").ok_or_else(|| {
            format!("`{tag}` is not a CPython tag: use the form `cp311` (CPython 3.11)")
        })?;
        if digits.ends_with('t') {
            return Err(format!(
                "`{tag}`: free-threaded CPython builds are not supported yet"
            ));
        }
        let minor = digits
            .parse::<u32>()
            .ok()
            .filter(|_| !digits.starts_with('0') || digits == "0")
            .ok_or_else(|| {
                format!("`{tag}` is not a CPython tag: use the form `cp311` (CPython 3.11)")
            })?;
        Ok(PythonTag { minor })
    }

    /// `3.11`.
    pub fn version(self) -> String {
        format!("3.{}", self.minor)
    }

    pub fn minor(self) -> u32 {
        self.minor
    }
}

impl fmt::Display for PythonTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cp3{}", self.minor)
    }
}

/// `cp311-manylinux_aarch64`.
pub fn identifier(python: PythonTag, target: &TargetName) -> String {
    format!("{python}-{}", target.identifier_platform())
}

/// Splits an identifier back into its CPython version and target.
pub fn parse_identifier(identifier: &str) -> Result<(PythonTag, &'static TargetName), String> {
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
                .map(TargetName::identifier_platform)
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
        assert!(
            PythonTag::parse("cp313t")
                .unwrap_err()
                .contains("free-threaded")
        );
        assert!(PythonTag::parse("pp310").is_err());
        assert!(PythonTag::parse("cp3").is_err());
        assert!(PythonTag::parse("cp3x").is_err());
        assert!(PythonTag::parse("cp3011").is_err());
    }

    #[test]
    fn python_tags_sort_by_version_not_text() {
        let mut tags: Vec<PythonTag> = ["cp311", "cp39", "cp310"]
            .iter()
            .map(|t| PythonTag::parse(t).unwrap())
            .collect();
        tags.sort();
        let sorted: Vec<String> = tags.iter().map(ToString::to_string).collect();
        assert_eq!(sorted, ["cp39", "cp310", "cp311"]);
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
