//! The load commands of one Mach-O slice: walked in order, each checked to be aligned and
//! to fit, and decoded into the slice's facts (install name, dependencies, rpaths, minos,
//! segments, the signature) and the tables the symbol readers need. Apart from
//! parse.rs, which reads the headers around them, because this is where most of a
//! malformed file's lies are caught.

use super::bytes::{c_str_at, fixed_name, le_u32, le_u64, slice_at};
use super::constants::*;
use super::error::MachOError;
use super::facts::*;
use super::parse::{Header, LinkeditTables};

/// Walks the load commands: each must be aligned, fit in `sizeofcmds`, and
/// decode; together they must fill `sizeofcmds` exactly. Records each one in
/// `slice.load_commands` and returns the symbol tables they point at.
pub(super) fn read_load_commands(
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
