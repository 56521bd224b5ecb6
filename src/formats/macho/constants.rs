//! Numbers from <mach-o/loader.h>, <mach-o/fat.h>, <mach-o/nlist.h> and the
//! code-signing headers, named as Apple names them.

pub(crate) const MH_MAGIC: u32 = 0xfeed_face;
pub(crate) const MH_MAGIC_64: u32 = 0xfeed_facf;
pub(crate) const MH_CIGAM: u32 = 0xcefa_edfe;
pub(crate) const MH_CIGAM_64: u32 = 0xcffa_edfe;
pub(crate) const FAT_MAGIC: u32 = 0xcafe_babe;
pub(crate) const FAT_MAGIC_64: u32 = 0xcafe_babf;

pub(crate) const HEADER_SIZE_32: u64 = 28;
pub(crate) const HEADER_SIZE_64: u64 = 32;
pub(crate) const FAT_HEADER_SIZE: u64 = 8;
pub(crate) const FAT_ARCH_SIZE: u64 = 20;
pub(crate) const FAT_ARCH_64_SIZE: u64 = 32;

pub(crate) const CPU_ARCH_ABI64: u32 = 0x0100_0000;
pub(crate) const CPU_TYPE_X86: u32 = 7;
pub(crate) const CPU_TYPE_ARM: u32 = 12;
pub(crate) const CPU_SUBTYPE_MASK: u32 = 0xff00_0000;
pub(crate) const CPU_SUBTYPE_ARM64E: u32 = 2;
pub(crate) const CPU_SUBTYPE_X86_64_H: u32 = 8;

pub(crate) const LC_REQ_DYLD: u32 = 0x8000_0000;
pub(crate) const LC_SEGMENT: u32 = 0x1;
pub(crate) const LC_SYMTAB: u32 = 0x2;
pub(crate) const LC_LOAD_DYLIB: u32 = 0xc;
pub(crate) const LC_ID_DYLIB: u32 = 0xd;
pub(crate) const LC_SEGMENT_64: u32 = 0x19;
pub(crate) const LC_CODE_SIGNATURE: u32 = 0x1d;
pub(crate) const LC_LAZY_LOAD_DYLIB: u32 = 0x20;
pub(crate) const LC_DYLD_INFO: u32 = 0x22;
pub(crate) const LC_DYLD_INFO_ONLY: u32 = 0x22 | LC_REQ_DYLD;
pub(crate) const LC_LOAD_WEAK_DYLIB: u32 = 0x18 | LC_REQ_DYLD;
pub(crate) const LC_RPATH: u32 = 0x1c | LC_REQ_DYLD;
pub(crate) const LC_REEXPORT_DYLIB: u32 = 0x1f | LC_REQ_DYLD;
pub(crate) const LC_LOAD_UPWARD_DYLIB: u32 = 0x23 | LC_REQ_DYLD;
pub(crate) const LC_VERSION_MIN_MACOSX: u32 = 0x24;
pub(crate) const LC_BUILD_VERSION: u32 = 0x32;
pub(crate) const LC_DYLD_EXPORTS_TRIE: u32 = 0x33 | LC_REQ_DYLD;
pub(crate) const LC_DYLD_CHAINED_FIXUPS: u32 = 0x34 | LC_REQ_DYLD;

/// `struct dylib_command`: cmd, cmdsize, name offset, timestamp, current
/// version, compatibility version.
pub(crate) const DYLIB_COMMAND_SIZE: u64 = 24;
/// `struct rpath_command`: cmd, cmdsize, path offset.
pub(crate) const RPATH_COMMAND_SIZE: u64 = 12;
/// `struct linkedit_data_command`, the shape of LC_CODE_SIGNATURE.
pub(crate) const LINKEDIT_DATA_COMMAND_SIZE: u64 = 16;
pub(crate) const SEGMENT_COMMAND_32_SIZE: u64 = 56;
pub(crate) const SEGMENT_COMMAND_64_SIZE: u64 = 72;
pub(crate) const SECTION_32_SIZE: u64 = 68;
pub(crate) const SECTION_64_SIZE: u64 = 80;

pub(crate) const SECTION_TYPE: u32 = 0xff;
pub(crate) const S_ZEROFILL: u32 = 0x1;
pub(crate) const S_GB_ZEROFILL: u32 = 0xc;
pub(crate) const S_THREAD_LOCAL_ZEROFILL: u32 = 0x12;

pub(crate) const N_STAB: u8 = 0xe0;
pub(crate) const N_PEXT: u8 = 0x10;
pub(crate) const N_TYPE: u8 = 0x0e;
pub(crate) const N_EXT: u8 = 0x01;
pub(crate) const N_UNDF: u8 = 0x0;
pub(crate) const N_ABS: u8 = 0x2;
pub(crate) const N_INDR: u8 = 0xa;
pub(crate) const N_SECT: u8 = 0xe;
pub(crate) const N_WEAK_REF: u16 = 0x40;

pub(crate) const SELF_LIBRARY_ORDINAL: u8 = 0x0;
pub(crate) const DYNAMIC_LOOKUP_ORDINAL: u8 = 0xfe;
pub(crate) const EXECUTABLE_ORDINAL: u8 = 0xff;

pub(crate) const CSMAGIC_EMBEDDED_SIGNATURE: u32 = 0xfade_0cc0;
pub(crate) const CSMAGIC_CODEDIRECTORY: u32 = 0xfade_0c02;
pub(crate) const CSSLOT_CODEDIRECTORY: u32 = 0;
pub(crate) const CSSLOT_INFOSLOT: u32 = 1;
pub(crate) const CSSLOT_RESOURCEDIR: u32 = 3;
pub(crate) const CSSLOT_ALTERNATE_CODEDIRECTORIES: u32 = 0x1000;
pub(crate) const CSSLOT_ALTERNATE_CODEDIRECTORY_LIMIT: u32 = 0x1005;
pub(crate) const CS_ADHOC: u32 = 0x2;
pub(crate) const CS_LINKER_SIGNED: u32 = 0x2_0000;
pub(crate) const CS_SUPPORTSCODELIMIT64: u32 = 0x20300;
pub(crate) const CS_SUPPORTSEXECSEG: u32 = 0x20400;
pub(crate) const CS_HASHTYPE_SHA1: u8 = 1;
pub(crate) const CS_HASHTYPE_SHA256: u8 = 2;
pub(crate) const CS_HASHTYPE_SHA256_TRUNCATED: u8 = 3;
pub(crate) const CS_HASHTYPE_SHA384: u8 = 4;

pub(crate) const PLATFORM_MACOS: u32 = 1;

pub(crate) fn load_command_name(cmd: u32) -> &'static str {
    match cmd {
        LC_SEGMENT => "LC_SEGMENT",
        LC_SYMTAB => "LC_SYMTAB",
        LC_LOAD_DYLIB => "LC_LOAD_DYLIB",
        LC_ID_DYLIB => "LC_ID_DYLIB",
        LC_SEGMENT_64 => "LC_SEGMENT_64",
        LC_CODE_SIGNATURE => "LC_CODE_SIGNATURE",
        LC_LAZY_LOAD_DYLIB => "LC_LAZY_LOAD_DYLIB",
        LC_DYLD_INFO => "LC_DYLD_INFO",
        LC_DYLD_INFO_ONLY => "LC_DYLD_INFO_ONLY",
        LC_LOAD_WEAK_DYLIB => "LC_LOAD_WEAK_DYLIB",
        LC_RPATH => "LC_RPATH",
        LC_REEXPORT_DYLIB => "LC_REEXPORT_DYLIB",
        LC_LOAD_UPWARD_DYLIB => "LC_LOAD_UPWARD_DYLIB",
        LC_VERSION_MIN_MACOSX => "LC_VERSION_MIN_MACOSX",
        LC_BUILD_VERSION => "LC_BUILD_VERSION",
        LC_DYLD_EXPORTS_TRIE => "LC_DYLD_EXPORTS_TRIE",
        LC_DYLD_CHAINED_FIXUPS => "LC_DYLD_CHAINED_FIXUPS",
        _ => "load command",
    }
}
