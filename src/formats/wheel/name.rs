//! Wheel file names (PEP 427, compressed tag sets per PEP 425).

use std::fmt;

use crate::formats::wheel::{AbiTag, LanguageTag, PlatformTag, WheelError, join_tags};
use crate::package_name::normalize;

/// A parsed wheel file name:
/// `{distribution}-{version}(-{build})?-{python}-{abi}-{platform}.whl`.
///
/// Parsing keeps every part exactly as written, so [`WheelName::file_name`]
/// gives back the input byte for byte; tag sets are split on `.`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WheelName {
    pub distribution: String,
    pub version: String,
    pub build: Option<String>,
    pub python: Vec<LanguageTag>,
    pub abi: Vec<AbiTag>,
    /// Parsed once here; each renders back to exactly the text it was read from.
    pub platform: Vec<PlatformTag>,
}

impl WheelName {
    /// Parses a wheel file name (not a path: no directory part).
    pub fn parse(file_name: &str) -> Result<Self, WheelError> {
        let invalid = |reason: &'static str| WheelError::InvalidFileName {
            file_name: file_name.to_owned(),
            reason,
        };
        let stem = file_name
            .strip_suffix(".whl")
            .ok_or_else(|| invalid("it does not end with `.whl`"))?;
        let parts: Vec<&str> = stem.split('-').collect();
        let (distribution, version, build, python, abi, platform) = match parts.as_slice() {
            [d, v, py, abi, plat] => (*d, *v, None, *py, *abi, *plat),
            [d, v, b, py, abi, plat] => (*d, *v, Some(*b), *py, *abi, *plat),
            _ => return Err(invalid("it must have 5 or 6 `-`-separated parts")),
        };
        if distribution.is_empty() || !distribution.chars().all(is_name_char) {
            return Err(invalid(
                "the distribution must be letters, digits, `_` and `.` (with `-` escaped as `_`)",
            ));
        }
        if version.is_empty() || !version.chars().all(is_version_char) {
            return Err(invalid(
                "the version must be non-empty and contain only letters, digits and `._+!`",
            ));
        }
        if let Some(build) = build
            && !(build.starts_with(|c: char| c.is_ascii_digit()) && build.chars().all(is_name_char))
        {
            return Err(invalid(
                "the build tag must start with a digit and contain only letters, digits, `_` and `.`",
            ));
        }
        Ok(Self {
            distribution: distribution.to_owned(),
            version: version.to_owned(),
            build: build.map(str::to_owned),
            python: split_tag_set(python)
                .ok_or_else(|| invalid("the python tag is malformed"))?
                .iter()
                .map(|tag| LanguageTag::parse(tag))
                .collect(),
            abi: split_tag_set(abi)
                .ok_or_else(|| invalid("the abi tag is malformed"))?
                .iter()
                .map(|tag| AbiTag::parse(tag))
                .collect(),
            platform: split_tag_set(platform)
                .ok_or_else(|| invalid("the platform tag is malformed"))?
                .iter()
                .map(|tag| PlatformTag::parse(tag))
                .collect(),
        })
    }

    /// The file name this name was parsed from (or would be written as).
    pub fn file_name(&self) -> String {
        self.to_string()
    }

    /// Every `python-abi-platform` triple the compressed tag sets stand for,
    /// in the order pip's tag expansion produces them.
    pub fn tags(&self) -> Vec<String> {
        let mut tags = Vec::with_capacity(self.python.len() * self.abi.len() * self.platform.len());
        for python in &self.python {
            for abi in &self.abi {
                for platform in &self.platform {
                    tags.push(format!("{python}-{abi}-{platform}"));
                }
            }
        }
        tags
    }

    /// The same wheel retagged for other platforms (e.g. after repair).
    pub fn with_platforms(&self, platforms: Vec<PlatformTag>) -> WheelName {
        WheelName {
            platform: platforms,
            ..self.clone()
        }
    }

    /// Whether an ABI tag is `abi3`, CPython's stable ABI.
    pub fn is_abi3(&self) -> bool {
        self.abi.contains(&AbiTag::Abi3)
    }

    /// Whether the wheel runs on any Python 3 (`py3-none`): no ABI and a `py3` tag.
    pub fn is_python3_independent(&self) -> bool {
        self.abi.iter().all(|abi| *abi == AbiTag::None)
            && self.python.iter().any(LanguageTag::is_any_python3)
    }

    /// The `{distribution}-{version}` stem of the `.dist-info` directory this
    /// wheel should contain, compared with [`same_project`].
    pub fn dist_info_stem(&self) -> String {
        format!("{}-{}", self.distribution, self.version)
    }
}

impl fmt::Display for WheelName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.distribution, self.version)?;
        if let Some(build) = &self.build {
            write!(f, "-{build}")?;
        }
        write!(
            f,
            "-{}-{}-{}.whl",
            join_tags(&self.python),
            join_tags(&self.abi),
            join_tags(&self.platform)
        )
    }
}

/// Whether a `.dist-info` stem (`name-version`) belongs to the wheel called
/// `name`: the project names are compared after PEP 503 normalisation and the
/// versions after PEP 427 escaping, both case-insensitively.
pub fn same_project(dist_info_stem: &str, name: &WheelName) -> bool {
    // Versions never contain `-`, so the last `-` separates even an
    // unescaped project name (`zope-interface-5.0`) from its version.
    let Some((project, version)) = dist_info_stem.rsplit_once('-') else {
        return false;
    };
    normalize(project) == normalize(&name.distribution)
        && escape_version(version) == escape_version(&name.version)
}

fn escape_version(version: &str) -> String {
    version.to_lowercase().replace('-', "_")
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

fn is_version_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '+' | '!')
}

fn split_tag_set(tag_set: &str) -> Option<Vec<String>> {
    tag_set
        .split('.')
        .map(|tag| {
            (!tag.is_empty() && tag.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
                .then(|| tag.to_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NUMPY: &str = "numpy-2.2.6-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl";

    #[test]
    fn parses_compressed_platform_tag_set() {
        let name = WheelName::parse(NUMPY).unwrap();
        assert_eq!(name.distribution, "numpy");
        assert_eq!(name.version, "2.2.6");
        assert_eq!(name.build, None);
        let cp311 = crate::python_tag::PythonTag::parse("cp311").unwrap();
        assert_eq!(name.python, [LanguageTag::CPython(cp311)]);
        assert_eq!(name.abi, [AbiTag::CPython(cp311)]);
        assert_eq!(
            name.platform,
            ["manylinux_2_17_aarch64", "manylinux2014_aarch64"]
        );
    }

    #[test]
    fn file_name_round_trips_exactly() {
        for file_name in [
            NUMPY,
            "six-1.16.0-py2.py3-none-any.whl",
            "foo_bar-1.0.post1+local.7-12abc-py3-none-macosx_11_0_arm64.whl",
            "Pillow-1!10.0-cp39-abi3-linux_x86_64.whl",
        ] {
            assert_eq!(WheelName::parse(file_name).unwrap().file_name(), file_name);
        }
    }

    #[test]
    fn parses_build_tag_starting_with_a_digit() {
        let name = WheelName::parse("pkg-1.0-1_dev-py3-none-any.whl").unwrap();
        assert_eq!(name.build.as_deref(), Some("1_dev"));
    }

    #[test]
    fn rejects_build_tag_not_starting_with_a_digit() {
        let error = WheelName::parse("pkg-1.0-dev1-py3-none-any.whl").unwrap_err();
        assert!(
            error
                .to_string()
                .contains("build tag must start with a digit"),
            "{error}"
        );
    }

    #[test]
    fn rejects_wrong_number_of_parts() {
        for file_name in ["pkg-1.0-py3-none.whl", "a-b-1-2-py3-none-any.whl"] {
            let error = WheelName::parse(file_name).unwrap_err();
            assert!(
                matches!(error, WheelError::InvalidFileName { .. }),
                "{error}"
            );
        }
    }

    #[test]
    fn rejects_names_without_whl_suffix_or_with_path_characters() {
        for file_name in [
            "pkg-1.0-py3-none-any.zip",
            "pkg-1.0-py3-none-../any.whl",
            "p/kg-1.0-py3-none-any.whl",
            "pkg-1.0-py3..py2-none-any.whl",
            "-1.0-py3-none-any.whl",
        ] {
            assert!(WheelName::parse(file_name).is_err(), "{file_name} accepted");
        }
    }

    #[test]
    fn expands_tags_python_major_then_abi_then_platform() {
        let name = WheelName::parse("x-1-py2.py3-none-linux_a.linux_b.whl").unwrap();
        assert_eq!(
            name.tags(),
            [
                "py2-none-linux_a",
                "py2-none-linux_b",
                "py3-none-linux_a",
                "py3-none-linux_b"
            ]
        );
    }

    #[test]
    fn with_platforms_replaces_only_the_platform_tags() {
        let name = WheelName::parse("x-1-cp311-cp311-linux_aarch64.whl").unwrap();
        let retagged = name.with_platforms(vec![
            "manylinux_2_17_aarch64".into(),
            "manylinux2014_aarch64".into(),
        ]);
        assert_eq!(
            retagged.file_name(),
            "x-1-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl"
        );
    }

    #[test]
    fn dist_info_matching_normalises_name_and_is_case_insensitive() {
        let name = WheelName::parse("zope_interface-5.0-py3-none-any.whl").unwrap();
        assert!(same_project("zope.interface-5.0", &name));
        assert!(same_project("Zope_Interface-5.0", &name));
        assert!(same_project("zope-interface-5.0", &name));
        assert!(!same_project("zope_interface-5.1", &name));
        assert!(!same_project("zopeinterface-5.0", &name));
        assert!(!same_project("zope_interface", &name));
    }
}
