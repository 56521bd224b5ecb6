//! Imports as dyld binds them: from the bind opcodes of LC_DYLD_INFO or the
//! imports table of LC_DYLD_CHAINED_FIXUPS.
//!
//! The symbol table's library ordinals are only advisory: zig, for one,
//! records ordinal 0 for symbols it binds by flat lookup. What dyld resolves
//! is what these tables say, so a load check reads them when present.

use std::collections::HashSet;

use super::bytes::{c_str_at, le_u32, le_u64, slice_at, u8_at, uleb128_at};
use super::error::MachOError;
use super::facts::{ImportedSymbol, LibraryOrdinal};

const BIND_OPCODE_MASK: u8 = 0xf0;
const BIND_IMMEDIATE_MASK: u8 = 0x0f;
const BIND_SYMBOL_FLAGS_WEAK_IMPORT: u8 = 0x1;

/// Collects the symbols bound by one or more bind opcode streams (regular and lazy).
pub(crate) fn from_bind_opcodes(
    data: &[u8],
    streams: &[(u64, u64)],
    label: &str,
) -> Result<Vec<ImportedSymbol>, MachOError> {
    let mut imports = Vec::new();
    for &(offset, size) in streams {
        let stream = slice_at(data, offset, size).ok_or_else(|| {
            MachOError::malformed(label, "bind opcodes lie past the end of the slice")
        })?;
        read_bind_stream(stream, label, &mut |import| imports.push(import))?;
    }
    Ok(first_of_each_name(imports))
}

fn read_bind_stream(
    stream: &[u8],
    label: &str,
    record: &mut dyn FnMut(ImportedSymbol),
) -> Result<(), MachOError> {
    let bad =
        |at: u64, what: &str| MachOError::malformed(label, format!("bind opcode at {at}: {what}"));
    let uleb = |at: u64| uleb128_at(stream, at).ok_or_else(|| bad(at, "truncated operand"));
    let (mut ordinal, mut name, mut weak) = (LibraryOrdinal::SelfImage, None::<String>, false);
    let mut cursor = 0u64;
    while let Some(byte) = u8_at(stream, cursor) {
        let at = cursor;
        cursor += 1;
        let immediate = byte & BIND_IMMEDIATE_MASK;
        match byte & BIND_OPCODE_MASK {
            // DONE ends a lazy-bind entry, not the stream; SET_TYPE is irrelevant here.
            0x00 | 0x50 => {}
            0x90 | 0xb0 => bind(&name, ordinal, weak, at, &bad, record)?,
            0x10 => ordinal = ordinal_from_unsigned(u64::from(immediate)),
            0x20 => {
                let (value, next) = uleb(cursor)?;
                ordinal = ordinal_from_unsigned(value);
                cursor = next;
            }
            0x30 => {
                ordinal = ordinal_from_signed(if immediate == 0 {
                    0
                } else {
                    i64::from(immediate as i8 | -16)
                })
            }
            0x40 => {
                let symbol =
                    c_str_at(stream, cursor).ok_or_else(|| bad(at, "unterminated symbol name"))?;
                cursor += symbol.len() as u64 + 1;
                weak = immediate & BIND_SYMBOL_FLAGS_WEAK_IMPORT != 0;
                name = Some(symbol);
            }
            0x60 | 0x70 | 0x80 => {
                cursor = skip_leb(stream, cursor).ok_or_else(|| bad(at, "truncated operand"))?
            }
            0xa0 => {
                cursor = skip_leb(stream, cursor).ok_or_else(|| bad(at, "truncated operand"))?;
                bind(&name, ordinal, weak, at, &bad, record)?;
            }
            0xc0 => {
                cursor = skip_leb(stream, cursor).ok_or_else(|| bad(at, "truncated operand"))?;
                cursor = skip_leb(stream, cursor).ok_or_else(|| bad(at, "truncated operand"))?;
                bind(&name, ordinal, weak, at, &bad, record)?;
            }
            // THREADED: SET_BIND_ORDINAL_TABLE_SIZE_ULEB takes an operand, APPLY none.
            0xd0 if immediate == 0 => {
                cursor = skip_leb(stream, cursor).ok_or_else(|| bad(at, "truncated operand"))?
            }
            0xd0 => {}
            _ => return Err(bad(at, &format!("unknown opcode 0x{byte:02x}"))),
        }
    }
    Ok(())
}

fn bind(
    name: &Option<String>,
    library: LibraryOrdinal,
    weak: bool,
    at: u64,
    bad: &dyn Fn(u64, &str) -> MachOError,
    record: &mut dyn FnMut(ImportedSymbol),
) -> Result<(), MachOError> {
    let name = name
        .clone()
        .ok_or_else(|| bad(at, "binds before naming a symbol"))?;
    record(ImportedSymbol {
        name,
        library,
        weak,
    });
    Ok(())
}

/// Skips one LEB128 value (signed or unsigned: same framing).
fn skip_leb(stream: &[u8], mut cursor: u64) -> Option<u64> {
    loop {
        let byte = u8_at(stream, cursor)?;
        cursor += 1;
        if byte & 0x80 == 0 {
            return Some(cursor);
        }
    }
}

fn ordinal_from_unsigned(value: u64) -> LibraryOrdinal {
    match u8::try_from(value) {
        Ok(0) => LibraryOrdinal::SelfImage,
        Ok(index) => LibraryOrdinal::Dylib(index),
        // Two-level namespaces cap ordinals at 255; treat larger ones as an
        // unresolvable library rather than guessing.
        Err(_) => LibraryOrdinal::Dylib(u8::MAX),
    }
}

fn ordinal_from_signed(value: i64) -> LibraryOrdinal {
    match value {
        -1 => LibraryOrdinal::Executable,
        -2 => LibraryOrdinal::DynamicLookup,
        -3 => LibraryOrdinal::WeakLookup,
        value => ordinal_from_unsigned(u64::try_from(value).unwrap_or(u64::MAX)),
    }
}

/// Reads the imports table of LC_DYLD_CHAINED_FIXUPS.
pub(crate) fn from_chained_fixups(
    data: &[u8],
    (offset, size): (u64, u64),
    label: &str,
) -> Result<Vec<ImportedSymbol>, MachOError> {
    let bad = |what: String| MachOError::malformed(label, format!("chained fixups: {what}"));
    let blob =
        slice_at(data, offset, size).ok_or_else(|| bad("lie past the end of the slice".into()))?;
    let field = |at: u64| {
        le_u32(blob, at)
            .map(u64::from)
            .ok_or_else(|| bad("truncated header".into()))
    };
    let (imports_offset, symbols_offset, count, format) =
        (field(8)?, field(12)?, field(16)?, field(20)?);
    if field(24)? != 0 {
        return Err(bad("compressed symbol names are not supported".into()));
    }
    let entry_size = match format {
        1 => 4,
        2 => 8,
        3 => 16,
        other => return Err(bad(format!("unknown imports format {other}"))),
    };
    let symbols = blob
        .get(symbols_offset as usize..)
        .ok_or_else(|| bad("symbol names lie outside the blob".into()))?;
    (0..count)
        .map(|index| {
            let at = imports_offset
                .checked_add(index * entry_size)
                .ok_or_else(|| bad(format!("import {index} lies outside the blob")))?;
            let truncated = || bad(format!("import {index} lies outside the blob"));
            let (raw_ordinal, weak, name_offset) = if format == 3 {
                let value = le_u64(blob, at).ok_or_else(truncated)?;
                (
                    i64::from(value as u16 as i16),
                    value >> 16 & 1 != 0,
                    value >> 32,
                )
            } else {
                let value = le_u32(blob, at).ok_or_else(truncated)?;
                (
                    i64::from(value as u8 as i8),
                    value >> 8 & 1 != 0,
                    u64::from(value >> 9),
                )
            };
            let name = c_str_at(symbols, name_offset)
                .ok_or_else(|| bad(format!("import {index} has no name")))?;
            Ok(ImportedSymbol {
                name,
                library: ordinal_from_signed(raw_ordinal),
                weak,
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(first_of_each_name)
}

/// A symbol bound at several places (or with several addends) is one import.
fn first_of_each_name(imports: Vec<ImportedSymbol>) -> Vec<ImportedSymbol> {
    let mut seen = HashSet::new();
    imports
        .into_iter()
        .filter(|import| seen.insert(import.name.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lazy_bind_stream_yields_each_symbol_with_its_ordinal() {
        // SET_SEGMENT_AND_OFFSET(2, 0), SET_DYLIB_SPECIAL(-2), SET_SYMBOL("_PyLong"), DO_BIND, DONE,
        // SET_SEGMENT_AND_OFFSET(2, 8), SET_DYLIB_ORDINAL(2), SET_SYMBOL weak("_foo"), DO_BIND, DONE
        let mut stream = vec![0x72, 0x00, 0x3e, 0x40];
        stream.extend(b"_PyLong\0");
        stream.extend([0x90, 0x00, 0x72, 0x08, 0x12, 0x41]);
        stream.extend(b"_foo\0");
        stream.extend([0x90, 0x00]);
        let imports = from_bind_opcodes(&stream, &[(0, stream.len() as u64)], "test").unwrap();
        assert_eq!(
            imports,
            [
                ImportedSymbol {
                    name: "_PyLong".into(),
                    library: LibraryOrdinal::DynamicLookup,
                    weak: false
                },
                ImportedSymbol {
                    name: "_foo".into(),
                    library: LibraryOrdinal::Dylib(2),
                    weak: true
                },
            ]
        );
    }

    #[test]
    fn bind_before_a_symbol_name_is_malformed() {
        assert!(from_bind_opcodes(&[0x11, 0x90], &[(0, 2)], "test").is_err());
    }

    #[test]
    fn unknown_bind_opcode_is_malformed() {
        assert!(from_bind_opcodes(&[0xe0], &[(0, 1)], "test").is_err());
    }

    #[test]
    fn chained_fixups_imports_decode_ordinal_weak_flag_and_name() {
        let mut blob = vec![0u8; 28];
        blob[8..12].copy_from_slice(&28u32.to_le_bytes()); // imports_offset
        blob[12..16].copy_from_slice(&36u32.to_le_bytes()); // symbols_offset
        blob[16..20].copy_from_slice(&2u32.to_le_bytes()); // imports_count
        blob[20..24].copy_from_slice(&1u32.to_le_bytes()); // DYLD_CHAINED_IMPORT
        blob.extend((1u32 | 1 << 9).to_le_bytes()); // ordinal 1, name at 1
        blob.extend((0xfeu32 | 1 << 8 | 6 << 9).to_le_bytes()); // flat lookup, weak, name at 6
        blob.extend(b"\0_foo\0_bar\0");
        let imports = from_chained_fixups(&blob, (0, blob.len() as u64), "test").unwrap();
        assert_eq!(
            imports,
            [
                ImportedSymbol {
                    name: "_foo".into(),
                    library: LibraryOrdinal::Dylib(1),
                    weak: false
                },
                ImportedSymbol {
                    name: "_bar".into(),
                    library: LibraryOrdinal::DynamicLookup,
                    weak: true
                },
            ]
        );
    }
}
