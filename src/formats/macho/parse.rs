//! Reading thin and fat Mach-O files into [`MachOFile`]. Every offset and size
//! the file declares is checked before use; a lie becomes a `MachOError`.

use super::binds;
use super::bytes::{be_u32, be_u64, c_str_at, fixed_name, le_u32, le_u64, slice_at};
use super::constants::*;
use super::error::MachOError;
use super::facts::*;
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
struct LinkeditTables {
    symtab: Option<(u64, u64, u64, u64)>,
    export_trie: Option<(u64, u64)>,
    /// Regular and lazy bind opcode streams of LC_DYLD_INFO.
    bind_streams: Vec<(u64, u64)>,
    chained_fixups: Option<(u64, u64)>,
}

/// The `mach_header` fields of one slice, checked against the slice's size.
struct Header {
    arch: Arch,
    is_64_bit: bool,
    file_type: FileType,
    header_flags: u32,
    header_size: u64,
    command_count: u32,
    load_commands_size: u64,
    /// How error messages name the slice.
    label: String,
}

impl Header {
    /// Where the load commands end (and the header padding starts).
    fn commands_end(&self) -> u64 {
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

/// Walks the load commands: each must be aligned, fit in `sizeofcmds`, and
/// decode; together they must fill `sizeofcmds` exactly. Records each one in
/// `slice.load_commands` and returns the symbol tables they point at.
fn read_load_commands(
    slice: &mut Slice<'_>,
    header: &Header,
) -> Result<LinkeditTables, MachOError> {
    let data = slice.data;
    let Header {
        command_count,
        load_commands_size,
        header_size,
        ref label,
        ..
    } = *header;
    let commands_end = header.commands_end();
    let mut tables = LinkeditTables::default();
    let alignment = if header.is_64_bit { 8 } else { 4 };
    let mut cursor = header_size;
    for command_index in 0..command_count {
        let location = |cmd: Option<u32>| match cmd {
            Some(cmd) => format!(
                "{label}, load command {command_index} ({})",
                load_command_name(cmd)
            ),
            None => format!("{label}, load command {command_index}"),
        };
        let (cmd, size) = match (le_u32(data, cursor), le_u32(data, cursor + 4)) {
            (Some(cmd), Some(size)) if cursor + 8 <= commands_end => (cmd, u64::from(size)),
            _ => {
                return Err(MachOError::malformed(
                    location(None),
                    format!(
                        "starts at {cursor}, past the {load_commands_size} bytes sizeofcmds declares for {command_count} commands"
                    ),
                ));
            }
        };
        if size < 8 || size % alignment != 0 {
            return Err(MachOError::malformed(
                location(Some(cmd)),
                format!("cmdsize {size} is not a positive multiple of {alignment}"),
            ));
        }
        if cursor + size > commands_end {
            return Err(MachOError::malformed(
                location(Some(cmd)),
                format!("cmdsize {size} overruns sizeofcmds"),
            ));
        }
        let bytes = slice_at(data, cursor, size).ok_or_else(|| {
            MachOError::malformed(location(Some(cmd)), "lies past the end of the slice")
        })?;
        let command = Command {
            cmd,
            bytes,
            location: &location(Some(cmd)),
            slice_len: data.len() as u64,
        };
        decode_command(slice, &mut tables, &command)?;
        slice.load_commands.push(LoadCommandRef {
            cmd,
            offset: cursor,
            size,
        });
        cursor += size;
    }
    if cursor != commands_end {
        return Err(MachOError::malformed(
            label,
            format!(
                "{command_count} load commands take {} bytes but sizeofcmds says {load_commands_size}",
                cursor - header_size
            ),
        ));
    }
    Ok(tables)
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

/// One load command's bytes, with the checks every decoder needs.
struct Command<'b> {
    cmd: u32,
    bytes: &'b [u8],
    /// How error messages name the command.
    location: &'b str,
    slice_len: u64,
}

impl Command<'_> {
    fn too_small(&self) -> MachOError {
        MachOError::malformed(
            self.location,
            format!("cmdsize {} is too small for its fields", self.bytes.len()),
        )
    }

    /// The 32-bit field at `at`.
    fn word(&self, at: u64) -> Result<u64, MachOError> {
        le_u32(self.bytes, at)
            .map(u64::from)
            .ok_or_else(|| self.too_small())
    }

    /// Checks that `offset + size` (a table the command points at) lies in the slice.
    fn in_slice(&self, offset: u64, size: u64, what: &str) -> Result<(), MachOError> {
        if offset
            .checked_add(size)
            .is_some_and(|end| end <= self.slice_len)
        {
            Ok(())
        } else {
            Err(MachOError::malformed(
                self.location,
                format!("{what} at {offset}+{size} lies past the end of the slice"),
            ))
        }
    }

    /// The (offset, size) pair at `at`, checked to lie in the slice.
    fn range(&self, at: u64, what: &str) -> Result<(u64, u64), MachOError> {
        let (offset, size) = (self.word(at)?, self.word(at + 4)?);
        self.in_slice(offset, size, what)?;
        Ok((offset, size))
    }
}

fn decode_command(
    slice: &mut Slice<'_>,
    tables: &mut LinkeditTables,
    command: &Command<'_>,
) -> Result<(), MachOError> {
    let location = command.location;
    if let Some(kind) = DependencyKind::from_command(command.cmd) {
        slice.dependencies.push(Dependency {
            install_name: lc_str(command.bytes, DYLIB_COMMAND_SIZE, location)?,
            kind,
            current_version: Version::from_packed(command.word(16)? as u32),
            compatibility_version: Version::from_packed(command.word(20)? as u32),
        });
        return Ok(());
    }
    match command.cmd {
        LC_ID_DYLIB => {
            if slice.install_id.is_some() {
                return Err(MachOError::malformed(location, "second LC_ID_DYLIB"));
            }
            slice.install_id = Some(lc_str(command.bytes, DYLIB_COMMAND_SIZE, location)?);
        }
        LC_RPATH => slice
            .rpaths
            .push(lc_str(command.bytes, RPATH_COMMAND_SIZE, location)?),
        LC_BUILD_VERSION | LC_VERSION_MIN_MACOSX => decode_deployment_target(slice, command)?,
        LC_CODE_SIGNATURE => {
            if slice.code_signature.is_some() {
                return Err(MachOError::malformed(location, "second LC_CODE_SIGNATURE"));
            }
            let (offset, size) = command.range(8, "the code signature")?;
            slice.code_signature = Some(CodeSignatureLocation { offset, size });
        }
        LC_SYMTAB
        | LC_DYLD_INFO
        | LC_DYLD_INFO_ONLY
        | LC_DYLD_CHAINED_FIXUPS
        | LC_DYLD_EXPORTS_TRIE => decode_linkedit_command(tables, command)?,
        LC_SEGMENT | LC_SEGMENT_64 => {
            let segment = decode_segment(command.bytes, command.cmd == LC_SEGMENT_64, location)?;
            check_segment_in_slice(&segment, command)?;
            slice.segments.push(segment);
        }
        _ => {}
    }
    Ok(())
}

/// LC_BUILD_VERSION or LC_VERSION_MIN_MACOSX. Zippered binaries carry a
/// macOS and a Mac Catalyst build version; the macOS one decides where the
/// image loads, so it wins over any other.
fn decode_deployment_target(
    slice: &mut Slice<'_>,
    command: &Command<'_>,
) -> Result<(), MachOError> {
    let word = |at: u64| command.word(at);
    if command.cmd == LC_BUILD_VERSION {
        let tools = word(20)?;
        if tools
            .checked_mul(8)
            .and_then(|n| n.checked_add(24))
            .is_none_or(|need| need > command.bytes.len() as u64)
        {
            return Err(command.too_small());
        }
        let target = DeploymentTarget {
            source: DeploymentTargetSource::BuildVersion {
                platform: word(8)? as u32,
            },
            minos: Version::from_packed(word(12)? as u32),
            sdk: Version::from_packed(word(16)? as u32),
        };
        if slice
            .deployment_target
            .is_none_or(|current| !current.is_macos() && target.is_macos())
        {
            slice.deployment_target = Some(target);
        }
    } else {
        let target = DeploymentTarget {
            source: DeploymentTargetSource::VersionMinMacos,
            minos: Version::from_packed(word(8)? as u32),
            sdk: Version::from_packed(word(12)? as u32),
        };
        if slice
            .deployment_target
            .is_none_or(|current| !current.is_macos())
        {
            slice.deployment_target = Some(target);
        }
    }
    Ok(())
}

/// The commands that point into __LINKEDIT at the symbol tables, bind
/// opcodes, export trie and chained fixups.
fn decode_linkedit_command(
    tables: &mut LinkeditTables,
    command: &Command<'_>,
) -> Result<(), MachOError> {
    match command.cmd {
        LC_SYMTAB => {
            if tables.symtab.is_some() {
                return Err(MachOError::malformed(command.location, "second LC_SYMTAB"));
            }
            let word = |at: u64| command.word(at);
            tables.symtab = Some((word(8)?, word(12)?, word(16)?, word(20)?));
        }
        LC_DYLD_INFO | LC_DYLD_INFO_ONLY => {
            for (offset_field, what) in [(16, "the bind opcodes"), (32, "the lazy bind opcodes")] {
                let (offset, size) = command.range(offset_field, what)?;
                if size > 0 {
                    tables.bind_streams.push((offset, size));
                }
            }
            let (offset, size) = command.range(40, "the export trie")?;
            if size > 0 {
                tables.export_trie = Some((offset, size));
            }
        }
        LC_DYLD_CHAINED_FIXUPS => {
            tables.chained_fixups = Some(command.range(8, "the chained fixups")?);
        }
        LC_DYLD_EXPORTS_TRIE => {
            tables.export_trie = Some(command.range(8, "the export trie")?);
        }
        _ => {}
    }
    Ok(())
}

/// A segment's file range, and each of its sections with file contents, lie in the slice.
fn check_segment_in_slice(segment: &Segment, command: &Command<'_>) -> Result<(), MachOError> {
    command.in_slice(
        segment.file_offset,
        segment.file_size,
        "the segment's file range",
    )?;
    for section in &segment.sections {
        if !section.is_zero_fill() && section.file_offset != 0 {
            command.in_slice(
                section.file_offset,
                section.size,
                &format!("section {}", section.name),
            )?;
        }
    }
    Ok(())
}

/// An `lc_str`: a string stored inside its load command at the offset given by
/// the command's third word, which must point past the command's fixed fields.
fn lc_str(bytes: &[u8], fixed_size: u64, location: &str) -> Result<String, MachOError> {
    let offset = le_u32(bytes, 8)
        .map(u64::from)
        .filter(|&offset| offset >= fixed_size && offset < bytes.len() as u64)
        .ok_or_else(|| {
            MachOError::malformed(location, "its string offset points outside the command")
        })?;
    c_str_at(bytes, offset).ok_or_else(|| {
        MachOError::malformed(
            location,
            "its string is not NUL-terminated inside the command",
        )
    })
}

fn decode_segment(bytes: &[u8], wide: bool, location: &str) -> Result<Segment, MachOError> {
    let too_small = || {
        MachOError::malformed(
            location,
            format!("cmdsize {} is too small for its sections", bytes.len()),
        )
    };
    let word = |at: u64| le_u32(bytes, at).map(u64::from).ok_or_else(too_small);
    let address = |at: u64| {
        if wide {
            le_u64(bytes, at).ok_or_else(too_small)
        } else {
            word(at)
        }
    };
    let name = |at: u64| {
        slice_at(bytes, at, 16)
            .map(fixed_name)
            .ok_or_else(too_small)
    };
    let (fields, section_size, step) = if wide {
        (SEGMENT_COMMAND_64_SIZE, SECTION_64_SIZE, 8)
    } else {
        (SEGMENT_COMMAND_32_SIZE, SECTION_32_SIZE, 4)
    };
    let mut segment = Segment {
        name: name(8)?,
        vm_address: address(24)?,
        vm_size: address(24 + step)?,
        file_offset: address(24 + 2 * step)?,
        file_size: address(24 + 3 * step)?,
        sections: Vec::new(),
    };
    let count = word(fields - 8)?;
    if count
        .checked_mul(section_size)
        .and_then(|n| n.checked_add(fields))
        .is_none_or(|need| need > bytes.len() as u64)
    {
        return Err(too_small());
    }
    for index in 0..count {
        let at = fields + index * section_size;
        let after_addresses = at + 32 + 2 * step;
        segment.sections.push(Section {
            name: name(at)?,
            segment_name: name(at + 16)?,
            address: address(at + 32)?,
            size: address(at + 32 + step)?,
            file_offset: word(after_addresses)?,
            flags: word(after_addresses + 16)? as u32,
        });
    }
    Ok(segment)
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
