//! Reading thin and fat Mach-O files into [`MachOFile`]. Every offset and size
//! the file declares is checked before use; a lie becomes a `MachOError`.

use super::binds;
use super::bytes::{be_u32, be_u64, le_u32, slice_at};
use super::constants::*;
use super::error::MachOError;
use super::facts::*;
use super::load_commands::read_load_commands;
use super::symbols::{self, SymbolTables};

impl<'a> MachOFile<'a> {
    /// Parses a thin or universal Mach-O file.
    pub fn parse(data: &'a [u8]) -> Result<MachOFile<'a>, MachOError> {
        let magic = be_u32(data, 0).ok_or(MachOError::NotMachO { magic: 0 })?;
        if magic == FAT_MAGIC || magic == FAT_MAGIC_64 {
            let slices = fat_slice_ranges(data, magic == FAT_MAGIC_64)?
                .into_iter()
                .enumerate()
                .map(|(index, range)| {
                    let bytes = slice_at(data, range.offset, range.size).ok_or_else(|| {
                        MachOError::malformed(
                            format!("fat slice {index}"),
                            "lies past the end of the file",
                        )
                    })?;
                    let slice = parse_slice(bytes, range.offset, Some(index))?;
                    if (range.cpu_type, range.cpu_subtype & !CPU_SUBTYPE_MASK)
                        != cpu_of(bytes).unwrap_or_default()
                    {
                        return Err(MachOError::malformed(
                            format!("fat slice {index}"),
                            format!(
                                "the fat header says {} but the slice is {}",
                                Arch::from_cpu(range.cpu_type, range.cpu_subtype),
                                slice.arch
                            ),
                        ));
                    }
                    Ok(slice)
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(MachOFile {
                is_fat: true,
                slices,
            })
        } else {
            Ok(MachOFile {
                is_fat: false,
                slices: vec![parse_slice(data, 0, None)?],
            })
        }
    }
}

fn cpu_of(slice: &[u8]) -> Option<(u32, u32)> {
    Some((le_u32(slice, 4)?, le_u32(slice, 8)? & !CPU_SUBTYPE_MASK))
}

pub(crate) struct FatSliceRange {
    pub(crate) offset: u64,
    pub(crate) size: u64,
    cpu_type: u32,
    cpu_subtype: u32,
}

fn fat_slice_ranges(data: &[u8], wide: bool) -> Result<Vec<FatSliceRange>, MachOError> {
    let truncated = |what: &str| {
        MachOError::malformed(
            "fat header",
            format!("{what} lies past the end of the file"),
        )
    };
    let count = be_u32(data, 4).ok_or_else(|| truncated("the architecture count"))?;
    if count == 0 {
        return Err(MachOError::malformed(
            "fat header",
            "lists no architectures",
        ));
    }
    let entry_size = if wide {
        FAT_ARCH_64_SIZE
    } else {
        FAT_ARCH_SIZE
    };
    let table_end = u64::from(count)
        .checked_mul(entry_size)
        .and_then(|size| size.checked_add(FAT_HEADER_SIZE))
        .filter(|&end| end <= data.len() as u64)
        .ok_or_else(|| truncated(&format!("the table of {count} architectures")))?;

    let mut ranges = Vec::new();
    for index in 0..u64::from(count) {
        let entry = FAT_HEADER_SIZE + index * entry_size;
        let read = |field: u64| {
            be_u32(data, entry + field).ok_or_else(|| truncated("an architecture entry"))
        };
        let (offset, size) = if wide {
            let offset =
                be_u64(data, entry + 8).ok_or_else(|| truncated("an architecture entry"))?;
            let size =
                be_u64(data, entry + 16).ok_or_else(|| truncated("an architecture entry"))?;
            (offset, size)
        } else {
            (u64::from(read(8)?), u64::from(read(12)?))
        };
        let location = format!("fat slice {index}");
        if offset < table_end {
            return Err(MachOError::malformed(
                location,
                format!("starts at {offset}, inside the fat header"),
            ));
        }
        if offset
            .checked_add(size)
            .is_none_or(|end| end > data.len() as u64)
        {
            return Err(MachOError::malformed(
                location,
                format!(
                    "spans {offset}+{size} but the file has {} bytes",
                    data.len()
                ),
            ));
        }
        ranges.push(FatSliceRange {
            offset,
            size,
            cpu_type: read(0)?,
            cpu_subtype: read(4)?,
        });
    }

    check_no_overlap(&ranges)?;
    Ok(ranges)
}

fn check_no_overlap(ranges: &[FatSliceRange]) -> Result<(), MachOError> {
    let mut by_offset: Vec<&FatSliceRange> = ranges.iter().collect();
    by_offset.sort_by_key(|range| range.offset);
    for pair in by_offset.windows(2) {
        if let [first, second] = pair
            && first.offset + first.size > second.offset
        {
            return Err(MachOError::malformed(
                "fat header",
                format!(
                    "slices at offsets {} and {} overlap",
                    first.offset, second.offset
                ),
            ));
        }
    }
    Ok(())
}

/// Offsets (within the slice) of the symbol-related tables a slice declares.
#[derive(Default)]
pub(super) struct LinkeditTables {
    pub symtab: Option<(u64, u64, u64, u64)>,
    pub export_trie: Option<(u64, u64)>,
    /// Regular and lazy bind opcode streams of LC_DYLD_INFO.
    pub bind_streams: Vec<(u64, u64)>,
    pub chained_fixups: Option<(u64, u64)>,
}

/// The `mach_header` fields of one slice, checked against the slice's size.
pub(super) struct Header {
    pub arch: Arch,
    pub is_64_bit: bool,
    pub file_type: FileType,
    pub header_flags: u32,
    pub header_size: u64,
    pub command_count: u32,
    pub load_commands_size: u64,
    /// How error messages name the slice.
    pub label: String,
}

impl Header {
    /// Where the load commands end (and the header padding starts).
    pub(super) fn commands_end(&self) -> u64 {
        self.header_size + self.load_commands_size
    }
}

pub(crate) fn parse_slice<'a>(
    data: &'a [u8],
    offset: u64,
    index: Option<usize>,
) -> Result<Slice<'a>, MachOError> {
    let header = read_header(data, index)?;
    let mut slice = Slice {
        data,
        offset,
        arch: header.arch,
        is_64_bit: header.is_64_bit,
        file_type: header.file_type,
        header_flags: header.header_flags,
        header_size: header.header_size,
        load_commands_size: header.load_commands_size,
        header_padding: 0,
        install_id: None,
        dependencies: Vec::new(),
        rpaths: Vec::new(),
        deployment_target: None,
        segments: Vec::new(),
        code_signature: None,
        exported_symbols: Vec::new(),
        imported_symbols: Vec::new(),
        load_commands: Vec::new(),
    };
    let tables = read_load_commands(&mut slice, &header)?;
    let label = &header.label;
    check_segments(&slice, label)?;
    let commands_end = header.commands_end();
    let first_data = first_section_offset(&slice);
    slice.header_padding = first_data.checked_sub(commands_end).ok_or_else(|| {
        MachOError::malformed(
            label,
            format!("load commands end at {commands_end}, past section data at {first_data}"),
        )
    })?;
    read_symbols(&mut slice, &tables, label)?;
    Ok(slice)
}

/// Reads and checks the `mach_header`: a little-endian magic, a header that
/// fits, and load commands that end inside the slice.
fn read_header(data: &[u8], index: Option<usize>) -> Result<Header, MachOError> {
    let magic = le_u32(data, 0).ok_or(MachOError::NotMachO { magic: 0 })?;
    let is_64_bit = match magic {
        MH_MAGIC_64 => true,
        MH_MAGIC => false,
        MH_CIGAM | MH_CIGAM_64 => {
            return Err(MachOError::Unsupported {
                reason: "big-endian (PowerPC) Mach-O".into(),
            });
        }
        _ => {
            return Err(MachOError::NotMachO {
                magic: magic.swap_bytes(),
            });
        }
    };
    let header_size = if is_64_bit {
        HEADER_SIZE_64
    } else {
        HEADER_SIZE_32
    };
    let short_header = || {
        MachOError::malformed(
            slice_label(index, None),
            "the file is shorter than a Mach-O header",
        )
    };
    let field = |at: u64| le_u32(data, at).ok_or_else(short_header);
    let (cpu_type, cpu_subtype) = (field(4)?, field(8)?);
    let arch = Arch::from_cpu(cpu_type, cpu_subtype);
    let label = slice_label(index, Some(arch));
    if data.len() < header_size as usize {
        return Err(short_header());
    }
    let header = Header {
        arch,
        is_64_bit,
        file_type: FileType::from_raw(field(12)?),
        command_count: field(16)?,
        load_commands_size: u64::from(field(20)?),
        header_flags: field(24)?,
        header_size,
        label,
    };
    if header.commands_end() > data.len() as u64 {
        return Err(MachOError::malformed(
            header.label,
            format!(
                "sizeofcmds {} runs past the end of the slice ({} bytes)",
                header.load_commands_size,
                data.len()
            ),
        ));
    }
    Ok(header)
}

/// Exported symbols from the symbol table or export trie; imported ones from
/// the chained fixups, else the bind opcodes, else the symbol table.
fn read_symbols(
    slice: &mut Slice<'_>,
    tables: &LinkeditTables,
    label: &str,
) -> Result<(), MachOError> {
    let data = slice.data;
    let symbols = symbols::read(
        data,
        tables.symtab,
        tables.export_trie,
        slice.is_64_bit,
        label,
    )?;
    let SymbolTables { exported, imported } = symbols;
    slice.exported_symbols = exported;
    slice.imported_symbols = match (tables.chained_fixups, tables.bind_streams.is_empty()) {
        (Some(fixups), _) => binds::from_chained_fixups(data, fixups, label)?,
        (None, false) => binds::from_bind_opcodes(data, &tables.bind_streams, label)?,
        (None, true) => imported,
    };
    Ok(())
}

pub(crate) fn slice_label(index: Option<usize>, arch: Option<Arch>) -> String {
    match (index, arch) {
        (None, Some(arch)) => format!("{arch} slice"),
        (None, None) => "slice".to_string(),
        (Some(index), Some(arch)) => format!("slice {index} ({arch})"),
        (Some(index), None) => format!("slice {index}"),
    }
}

fn check_segments(slice: &Slice<'_>, label: &str) -> Result<(), MachOError> {
    let mut occupied: Vec<&Segment> = slice.segments.iter().filter(|s| s.file_size > 0).collect();
    occupied.sort_by_key(|segment| segment.file_offset);
    for pair in occupied.windows(2) {
        if let [first, second] = pair
            && first.file_offset + first.file_size > second.file_offset
        {
            return Err(MachOError::malformed(
                label,
                format!(
                    "segments {} and {} overlap in the file",
                    first.name, second.name
                ),
            ));
        }
    }
    if slice.file_type == FileType::Object {
        return Ok(());
    }
    for segment in &slice.segments {
        let segment_end = segment.file_offset + segment.file_size;
        for section in &segment.sections {
            if section.is_zero_fill() || section.file_offset == 0 || section.size == 0 {
                continue;
            }
            if section.file_offset < segment.file_offset
                || section.file_offset + section.size > segment_end
            {
                return Err(MachOError::malformed(
                    label,
                    format!(
                        "section {},{} lies outside its segment's file range",
                        segment.name, section.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Where the first byte of section data lies: load commands may grow up to it.
fn first_section_offset(slice: &Slice<'_>) -> u64 {
    let sections = slice
        .segments
        .iter()
        .flat_map(|segment| &segment.sections)
        .filter(|section| !section.is_zero_fill() && section.file_offset != 0 && section.size != 0)
        .map(|section| section.file_offset);
    let segments = slice
        .segments
        .iter()
        .filter(|segment| segment.file_offset != 0 && segment.file_size != 0)
        .map(|segment| segment.file_offset);
    sections
        .chain(segments)
        .min()
        .unwrap_or(slice.data.len() as u64)
}
