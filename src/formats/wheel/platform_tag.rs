//! A wheel's platform tag (PEP 425, PEP 600, PEP 656), parsed once where a wheel name is
//! read and handed on typed, so no stage reads an architecture or a C library back out of
//! a string. Modelled on uv's `PlatformTag` (`uv-platform-tags`), but lossless: every tag
//! renders back to exactly the text it was parsed from, so a wheel's name survives a
//! repair byte for byte, and a tag crosswheel has no variant for is kept as written.

use std::fmt;

use crate::target::{Libc, LinuxArch, Platform, Target};

/// One platform tag: `manylinux_2_17_aarch64`, `musllinux_1_2_x86_64`, `linux_armv7l`,
/// `macosx_11_0_arm64`, `any`. Architectures stay text (`ppc64`, `loongarch64` are tags
/// too); [`PlatformTag::linux_arch`] says which of them crosswheel knows.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PlatformTag {
    /// `any`: a pure wheel.
    Any,
    /// `manylinux_<major>_<minor>_<arch>` (PEP 600).
    Manylinux {
        major: u16,
        minor: u16,
        arch: String,
    },
    /// `manylinux1_<arch>` (PEP 513), glibc 2.5.
    Manylinux1 { arch: String },
    /// `manylinux2010_<arch>` (PEP 571), glibc 2.12.
    Manylinux2010 { arch: String },
    /// `manylinux2014_<arch>` (PEP 599), glibc 2.17.
    Manylinux2014 { arch: String },
    /// `musllinux_<major>_<minor>_<arch>` (PEP 656).
    Musllinux {
        major: u16,
        minor: u16,
        arch: String,
    },
    /// `linux_<arch>`: an unrepaired Linux wheel, which promises no C library.
    Linux { arch: String },
    /// `macosx_<major>_<minor>_<binary format>` (`arm64`, `x86_64`, `universal2`, `intel`).
    Macos {
        major: u16,
        minor: u16,
        binary_format: String,
    },
    /// Any other tag (`win_amd64`, `ios_…`), kept as written.
    Other(String),
}

impl PlatformTag {
    /// The policy a Linux target's wheels are repaired for when their binaries cannot say
    /// it: `musllinux_1_2_x86_64` for musl, whose libraries carry no symbol versions
    /// (auditwheel takes it from the running musl's version). `None`: the most compatible
    /// policy the binaries satisfy (glibc, macOS).
    pub fn repair_policy_of(target: &Target) -> Option<PlatformTag> {
        (target.libc() == Some(Libc::Musl)).then(|| {
            let version = target.os_version();
            PlatformTag::Musllinux {
                major: version.major as u16,
                minor: version.minor as u16,
                arch: target.arch().to_string(),
            }
        })
    }

    /// Reads one tag; never fails: a tag of no known form, or one whose numbers are not
    /// written as this type renders them (`manylinux_2_017_x86_64`), is [`Self::Other`].
    pub fn parse(tag: &str) -> PlatformTag {
        let parsed = Self::parse_known(tag).unwrap_or_else(|| PlatformTag::Other(tag.to_owned()));
        if parsed == tag {
            parsed
        } else {
            PlatformTag::Other(tag.to_owned())
        }
    }

    fn parse_known(tag: &str) -> Option<PlatformTag> {
        if tag == "any" {
            return Some(PlatformTag::Any);
        }
        let versioned = |rest: &str| -> Option<(u16, u16, String)> {
            let mut parts = rest.splitn(3, '_');
            let major = parts.next()?.parse().ok()?;
            let minor = parts.next()?.parse().ok()?;
            let arch = parts.next().filter(|arch| !arch.is_empty())?;
            Some((major, minor, arch.to_owned()))
        };
        let arch = |rest: &str| (!rest.is_empty()).then(|| rest.to_owned());
        if let Some(rest) = tag.strip_prefix("manylinux_") {
            let (major, minor, arch) = versioned(rest)?;
            return Some(PlatformTag::Manylinux { major, minor, arch });
        }
        if let Some(rest) = tag.strip_prefix("musllinux_") {
            let (major, minor, arch) = versioned(rest)?;
            return Some(PlatformTag::Musllinux { major, minor, arch });
        }
        if let Some(rest) = tag.strip_prefix("macosx_") {
            let (major, minor, binary_format) = versioned(rest)?;
            return Some(PlatformTag::Macos {
                major,
                minor,
                binary_format,
            });
        }
        if let Some(rest) = tag.strip_prefix("manylinux1_") {
            return arch(rest).map(|arch| PlatformTag::Manylinux1 { arch });
        }
        if let Some(rest) = tag.strip_prefix("manylinux2010_") {
            return arch(rest).map(|arch| PlatformTag::Manylinux2010 { arch });
        }
        if let Some(rest) = tag.strip_prefix("manylinux2014_") {
            return arch(rest).map(|arch| PlatformTag::Manylinux2014 { arch });
        }
        if let Some(rest) = tag.strip_prefix("linux_") {
            return arch(rest).map(|arch| PlatformTag::Linux { arch });
        }
        None
    }

    /// The C library a Linux tag promises: glibc for the manylinux tags, musl for
    /// musllinux; `None` for `linux_*`, which promises nothing, and for other platforms.
    pub fn libc(&self) -> Option<Libc> {
        match self {
            PlatformTag::Manylinux { .. }
            | PlatformTag::Manylinux1 { .. }
            | PlatformTag::Manylinux2010 { .. }
            | PlatformTag::Manylinux2014 { .. } => Some(Libc::Glibc),
            PlatformTag::Musllinux { .. } => Some(Libc::Musl),
            _ => None,
        }
    }

    /// The architecture a Linux tag names, as written (`aarch64`, `ppc64`).
    pub fn linux_machine(&self) -> Option<&str> {
        match self {
            PlatformTag::Manylinux { arch, .. }
            | PlatformTag::Manylinux1 { arch }
            | PlatformTag::Manylinux2010 { arch }
            | PlatformTag::Manylinux2014 { arch }
            | PlatformTag::Musllinux { arch, .. }
            | PlatformTag::Linux { arch } => Some(arch),
            _ => None,
        }
    }

    /// The architecture of a glibc (or unrepaired) Linux tag: `manylinux_2_17_aarch64`,
    /// `manylinux2014_ppc64le`, `linux_x86_64`; `None` for musllinux, other platforms and
    /// architectures crosswheel does not know.
    pub fn linux_arch(&self) -> Option<LinuxArch> {
        match self {
            PlatformTag::Musllinux { .. } => None,
            tag => tag.linux_machine().and_then(LinuxArch::from_machine),
        }
    }

    /// The architecture of a musllinux tag (`musllinux_1_2_aarch64`), if crosswheel knows it.
    pub fn musllinux_arch(&self) -> Option<LinuxArch> {
        match self {
            PlatformTag::Musllinux { arch, .. } => LinuxArch::from_machine(arch),
            _ => None,
        }
    }

    /// `(major, minor, binary format)` of a macOS tag.
    pub fn macos(&self) -> Option<(u16, u16, &str)> {
        match self {
            PlatformTag::Macos {
                major,
                minor,
                binary_format,
            } => Some((*major, *minor, binary_format)),
            _ => None,
        }
    }

    /// The operating system of a Linux or macOS tag; `None` for `any` and the others.
    pub fn platform(&self) -> Option<Platform> {
        match self {
            PlatformTag::Macos { .. } => Some(Platform::Macos),
            PlatformTag::Any | PlatformTag::Other(_) => None,
            _ => Some(Platform::Linux),
        }
    }

    /// The platform of a wheel from its platform tags; `None` for pure wheels and mixed
    /// or unknown tags.
    pub fn platform_of(tags: &[PlatformTag]) -> Option<Platform> {
        let first = tags.first()?.platform()?;
        tags.iter()
            .all(|tag| tag.platform() == Some(first))
            .then_some(first)
    }
}

impl fmt::Display for PlatformTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlatformTag::Any => f.write_str("any"),
            PlatformTag::Manylinux { major, minor, arch } => {
                write!(f, "manylinux_{major}_{minor}_{arch}")
            }
            PlatformTag::Manylinux1 { arch } => write!(f, "manylinux1_{arch}"),
            PlatformTag::Manylinux2010 { arch } => write!(f, "manylinux2010_{arch}"),
            PlatformTag::Manylinux2014 { arch } => write!(f, "manylinux2014_{arch}"),
            PlatformTag::Musllinux { major, minor, arch } => {
                write!(f, "musllinux_{major}_{minor}_{arch}")
            }
            PlatformTag::Linux { arch } => write!(f, "linux_{arch}"),
            PlatformTag::Macos {
                major,
                minor,
                binary_format,
            } => write!(f, "macosx_{major}_{minor}_{binary_format}"),
            PlatformTag::Other(tag) => f.write_str(tag),
        }
    }
}

impl From<&str> for PlatformTag {
    fn from(tag: &str) -> PlatformTag {
        PlatformTag::parse(tag)
    }
}

/// A tag equals the text it renders to (`tag == "any"`).
impl PartialEq<&str> for PlatformTag {
    fn eq(&self, other: &&str) -> bool {
        // Compares while rendering, without building the text.
        struct Rest<'a>(&'a str);
        impl fmt::Write for Rest<'_> {
            fn write_str(&mut self, piece: &str) -> fmt::Result {
                self.0 = self.0.strip_prefix(piece).ok_or(fmt::Error)?;
                Ok(())
            }
        }
        let mut rest = Rest(other);
        fmt::write(&mut rest, format_args!("{self}")).is_ok() && rest.0.is_empty()
    }
}

/// Tags joined as a wheel name's compressed tag set writes them (`a.b`).
pub fn join(tags: &[PlatformTag]) -> String {
    tags.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_musl_target_is_repaired_for_its_musllinux_policy_and_glibc_for_what_its_symbols_allow() {
        let policy = |id: &str| {
            PlatformTag::repair_policy_of(&Target::parse(id).unwrap()).map(|tag| tag.to_string())
        };
        assert_eq!(
            policy("musllinux-x86_64").as_deref(),
            Some("musllinux_1_2_x86_64")
        );
        for id in ["musllinux-aarch64", "musllinux-armv7l", "musllinux-i686"] {
            let arch = Target::parse(id).unwrap().arch().to_string();
            assert_eq!(policy(id), Some(format!("musllinux_1_2_{arch}")), "{id}");
        }
        assert_eq!(policy("manylinux-x86_64"), None, "glibc: from the symbols");
        assert_eq!(policy("macos-arm64"), None);
    }

    use super::*;

    #[test]
    fn every_tag_renders_back_to_what_was_read() {
        for tag in [
            "any",
            "manylinux_2_17_aarch64",
            "manylinux1_x86_64",
            "manylinux2010_i686",
            "manylinux2014_ppc64le",
            "musllinux_1_2_riscv64",
            "linux_armv7l",
            "macosx_10_9_universal2",
            "macosx_11_0_arm64",
            "win_amd64",
            "manylinux_2_017_x86_64",
            "manylinux_2_17",
            "macosx_11_arm64",
            "linux_",
            "manylinuxfoo",
        ] {
            assert_eq!(PlatformTag::parse(tag).to_string(), tag);
        }
        assert_eq!(
            PlatformTag::parse("manylinux_2_017_x86_64"),
            PlatformTag::Other("manylinux_2_017_x86_64".into())
        );
        assert_eq!(
            PlatformTag::parse("macosx_10_13_x86_64").macos(),
            Some((10, 13, "x86_64"))
        );
    }

    #[test]
    fn linux_tags_name_their_c_library_and_architecture() {
        let cases = [
            (
                "manylinux_2_17_aarch64",
                Some(Libc::Glibc),
                Some(LinuxArch::Aarch64),
                None,
            ),
            (
                "manylinux2014_ppc64le",
                Some(Libc::Glibc),
                Some(LinuxArch::Ppc64le),
                None,
            ),
            ("linux_x86_64", None, Some(LinuxArch::X86_64), None),
            (
                "musllinux_1_2_aarch64",
                Some(Libc::Musl),
                None,
                Some(LinuxArch::Aarch64),
            ),
            ("manylinux_2_17_ppc64", Some(Libc::Glibc), None, None),
            ("macosx_11_0_arm64", None, None, None),
        ];
        for (tag, libc, arch, musl_arch) in cases {
            let tag = PlatformTag::parse(tag);
            assert_eq!(tag.libc(), libc, "{tag}");
            assert_eq!(tag.linux_arch(), arch, "{tag}");
            assert_eq!(tag.musllinux_arch(), musl_arch, "{tag}");
        }
    }

    #[test]
    fn a_wheels_platform_is_its_tags_one_platform() {
        let tags = |text: &str| text.split('.').map(PlatformTag::parse).collect::<Vec<_>>();
        let of = |text: &str| PlatformTag::platform_of(&tags(text));
        assert_eq!(of("musllinux_1_2_x86_64"), Some(Platform::Linux));
        assert_eq!(
            of("manylinux_2_17_x86_64.manylinux2014_x86_64"),
            Some(Platform::Linux)
        );
        assert_eq!(of("linux_x86_64"), Some(Platform::Linux));
        assert_eq!(
            of("macosx_10_9_x86_64.macosx_11_0_arm64"),
            Some(Platform::Macos)
        );
        assert_eq!(of("any"), None);
        assert_eq!(of("win_amd64"), None);
        assert_eq!(of("macosx_11_0_arm64.manylinux_2_17_aarch64"), None);
        assert_eq!(PlatformTag::platform_of(&[]), None);
    }
}
