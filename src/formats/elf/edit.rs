//! ELF editing: DT_SONAME, DT_NEEDED (renamed with the matching `.gnu.version_r` file
//! names, or removed) and DT_RUNPATH, in process, without patchelf.
//!
//! The file is rewritten through `object::build::elf::Builder`. The builder keeps
//! every allocated section at its file offset, so sections that outgrow their slot
//! are moved to a new `PT_LOAD` segment by [`super::layout`]. Every output is read
//! back and checked ([`check_layout`] plus the edited names) before it is returned.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use object::build::elf::{Builder, Dynamic, SectionData};
use object::build::{ByteString, Id};
use object::elf;
use object::read::elf::{FileHeader, SectionHeader};
use object::{Endian, Endianness, FileKind};

use super::check::DynamicNames;
pub use super::check::check_layout;
use super::facts::ElfFacts;
use super::layout;

/// The edits to apply to one ELF file. Fields left empty leave the file alone.
#[derive(Debug, Default, Clone)]
pub struct ElfEdits {
    /// Set (or add) DT_SONAME.
    pub soname: Option<String>,
    /// Rename DT_NEEDED entries, old name -> new name, together with the
    /// `.gnu.version_r` entries naming the same file (ld.so asserts they match).
    /// Names the file does not need are ignored, so re-applying is a no-op.
    pub replace_needed: BTreeMap<String, String>,
    /// Remove these DT_NEEDED entries (`patchelf --remove-needed`): libpython, which the
    /// interpreter loading the module already provides.
    pub remove_needed: BTreeSet<String>,
    /// Set DT_RUNPATH to these entries joined with ':' and remove DT_RPATH.
    /// An empty list removes both.
    pub runpath: Option<Vec<String>>,
    /// Remove the symbol table, its string table and the debug sections, as `strip -s`
    /// does (`auditwheel repair --strip`); the dynamic symbols the loader reads stay.
    pub strip: bool,
}

/// Why an ELF file could not be edited.
#[derive(Debug, thiserror::Error)]
pub enum ElfEditError {
    #[error("cannot parse ELF file: {0}")]
    Parse(String),
    #[error("malformed ELF file: {0}")]
    MalformedInput(String),
    #[error(
        "ELF file has no dynamic section: only shared libraries and dynamic executables can be edited"
    )]
    NotDynamic,
    #[error("invalid {field} {value:?}: {reason}")]
    InvalidValue {
        field: &'static str,
        value: String,
        reason: &'static str,
    },
    #[error("cannot make room for the grown dynamic sections: {0}")]
    NoRoom(String),
    #[error("cannot write edited ELF file: {0}")]
    Write(String),
    #[error("ELF layout check failed: {0}")]
    Layout(String),
    #[error(
        "edited ELF file does not read back as intended ({0}); this is a crosswheel bug, please report it with the input file"
    )]
    Verify(String),
}

/// Applies `edits` to the ELF file `data` and returns the new file.
///
/// Returns the input bytes unchanged when the file already carries the requested
/// values, so repairing an already repaired wheel rewrites nothing.
pub fn apply_edits(data: &[u8], edits: &ElfEdits) -> Result<Vec<u8>, ElfEditError> {
    validate(edits)?;
    let before = DynamicNames::read(data)?;
    let expected = expected_names(&before, edits);
    let strip = edits.strip && has_strippable_sections(data)?;
    if expected == before && !strip {
        return Ok(data.to_vec());
    }

    // The builder trusts section offsets and sizes (it reserves the output buffer
    // from them), and the relayout trusts that sections sit inside their segments.
    check_layout(data).map_err(|error| match error {
        ElfEditError::Layout(message) => ElfEditError::MalformedInput(message),
        other => other,
    })?;
    let input = RetypedInput::new(data)?;
    let mut builder =
        Builder::read(&*input.data).map_err(|e| ElfEditError::Parse(e.to_string()))?;
    input.restore_types(&mut builder);
    check_hash_table_sizes(&builder, data.len())?;
    check_alignments(&builder, data.len())?;
    edit_dynamic(&mut builder, edits)?;
    if strip {
        strip_symbols(&mut builder);
    }
    layout::make_room(&mut builder)?;

    let mut output = Vec::new();
    builder
        .write(&mut output)
        .map_err(|e| ElfEditError::Write(e.to_string()))?;
    check_layout(&output)?;
    verify(&output, &expected)?;
    if strip && has_strippable_sections(&output)? {
        return Err(ElfEditError::Verify(
            "a symbol table or debug section is still there after stripping".into(),
        ));
    }
    // What crosswheel could read before the edit it must read after it (the
    // builder rewrites tables such as .shstrtab that the checks above skip).
    if ElfFacts::parse(data).is_ok()
        && let Err(error) = ElfFacts::parse(&output)
    {
        return Err(ElfEditError::Verify(format!(
            "the output no longer parses: {error}"
        )));
    }
    Ok(output)
}

/// The builder sizes the output's hash tables from the counts in the input's
/// `.hash`/`.gnu.hash` headers alone; a lying header would make it allocate
/// gigabytes. No genuine table is larger than the file that holds it. It also
/// divides by the bucket counts and masks with the bloom size, so a table present
/// with no buckets, or a bloom size that is not a power of two (which the loader
/// requires too), would make it panic or index out of bounds (found by fuzzing).
fn check_hash_table_sizes(builder: &Builder<'_>, file_len: usize) -> Result<(), ElfEditError> {
    let has =
        |wanted: fn(&SectionData<'_>) -> bool| builder.sections.iter().any(|s| wanted(&s.data));
    let malformed = |detail: String| Err(ElfEditError::MalformedInput(detail));
    if has(|data| matches!(data, SectionData::Hash)) && builder.hash_bucket_count == 0 {
        return malformed("its .hash table has no buckets".into());
    }
    if has(|data| matches!(data, SectionData::GnuHash)) {
        if builder.gnu_hash_bucket_count == 0 {
            return malformed("its .gnu.hash table has no buckets".into());
        }
        if !builder.gnu_hash_bloom_count.is_power_of_two() {
            return malformed(format!(
                "its .gnu.hash bloom filter size {} is not a power of two",
                builder.gnu_hash_bloom_count
            ));
        }
    }
    let words = (file_len / 4) as u64;
    for (what, count) in [
        (".hash bucket count", builder.hash_bucket_count),
        (".gnu.hash bucket count", builder.gnu_hash_bucket_count),
        (".gnu.hash bloom filter size", builder.gnu_hash_bloom_count),
    ] {
        if u64::from(count) > words {
            return Err(ElfEditError::MalformedInput(format!(
                "its {what} {count} is more than the whole file ({file_len} bytes) could hold"
            )));
        }
    }
    Ok(())
}

/// The writer pads each section's file offset to its alignment; an alignment
/// of 2^40 (found by fuzzing elf_edit) made it reserve a terabyte. Genuine
/// alignments stay within a huge page, or at most the file's own size.
fn check_alignments(builder: &Builder<'_>, file_len: usize) -> Result<(), ElfEditError> {
    const HUGE_PAGE: u64 = 2 << 20;
    let limit = HUGE_PAGE.max(file_len as u64);
    let sections = builder.sections.iter().map(|section| {
        (
            format!("section {}", String::from_utf8_lossy(&section.name)),
            section.sh_addralign,
        )
    });
    let segments = builder
        .segments
        .iter()
        .map(|segment| ("a segment".to_string(), segment.p_align));
    for (what, alignment) in sections.chain(segments) {
        if alignment > limit {
            return Err(ElfEditError::MalformedInput(format!(
                "{what} claims an alignment of {alignment} bytes, more than a {file_len}-byte file can need"
            )));
        }
    }
    Ok(())
}

/// The input with its attributes sections retyped as `SHT_PROGBITS`.
///
/// The builder parses attributes sections and rejects malformed ones (the ppc64le
/// libscipy_openblas has one). Nothing here edits them, so their bytes are carried
/// through as opaque data and their type is restored on the builder's section.
struct RetypedInput<'a> {
    data: Cow<'a, [u8]>,
    /// File section index (1-based, as in the section header table) and original
    /// type of each retyped section.
    retyped: Vec<(usize, elf::SectionType)>,
}

impl<'a> RetypedInput<'a> {
    fn new(data: &'a [u8]) -> Result<Self, ElfEditError> {
        match FileKind::parse(data).map_err(|e| ElfEditError::Parse(e.to_string()))? {
            FileKind::Elf32 => Self::retype::<elf::FileHeader32<Endianness>>(data),
            FileKind::Elf64 => Self::retype::<elf::FileHeader64<Endianness>>(data),
            _ => Err(ElfEditError::Parse("not an ELF file".into())),
        }
    }

    fn retype<Elf: FileHeader<Endian = Endianness>>(data: &'a [u8]) -> Result<Self, ElfEditError> {
        let parse_error = |e: object::read::Error| ElfEditError::Parse(e.to_string());
        let header = Elf::parse(data).map_err(parse_error)?;
        let endian = header.endian().map_err(parse_error)?;
        let machine = header.e_machine(endian);
        let sections = header.sections(endian, data).map_err(parse_error)?;
        let retyped: Vec<(usize, elf::SectionType)> = sections
            .enumerate()
            .filter(|(_, section)| {
                !section.sh_flags(endian).contains(elf::SHF_ALLOC)
                    && is_attributes(machine, section.sh_type(endian))
            })
            .map(|(index, section)| (index.0, section.sh_type(endian)))
            .collect();
        if retyped.is_empty() {
            return Ok(Self {
                data: Cow::Borrowed(data),
                retyped,
            });
        }

        let e_shoff: u64 = header.e_shoff(endian).into();
        let entry_size = u64::from(header.e_shentsize(endian));
        let progbits = if endian.is_little_endian() {
            elf::SHT_PROGBITS.0.to_le_bytes()
        } else {
            elf::SHT_PROGBITS.0.to_be_bytes()
        };
        let mut copy = data.to_vec();
        for &(index, _) in &retyped {
            // sh_type is the second 32-bit field of both section header classes.
            let sh_type = (index as u64)
                .checked_mul(entry_size)
                .and_then(|offset| offset.checked_add(e_shoff)?.checked_add(4))
                .and_then(|start| usize::try_from(start).ok())
                .and_then(|start| copy.get_mut(start..start.checked_add(4)?))
                .ok_or_else(|| {
                    ElfEditError::Parse(format!("section header #{index} lies outside the file"))
                })?;
            sh_type.copy_from_slice(&progbits);
        }
        Ok(Self {
            data: Cow::Owned(copy),
            retyped,
        })
    }

    fn restore_types(&self, builder: &mut Builder<'_>) {
        for section in builder.sections.iter_mut() {
            // Builder section ids count from the first section after the null one.
            let file_index = section.id().index() + 1;
            if let Some(&(_, sh_type)) = self.retyped.iter().find(|(index, _)| *index == file_index)
            {
                section.sh_type = sh_type;
            }
        }
    }
}

fn is_attributes(machine: elf::Machine, sh_type: elf::SectionType) -> bool {
    sh_type == elf::SHT_GNU_ATTRIBUTES
        || matches!(
            (machine, sh_type),
            (elf::EM_ARM, elf::SHT_ARM_ATTRIBUTES)
                | (elf::EM_AARCH64, elf::SHT_AARCH64_ATTRIBUTES)
                | (elf::EM_CSKY, elf::SHT_CSKY_ATTRIBUTES)
                | (elf::EM_RISCV, elf::SHT_RISCV_ATTRIBUTES)
        )
}

fn validate(edits: &ElfEdits) -> Result<(), ElfEditError> {
    let check = |field: &'static str, value: &str, allow_colon: bool| {
        let reason = if value.is_empty() {
            Some("must not be empty")
        } else if value.contains('\0') {
            Some("must not contain a NUL byte")
        } else if !allow_colon && value.contains(':') {
            Some("must not contain ':' (it separates runpath entries)")
        } else {
            None
        };
        match reason {
            Some(reason) => Err(ElfEditError::InvalidValue {
                field,
                value: value.to_owned(),
                reason,
            }),
            None => Ok(()),
        }
    };
    if let Some(soname) = &edits.soname {
        check("SONAME", soname, true)?;
    }
    for (old, new) in &edits.replace_needed {
        check("NEEDED name", old, true)?;
        check("NEEDED name", new, true)?;
    }
    for name in &edits.remove_needed {
        check("NEEDED name", name, true)?;
    }
    for entry in edits.runpath.iter().flatten() {
        check("RUNPATH entry", entry, false)?;
    }
    Ok(())
}

/// Whether `name` is a section `strip -s` removes from a linked file: the symbol table,
/// its string table and the debug sections (DWARF, compressed or not).
fn is_strippable(name: &[u8]) -> bool {
    name == b".symtab"
        || name == b".strtab"
        || name.starts_with(b".debug")
        || name.starts_with(b".zdebug")
}

/// Whether the file holds a section [`is_strippable`] names (outside the loaded image).
fn has_strippable_sections(data: &[u8]) -> Result<bool, ElfEditError> {
    let file = object::read::File::parse(data).map_err(|e| ElfEditError::Parse(e.to_string()))?;
    Ok(object::Object::sections(&file).any(|section| {
        object::ObjectSection::name_bytes(&section).is_ok_and(is_strippable)
            && object::ObjectSection::address(&section) == 0
    }))
}

/// Deletes the static symbols and the sections [`is_strippable`] names; the builder then
/// writes neither and renumbers what stays.
fn strip_symbols(builder: &mut Builder<'_>) {
    for symbol in builder.symbols.iter_mut() {
        symbol.delete = true;
    }
    for section in builder.sections.iter_mut() {
        if !section.sh_flags.contains(elf::SHF_ALLOC) && is_strippable(&section.name) {
            section.delete = true;
        }
    }
}

/// The names the file must carry after the edits.
fn expected_names(before: &DynamicNames, edits: &ElfEdits) -> DynamicNames {
    let rename = |name: &Vec<u8>| -> Vec<u8> {
        std::str::from_utf8(name)
            .ok()
            .and_then(|name| edits.replace_needed.get(name))
            .map_or_else(|| name.clone(), |new| new.as_bytes().to_vec())
    };
    let mut expected = before.clone();
    if let Some(soname) = &edits.soname {
        expected.soname = Some(soname.as_bytes().to_vec());
    }
    let kept = |name: &&Vec<u8>| {
        std::str::from_utf8(name).map_or(true, |name| !edits.remove_needed.contains(name))
    };
    expected.needed = before.needed.iter().filter(kept).map(rename).collect();
    expected.verneed_files = before.verneed_files.iter().map(rename).collect();
    if let Some(runpath) = &edits.runpath {
        expected.rpath = None;
        expected.runpath = (!runpath.is_empty()).then(|| runpath.join(":").into_bytes());
    }
    expected
}

/// Rewrites the dynamic entries and version file names held by the builder.
fn edit_dynamic(builder: &mut Builder<'_>, edits: &ElfEdits) -> Result<(), ElfEditError> {
    for file in builder.version_files.iter_mut() {
        if let Some(new) = renamed(&file.name, &edits.replace_needed) {
            file.name = new;
        }
    }
    let dynamics = builder.dynamic_data_mut().ok_or(ElfEditError::NotDynamic)?;
    dynamics.retain(|dynamic| match dynamic {
        Dynamic::String {
            tag: elf::DT_NEEDED,
            val,
        } => std::str::from_utf8(val).map_or(true, |name| !edits.remove_needed.contains(name)),
        _ => true,
    });
    for dynamic in dynamics.iter_mut() {
        if let Dynamic::String {
            tag: elf::DT_NEEDED,
            val,
        } = dynamic
            && let Some(new) = renamed(val, &edits.replace_needed)
        {
            *val = new;
        }
    }
    if let Some(soname) = &edits.soname {
        set_string(dynamics, elf::DT_SONAME, soname.as_bytes());
    }
    if let Some(runpath) = &edits.runpath {
        // DT_RUNPATH takes the place of the first existing search path entry, so the
        // entry order of the file stays as the linker wrote it.
        if let Some(first) = dynamics
            .iter_mut()
            .find(|d| matches!(d.tag(), elf::DT_RPATH | elf::DT_RUNPATH))
        {
            *first = Dynamic::String {
                tag: elf::DT_RUNPATH,
                val: Vec::new().into(),
            };
        }
        dynamics.retain(|d| d.tag() != elf::DT_RPATH);
        if runpath.is_empty() {
            dynamics.retain(|d| d.tag() != elf::DT_RUNPATH);
        } else {
            set_string(dynamics, elf::DT_RUNPATH, runpath.join(":").as_bytes());
        }
    }
    Ok(())
}

fn renamed<'a>(name: &[u8], replace: &BTreeMap<String, String>) -> Option<ByteString<'a>> {
    let name = std::str::from_utf8(name).ok()?;
    replace.get(name).map(|new| new.as_bytes().to_vec().into())
}

/// Sets the (single) string entry `tag`, adding it after the DT_NEEDED/DT_SONAME
/// block when the file has none.
fn set_string(dynamics: &mut Vec<Dynamic<'_>>, tag: elf::DynamicTag, value: &[u8]) {
    let mut entries = dynamics.iter_mut().filter(|d| d.tag() == tag);
    if let Some(first) = entries.next() {
        *first = Dynamic::String {
            tag,
            val: value.to_vec().into(),
        };
        let mut seen = false;
        dynamics.retain(|d| d.tag() != tag || !std::mem::replace(&mut seen, true));
        return;
    }
    let position = dynamics
        .iter()
        .rposition(|d| matches!(d.tag(), elf::DT_NEEDED | elf::DT_SONAME))
        .map_or(0, |index| index + 1);
    dynamics.insert(
        position,
        Dynamic::String {
            tag,
            val: value.to_vec().into(),
        },
    );
}

fn verify(output: &[u8], expected: &DynamicNames) -> Result<(), ElfEditError> {
    let after = DynamicNames::read(output)?;
    // `write` drops version files that no symbol uses; that is not an edit, so the
    // files read back need only be a subset of the expected ones.
    let versions_ok = after
        .verneed_files
        .iter()
        .all(|file| expected.verneed_files.contains(file));
    let entries_ok = (&after.soname, &after.needed, &after.runpath, &after.rpath)
        == (
            &expected.soname,
            &expected.needed,
            &expected.runpath,
            &expected.rpath,
        );
    if !(versions_ok && entries_ok) {
        return Err(ElfEditError::Verify(format!(
            "expected {}, read {}",
            describe(expected),
            describe(&after)
        )));
    }
    Ok(())
}

fn describe(names: &DynamicNames) -> String {
    let show = |v: &Option<Vec<u8>>| {
        v.as_deref().map_or_else(
            || "-".to_owned(),
            |v| String::from_utf8_lossy(v).into_owned(),
        )
    };
    let list = |v: &[Vec<u8>]| {
        v.iter()
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .collect::<Vec<_>>()
            .join(",")
    };
    format!(
        "SONAME={} NEEDED=[{}] RUNPATH={} RPATH={} verneed=[{}]",
        show(&names.soname),
        list(&names.needed),
        show(&names.runpath),
        show(&names.rpath),
        list(&names.verneed_files)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(needed: &[&str], runpath: Option<&str>, rpath: Option<&str>) -> DynamicNames {
        DynamicNames {
            soname: Some(b"libfoo.so".to_vec()),
            needed: needed.iter().map(|n| n.as_bytes().to_vec()).collect(),
            runpath: runpath.map(|r| r.as_bytes().to_vec()),
            rpath: rpath.map(|r| r.as_bytes().to_vec()),
            verneed_files: needed.iter().map(|n| n.as_bytes().to_vec()).collect(),
        }
    }

    fn string(tag: elf::DynamicTag, value: &str) -> Dynamic<'static> {
        Dynamic::String {
            tag,
            val: value.as_bytes().to_vec().into(),
        }
    }

    #[test]
    fn rejects_runpath_entry_containing_a_separator() {
        let edits = ElfEdits {
            runpath: Some(vec!["$ORIGIN:/usr/lib".into()]),
            ..ElfEdits::default()
        };
        assert!(matches!(
            validate(&edits),
            Err(ElfEditError::InvalidValue {
                field: "RUNPATH entry",
                ..
            })
        ));
    }

    #[test]
    fn rejects_empty_soname_and_names_with_nul() {
        let empty = ElfEdits {
            soname: Some(String::new()),
            ..ElfEdits::default()
        };
        let nul = ElfEdits {
            replace_needed: BTreeMap::from([("libz.so.1".into(), "libz\0.so".into())]),
            ..ElfEdits::default()
        };
        assert!(validate(&empty).is_err());
        assert!(validate(&nul).is_err());
    }

    #[test]
    fn expected_names_rename_needed_and_version_files_alike() {
        let before = names(&["libz.so.1", "libc.so.6"], None, None);
        let edits = ElfEdits {
            replace_needed: BTreeMap::from([("libz.so.1".into(), "libz-1234abcd.so.1".into())]),
            ..ElfEdits::default()
        };
        let expected = expected_names(&before, &edits);
        let renamed = vec![b"libz-1234abcd.so.1".to_vec(), b"libc.so.6".to_vec()];
        assert_eq!(expected.needed, renamed);
        assert_eq!(expected.verneed_files, renamed);
    }

    #[test]
    fn expected_names_drop_removed_needed_entries_only() {
        let before = names(&["libpython3.13.so.1.0", "libc.so.6"], None, None);
        let edits = ElfEdits {
            remove_needed: BTreeSet::from(["libpython3.13.so.1.0".into()]),
            ..ElfEdits::default()
        };
        let expected = expected_names(&before, &edits);
        assert_eq!(expected.needed, vec![b"libc.so.6".to_vec()]);
    }

    #[test]
    fn expected_names_replace_rpath_by_runpath_and_empty_runpath_removes_both() {
        let before = names(&[], Some("/old"), Some("/older"));
        let set = ElfEdits {
            runpath: Some(vec!["$ORIGIN".into(), "$ORIGIN/../lib".into()]),
            ..ElfEdits::default()
        };
        let expected = expected_names(&before, &set);
        assert_eq!(
            expected.runpath.as_deref(),
            Some(&b"$ORIGIN:$ORIGIN/../lib"[..])
        );
        assert_eq!(expected.rpath, None);

        let clear = ElfEdits {
            runpath: Some(Vec::new()),
            ..ElfEdits::default()
        };
        let expected = expected_names(&before, &clear);
        assert_eq!((expected.runpath, expected.rpath), (None, None));
    }

    #[test]
    fn edits_already_present_expect_the_same_names() {
        let before = names(&["libm.so.6"], Some("$ORIGIN"), None);
        let edits = ElfEdits {
            soname: Some("libfoo.so".into()),
            replace_needed: BTreeMap::from([("libgone.so".into(), "libnew.so".into())]),
            remove_needed: BTreeSet::from(["libgone.so".into()]),
            runpath: Some(vec!["$ORIGIN".into()]),
            strip: false,
        };
        assert_eq!(expected_names(&before, &edits), before);
    }

    #[test]
    fn set_string_adds_a_missing_entry_after_the_needed_block() {
        let mut dynamics = vec![
            string(elf::DT_NEEDED, "libm.so.6"),
            string(elf::DT_NEEDED, "libc.so.6"),
            Dynamic::Auto {
                tag: elf::DT_STRTAB,
            },
        ];
        set_string(&mut dynamics, elf::DT_SONAME, b"libfoo.so");
        assert_eq!(dynamics[2], string(elf::DT_SONAME, "libfoo.so"));
        assert_eq!(dynamics.len(), 4);
    }

    #[test]
    fn set_string_replaces_the_first_entry_and_drops_duplicates() {
        let mut dynamics = vec![
            string(elf::DT_SONAME, "libold.so"),
            Dynamic::Auto {
                tag: elf::DT_STRTAB,
            },
            string(elf::DT_SONAME, "libolder.so"),
        ];
        set_string(&mut dynamics, elf::DT_SONAME, b"libnew.so");
        assert_eq!(
            dynamics,
            vec![
                string(elf::DT_SONAME, "libnew.so"),
                Dynamic::Auto {
                    tag: elf::DT_STRTAB
                },
            ]
        );
    }

    #[test]
    fn rejects_non_elf_input() {
        let result = apply_edits(b"definitely not an ELF file", &ElfEdits::default());
        assert!(matches!(result, Err(ElfEditError::Parse(_))), "{result:?}");
    }
}
