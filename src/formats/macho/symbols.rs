//! Exported and imported symbol names: what a static load check compares
//! between an image and the libraries it binds to.

use std::collections::BTreeSet;

use super::bytes::{c_str_at, le_u16, le_u32, le_u64, slice_at, u8_at, uleb128_at};
use super::constants::*;
use super::error::MachOError;
use super::facts::{ImportedSymbol, LibraryOrdinal};

pub(crate) struct SymbolTables {
    pub(crate) exported: Vec<String>,
    pub(crate) imported: Vec<ImportedSymbol>,
}

/// `symtab` is LC_SYMTAB's (symoff, nsyms, stroff, strsize); `export_trie` is
/// the (offset, size) from LC_DYLD_INFO or LC_DYLD_EXPORTS_TRIE.
pub(crate) fn read(
    data: &[u8],
    symtab: Option<(u64, u64, u64, u64)>,
    export_trie: Option<(u64, u64)>,
    is_64_bit: bool,
    label: &str,
) -> Result<SymbolTables, MachOError> {
    let symbols = match symtab {
        Some(symtab) => symbol_table(data, symtab, is_64_bit, label)?,
        None => Vec::new(),
    };
    let imported = symbols
        .iter()
        .filter(|symbol| symbol.is_import())
        .map(|symbol| ImportedSymbol {
            name: symbol.name.clone(),
            library: LibraryOrdinal::from_raw((symbol.desc >> 8) as u8),
            weak: symbol.desc & N_WEAK_REF != 0,
        })
        .collect();
    let exported = match export_trie {
        Some((offset, size)) => {
            let trie = slice_at(data, offset, size).ok_or_else(|| {
                MachOError::malformed(label, "the export trie lies past the end of the slice")
            })?;
            export_trie_names(trie, label)?
        }
        None => symbols
            .iter()
            .filter(|symbol| symbol.is_export())
            .map(|symbol| symbol.name.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
    };
    Ok(SymbolTables { exported, imported })
}

struct Nlist {
    name: String,
    kind: u8,
    desc: u16,
    value: u64,
}

impl Nlist {
    fn is_import(&self) -> bool {
        // A non-zero value on an undefined symbol marks a common symbol, which
        // only object files carry.
        self.kind & N_STAB == 0
            && self.kind & N_EXT != 0
            && self.kind & N_TYPE == N_UNDF
            && self.value == 0
    }

    fn is_export(&self) -> bool {
        self.kind & N_STAB == 0
            && self.kind & N_EXT != 0
            && self.kind & N_PEXT == 0
            && matches!(self.kind & N_TYPE, N_SECT | N_ABS | N_INDR)
    }
}

fn symbol_table(
    data: &[u8],
    (symbols_offset, count, strings_offset, strings_size): (u64, u64, u64, u64),
    is_64_bit: bool,
    label: &str,
) -> Result<Vec<Nlist>, MachOError> {
    let entry_size: u64 = if is_64_bit { 16 } else { 12 };
    let table = count
        .checked_mul(entry_size)
        .and_then(|size| slice_at(data, symbols_offset, size))
        .ok_or_else(|| MachOError::malformed(label, format!("the symbol table ({count} entries at {symbols_offset}) lies past the end of the slice")))?;
    let strings = slice_at(data, strings_offset, strings_size).ok_or_else(|| {
        MachOError::malformed(label, "the string table lies past the end of the slice")
    })?;

    let mut symbols = Vec::new();
    for (index, entry) in table.chunks_exact(entry_size as usize).enumerate() {
        let bad = |what: &str| MachOError::malformed(label, format!("symbol {index}: {what}"));
        let string_index = le_u32(entry, 0).ok_or_else(|| bad("truncated entry"))?;
        let kind = u8_at(entry, 4).ok_or_else(|| bad("truncated entry"))?;
        let desc = le_u16(entry, 6).ok_or_else(|| bad("truncated entry"))?;
        let value = if is_64_bit {
            le_u64(entry, 8)
        } else {
            le_u32(entry, 8).map(u64::from)
        }
        .ok_or_else(|| bad("truncated entry"))?;
        // Debugging entries (N_STAB) and unnamed symbols say nothing about linkage.
        if kind & N_STAB != 0 || string_index == 0 {
            continue;
        }
        let name = c_str_at(strings, u64::from(string_index)).ok_or_else(|| {
            bad(&format!(
                "name offset {string_index} is outside the string table"
            ))
        })?;
        symbols.push(Nlist {
            name,
            kind,
            desc,
            value,
        });
    }
    Ok(symbols)
}

/// Walks the export trie. Each node is visited at most once, so a trie whose
/// child offsets loop back (or share a node) is reported instead of followed
/// forever.
fn export_trie_names(trie: &[u8], label: &str) -> Result<Vec<String>, MachOError> {
    let bad = |offset: u64, what: &str| {
        MachOError::malformed(label, format!("export trie node at {offset}: {what}"))
    };
    if trie.is_empty() {
        return Ok(Vec::new());
    }
    let mut visited = vec![false; trie.len()];
    let mut names = BTreeSet::new();
    let mut pending: Vec<(u64, Vec<u8>)> = vec![(0, Vec::new())];
    while let Some((node, prefix)) = pending.pop() {
        match visited.get_mut(node as usize) {
            Some(seen) if !*seen => *seen = true,
            Some(_) => {
                return Err(bad(
                    node,
                    "reached twice (the trie has a cycle or shared node)",
                ));
            }
            None => return Err(bad(node, "lies outside the trie")),
        }
        let (terminal_size, after_size) =
            uleb128_at(trie, node).ok_or_else(|| bad(node, "truncated terminal size"))?;
        if terminal_size > 0 {
            names.insert(String::from_utf8_lossy(&prefix).into_owned());
        }
        let children_at = after_size
            .checked_add(terminal_size)
            .ok_or_else(|| bad(node, "terminal size overflows"))?;
        let child_count = u8_at(trie, children_at)
            .ok_or_else(|| bad(node, "children lie past the end of the trie"))?;
        let mut cursor = children_at + 1;
        for _ in 0..child_count {
            let rest = trie
                .get(cursor as usize..)
                .ok_or_else(|| bad(node, "truncated child edge"))?;
            let edge_len = rest
                .iter()
                .position(|&b| b == 0)
                .ok_or_else(|| bad(node, "unterminated child edge"))?;
            let edge = &rest[..edge_len];
            let (child, next) = uleb128_at(trie, cursor + edge_len as u64 + 1)
                .ok_or_else(|| bad(node, "truncated child offset"))?;
            cursor = next;
            let mut name = prefix.clone();
            name.extend_from_slice(edge);
            pending.push((child, name));
        }
    }
    Ok(names.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trie exporting `_a` and `_ab`: root --"_a"--> node(terminal) --"b"--> node(terminal).
    fn two_symbol_trie() -> Vec<u8> {
        let mut trie = vec![0, 1, b'_', b'a', 0, 6]; // root: not terminal, 1 child at 6
        trie.extend([2, 0, 0, 1, b'b', 0, 13]); // node 6: terminal (flags, address), 1 child at 13
        trie.extend([2, 0, 0, 0]); // node 13: terminal, no children
        trie
    }

    #[test]
    fn export_trie_yields_every_terminal_name() {
        let names = export_trie_names(&two_symbol_trie(), "test").unwrap();
        assert_eq!(names, ["_a", "_ab"]);
    }

    #[test]
    fn export_trie_with_a_cycle_is_an_error_not_a_hang() {
        let mut trie = two_symbol_trie();
        // Point node 6's child back at the root.
        trie[12] = 0;
        let error = export_trie_names(&trie, "test").unwrap_err();
        assert!(error.to_string().contains("reached twice"), "{error}");
    }

    #[test]
    fn export_trie_child_outside_the_trie_is_an_error() {
        let mut trie = two_symbol_trie();
        trie[12] = 100;
        assert!(export_trie_names(&trie, "test").is_err());
    }
}
