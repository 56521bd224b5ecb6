//! Facts about one ELF file that wheel auditing needs: its identity (machine,
//! class, byte order, type) and its dynamic-linking surface (interpreter,
//! SONAME, NEEDED, search paths, required symbol versions, imported symbols).
//!
//! Parsing never panics on malformed input: anything that cannot be read is an
//! [`ElfError`]. Optional data that is merely absent (no `.gnu.version_r`, no
//! PT_INTERP) is reported as empty, not as an error.

use std::collections::{BTreeMap, BTreeSet};

use goblin::elf::{Elf, dynamic, header, section_header};
use goblin::strtab::Strtab;
use serde::Serialize;

/// Why an ELF file could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ElfError {
    #[error("not an ELF file (the first bytes are not \\x7fELF)")]
    NotElf,
    #[error("malformed ELF file: {0}; the file is damaged or truncated, rebuild or re-download it")]
    Malformed(String),
    #[error(
        "malformed ELF file: {what} refers to offset {offset:#x}, outside the dynamic string table; \
         the file is damaged, rebuild or re-download it"
    )]
    BadStringOffset { what: &'static str, offset: u64 },
}

impl From<goblin::error::Error> for ElfError {
    fn from(error: goblin::error::Error) -> Self {
        let message = error.to_string();
        // Keep every error on one line, whatever the parser put in it.
        ElfError::Malformed(message.split_whitespace().collect::<Vec<_>>().join(" "))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ElfClass {
    Elf32,
    Elf64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Endianness {
    Little,
    Big,
}

/// The versions one `.gnu.version_r` entry requires from one needed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionRequirement {
    /// The needed file as written in the entry, e.g. `libc.so.6`.
    pub file: String,
    /// Version names in file order, e.g. `GLIBC_2.17`, `GLIBCXX_LDBL_3.4`.
    pub versions: Vec<String>,
}

/// A dynamic symbol this file imports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UndefinedSymbol {
    pub name: String,
    /// The required version (`GLIBC_2.17`), when the import is versioned.
    pub version: Option<String>,
    /// The needed file that must provide `version`.
    pub library: Option<String>,
    /// Weak imports may stay unresolved at run time.
    pub weak: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ElfFacts {
    /// `e_machine`, e.g. 183 for AArch64.
    pub machine: u16,
    /// The platform-tag architecture name (`aarch64`, `ppc64le`, ...), when known.
    pub arch: Option<&'static str>,
    pub class: ElfClass,
    pub endianness: Endianness,
    /// `e_type`, e.g. 3 (`ET_DYN`) for shared objects and PIE executables.
    pub file_type: u16,
    /// `e_flags`: for ARM, the EABI version and the float ABI.
    pub flags: u32,
    /// The PT_INTERP path, e.g. `/lib/ld-linux-aarch64.so.1`.
    pub interpreter: Option<String>,
    pub soname: Option<String>,
    /// DT_NEEDED entries in file order.
    pub needed: Vec<String>,
    /// DT_RPATH entries, split on ':'.
    pub rpath: Vec<String>,
    /// DT_RUNPATH entries, split on ':'.
    pub runpath: Vec<String>,
    /// `.gnu.version_r` entries in file order.
    pub version_requirements: Vec<VersionRequirement>,
    /// Imported dynamic symbols in `.dynsym` order.
    pub undefined_symbols: Vec<UndefinedSymbol>,
    /// Exported dynamic symbols (global or weak, defined) in `.dynsym` order. Left out of
    /// JSON reports: a C library exports thousands.
    #[serde(skip)]
    pub defined_symbols: Vec<DefinedSymbol>,
}

/// Cheap check of the ELF magic, to pick candidate files before parsing (the
/// twin of `macho::is_macho`).
pub fn is_elf(data: &[u8]) -> bool {
    data.starts_with(header::ELFMAG)
}

/// A dynamic symbol this file exports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DefinedSymbol {
    pub name: String,
    /// The version it is defined at (`GLIBC_2.17`), when the file versions its symbols.
    pub version: Option<String>,
    /// Whether an unversioned reference binds to this definition: the default (`@@`)
    /// version, or an unversioned file's only definition. Hidden (`@`) versions serve only
    /// references that name them.
    pub default: bool,
}

/// Splits a version name at its first '_' into prefix and version:
/// `GLIBC_2.17` → (`GLIBC`, `2.17`), `GLIBCXX_LDBL_3.4` → (`GLIBCXX`, `LDBL_3.4`).
/// A name without '_' is all prefix with an empty version. This is the split
/// the manylinux policies are written against.
pub fn split_version_name(name: &str) -> (&str, &str) {
    name.split_once('_').unwrap_or((name, ""))
}

/// The platform-tag architecture name for an ELF machine, class and byte order.
pub fn arch_name(machine: u16, class: ElfClass, endianness: Endianness) -> Option<&'static str> {
    let is_64 = class == ElfClass::Elf64;
    let name = match machine {
        header::EM_X86_64 => "x86_64",
        header::EM_386 => "i686",
        header::EM_AARCH64 => "aarch64",
        header::EM_ARM => "armv7l",
        header::EM_PPC64 if endianness == Endianness::Little => "ppc64le",
        header::EM_PPC64 => "ppc64",
        header::EM_PPC => "ppc",
        header::EM_S390 if is_64 => "s390x",
        header::EM_S390 => "s390",
        header::EM_RISCV if is_64 => "riscv64",
        header::EM_RISCV => "riscv32",
        header::EM_LOONGARCH if is_64 => "loongarch64",
        _ => return None,
    };
    Some(name)
}

/// Why a 32-bit ARM file is not `armv7l` (EABI 5, hard-float), as auditwheel decides
/// from `e_flags`; `None` for every other machine.
pub fn arm_abi_problem(machine: u16, flags: u32) -> Option<&'static str> {
    const EABI_MASK: u32 = 0xff00_0000;
    const EABI_VER5: u32 = 0x0500_0000;
    const FLOAT_HARD: u32 = 0x0000_0400;
    if machine != header::EM_ARM {
        None
    } else if flags & EABI_MASK != EABI_VER5 {
        Some("an ARM binary of an EABI version other than 5, which armv7l requires")
    } else if flags & FLOAT_HARD == 0 {
        Some("a soft-float ARM binary (armv5 and the like): armv7l wheels use the hard-float ABI")
    } else {
        None
    }
}

impl ElfFacts {
    /// What says the file was linked against musl's C library instead of glibc: its
    /// `ld-musl-*` interpreter or its `libc.musl-*` DT_NEEDED.
    pub fn musl_evidence(&self) -> Option<&str> {
        self.interpreter
            .as_deref()
            .filter(|path| {
                path.rsplit('/')
                    .next()
                    .unwrap_or(path)
                    .starts_with("ld-musl-")
            })
            .or_else(|| {
                self.needed
                    .iter()
                    .map(String::as_str)
                    .find(|name| name.starts_with("libc.musl-") || name.starts_with("ld-musl-"))
            })
    }

    pub fn parse(data: &[u8]) -> Result<ElfFacts, ElfError> {
        if !is_elf(data) {
            return Err(ElfError::NotElf);
        }
        let elf = Elf::parse(data)?;
        let class = if elf.is_64 {
            ElfClass::Elf64
        } else {
            ElfClass::Elf32
        };
        let endianness = if elf.little_endian {
            Endianness::Little
        } else {
            Endianness::Big
        };
        let machine = elf.header.e_machine;
        let flags = elf.header.e_flags;
        let arch = match arm_abi_problem(machine, flags) {
            Some(_) => None,
            None => arch_name(machine, class, endianness),
        };

        let mut facts = ElfFacts {
            machine,
            arch,
            class,
            endianness,
            file_type: elf.header.e_type,
            flags,
            // goblin keeps PT_INTERP's padding NULs when p_filesz counts more than one
            // (Debian's s390x libc.so.6).
            interpreter: elf
                .interpreter
                .map(|path| path.trim_end_matches('\0').to_owned()),
            soname: None,
            needed: Vec::new(),
            rpath: Vec::new(),
            runpath: Vec::new(),
            version_requirements: Vec::new(),
            undefined_symbols: Vec::new(),
            defined_symbols: Vec::new(),
        };
        facts.read_dynamic_entries(&elf)?;
        facts.version_requirements = read_version_requirements(&elf)?;
        facts.undefined_symbols = read_undefined_symbols(&elf)?;
        facts.defined_symbols = read_defined_symbols(&elf)?;
        Ok(facts)
    }

    /// All required version names grouped by prefix (see [`split_version_name`]):
    /// `GLIBC` → {`2.17`, `2.28`}, `GLIBCXX` → {`3.4`, `LDBL_3.4`}.
    pub fn versions_by_prefix(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut by_prefix: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for requirement in &self.version_requirements {
            for name in &requirement.versions {
                let (prefix, version) = split_version_name(name);
                by_prefix
                    .entry(prefix.to_owned())
                    .or_default()
                    .insert(version.to_owned());
            }
        }
        by_prefix
    }

    /// The versions required from one needed file, e.g. `libc.so.6`.
    pub fn versions_required_from(&self, file: &str) -> impl Iterator<Item = &str> {
        self.version_requirements
            .iter()
            .filter(move |requirement| requirement.file == file)
            .flat_map(|requirement| requirement.versions.iter().map(String::as_str))
    }

    fn read_dynamic_entries(&mut self, elf: &Elf<'_>) -> Result<(), ElfError> {
        let Some(dynamic) = &elf.dynamic else {
            return Ok(());
        };
        for entry in &dynamic.dyns {
            let what = match entry.d_tag {
                dynamic::DT_NEEDED => "DT_NEEDED",
                dynamic::DT_SONAME => "DT_SONAME",
                dynamic::DT_RPATH => "DT_RPATH",
                dynamic::DT_RUNPATH => "DT_RUNPATH",
                _ => continue,
            };
            let value = dynamic_string(&elf.dynstrtab, entry.d_val, what)?;
            match entry.d_tag {
                dynamic::DT_NEEDED => self.needed.push(value.to_owned()),
                dynamic::DT_SONAME => self.soname = Some(value.to_owned()),
                dynamic::DT_RPATH => self.rpath.extend(split_search_path(value)),
                _ => self.runpath.extend(split_search_path(value)),
            }
        }
        Ok(())
    }
}

fn split_search_path(value: &str) -> impl Iterator<Item = String> + '_ {
    value
        .split(':')
        .filter(|entry| !entry.is_empty())
        .map(str::to_owned)
}

fn dynamic_string<'a>(
    strtab: &Strtab<'a>,
    offset: u64,
    what: &'static str,
) -> Result<&'a str, ElfError> {
    usize::try_from(offset)
        .ok()
        .and_then(|index| strtab.get_at(index))
        .ok_or(ElfError::BadStringOffset { what, offset })
}

fn read_version_requirements(elf: &Elf<'_>) -> Result<Vec<VersionRequirement>, ElfError> {
    let Some(verneed) = &elf.verneed else {
        return Ok(Vec::new());
    };
    let mut requirements = Vec::new();
    for need in verneed.iter() {
        let file = dynamic_string(&elf.dynstrtab, need.vn_file as u64, "a .gnu.version_r file")?;
        let versions = need
            .iter()
            .map(|aux| {
                dynamic_string(
                    &elf.dynstrtab,
                    aux.vna_name as u64,
                    "a .gnu.version_r version",
                )
                .map(str::to_owned)
            })
            .collect::<Result<_, _>>()?;
        requirements.push(VersionRequirement {
            file: file.to_owned(),
            versions,
        });
    }
    Ok(requirements)
}

/// Maps a `.gnu.version` index to the (file, version name) it requires.
fn required_versions_by_index<'a>(elf: &Elf<'a>) -> BTreeMap<u16, (&'a str, &'a str)> {
    let mut by_index = BTreeMap::new();
    let Some(verneed) = &elf.verneed else {
        return by_index;
    };
    for need in verneed.iter() {
        let Some(file) = elf.dynstrtab.get_at(need.vn_file) else {
            continue;
        };
        for aux in need.iter() {
            if let Some(name) = elf.dynstrtab.get_at(aux.vna_name) {
                by_index.insert(aux.vna_other, (file, name));
            }
        }
    }
    by_index
}

fn read_undefined_symbols(elf: &Elf<'_>) -> Result<Vec<UndefinedSymbol>, ElfError> {
    // Version names were validated by `read_version_requirements`.
    let versions = required_versions_by_index(elf);
    let mut symbols = Vec::new();
    for (index, symbol) in elf.dynsyms.iter().enumerate() {
        if symbol.st_shndx != section_header::SHN_UNDEF as usize || symbol.st_name == 0 {
            continue;
        }
        let name = dynamic_string(&elf.dynstrtab, symbol.st_name as u64, "a .dynsym name")?;
        let required = elf
            .versym
            .as_ref()
            .and_then(|versym| versym.get_at(index))
            .and_then(|versym| versions.get(&versym.version()));
        symbols.push(UndefinedSymbol {
            name: name.to_owned(),
            version: required.map(|(_, version)| (*version).to_owned()),
            library: required.map(|(file, _)| (*file).to_owned()),
            weak: symbol.st_bind() == goblin::elf::sym::STB_WEAK,
        });
    }
    Ok(symbols)
}

/// Maps a `.gnu.version_d` index to the version name it defines.
fn defined_versions_by_index<'a>(elf: &Elf<'a>) -> BTreeMap<u16, &'a str> {
    let mut by_index = BTreeMap::new();
    let Some(verdef) = &elf.verdef else {
        return by_index;
    };
    for definition in verdef.iter() {
        // The base entry names the file itself, not a version symbols are defined at.
        if definition.vd_flags & goblin::elf::symver::VER_FLG_BASE != 0 {
            continue;
        }
        if let Some(name) = definition
            .iter()
            .next()
            .and_then(|aux| elf.dynstrtab.get_at(aux.vda_name))
        {
            by_index.insert(definition.vd_ndx, name);
        }
    }
    by_index
}

fn read_defined_symbols(elf: &Elf<'_>) -> Result<Vec<DefinedSymbol>, ElfError> {
    let versions = defined_versions_by_index(elf);
    let mut symbols = Vec::new();
    for (index, symbol) in elf.dynsyms.iter().enumerate() {
        let exported = matches!(
            symbol.st_bind(),
            goblin::elf::sym::STB_GLOBAL
                | goblin::elf::sym::STB_WEAK
                | goblin::elf::sym::STB_GNU_UNIQUE
        );
        if symbol.st_shndx == section_header::SHN_UNDEF as usize || symbol.st_name == 0 || !exported
        {
            continue;
        }
        let name = dynamic_string(&elf.dynstrtab, symbol.st_name as u64, "a .dynsym name")?;
        let versym = elf.versym.as_ref().and_then(|versym| versym.get_at(index));
        let version = versym
            .as_ref()
            .and_then(|versym| versions.get(&versym.version()));
        symbols.push(DefinedSymbol {
            name: name.to_owned(),
            version: version.map(|name| (*name).to_owned()),
            default: !versym.is_some_and(|versym| versym.is_hidden()),
        });
    }
    Ok(symbols)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own_executable() -> Vec<u8> {
        let path = std::env::current_exe().expect("the test binary knows its own path");
        std::fs::read(&path).expect("the test binary is readable")
    }

    /// Offset and size of the dynamic section's entries, from the program headers.
    fn dynamic_entries(data: &[u8]) -> (usize, usize) {
        let elf = Elf::parse(data).expect("the test binary parses");
        let phdr = elf
            .program_headers
            .iter()
            .find(|phdr| phdr.p_type == goblin::elf::program_header::PT_DYNAMIC)
            .expect("the test binary is dynamically linked");
        (phdr.p_offset as usize, phdr.p_filesz as usize)
    }

    #[test]
    fn splits_version_names_at_the_first_underscore() {
        assert_eq!(split_version_name("GLIBC_2.17"), ("GLIBC", "2.17"));
        assert_eq!(split_version_name("GLIBC_2.3.4"), ("GLIBC", "2.3.4"));
        assert_eq!(
            split_version_name("GLIBCXX_LDBL_3.4"),
            ("GLIBCXX", "LDBL_3.4")
        );
        assert_eq!(split_version_name("CXXABI_TM_1"), ("CXXABI", "TM_1"));
        assert_eq!(split_version_name("OPENSSL_1_1_0"), ("OPENSSL", "1_1_0"));
        assert_eq!(split_version_name("FLOAT128"), ("FLOAT128", ""));
    }

    #[test]
    fn names_architectures_as_platform_tags_do() {
        use ElfClass::*;
        use Endianness::*;
        assert_eq!(arch_name(header::EM_PPC64, Elf64, Little), Some("ppc64le"));
        assert_eq!(arch_name(header::EM_PPC64, Elf64, Big), Some("ppc64"));
        assert_eq!(
            arch_name(header::EM_AARCH64, Elf64, Little),
            Some("aarch64")
        );
        assert_eq!(arch_name(header::EM_386, Elf32, Little), Some("i686"));
        assert_eq!(arch_name(header::EM_S390, Elf64, Big), Some("s390x"));
        assert_eq!(arch_name(header::EM_RISCV, Elf64, Little), Some("riscv64"));
        assert_eq!(arch_name(header::EM_MIPS, Elf64, Little), None);
    }

    #[test]
    fn rejects_data_without_elf_magic() {
        assert!(!is_elf(b"PK\x03\x04"));
        assert_eq!(ElfFacts::parse(b"#!/bin/sh\n"), Err(ElfError::NotElf));
        assert_eq!(ElfFacts::parse(b""), Err(ElfError::NotElf));
    }

    #[test]
    fn reads_the_test_binary_itself() {
        let facts = ElfFacts::parse(&own_executable()).expect("the test binary parses");
        assert_eq!(facts.arch, Some(std::env::consts::ARCH));
        assert!(facts.needed.iter().any(|lib| lib.starts_with("libc.so")));
        assert!(facts.versions_by_prefix().contains_key("GLIBC"));
        let versioned = facts.undefined_symbols.iter().find(|s| s.version.is_some());
        let versioned = versioned.expect("the test binary imports versioned libc symbols");
        assert!(
            facts
                .versions_required_from(versioned.library.as_deref().unwrap_or_default())
                .any(|v| Some(v) == versioned.version.as_deref())
        );
    }

    #[test]
    fn reports_every_truncation_as_an_error_or_partial_facts_without_panicking() {
        let data = own_executable();
        let full = ElfFacts::parse(&data).expect("the test binary parses");
        let (dynamic_offset, _) = dynamic_entries(&data);
        let step = (data.len() / 300).max(1);
        let cuts = (0..data.len())
            .step_by(step)
            .chain(dynamic_offset.saturating_sub(64)..dynamic_offset + 64);
        for cut in cuts {
            if let Ok(facts) = ElfFacts::parse(&data[..cut.min(data.len())]) {
                assert_eq!(facts.machine, full.machine, "cut at {cut}");
            }
        }
    }

    #[test]
    #[ignore = "slow: 200 parses of the 150 MB debug test binary (2-3 minutes in a debug build)"]
    fn survives_corrupted_headers_and_dynamic_entries_without_panicking() {
        let original = own_executable();
        let (dynamic_offset, dynamic_size) = dynamic_entries(&original);
        let header_region = 0..original.len().min(4096);
        let dynamic_region = dynamic_offset..dynamic_offset + dynamic_size;
        // A fixed xorshift sequence keeps failures reproducible.
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..200 {
            let mut data = original.clone();
            for _ in 0..4 {
                let region = if next() % 2 == 0 {
                    &header_region
                } else {
                    &dynamic_region
                };
                let position = region.start + (next() as usize) % region.len().max(1);
                if let Some(byte) = data.get_mut(position) {
                    *byte = next() as u8;
                }
            }
            if let Err(error) = ElfFacts::parse(&data) {
                assert!(!error.to_string().contains('\n'), "{error}");
            }
        }
    }

    #[test]
    fn rejects_a_dynamic_segment_outside_the_file() {
        let mut data = own_executable();
        let elf = Elf::parse(&data).expect("the test binary parses");
        let index = elf
            .program_headers
            .iter()
            .position(|phdr| phdr.p_type == goblin::elf::program_header::PT_DYNAMIC)
            .expect("the test binary is dynamically linked");
        assert!(
            elf.is_64 && elf.little_endian,
            "this test patches a 64-bit little-endian header"
        );
        let entry = elf.header.e_phoff as usize + index * elf.header.e_phentsize as usize;
        let p_offset = entry + 8;
        let beyond_end = (data.len() as u64 + 0x1000).to_le_bytes();
        data[p_offset..p_offset + 8].copy_from_slice(&beyond_end);
        let error = ElfFacts::parse(&data).expect_err("PT_DYNAMIC beyond the end must fail");
        assert!(matches!(error, ElfError::Malformed(_)), "{error:?}");
        assert!(!error.to_string().contains('\n'));
    }

    #[test]
    fn rejects_a_needed_entry_with_a_string_offset_outside_the_table() {
        let mut data = own_executable();
        let (offset, size) = dynamic_entries(&data);
        let needed = (offset..offset + size).step_by(16).find(|&entry| {
            data.get(entry..entry + 8) == Some(&(dynamic::DT_NEEDED).to_le_bytes()[..])
        });
        let needed = needed.expect("the test binary has a DT_NEEDED entry");
        data[needed + 8..needed + 16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(
            ElfFacts::parse(&data),
            Err(ElfError::BadStringOffset {
                what: "DT_NEEDED",
                offset: u64::MAX
            })
        );
    }
}
