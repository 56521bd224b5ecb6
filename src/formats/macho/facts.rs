//! What a Mach-O file says about itself: the facts a repair needs, per
//! architecture slice. Parsing lives in `parse.rs`; this file is the model.

use std::fmt;
use std::str::FromStr;

use super::constants::*;
use super::error::MachOError;

/// A parsed thin or universal (fat) Mach-O file. Borrows the file's bytes so
/// that signature checks can hash the slices without copying them.
#[derive(Debug, Clone)]
pub struct MachOFile<'a> {
    /// True when the file starts with a fat header, even one with a single slice.
    pub is_fat: bool,
    /// One entry for a thin file; one per architecture for a fat file, in
    /// fat-header order.
    pub slices: Vec<Slice<'a>>,
}

/// True when `data` starts like a thin or universal Mach-O file: the cheap
/// magic check that picks candidate files before parsing (the twin of
/// `elf::facts::is_elf`). Java class files share the universal magic; their
/// version field (always 45 or more in the slot of the slice count) tells
/// them apart.
pub fn is_macho(data: &[u8]) -> bool {
    let Some(head) = data.get(..8) else {
        return false;
    };
    let little = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    let big = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
    let second = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
    matches!(little, MH_MAGIC | MH_MAGIC_64)
        || (matches!(big, FAT_MAGIC | FAT_MAGIC_64) && second < 45)
}

/// One architecture's Mach-O image.
#[derive(Debug, Clone)]
pub struct Slice<'a> {
    pub(crate) data: &'a [u8],
    /// Where this slice starts in the file (0 for a thin file).
    pub offset: u64,
    pub arch: Arch,
    pub is_64_bit: bool,
    pub file_type: FileType,
    /// The `mach_header` flags (MH_TWOLEVEL, ...).
    pub header_flags: u32,
    /// Size of the mach header itself (28 or 32 bytes).
    pub header_size: u64,
    /// `sizeofcmds`: bytes of load commands after the header.
    pub load_commands_size: u64,
    /// Bytes between the end of the load commands and the first section's file
    /// data: the room load-command edits can grow into.
    pub header_padding: u64,
    /// LC_ID_DYLIB, the install name other images record when they link this one.
    pub install_id: Option<String>,
    /// Every dylib load command, in load-command order. A two-level-namespace
    /// import with library ordinal `n` binds to `dependencies[n - 1]`.
    pub dependencies: Vec<Dependency>,
    /// LC_RPATH entries in load-command order.
    pub rpaths: Vec<String>,
    pub deployment_target: Option<DeploymentTarget>,
    pub segments: Vec<Segment>,
    /// LC_CODE_SIGNATURE: where the embedded signature lies in the slice.
    pub code_signature: Option<CodeSignatureLocation>,
    /// Names this image exports (export trie, or defined external symbols of
    /// the symbol table when there is no trie), sorted and deduplicated.
    pub exported_symbols: Vec<String>,
    /// What the image imports and from which library: from the bind opcodes
    /// or chained-fixup imports dyld resolves, or from the symbol table's
    /// undefined symbols when the image has neither. One entry per name.
    pub imported_symbols: Vec<ImportedSymbol>,
    pub(crate) load_commands: Vec<LoadCommandRef>,
}

/// Location of one raw load command inside its slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LoadCommandRef {
    pub(crate) cmd: u32,
    pub(crate) offset: u64,
    pub(crate) size: u64,
}

impl<'a> Slice<'a> {
    /// The raw bytes of this slice.
    pub fn bytes(&self) -> &'a [u8] {
        self.data
    }

    /// The library a two-level-namespace import binds to, if its ordinal names one.
    pub fn dependency_for(&self, ordinal: LibraryOrdinal) -> Option<&Dependency> {
        match ordinal {
            LibraryOrdinal::Dylib(index) => {
                self.dependencies.get(usize::from(index).checked_sub(1)?)
            }
            _ => None,
        }
    }

    pub fn segment(&self, name: &str) -> Option<&Segment> {
        self.segments.iter().find(|segment| segment.name == name)
    }

    /// True when symbols are bound per library (MH_TWOLEVEL), so library
    /// ordinals on imports are meaningful.
    pub fn is_two_level_namespace(&self) -> bool {
        const MH_TWOLEVEL: u32 = 0x80;
        self.header_flags & MH_TWOLEVEL != 0
    }
}

/// CPU type of a slice, named as Apple's tools name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arch {
    Arm64,
    Arm64e,
    X86_64,
    X86_64h,
    I386,
    Other { cpu_type: u32, cpu_subtype: u32 },
}

impl Arch {
    pub fn from_cpu(cpu_type: u32, cpu_subtype: u32) -> Arch {
        let subtype = cpu_subtype & !CPU_SUBTYPE_MASK;
        match cpu_type {
            t if t == CPU_TYPE_ARM | CPU_ARCH_ABI64 => match subtype {
                CPU_SUBTYPE_ARM64E => Arch::Arm64e,
                _ => Arch::Arm64,
            },
            t if t == CPU_TYPE_X86 | CPU_ARCH_ABI64 => match subtype {
                CPU_SUBTYPE_X86_64_H => Arch::X86_64h,
                _ => Arch::X86_64,
            },
            CPU_TYPE_X86 => Arch::I386,
            _ => Arch::Other {
                cpu_type,
                cpu_subtype,
            },
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arch::Arm64 => f.write_str("arm64"),
            Arch::Arm64e => f.write_str("arm64e"),
            Arch::X86_64 => f.write_str("x86_64"),
            Arch::X86_64h => f.write_str("x86_64h"),
            Arch::I386 => f.write_str("i386"),
            Arch::Other {
                cpu_type,
                cpu_subtype,
            } => {
                write!(f, "cputype 0x{cpu_type:x} subtype 0x{cpu_subtype:x}")
            }
        }
    }
}

/// `mach_header.filetype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileType {
    Object,
    Execute,
    Dylib,
    Dylinker,
    Bundle,
    DylibStub,
    Dsym,
    KextBundle,
    Other(u32),
}

impl FileType {
    pub(crate) fn from_raw(raw: u32) -> FileType {
        match raw {
            0x1 => FileType::Object,
            0x2 => FileType::Execute,
            0x6 => FileType::Dylib,
            0x7 => FileType::Dylinker,
            0x8 => FileType::Bundle,
            0x9 => FileType::DylibStub,
            0xa => FileType::Dsym,
            0xb => FileType::KextBundle,
            other => FileType::Other(other),
        }
    }
}

/// How a dependency is loaded: the load command that names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DependencyKind {
    /// LC_LOAD_DYLIB
    Load,
    /// LC_LOAD_WEAK_DYLIB: a missing library is not an error at load time.
    Weak,
    /// LC_REEXPORT_DYLIB
    Reexport,
    /// LC_LOAD_UPWARD_DYLIB
    Upward,
    /// LC_LAZY_LOAD_DYLIB (obsolete, still counted in library ordinals)
    Lazy,
}

impl DependencyKind {
    pub(crate) fn from_command(cmd: u32) -> Option<DependencyKind> {
        match cmd {
            LC_LOAD_DYLIB => Some(DependencyKind::Load),
            LC_LOAD_WEAK_DYLIB => Some(DependencyKind::Weak),
            LC_REEXPORT_DYLIB => Some(DependencyKind::Reexport),
            LC_LOAD_UPWARD_DYLIB => Some(DependencyKind::Upward),
            LC_LAZY_LOAD_DYLIB => Some(DependencyKind::Lazy),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    /// The install name as recorded, e.g. `@rpath/libfoo.dylib`.
    pub install_name: String,
    pub kind: DependencyKind,
    pub current_version: Version,
    pub compatibility_version: Version,
}

/// A Mach-O `xxxx.yy.zz` version (minos, sdk, dylib versions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    pub major: u16,
    pub minor: u8,
    pub patch: u8,
}

impl Version {
    pub const fn new(major: u16, minor: u8, patch: u8) -> Version {
        Version {
            major,
            minor,
            patch,
        }
    }

    pub const fn from_packed(packed: u32) -> Version {
        Version {
            major: (packed >> 16) as u16,
            minor: (packed >> 8) as u8,
            patch: packed as u8,
        }
    }

    pub const fn packed(self) -> u32 {
        (self.major as u32) << 16 | (self.minor as u32) << 8 | self.patch as u32
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)?;
        if self.patch != 0 {
            write!(f, ".{}", self.patch)?;
        }
        Ok(())
    }
}

impl FromStr for Version {
    type Err = MachOError;

    /// Parses `11`, `11.0` or `10.15.4`.
    fn from_str(text: &str) -> Result<Version, MachOError> {
        let invalid = || MachOError::Unsupported {
            reason: format!("`{text}` is not a macOS version (expected e.g. 11.0 or 10.15.4)"),
        };
        let mut parts = text.trim().split('.');
        let major = parts
            .next()
            .and_then(|p| p.parse().ok())
            .ok_or_else(invalid)?;
        let mut next = || parts.next().map(|p| p.parse::<u8>().map_err(|_| invalid()));
        let minor = next().transpose()?.unwrap_or(0);
        let patch = next().transpose()?.unwrap_or(0);
        if next().is_some() {
            return Err(invalid());
        }
        Ok(Version::new(major, minor, patch))
    }
}

/// Which load command carried the deployment target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeploymentTargetSource {
    /// LC_BUILD_VERSION, with its `platform` field (1 = macOS).
    BuildVersion { platform: u32 },
    /// LC_VERSION_MIN_MACOSX (binaries built for macOS before 10.14 SDKs).
    VersionMinMacos,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeploymentTarget {
    pub source: DeploymentTargetSource,
    /// Oldest OS version the image runs on.
    pub minos: Version,
    /// SDK the image was built against.
    pub sdk: Version,
}

impl DeploymentTarget {
    pub fn is_macos(&self) -> bool {
        match self.source {
            DeploymentTargetSource::BuildVersion { platform } => platform == PLATFORM_MACOS,
            DeploymentTargetSource::VersionMinMacos => true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub name: String,
    pub vm_address: u64,
    pub vm_size: u64,
    pub file_offset: u64,
    pub file_size: u64,
    pub sections: Vec<Section>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    pub segment_name: String,
    pub address: u64,
    pub size: u64,
    /// File offset within the slice; 0 for zero-fill sections.
    pub file_offset: u64,
    pub flags: u32,
}

impl Section {
    /// Zero-fill sections occupy memory but no file bytes.
    pub fn is_zero_fill(&self) -> bool {
        matches!(
            self.flags & SECTION_TYPE,
            S_ZEROFILL | S_GB_ZEROFILL | S_THREAD_LOCAL_ZEROFILL
        )
    }
}

/// LC_CODE_SIGNATURE's `dataoff`/`datasize`, relative to the slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeSignatureLocation {
    pub offset: u64,
    pub size: u64,
}

/// Which image a two-level-namespace import is bound to (the library ordinal
/// in the high byte of `n_desc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LibraryOrdinal {
    /// Ordinal 0: the image itself.
    SelfImage,
    /// Ordinal `n` (1-based) in [`Slice::dependencies`].
    Dylib(u8),
    /// 0xfe: flat lookup in every loaded image (`-undefined dynamic_lookup`),
    /// how extension modules bind to the Python interpreter's symbols.
    DynamicLookup,
    /// 0xff: the main executable.
    Executable,
    /// Bind tables only (-3): any loaded image's weak definition, or none.
    WeakLookup,
}

impl LibraryOrdinal {
    pub(crate) fn from_raw(raw: u8) -> LibraryOrdinal {
        match raw {
            SELF_LIBRARY_ORDINAL => LibraryOrdinal::SelfImage,
            DYNAMIC_LOOKUP_ORDINAL => LibraryOrdinal::DynamicLookup,
            EXECUTABLE_ORDINAL => LibraryOrdinal::Executable,
            index => LibraryOrdinal::Dylib(index),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedSymbol {
    /// The symbol's name as stored (C names carry a leading underscore).
    pub name: String,
    pub library: LibraryOrdinal,
    /// A weak reference resolves to NULL instead of failing the load.
    pub weak: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_round_trips_through_its_packed_form() {
        let version = Version::new(10, 15, 4);
        assert_eq!(version.packed(), 0x000a_0f04);
        assert_eq!(Version::from_packed(0x000a_0f04), version);
        assert_eq!(version.to_string(), "10.15.4");
        assert_eq!(Version::new(11, 0, 0).to_string(), "11.0");
    }

    #[test]
    fn version_parses_short_and_long_forms_and_rejects_garbage() {
        assert_eq!("11".parse::<Version>(), Ok(Version::new(11, 0, 0)));
        assert_eq!("10.15.4".parse::<Version>(), Ok(Version::new(10, 15, 4)));
        assert!("10.256".parse::<Version>().is_err());
        assert!("11.0.0.1".parse::<Version>().is_err());
        assert!("eleven".parse::<Version>().is_err());
    }

    #[test]
    fn arch_names_follow_apple_tools() {
        assert_eq!(Arch::from_cpu(0x0100_000c, 0).to_string(), "arm64");
        assert_eq!(
            Arch::from_cpu(0x0100_000c, 0x8000_0002).to_string(),
            "arm64e"
        );
        assert_eq!(Arch::from_cpu(0x0100_0007, 3).to_string(), "x86_64");
        assert_eq!(Arch::from_cpu(7, 3).to_string(), "i386");
    }

    #[test]
    fn recognises_thin_and_universal_magics() {
        assert!(is_macho(&[0xcf, 0xfa, 0xed, 0xfe, 0x0c, 0, 0, 0x01]));
        assert!(is_macho(&[0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 2]));
    }

    #[test]
    fn java_class_files_and_short_files_are_not_macho() {
        // A class file: magic, minor 0, major 61.
        assert!(!is_macho(&[0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 61]));
        assert!(!is_macho(b"\x7fELF\x02\x01\x01\x00"));
        assert!(!is_macho(&[0xcf, 0xfa]));
    }
}
