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
    let (mut has_strtab, mut has_strsz) = (false, false);
    for entry in entries {
        let tag = entry.tag(endian);
        let slot = match tag {
            elf::DT_NULL => break,
            elf::DT_STRTAB => {
                has_strtab = true;
                continue;
            }
            elf::DT_STRSZ => {
                has_strsz = true;
                continue;
            }
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

    // The loader finds names through DT_STRTAB, not through the section headers read
    // here, and the writer only refills entries that exist: without them, edited names
    // would be invisible at run time.
    if !(has_strtab && has_strsz) {
        return Err(ElfEditError::MalformedInput(
            "its dynamic section has no DT_STRTAB or DT_STRSZ entry before DT_NULL, so the loader could not read the names in it".into(),
        ));
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
    check_segments_in_file::<Elf>(program_headers, endian, file_len)?;
    let loads = check_loads::<Elf>(program_headers, endian, file_len)?;
    check_dynamic_and_phdr(header, program_headers, endian, &loads)?;
    check_sections(header, data, endian, &loads)
}

/// Every segment's file range lies inside the file.
fn check_segments_in_file<Elf: FileHeader<Endian = Endianness>>(
    program_headers: &[Elf::ProgramHeader],
    endian: Endianness,
    file_len: u64,
) -> Result<(), ElfEditError> {
    for (index, ph) in program_headers.iter().enumerate() {
        let offset: u64 = ph.p_offset(endian).into();
        let size: u64 = ph.p_filesz(endian).into();
        if offset.checked_add(size).is_none_or(|end| end > file_len) {
            return Err(layout_error(format!(
                "program header #{index} (type 0x{:x}, offset 0x{offset:x}, size 0x{size:x}) extends past the end of the file (0x{file_len:x})",
                ph.p_type(endian).0
            )));
        }
    }
    Ok(())
}

/// The `PT_LOAD` segments, each checked on its own and against the previous one.
fn check_loads<Elf: FileHeader<Endian = Endianness>>(
    program_headers: &[Elf::ProgramHeader],
    endian: Endianness,
    file_len: u64,
) -> Result<Vec<Mapping>, ElfEditError> {
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
        check_load(loads.len(), &load, loads.last(), file_len)?;
        loads.push(load);
    }
    Ok(loads)
}

/// `PT_LOAD #index`: no more file than memory, inside the file, congruent
/// offset and address, and sorted after `previous` without overlapping it.
fn check_load(
    index: usize,
    load: &Mapping,
    previous: Option<&Mapping>,
    file_len: u64,
) -> Result<(), ElfEditError> {
    if load.filesz > load.memsz {
        return Err(layout_error(format!(
            "PT_LOAD #{index} has p_filesz 0x{:x} > p_memsz 0x{:x}",
            load.filesz, load.memsz
        )));
    }
    if load
        .offset
        .checked_add(load.filesz)
        .is_none_or(|end| end > file_len)
    {
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
    if let Some(previous) = previous {
        let previous_end = previous.vaddr.saturating_add(previous.memsz);
        if load.vaddr < previous.vaddr {
            return Err(layout_error(format!(
                "PT_LOAD #{index} at 0x{:x} comes after a PT_LOAD at 0x{:x}: PT_LOADs must be sorted by address",
                load.vaddr, previous.vaddr
            )));
        }
        if load.vaddr < previous_end {
            return Err(layout_error(format!(
                "PT_LOAD #{index} at 0x{:x} overlaps the previous PT_LOAD, which ends at 0x{previous_end:x}",
                load.vaddr
            )));
        }
    }
    Ok(())
}

/// `PT_DYNAMIC` and `PT_PHDR` lie inside a `PT_LOAD` at the matching
/// address, and `PT_PHDR` covers the program header table.
fn check_dynamic_and_phdr<Elf: FileHeader<Endian = Endianness>>(
    header: &Elf,
    program_headers: &[Elf::ProgramHeader],
    endian: Endianness,
    loads: &[Mapping],
) -> Result<(), ElfEditError> {
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
            let table_size = u64::from(header.e_phentsize(endian)) * program_headers.len() as u64;
            let e_phoff: u64 = header.e_phoff(endian).into();
            if offset != e_phoff || size < table_size {
                return Err(layout_error(format!(
                    "PT_PHDR (offset 0x{offset:x}, size 0x{size:x}) does not cover the program header table (offset 0x{e_phoff:x}, size 0x{table_size:x})"
                )));
            }
        }
    }
    Ok(())
}

/// Every section's contents lie inside the file, and every allocated one
/// with contents inside a `PT_LOAD` at a consistent address.
fn check_sections<Elf: FileHeader<Endian = Endianness>>(
    header: &Elf,
    data: &[u8],
    endian: Endianness,
    loads: &[Mapping],
) -> Result<(), ElfEditError> {
    let file_len = data.len() as u64;
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

#[cfg(test)]
mod tests {
    use super::*;

    const PT_LOAD: u32 = 1;
    const PT_DYNAMIC: u32 = 2;
    const PT_PHDR: u32 = 6;
    const HEADER_SIZE: u64 = 64;
    const PHDR_SIZE: u64 = 56;

    #[derive(Clone, Copy)]
    struct Phdr {
        p_type: u32,
        offset: u64,
        vaddr: u64,
        filesz: u64,
        memsz: u64,
        align: u64,
    }

    fn load(offset: u64, vaddr: u64, size: u64) -> Phdr {
        Phdr {
            p_type: PT_LOAD,
            offset,
            vaddr,
            filesz: size,
            memsz: size,
            align: 0x1000,
        }
    }

    fn segment(p_type: u32, offset: u64, vaddr: u64, size: u64) -> Phdr {
        Phdr {
            p_type,
            offset,
            vaddr,
            filesz: size,
            memsz: size,
            align: 8,
        }
    }

    /// A little-endian ELF64 shared object with these program headers and no sections.
    fn elf(phdrs: &[Phdr], file_len: usize) -> Vec<u8> {
        let mut data = vec![0u8; file_len];
        data[..8].copy_from_slice(b"\x7fELF\x02\x01\x01\x00");
        let mut put = |offset: usize, bytes: &[u8]| {
            data[offset..offset + bytes.len()].copy_from_slice(bytes);
        };
        put(16, &3u16.to_le_bytes()); // ET_DYN
        put(18, &183u16.to_le_bytes()); // EM_AARCH64
        put(20, &1u32.to_le_bytes());
        put(32, &HEADER_SIZE.to_le_bytes());
        put(52, &(HEADER_SIZE as u16).to_le_bytes());
        put(54, &(PHDR_SIZE as u16).to_le_bytes());
        put(56, &(phdrs.len() as u16).to_le_bytes());
        put(58, &64u16.to_le_bytes());
        for (index, phdr) in phdrs.iter().enumerate() {
            let at = (HEADER_SIZE + index as u64 * PHDR_SIZE) as usize;
            put(at, &phdr.p_type.to_le_bytes());
            put(at + 4, &4u32.to_le_bytes()); // PF_R
            put(at + 8, &phdr.offset.to_le_bytes());
            put(at + 16, &phdr.vaddr.to_le_bytes());
            put(at + 24, &phdr.vaddr.to_le_bytes());
            put(at + 32, &phdr.filesz.to_le_bytes());
            put(at + 40, &phdr.memsz.to_le_bytes());
            put(at + 48, &phdr.align.to_le_bytes());
        }
        data
    }

    fn layout_error_of(data: &[u8]) -> String {
        match check_layout(data) {
            Err(ElfEditError::Layout(message)) => message,
            other => panic!("expected a layout error, got {other:?}"),
        }
    }

    #[test]
    fn accepts_sorted_congruent_loads_holding_phdr_and_dynamic() {
        let table_size = 4 * PHDR_SIZE;
        let data = elf(
            &[
                segment(PT_PHDR, HEADER_SIZE, HEADER_SIZE, table_size),
                load(0, 0, 0x1000),
                load(0x1000, 0x11000, 0x800),
                segment(PT_DYNAMIC, 0x1100, 0x11100, 0x100),
            ],
            0x1800,
        );
        check_layout(&data).expect("valid layout");
    }

    #[test]
    fn rejects_loads_out_of_address_order() {
        let data = elf(&[load(0x1000, 0x11000, 0x100), load(0, 0, 0x1000)], 0x1100);
        assert!(layout_error_of(&data).contains("must be sorted"));
    }

    #[test]
    fn rejects_overlapping_loads() {
        let data = elf(&[load(0, 0, 0x1000), load(0x1800, 0x800, 0x100)], 0x1900);
        assert!(layout_error_of(&data).contains("overlaps"));
    }

    #[test]
    fn rejects_load_whose_offset_is_not_congruent_to_its_address() {
        let data = elf(&[load(0, 0, 0x1000), load(0x1000, 0x11800, 0x100)], 0x1100);
        assert!(layout_error_of(&data).contains("not congruent"));
    }

    #[test]
    fn rejects_dynamic_segment_outside_every_load() {
        let data = elf(
            &[
                load(0, 0, 0x1000),
                segment(PT_DYNAMIC, 0x1000, 0x1000, 0x100),
            ],
            0x1100,
        );
        assert!(layout_error_of(&data).contains("PT_DYNAMIC"));
    }

    #[test]
    fn rejects_dynamic_segment_whose_address_does_not_match_its_offset() {
        let data = elf(
            &[load(0, 0, 0x1000), segment(PT_DYNAMIC, 0x800, 0x900, 0x100)],
            0x1000,
        );
        assert!(layout_error_of(&data).contains("PT_DYNAMIC"));
    }

    #[test]
    fn rejects_phdr_segment_that_misses_part_of_the_table() {
        let data = elf(
            &[
                segment(PT_PHDR, HEADER_SIZE, HEADER_SIZE, PHDR_SIZE),
                load(0, 0, 0x1000),
            ],
            0x1000,
        );
        assert!(layout_error_of(&data).contains("does not cover"));
    }

    #[test]
    fn rejects_segment_extending_past_the_end_of_the_file() {
        let data = elf(&[load(0, 0, 0x2000)], 0x1000);
        assert!(layout_error_of(&data).contains("past the end of the file"));
    }

    #[test]
    fn reports_truncated_header_as_parse_error() {
        let data = elf(&[load(0, 0, 0x1000)], 0x1000);
        assert!(matches!(
            check_layout(&data[..40]),
            Err(ElfEditError::Parse(_))
        ));
    }
}
