//! Symbol visibility in `ar` archives of ELF relocatable objects: hiding every symbol the
//! objects define, so that a shared object linking the archive statically exports none of
//! them (what `ld --exclude-libs`, which zig's driver does not pass on, does at link time).
//!
//! The edit is one byte per symbol, in place: an archive's layout, its member headers and
//! its symbol index stay as they were, and a hidden symbol still resolves the references of
//! the other objects in the same link. The `ar` walk is written out here (60-byte member
//! headers, GNU/System V and BSD names) because the member offsets are all it needs;
//! goblin's archive reader keys members by name, and archives repeat names.

use goblin::elf::{Elf, section_header, sym};

use super::facts::ElfError;

/// Why an archive could not be edited.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ArchiveError {
    #[error("not an ar archive (the first bytes are not !<arch>)")]
    NotArchive,
    #[error("malformed ar archive: {0}; the file is damaged or truncated")]
    Malformed(String),
    #[error("archive member {member}: {source}")]
    Member { member: String, source: ElfError },
}

/// A copy of `archive` in which every global, weak or unique symbol that one of its ELF
/// objects defines has hidden visibility, and how many symbols changed. Members that are not ELF
/// (the symbol index, the long-name table) are copied as they are.
pub fn hide_archive_definitions(archive: &[u8]) -> Result<(Vec<u8>, usize), ArchiveError> {
    const MAGIC: &[u8] = b"!<arch>\n";
    if !archive.starts_with(MAGIC) {
        return Err(ArchiveError::NotArchive);
    }
    let mut out = archive.to_vec();
    let mut hidden = 0;
    let mut offset = MAGIC.len();
    while offset < archive.len() {
        let header = archive.get(offset..offset + 60).ok_or_else(|| {
            ArchiveError::Malformed(format!("member header at {offset:#x} cut short"))
        })?;
        if &header[58..60] != b"`\n" {
            return Err(ArchiveError::Malformed(format!(
                "member header at {offset:#x} does not end in `\\n"
            )));
        }
        let field = |range: std::ops::Range<usize>| {
            String::from_utf8_lossy(&header[range]).trim().to_string()
        };
        let name = field(0..16);
        let size: usize = field(48..58)
            .parse()
            .map_err(|_| ArchiveError::Malformed(format!("member {name:?} has no decimal size")))?;
        let start = offset + 60;
        let end = start
            .checked_add(size)
            .filter(|end| *end <= archive.len())
            .ok_or_else(|| ArchiveError::Malformed(format!("member {name:?} runs past the end")))?;
        // A BSD name (`#1/<length>`) is stored at the start of the member's data.
        let name_length = name
            .strip_prefix("#1/")
            .and_then(|length| length.parse::<usize>().ok())
            .unwrap_or(0)
            .min(size);
        let object = start + name_length;
        if archive[object..end].starts_with(b"\x7fELF") {
            hidden += hide_object_definitions(&mut out[object..end]).map_err(|source| {
                ArchiveError::Member {
                    member: name.clone(),
                    source,
                }
            })?;
        }
        offset = end + (size & 1);
    }
    Ok((out, hidden))
}

/// Hides, in place, every global, weak or unique symbol `object` (one ELF file) defines in
/// its `.symtab` (GCC makes templates' static data members `STB_GNU_UNIQUE`: libstdc++'s
/// locale facet ids); returns how many changed. Only the visibility bits of `st_other` change:
/// the rest of that byte carries other meaning on some machines (ppc64's local entry
/// point offset).
pub fn hide_object_definitions(object: &mut [u8]) -> Result<usize, ElfError> {
    let (table, entry_size, count, other_at, to_hide) = {
        let elf = Elf::parse(object)?;
        let Some(symtab) = elf
            .section_headers
            .iter()
            .find(|section| section.sh_type == section_header::SHT_SYMTAB)
        else {
            return Ok(0);
        };
        // st_other follows st_name (4 bytes) and st_info (1) in ELF64, and also
        // st_value and st_size (4 bytes each) in ELF32.
        let other_at = if elf.is_64 { 5 } else { 13 };
        let to_hide: Vec<usize> = elf
            .syms
            .iter()
            .enumerate()
            .filter(|(_, symbol)| {
                matches!(
                    symbol.st_bind(),
                    sym::STB_GLOBAL | sym::STB_WEAK | sym::STB_GNU_UNIQUE
                ) && symbol.st_shndx != section_header::SHN_UNDEF as usize
                    && symbol.st_visibility() != sym::STV_HIDDEN
            })
            .map(|(index, _)| index)
            .collect();
        (
            symtab.sh_offset as usize,
            symtab.sh_entsize as usize,
            elf.syms.len(),
            other_at,
            to_hide,
        )
    };
    if entry_size <= other_at {
        return Err(ElfError::Malformed(format!(
            "symbol table entries of {entry_size} bytes"
        )));
    }
    let end = table.saturating_add(entry_size.saturating_mul(count));
    if end > object.len() {
        return Err(ElfError::Malformed("symbol table runs past the end".into()));
    }
    for index in &to_hide {
        let byte = &mut object[table + index * entry_size + other_at];
        *byte = (*byte & !0b11) | sym::STV_HIDDEN;
    }
    Ok(to_hide.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::write::{Object, StandardSection, Symbol, SymbolSection};
    use object::{Architecture, BinaryFormat, Endianness, SymbolFlags, SymbolKind, SymbolScope};

    /// A relocatable object defining `exported` (global, with ppc64's local entry point
    /// offset in `st_other`), `maybe` (weak) and `local_one` (local), and calling
    /// `elsewhere` (undefined).
    fn object_file(architecture: Architecture, endian: Endianness) -> Vec<u8> {
        let mut object = Object::new(BinaryFormat::Elf, architecture, endian);
        let text = object.section_id(StandardSection::Text);
        let offset = object.append_section_data(text, &[0; 16], 4);
        for (name, weak, scope) in [
            ("exported", false, SymbolScope::Dynamic),
            ("maybe", true, SymbolScope::Dynamic),
            ("local_one", false, SymbolScope::Compilation),
        ] {
            object.add_symbol(Symbol {
                name: name.as_bytes().to_vec(),
                value: offset,
                size: 4,
                kind: SymbolKind::Text,
                scope,
                weak,
                section: SymbolSection::Section(text),
                flags: if name == "exported" {
                    SymbolFlags::Elf {
                        st_info: object::elf::SymbolInfo((sym::STB_GLOBAL << 4) | sym::STT_FUNC),
                        st_other: object::elf::SymbolOther(0x60),
                    }
                } else {
                    SymbolFlags::None
                },
            });
        }
        object.add_symbol(Symbol {
            name: b"elsewhere".to_vec(),
            value: 0,
            size: 0,
            kind: SymbolKind::Text,
            scope: SymbolScope::Dynamic,
            weak: false,
            section: SymbolSection::Undefined,
            flags: SymbolFlags::None,
        });
        object.write().unwrap()
    }

    fn member(name: &str, data: &[u8]) -> Vec<u8> {
        let mut bytes = format!(
            "{name:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            0,
            0,
            0,
            644,
            data.len()
        )
        .into_bytes();
        bytes.extend_from_slice(data);
        if data.len() % 2 == 1 {
            bytes.push(b'\n');
        }
        bytes
    }

    fn visibility_of(object: &[u8]) -> Vec<(String, u8, u8)> {
        let elf = Elf::parse(object).unwrap();
        elf.syms
            .iter()
            .filter_map(|symbol| {
                let name = elf.strtab.get_at(symbol.st_name)?.to_string();
                (!name.is_empty()).then(|| (name, symbol.st_visibility(), symbol.st_other & !0b11))
            })
            .collect()
    }

    #[test]
    fn every_symbol_an_archive_defines_becomes_hidden_and_nothing_else_changes() {
        let first = object_file(Architecture::PowerPc64, Endianness::Little);
        let second = object_file(Architecture::S390x, Endianness::Big);
        let mut archive = b"!<arch>\n".to_vec();
        archive.extend(member("/", b"odd"));
        archive.extend(member("a.o/", &first));
        archive.extend(member("#1/4", &[b"b.o\0".as_slice(), &second].concat()));

        let (edited, hidden) = hide_archive_definitions(&archive).unwrap();

        assert_eq!(hidden, 4, "two definitions in each object");
        assert_eq!(edited.len(), archive.len());
        let changed: Vec<usize> = (0..archive.len())
            .filter(|&i| archive[i] != edited[i])
            .collect();
        assert_eq!(changed.len(), 4, "one byte per symbol: {changed:?}");
        let first_at = 8 + 60 + 4 + 60;
        let first_edited = &edited[first_at..first_at + first.len()];
        let second_at = first_at + first.len() + first.len() % 2 + 60 + 4;
        let second_edited = &edited[second_at..second_at + second.len()];
        for object in [first_edited, second_edited] {
            for (name, visibility, _) in visibility_of(object) {
                let expected = match name.as_str() {
                    "exported" | "maybe" => sym::STV_HIDDEN,
                    _ => sym::STV_DEFAULT,
                };
                assert_eq!(visibility, expected, "{name}");
            }
        }
    }

    #[test]
    fn the_other_bits_of_st_other_are_kept() {
        let mut object = object_file(Architecture::PowerPc64, Endianness::Little);
        let before = visibility_of(&object);
        hide_object_definitions(&mut object).unwrap();
        let after = visibility_of(&object);
        assert!(
            after
                .iter()
                .any(|(name, _, high)| name == "exported" && *high == 0x60)
        );
        let high =
            |list: &[(String, u8, u8)]| list.iter().map(|(_, _, high)| *high).collect::<Vec<_>>();
        assert_eq!(high(&before), high(&after));
        assert_eq!(
            hide_object_definitions(&mut object).unwrap(),
            0,
            "hiding twice changes nothing"
        );
    }

    #[test]
    fn what_is_not_an_archive_or_is_cut_short_is_refused() {
        assert_eq!(
            hide_archive_definitions(b"\x7fELF"),
            Err(ArchiveError::NotArchive)
        );
        let mut archive = b"!<arch>\n".to_vec();
        archive.extend(member("a.o/", b"\x7fELF and then nothing"));
        archive.truncate(archive.len() - 4);
        assert!(matches!(
            hide_archive_definitions(&archive),
            Err(ArchiveError::Malformed(message)) if message.contains("runs past the end")
        ));
        let mut archive = b"!<arch>\n".to_vec();
        archive.extend(member("a.o/", b"\x7fELF and then nothing"));
        assert!(matches!(
            hide_archive_definitions(&archive),
            Err(ArchiveError::Member { member, .. }) if member == "a.o/"
        ));
    }
}
