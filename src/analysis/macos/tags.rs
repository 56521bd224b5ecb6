//! macOS platform tags (`macosx_11_0_arm64`) and the minimum-version rules
//! a repaired wheel must keep: every slice's minos at or below what its tag
//! promises, and arm64 never below macOS 11.

use crate::macho::{Arch, Version};

/// The oldest macOS that runs on Apple silicon ([`crate::target::macos_arm64_floor`]).
pub fn arm64_floor() -> Version {
    let floor = crate::target::macos_arm64_floor();
    let minor = u8::try_from(floor.minor).expect("config/targets.toml: macOS minor fits a byte");
    let major = u16::try_from(floor.major).expect("config/targets.toml: macOS major fits 16 bits");
    Version::new(major, minor, 0)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacosTag {
    pub version: Version,
    /// `arm64`, `x86_64`, `universal2`, `intel`, ...
    pub arch: String,
}

impl MacosTag {
    /// Parses `macosx_<major>_<minor>_<arch>`.
    pub fn parse(tag: &str) -> Option<MacosTag> {
        let rest = tag.strip_prefix("macosx_")?;
        let mut parts = rest.splitn(3, '_');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let arch = parts.next().filter(|arch| !arch.is_empty())?;
        Some(MacosTag {
            version: Version::new(major, minor, 0),
            arch: arch.to_string(),
        })
    }

    /// `macosx_11_0_arm64`; since macOS 11 tags carry the major version only.
    pub fn render(&self) -> String {
        let version = tag_version(self.version);
        format!("macosx_{}_{}_{}", version.major, version.minor, self.arch)
    }

    /// Whether a slice of `arch` is one this tag speaks for.
    pub fn covers(&self, arch: Arch) -> bool {
        let arm = matches!(arch, Arch::Arm64 | Arch::Arm64e);
        let intel64 = matches!(arch, Arch::X86_64 | Arch::X86_64h);
        match self.arch.as_str() {
            "arm64" => arm,
            "x86_64" => intel64,
            "universal2" => arm || intel64,
            "intel" | "universal" | "fat64" | "fat3" => intel64 || arch == Arch::I386,
            "i386" | "fat32" | "fat" => arch == Arch::I386,
            _ => false,
        }
    }

    /// The oldest macOS a slice of `arch` may require under this tag:
    /// arm64 slices of universal2 wheels implicitly start at 11.0.
    pub fn floor_for(&self, arch: Arch) -> Version {
        if matches!(arch, Arch::Arm64 | Arch::Arm64e) {
            self.version.max(arm64_floor())
        } else {
            self.version
        }
    }
}

/// The smallest version a tag can state that is not below `minos`: pip
/// only knows `<major>_0` from macOS 11 on, and `10_<minor>` before, so
/// anything finer rounds up.
pub fn tag_version(minos: Version) -> Version {
    if minos.major >= 11 {
        let round = minos.minor == 0 && minos.patch == 0;
        Version::new(
            if round {
                minos.major
            } else {
                minos.major.saturating_add(1)
            },
            0,
            0,
        )
    } else if minos.patch == 0 {
        Version::new(minos.major, minos.minor, 0)
    } else if minos.major == 10 && minos.minor >= 15 {
        // The release after 10.15 is 11.0.
        Version::new(11, 0, 0)
    } else {
        Version::new(minos.major, minos.minor.saturating_add(1), 0)
    }
}

/// One slice's final minos, for the tag decision.
#[derive(Debug, Clone)]
pub struct SliceMinos {
    pub file: String,
    pub arch: Arch,
    pub minos: Version,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TagError {
    #[error(
        "platform tag `{tag}` is not a macOS tag; repair Linux wheels with the manylinux repair"
    )]
    NotMacos { tag: String },
    #[error(
        "{file} ({arch}) requires macOS {minos}, newer than the wheel's target {target} (tag {tag}); \
         pass --retag to raise the tag, or rebuild with a lower deployment target"
    )]
    TooNew {
        file: String,
        arch: String,
        minos: Version,
        target: Version,
        tag: String,
    },
    #[error("{file} has no slice for this wheel's architectures ({tags}); rebuild it for them")]
    NoMatchingSlice { file: String, tags: String },
}

/// The repaired wheel's platform tags. `requested` (an explicit target,
/// raised to 11.0 on arm64) replaces each tag's own version; with `retag`,
/// a slice needing more raises its tag instead of failing.
pub fn final_tags(
    wheel_tags: &[String],
    requested: Option<Version>,
    slices: &[SliceMinos],
    retag: bool,
) -> Result<Vec<String>, TagError> {
    let tags = wheel_tags
        .iter()
        .map(|tag| MacosTag::parse(tag).ok_or_else(|| TagError::NotMacos { tag: tag.clone() }))
        .collect::<Result<Vec<_>, _>>()?;
    let files: std::collections::BTreeSet<&str> =
        slices.iter().map(|slice| slice.file.as_str()).collect();
    for file in files {
        let covered = slices
            .iter()
            .filter(|slice| slice.file == file)
            .any(|slice| tags.iter().any(|tag| tag.covers(slice.arch)));
        if !covered {
            return Err(TagError::NoMatchingSlice {
                file: file.to_string(),
                tags: wheel_tags.join("."),
            });
        }
    }

    let mut rendered: Vec<String> = Vec::new();
    for tag in tags {
        let mut version = requested.unwrap_or(tag.version);
        if tag.arch == "arm64" {
            version = version.max(arm64_floor());
        }
        let base = MacosTag {
            version: tag_version(version),
            arch: tag.arch.clone(),
        };
        let mut raised = base.version;
        for slice in slices.iter().filter(|slice| base.covers(slice.arch)) {
            if slice.minos <= base.floor_for(slice.arch) {
                continue;
            }
            if !retag {
                return Err(TagError::TooNew {
                    file: slice.file.clone(),
                    arch: slice.arch.to_string(),
                    minos: slice.minos,
                    target: base.floor_for(slice.arch),
                    tag: base.render(),
                });
            }
            raised = raised.max(tag_version(slice.minos));
        }
        let name = MacosTag {
            version: raised,
            arch: tag.arch,
        }
        .render();
        if !rendered.contains(&name) {
            rendered.push(name);
        }
    }
    Ok(rendered)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(file: &str, arch: Arch, minos: (u16, u8)) -> SliceMinos {
        SliceMinos {
            file: file.into(),
            arch,
            minos: Version::new(minos.0, minos.1, 0),
        }
    }

    #[test]
    fn parses_and_renders_tags() {
        let tag = MacosTag::parse("macosx_10_15_universal2").unwrap();
        assert_eq!(tag.version, Version::new(10, 15, 0));
        assert_eq!(tag.arch, "universal2");
        assert_eq!(tag.render(), "macosx_10_15_universal2");
        assert_eq!(MacosTag::parse("manylinux_2_17_aarch64"), None);
        assert_eq!(MacosTag::parse("macosx_11_0_"), None);
    }

    #[test]
    fn tag_versions_round_up_to_what_pip_understands() {
        assert_eq!(tag_version(Version::new(11, 0, 0)), Version::new(11, 0, 0));
        assert_eq!(tag_version(Version::new(12, 3, 0)), Version::new(13, 0, 0));
        assert_eq!(tag_version(Version::new(10, 9, 0)), Version::new(10, 9, 0));
        assert_eq!(
            tag_version(Version::new(10, 13, 4)),
            Version::new(10, 14, 0)
        );
        assert_eq!(tag_version(Version::new(10, 15, 4)), Version::new(11, 0, 0));
    }

    #[test]
    fn arm64_slice_newer_than_the_tag_is_an_error_naming_file_and_minos() {
        let tags = ["macosx_11_0_arm64".to_string()];
        let error = final_tags(
            &tags,
            None,
            &[slice("pkg/_x.so", Arch::Arm64, (12, 0))],
            false,
        )
        .unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains("pkg/_x.so")
                && message.contains("12.0")
                && message.contains("--retag"),
            "{message}"
        );
    }

    #[test]
    fn retag_raises_the_tag_to_the_newest_minos() {
        let tags = ["macosx_11_0_arm64".to_string()];
        let slices = [
            slice("a.so", Arch::Arm64, (12, 0)),
            slice("b.so", Arch::Arm64, (11, 0)),
        ];
        assert_eq!(
            final_tags(&tags, None, &slices, true).unwrap(),
            ["macosx_12_0_arm64"]
        );
    }

    #[test]
    fn arm64_target_never_goes_below_eleven() {
        let tags = ["macosx_11_0_arm64".to_string()];
        let slices = [slice("a.so", Arch::Arm64, (11, 0))];
        assert_eq!(
            final_tags(&tags, Some(Version::new(10, 9, 0)), &slices, false).unwrap(),
            ["macosx_11_0_arm64"]
        );
    }

    #[test]
    fn universal2_keeps_its_intel_version_while_arm64_slices_need_eleven() {
        let tags = ["macosx_10_15_universal2".to_string()];
        let slices = [
            slice("z.so", Arch::X86_64, (10, 15)),
            slice("z.so", Arch::Arm64, (11, 0)),
        ];
        assert_eq!(
            final_tags(&tags, None, &slices, false).unwrap(),
            ["macosx_10_15_universal2"]
        );
    }

    #[test]
    fn binary_without_a_slice_for_the_wheel_is_an_error() {
        let tags = ["macosx_11_0_arm64".to_string()];
        let error =
            final_tags(&tags, None, &[slice("x.so", Arch::X86_64, (10, 9))], false).unwrap_err();
        assert!(matches!(error, TagError::NoMatchingSlice { .. }));
    }

    #[test]
    fn linux_tag_is_not_a_macos_wheel() {
        let tags = ["manylinux_2_17_aarch64".to_string()];
        assert!(matches!(
            final_tags(&tags, None, &[], false),
            Err(TagError::NotMacos { .. })
        ));
    }
}
