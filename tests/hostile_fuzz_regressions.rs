//! Inputs the fuzz targets of `fuzz/` found failing, kept as ordinary tests.
//!
//! Each input is rebuilt here from a fixture by the smallest edit that
//! reproduces the failure, rather than committed as a blob; `fuzz/README.md`
//! logs the run that found it.

mod common;

use std::io::Read;

use crosswheel::elf::edit::{ElfEditError, ElfEdits, apply_edits};
use crosswheel::elf::facts::ElfFacts;

const NUMPY_LINUX: &str =
    "numpy-2.2.6-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl";
const SMALL_LINUX_EXTENSION: &str =
    "numpy/_core/_operand_flag_tests.cpython-311-aarch64-linux-gnu.so";
const PT_DYNAMIC: u32 = 2;

fn small_linux_extension() -> Vec<u8> {
    let file = std::fs::File::open(common::fixture(NUMPY_LINUX)).expect("open fixture wheel");
    let mut archive = zip::ZipArchive::new(file).expect("fixture wheel is a zip");
    let mut entry = archive
        .by_name(SMALL_LINUX_EXTENSION)
        .expect("fixture member");
    let mut bytes = Vec::new();
    entry.read_to_end(&mut bytes).expect("read fixture member");
    bytes
}

/// File offset of the dynamic section of a little-endian ELF64 file.
fn dynamic_offset(elf: &[u8]) -> usize {
    let read_u64 = |at: usize| u64::from_le_bytes(elf[at..at + 8].try_into().expect("eight bytes"));
    let read_u16 = |at: usize| u16::from_le_bytes(elf[at..at + 2].try_into().expect("two bytes"));
    let (phoff, size, count) = (
        read_u64(0x20) as usize,
        read_u16(0x36) as usize,
        read_u16(0x38) as usize,
    );
    (0..count)
        .map(|index| phoff + index * size)
        .find(|&header| {
            u32::from_le_bytes(elf[header..header + 4].try_into().expect("four bytes"))
                == PT_DYNAMIC
        })
        .map(|header| read_u64(header + 8) as usize)
        .expect("the fixture extension has a PT_DYNAMIC")
}

/// The edits `fuzz/fuzz_targets/elf_edit.rs` applies.
fn repair_like_edits() -> ElfEdits {
    ElfEdits {
        soname: Some("libfuzzed-0123abcd.so.1".to_string()),
        runpath: Some(vec!["$ORIGIN/../fuzzed.libs".to_string()]),
        ..ElfEdits::default()
    }
}

/// Found by `elf_edit` (crash-e5822ea9...): a dynamic section whose first entry
/// is DT_NULL hides DT_STRTAB and DT_STRSZ. The editor resolved names through
/// the section headers, added DT_SONAME and DT_RUNPATH, and returned a file in
/// which the loader (and goblin) could not find those names.
#[test]
fn editing_an_elf_whose_dynamic_section_hides_its_string_table_is_refused() {
    let mut elf = small_linux_extension();
    let dynamic = dynamic_offset(&elf);
    elf[dynamic..dynamic + 8].copy_from_slice(&0u64.to_le_bytes());
    ElfFacts::parse(&elf).expect("the damaged file still reads: it just names nothing");

    match apply_edits(&elf, &repair_like_edits()) {
        Err(error @ ElfEditError::MalformedInput(_)) => {
            let message = error.to_string();
            assert!(message.contains("DT_STRTAB"), "{message}");
        }
        Err(other) => panic!("expected a malformed-input error, got: {other}"),
        Ok(output) => panic!(
            "the edit succeeded; its output reads as {:?}",
            ElfFacts::parse(&output).map(|facts| facts.soname)
        ),
    }
}

#[test]
fn the_undamaged_extension_edits_and_reads_back() {
    // Guards the test above: the same edits on the intact file work.
    let output =
        apply_edits(&small_linux_extension(), &repair_like_edits()).expect("edit the intact file");
    let facts = ElfFacts::parse(&output).expect("the edited file reads");
    assert_eq!(facts.soname.as_deref(), Some("libfuzzed-0123abcd.so.1"));
    assert_eq!(facts.runpath, ["$ORIGIN/../fuzzed.libs"]);
}
