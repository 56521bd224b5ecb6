//! Independent re-reading of an ELF file after an edit: the loader-facing layout
//! invariants, and the dynamic entries that the edits are about.
//!
//! This deliberately uses `object`'s read API rather than the builder that wrote
//! the file, so a layout bug in the writer cannot hide itself.

use object::elf;
use object::read::elf::{Dyn, FileHeader, ProgramHeader, SectionHeader};
use object::{Endianness, FileKind};

use super::edit::ElfEditError;

/// The dynamic-linking names of an ELF file, as the dynamic loader sees them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DynamicNames {
    pub soname: Option<Vec<u8>>,
    pub needed: Vec<Vec<u8>>,
    pub runpath: Option<Vec<u8>>,
    pub rpath: Option<Vec<u8>>,
    /// File names of the `.gnu.version_r` entries, in file order.
    pub verneed_files: Vec<Vec<u8>>,
}

impl DynamicNames {
    /// Reads the names from the first `SHT_DYNAMIC` section.
    pub(crate) fn read(data: &[u8]) -> Result<Self, ElfEditError> {
        match FileKind::parse(data).map_err(parse_error)? {
            FileKind::Elf32 => read_names::<elf::FileHeader32<Endianness>>(data),
            FileKind::Elf64 => read_names::<elf::FileHeader64<Endianness>>(data),
            _ => Err(ElfEditError::Parse("not an ELF file".into())),
        }
    }
}

fn parse_error(error: object::read::Error) -> ElfEditError {
    ElfEditError::Parse(error.to_string())
}

fn read_names<Elf: FileHeader<Endian = Endianness>>(
    data: &[u8],
) -> Result<DynamicNames, ElfEditError> {
    let header = Elf::parse(data).map_err(parse_error)?;
    let endian = header.endian().map_err(parse_error)?;
    let sections = header.sections(endian, data).map_err(parse_error)?;
    let Some((entries, strings_index)) = sections.dynamic(endian, data).map_err(parse_error)?
    else {
        return Err(ElfEditError::NotDynamic);
    };
    let strings = sections
        .strings(endian, data, strings_index)
        .map_err(parse_error)?;

    let mut names = DynamicNames::default();
    for entry in entries {
        let tag = entry.tag(endian);
        let slot = match tag {
            elf::DT_NULL => break,
            elf::DT_SONAME => Some(&mut names.soname),
            elf::DT_RUNPATH => Some(&mut names.runpath),
            elf::DT_RPATH => Some(&mut names.rpath),
            elf::DT_NEEDED => None,
            _ => continue,
        };
        let value = entry
            .string(endian, strings)
            .map_err(|_| {
                ElfEditError::Parse(format!(
                    "dynamic entry 0x{:x} points outside .dynstr",
                    tag.0
                ))
            })?
            .to_vec();
        match slot {
            Some(slot) => *slot = Some(value),
            None => names.needed.push(value),
        }
    }

    if let Some((mut verneeds, link)) = sections.gnu_verneed(endian, data).map_err(parse_error)? {
        let strings = sections.strings(endian, data, link).map_err(parse_error)?;
        while let Some((verneed, _)) = verneeds.next().map_err(parse_error)? {
            let file = verneed.file(endian, strings).map_err(parse_error)?;
            names.verneed_files.push(file.to_vec());
        }
    }
    Ok(names)
}

/// Checks the invariants the dynamic loader and the kernel rely on:
///
/// - `PT_LOAD` segments are sorted by address, do not overlap, lie inside the file,
///   and have `p_offset ≡ p_vaddr (mod p_align)`;
/// - `PT_DYNAMIC` and `PT_PHDR` lie inside the file part of one `PT_LOAD`, at the
///   address that matches their file offset;
/// - every section's contents lie inside the file, and every allocated section
///   with contents lies inside one `PT_LOAD` at a consistent address.
pub fn check_layout(data: &[u8]) -> Result<(), ElfEditError> {
    match FileKind::parse(data).map_err(parse_error)? {
        FileKind::Elf32 => check::<elf::FileHeader32<Endianness>>(data),
        FileKind::Elf64 => check::<elf::FileHeader64<Endianness>>(data),
        _ => Err(ElfEditError::Parse("not an ELF file".into())),
    }
}

/// A file range mapped at an address, the part of a segment that the checks need.
#[derive(Debug, Clone, Copy)]
struct Mapping {
    offset: u64,
    vaddr: u64,
    filesz: u64,
    memsz: u64,
    align: u64,
}

impl Mapping {
    /// Whether `[offset, offset + size)` is file content of this mapping, loaded at `addr`.
    fn maps(&self, offset: u64, addr: u64, size: u64) -> bool {
        let (Some(end), Some(own_end)) = (
            offset.checked_add(size),
            self.offset.checked_add(self.filesz),
        ) else {
            return false;
        };
        offset >= self.offset
            && end <= own_end
            && addr.checked_sub(self.vaddr) == Some(offset - self.offset)
    }
}

fn layout_error(message: String) -> ElfEditError {
    ElfEditError::Layout(message)
}

fn check<Elf: FileHeader<Endian = Endianness>>(data: &[u8]) -> Result<(), ElfEditError> {
    let file_len = data.len() as u64;
    let header = Elf::parse(data).map_err(parse_error)?;
    let endian = header.endian().map_err(parse_error)?;
    let program_headers = header.program_headers(endian, data).map_err(parse_error)?;

    let mut loads: Vec<Mapping> = Vec::new();
    for ph in program_headers {
        if ph.p_type(endian) != elf::PT_LOAD {
            continue;
        }
        let load = Mapping {
            offset: ph.p_offset(endian).into(),
            vaddr: ph.p_vaddr(endian).into(),
            filesz: ph.p_filesz(endian).into(),
            memsz: ph.p_memsz(endian).into(),
            align: ph.p_align(endian).into(),
        };
        let index = loads.len();
        if load.filesz > load.memsz {
            return Err(layout_error(format!(
                "PT_LOAD #{index} has p_filesz 0x{:x} > p_memsz 0x{:x}",
                load.filesz, load.memsz
            )));
        }
        if load.offset.checked_add(load.filesz).is_none_or(|end| end > file_len) {
            return Err(layout_error(format!(
                "PT_LOAD #{index} (offset 0x{:x}, size 0x{:x}) extends past the end of the file (0x{file_len:x})",
                load.offset, load.filesz
            )));
        }
        if load.align > 1 {
            if !load.align.is_power_of_two() {
                return Err(layout_error(format!(
                    "PT_LOAD #{index} has p_align 0x{:x}, which is not a power of two",
                    load.align
                )));
            }
            if load.offset % load.align != load.vaddr % load.align {
                return Err(layout_error(format!(
                    "PT_LOAD #{index} has p_offset 0x{:x} and p_vaddr 0x{:x} not congruent modulo p_align 0x{:x}",
                    load.offset, load.vaddr, load.align
                )));
            }
        }
        if let Some(previous) = loads.last() {
            let previous_end = previous.vaddr.saturating_add(previous.memsz);
            if load.vaddr < previous_end {
                return Err(layout_error(format!(
                    "PT_LOAD #{index} at 0x{:x} overlaps or precedes the previous PT_LOAD ending at 0x{previous_end:x}",
                    load.vaddr
                )));
            }
        }
        loads.push(load);
    }

    for ph in program_headers {
        let p_type = ph.p_type(endian);
        let name = match p_type {
            elf::PT_DYNAMIC => "PT_DYNAMIC",
            elf::PT_PHDR => "PT_PHDR",
            _ => continue,
        };
        let offset: u64 = ph.p_offset(endian).into();
        let vaddr: u64 = ph.p_vaddr(endian).into();
        let size: u64 = ph.p_filesz(endian).into();
        if !loads.iter().any(|load| load.maps(offset, vaddr, size)) {
            return Err(layout_error(format!(
                "{name} (offset 0x{offset:x}, address 0x{vaddr:x}, size 0x{size:x}) is not inside the file part of a PT_LOAD"
            )));
        }
        if p_type == elf::PT_PHDR {
            let table_size = u64::from(header.e_phentsize(endian))
                * program_headers.len() as u64;
            let e_phoff: u64 = header.e_phoff(endian).into();
            if offset != e_phoff || size < table_size {
                return Err(layout_error(format!(
                    "PT_PHDR (offset 0x{offset:x}, size 0x{size:x}) does not cover the program header table (offset 0x{e_phoff:x}, size 0x{table_size:x})"
                )));
            }
        }
    }

    let sections = header.sections(endian, data).map_err(parse_error)?;
    for (index, section) in sections.enumerate() {
        let sh_type = section.sh_type(endian);
        if sh_type == elf::SHT_NULL || sh_type == elf::SHT_NOBITS {
            continue;
        }
        let name = sections
            .section_name(endian, section)
            .map(String::from_utf8_lossy)
            .unwrap_or_default();
        let offset: u64 = section.sh_offset(endian).into();
        let size: u64 = section.sh_size(endian).into();
        if offset.checked_add(size).is_none_or(|end| end > file_len) {
            return Err(layout_error(format!(
                "section #{} `{name}` (offset 0x{offset:x}, size 0x{size:x}) extends past the end of the file (0x{file_len:x})",
                index.0
            )));
        }
        if !section.sh_flags(endian).contains(elf::SHF_ALLOC) || size == 0 {
            continue;
        }
        let addr: u64 = section.sh_addr(endian).into();
        if !loads.iter().any(|load| load.maps(offset, addr, size)) {
            return Err(layout_error(format!(
                "allocated section #{} `{name}` (offset 0x{offset:x}, address 0x{addr:x}, size 0x{size:x}) is not inside the file part of a PT_LOAD",
                index.0
            )));
        }
    }
    Ok(())
}
