//! macOS platform tags (`macosx_11_0_arm64`) and the minimum-version rules
//! a repaired wheel must keep: every slice's minos at or below what its tag
//! promises, and arm64 never below macOS 11.

use crate::formats::macho::{Arch, Version};
use crate::formats::wheel::{PlatformTag, join_platform_tags};

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
    /// The macOS tag `macosx_<major>_<minor>_<arch>` of a wheel's platform tags.
    pub fn parse(tag: &PlatformTag) -> Option<MacosTag> {
        let (major, minor, arch) = tag.macos()?;
        Some(MacosTag {
            version: Version::new(major, u8::try_from(minor).ok()?, 0),
            arch: arch.to_string(),
        })
    }

    /// `macosx_11_0_arm64`; since macOS 11 tags carry the major version only.
    pub fn render(&self) -> PlatformTag {
        let version = tag_version(self.version);
        PlatformTag::Macos {
            major: version.major,
            minor: version.minor.into(),
            binary_format: self.arch.clone(),
        }
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

/// The version a tag states for `minos`: pip knows only `<major>_0` from macOS 11 on,
/// so 13.1 is tagged 13.0 as delocate tags it (the repair says the wheel needs 13.1);
/// before 11, `10_<minor>`, rounding a patch level up.
pub fn tag_version(minos: Version) -> Version {
    if minos.major >= 11 {
        Version::new(minos.major, 0, 0)
    } else if minos.patch == 0 {
        Version::new(minos.major, minos.minor, 0)
    } else if minos.major == 10 && minos.minor >= 15 {
        // The release after 10.15 is 11.0.
        Version::new(11, 0, 0)
    } else {
        Version::new(minos.major, minos.minor.saturating_add(1), 0)
    }
}

/// Whether a tag stating `version` leaves out the minor part of `minos` (13.1 under
/// `13_0`): pip on that macOS's x.0 installs a wheel it cannot load.
fn loses_minor(minos: Version, version: Version) -> bool {
    minos > version && tag_version(minos) <= version
}

/// One slice's final minos, for the tag decision.
#[derive(Debug, Clone)]
pub struct SliceMinos {
    pub file: String,
    pub arch: Arch,
    pub minos: Version,
    /// A library the repair vendors: its slices cannot make the wheel's own modules
    /// run on an architecture they lack.
    pub vendored: bool,
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
    #[error(
        "the wheel is tagged {arch_tag}, but no binary of the wheel has an {arch} slice; \
         rebuild for {arch}, or rename the wheel to the architectures it holds"
    )]
    MissingArch { arch_tag: String, arch: String },
}

/// The architectures a tag promises a slice of, as delocate unpacks them; none for
/// the old fat tags, which name alternatives rather than a set.
fn promised_arches(arch_tag: &str) -> &'static [Arch] {
    match arch_tag {
        "arm64" => &[Arch::Arm64],
        "x86_64" => &[Arch::X86_64],
        "i386" => &[Arch::I386],
        "universal2" => &[Arch::X86_64, Arch::Arm64],
        "intel" => &[Arch::I386, Arch::X86_64],
        _ => &[],
    }
}

/// `arm64e` slices count as `arm64`, `x86_64h` as `x86_64`.
fn family(arch: Arch) -> Arch {
    match arch {
        Arch::Arm64e => Arch::Arm64,
        Arch::X86_64h => Arch::X86_64,
        other => other,
    }
}

/// The repaired wheel's platform tags, and one line for each way a tag says less than
/// the binaries need (macOS 11 and later tags carry no minor version).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagDecision {
    pub tags: Vec<PlatformTag>,
    pub warnings: Vec<String>,
}

/// The repaired wheel's platform tags. `requested` (an explicit target,
/// raised to 11.0 on arm64) replaces each tag's own version; with `retag`,
/// a slice needing more raises its tag instead of failing. Every architecture a tag
/// names must have a slice in a binary of the wheel itself (delocate's rule, which also
/// counts vendored libraries), so a universal2 tag on x86_64-only modules is refused.
pub fn final_tags(
    wheel_tags: &[PlatformTag],
    requested: Option<Version>,
    slices: &[SliceMinos],
    retag: bool,
) -> Result<TagDecision, TagError> {
    let tags = wheel_tags
        .iter()
        .map(|tag| {
            MacosTag::parse(tag).ok_or_else(|| TagError::NotMacos {
                tag: tag.to_string(),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    check_coverage(&tags, wheel_tags, slices)?;

    let mut decision = TagDecision {
        tags: Vec::new(),
        warnings: Vec::new(),
    };
    if let Some(requested) = requested.filter(|&version| loses_minor(version, tag_version(version)))
    {
        decision.warnings.push(format!(
            "macOS {requested} is tagged macosx_{}_0: tags for macOS 11 and later name the major version only",
            requested.major
        ));
    }
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
            let floor = base.floor_for(slice.arch);
            if tag_version(slice.minos) <= floor {
                continue;
            }
            if !retag {
                return Err(TagError::TooNew {
                    file: slice.file.clone(),
                    arch: slice.arch.to_string(),
                    minos: slice.minos,
                    target: floor,
                    tag: base.render().to_string(),
                });
            }
            raised = raised.max(tag_version(slice.minos));
        }
        let name = MacosTag {
            version: raised,
            arch: tag.arch,
        };
        decision.warnings.extend(minor_warnings(&name, slices));
        let name = name.render();
        if !decision.tags.contains(&name) {
            decision.tags.push(name);
        }
    }
    Ok(decision)
}

/// Each file needs a slice some tag speaks for, and each architecture a tag names
/// needs a slice of some file.
fn check_coverage(
    tags: &[MacosTag],
    wheel_tags: &[PlatformTag],
    slices: &[SliceMinos],
) -> Result<(), TagError> {
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
                tags: join_platform_tags(wheel_tags),
            });
        }
    }
    for tag in tags {
        for &arch in promised_arches(&tag.arch) {
            if !slices
                .iter()
                .any(|slice| !slice.vendored && family(slice.arch) == arch)
            {
                return Err(TagError::MissingArch {
                    arch_tag: tag.arch.clone(),
                    arch: arch.to_string(),
                });
            }
        }
    }
    Ok(())
}

/// One line per slice whose minos the tag rounds down (12.1 under `macosx_12_0`).
fn minor_warnings(tag: &MacosTag, slices: &[SliceMinos]) -> Vec<String> {
    slices
        .iter()
        .filter(|slice| tag.covers(slice.arch) && loses_minor(slice.minos, tag.floor_for(slice.arch)))
        .map(|slice| {
            format!(
                "{} ({}) needs macOS {}, but the wheel is tagged {} (tags for macOS 11 and later name the major version only), so macOS {}.0 cannot load it",
                slice.file,
                slice.arch,
                slice.minos,
                tag.render(),
                slice.minos.major
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(file: &str, arch: Arch, minos: (u16, u8)) -> SliceMinos {
        SliceMinos {
            file: file.into(),
            arch,
            minos: Version::new(minos.0, minos.1, 0),
            vendored: false,
        }
    }

    #[test]
    fn parses_and_renders_tags() {
        let tag = MacosTag::parse(&"macosx_10_15_universal2".into()).unwrap();
        assert_eq!(tag.version, Version::new(10, 15, 0));
        assert_eq!(tag.arch, "universal2");
        assert_eq!(tag.render(), "macosx_10_15_universal2");
        assert_eq!(MacosTag::parse(&"manylinux_2_17_aarch64".into()), None);
        assert_eq!(MacosTag::parse(&"macosx_11_0_".into()), None);
    }

    #[test]
    fn tag_versions_are_what_pip_understands() {
        assert_eq!(tag_version(Version::new(11, 0, 0)), Version::new(11, 0, 0));
        assert_eq!(tag_version(Version::new(12, 3, 0)), Version::new(12, 0, 0));
        assert_eq!(tag_version(Version::new(10, 9, 0)), Version::new(10, 9, 0));
        assert_eq!(
            tag_version(Version::new(10, 13, 4)),
            Version::new(10, 14, 0)
        );
        assert_eq!(tag_version(Version::new(10, 15, 4)), Version::new(11, 0, 0));
    }

    #[test]
    fn arm64_slice_newer_than_the_tag_is_an_error_naming_file_and_minos() {
        let tags = [PlatformTag::from("macosx_11_0_arm64")];
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
        let tags = [PlatformTag::from("macosx_11_0_arm64")];
        let slices = [
            slice("a.so", Arch::Arm64, (12, 0)),
            slice("b.so", Arch::Arm64, (11, 0)),
        ];
        assert_eq!(
            final_tags(&tags, None, &slices, true).unwrap().tags,
            ["macosx_12_0_arm64"]
        );
    }

    #[test]
    fn arm64_target_never_goes_below_eleven() {
        let tags = [PlatformTag::from("macosx_11_0_arm64")];
        let slices = [slice("a.so", Arch::Arm64, (11, 0))];
        assert_eq!(
            final_tags(&tags, Some(Version::new(10, 9, 0)), &slices, false)
                .unwrap()
                .tags,
            ["macosx_11_0_arm64"]
        );
    }

    #[test]
    fn universal2_keeps_its_intel_version_while_arm64_slices_need_eleven() {
        let tags = [PlatformTag::from("macosx_10_15_universal2")];
        let slices = [
            slice("z.so", Arch::X86_64, (10, 15)),
            slice("z.so", Arch::Arm64, (11, 0)),
        ];
        assert_eq!(
            final_tags(&tags, None, &slices, false).unwrap().tags,
            ["macosx_10_15_universal2"]
        );
    }

    #[test]
    fn binary_without_a_slice_for_the_wheel_is_an_error() {
        let tags = [PlatformTag::from("macosx_11_0_arm64")];
        let error =
            final_tags(&tags, None, &[slice("x.so", Arch::X86_64, (10, 9))], false).unwrap_err();
        assert!(matches!(error, TagError::NoMatchingSlice { .. }));
    }

    #[test]
    fn a_deployment_target_with_a_minor_version_is_tagged_by_its_major_version() {
        let tags = [PlatformTag::from("macosx_10_9_x86_64")];
        let slices = [slice("m.so", Arch::X86_64, (10, 9))];
        let decision = final_tags(&tags, Some(Version::new(13, 1, 0)), &slices, false).unwrap();
        assert_eq!(decision.tags, ["macosx_13_0_x86_64"]);
        assert!(
            decision.warnings[0].contains("macOS 13.1 is tagged macosx_13_0"),
            "{:?}",
            decision.warnings
        );
    }

    #[test]
    fn a_binary_needing_a_minor_version_is_tagged_by_its_major_version_with_a_warning() {
        let tags = [PlatformTag::from("macosx_12_0_x86_64")];
        let slices = [slice("lib.dylib", Arch::X86_64, (12, 1))];
        let decision = final_tags(&tags, None, &slices, false).unwrap();
        assert_eq!(decision.tags, ["macosx_12_0_x86_64"]);
        assert_eq!(decision.warnings.len(), 1);
        assert!(
            decision.warnings[0].contains("lib.dylib (x86_64) needs macOS 12.1")
                && decision.warnings[0].contains("macOS 12.0 cannot load it"),
            "{:?}",
            decision.warnings
        );
    }

    #[test]
    fn every_architecture_a_tag_names_needs_a_slice() {
        let universal2 = [PlatformTag::from("macosx_10_9_universal2")];
        let x86_only = [slice("m.so", Arch::X86_64, (10, 9))];
        let error = final_tags(&universal2, None, &x86_only, false).unwrap_err();
        assert_eq!(
            error,
            TagError::MissingArch {
                arch_tag: "universal2".into(),
                arch: "arm64".into()
            }
        );
        let intel = [PlatformTag::from("macosx_10_9_intel")];
        let error = final_tags(&intel, None, &x86_only, false).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("no binary of the wheel has an i386 slice")
        );
    }

    #[test]
    fn linux_tag_is_not_a_macos_wheel() {
        let tags = [PlatformTag::from("manylinux_2_17_aarch64")];
        assert!(matches!(
            final_tags(&tags, None, &[], false),
            Err(TagError::NotMacos { .. })
        ));
    }
}
