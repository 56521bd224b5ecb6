//! Inputs the fuzz targets of `fuzz/` found failing, kept as ordinary tests.
//!
//! An input is rebuilt from a fixture by the smallest edit that reproduces the
//! failure where one exists, else inlined as hex; `fuzz/README.md` logs the run
//! that found it.

mod common;

use std::io::Read;

use crosswheel::elf::edit::{ElfEditError, ElfEdits, apply_edits};
use crosswheel::elf::facts::ElfFacts;
use crosswheel::macho::sign_adhoc;

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

/// File offset of the first section of type `wanted` in a little-endian ELF64 file.
fn section_offset(elf: &[u8], wanted: u32) -> usize {
    let read_u64 = |at: usize| u64::from_le_bytes(elf[at..at + 8].try_into().expect("eight bytes"));
    let read_u16 = |at: usize| u16::from_le_bytes(elf[at..at + 2].try_into().expect("two bytes"));
    let (shoff, size, count) = (
        read_u64(0x28) as usize,
        read_u16(0x3a) as usize,
        read_u16(0x3c) as usize,
    );
    (0..count)
        .map(|index| shoff + index * size)
        .find(|&header| {
            u32::from_le_bytes(elf[header + 4..header + 8].try_into().expect("four bytes"))
                == wanted
        })
        .map(|header| read_u64(header + 0x18) as usize)
        .expect("the fixture extension has the section")
}

const SHT_GNU_HASH: u32 = 0x6fff_fff6;

/// Found by `elf_edit` (crash-aaad0f3f...), mutated from the same numpy
/// extension: a `.gnu.hash` header whose bloom filter size is 0. The writer masks
/// each hash with `size - 1` and indexed its (empty) filter at 51,108,723: a panic
/// inside the repair. The loader needs a power of two as well.
#[test]
fn editing_an_elf_whose_gnu_hash_bloom_size_is_not_a_power_of_two_is_refused() {
    for bloom_size in [0u32, 3] {
        let mut elf = small_linux_extension();
        let header = section_offset(&elf, SHT_GNU_HASH);
        elf[header + 8..header + 12].copy_from_slice(&bloom_size.to_le_bytes());

        match apply_edits(&elf, &repair_like_edits()) {
            Err(error @ ElfEditError::MalformedInput(_)) => {
                let message = error.to_string();
                assert!(
                    message.contains(&format!(
                        "bloom filter size {bloom_size} is not a power of two"
                    )),
                    "{message}"
                );
            }
            Err(other) => panic!("expected a malformed-input error, got: {other}"),
            Ok(_) => panic!("the edit of a file with bloom size {bloom_size} succeeded"),
        }
    }
}

/// The same file with a `.gnu.hash` that has no buckets: the writer divides by
/// the bucket count.
#[test]
fn editing_an_elf_whose_gnu_hash_has_no_buckets_is_refused() {
    let mut elf = small_linux_extension();
    let header = section_offset(&elf, SHT_GNU_HASH);
    elf[header..header + 4].copy_from_slice(&0u32.to_le_bytes());
    match apply_edits(&elf, &repair_like_edits()) {
        Err(error @ ElfEditError::MalformedInput(_)) => {
            assert!(
                error.to_string().contains(".gnu.hash table has no buckets"),
                "{error}"
            );
        }
        Err(other) => panic!("expected a malformed-input error, got: {other}"),
        Ok(_) => panic!("the edit of a file whose .gnu.hash has no buckets succeeded"),
    }
}

/// Found by `elf_edit` (crash-f55fb9ca...), mutated from a ppc64le library zig
/// built: its `.comment` section claims an alignment of 2^40. The writer padded
/// the section's file offset to it and reserved a terabyte. Rebuilt here on the
/// numpy extension's last section header (a non-allocated one, like `.comment`).
#[test]
fn editing_an_elf_with_an_absurd_section_alignment_is_refused() {
    let mut elf = small_linux_extension();
    let read_u64 = |elf: &[u8], at: usize| u64::from_le_bytes(elf[at..at + 8].try_into().unwrap());
    let read_u16 = |elf: &[u8], at: usize| u16::from_le_bytes(elf[at..at + 2].try_into().unwrap());
    let (shoff, size, count) = (
        read_u64(&elf, 0x28) as usize,
        read_u16(&elf, 0x3a) as usize,
        read_u16(&elf, 0x3c) as usize,
    );
    let last = shoff + (count - 1) * size;
    elf[last + 0x30..last + 0x38].copy_from_slice(&(1u64 << 40).to_le_bytes());
    match apply_edits(&elf, &repair_like_edits()) {
        Err(error @ ElfEditError::MalformedInput(_)) => {
            assert!(
                error
                    .to_string()
                    .contains("alignment of 1099511627776 bytes"),
                "{error}"
            );
        }
        Err(other) => panic!("expected a malformed-input error, got: {other}"),
        Ok(output) => panic!("the edit succeeded with a {}-byte output", output.len()),
    }
}

/// Found by `elf_edit` (oom-c15ebbdb...), mutated from a 32-bit ARM library zig
/// built: the `.hash` header claims 687,865,860 buckets in a 40-byte section.
/// The writer sized its output table from that count and allocated gigabytes
/// (libFuzzer stopped it at 4 GB; outside the fuzzer the process aborts).
#[test]
fn editing_an_elf_whose_hash_header_lies_about_its_size_is_refused() {
    let elf = decode_hex(HASH_BUCKET_COUNT_LIE);
    assert_eq!(elf.len(), 2908);
    let facts = ElfFacts::parse(&elf).expect("the file reads: only the .hash header lies");
    assert_eq!(facts.needed, ["libc.so.6"]);

    match apply_edits(&elf, &repair_like_edits()) {
        Err(error @ ElfEditError::MalformedInput(_)) => {
            let message = error.to_string();
            assert!(
                message.contains(".hash bucket count 687865860"),
                "{message}"
            );
        }
        Err(other) => panic!("expected a malformed-input error, got: {other}"),
        Ok(_) => panic!("the edit of a file with a lying .hash header succeeded"),
    }
}

/// Found by `elf_edit` (crash-2329df25...), mutated from a big-endian ppc64
/// library zig built: section names that are not UTF-8 sit outside the range
/// goblin validates; the writer packed them into the new `.shstrtab`, and the
/// "successfully" edited file no longer parsed with crosswheel's own reader.
#[test]
fn an_edit_whose_output_crosswheel_cannot_read_back_fails() {
    let elf = decode_hex(SECTION_NAMES_NOT_UTF8);
    assert_eq!(elf.len(), 3040);
    let facts = ElfFacts::parse(&elf).expect("the input reads");
    assert_eq!(facts.soname.as_deref(), Some("libseed.so.1"));

    match apply_edits(&elf, &repair_like_edits()) {
        Err(error @ ElfEditError::Verify(_)) => {
            let message = error.to_string();
            assert!(message.contains("no longer parses"), "{message}");
        }
        Err(other) => panic!("expected a read-back error, got: {other}"),
        Ok(output) => panic!(
            "the edit succeeded; its output reads as {:?}",
            ElfFacts::parse(&output).map(|facts| facts.soname)
        ),
    }
}

fn decode_hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|pair| {
            let pair = std::str::from_utf8(pair).expect("ASCII");
            u8::from_str_radix(pair, 16).expect("hex digits")
        })
        .collect()
}

const HASH_BUCKET_COUNT_LIE: &str = "\
    7f454c460101010000000000000000000300280001000000000000003400000014080000000400053400200008002800\
    150014000600000034000000340000003400000000010000000100000400000004000000010000000000000000000000\
    000000008803000088030000040000000000010001000000880300008803010088030100980200009802000005000000\
    0000010001000000200600002006020020060200c8000000e00900000600000000000100020000002006000020060200\
    20060200b0000000b0000000060000000400000052e57464200600002006020020060200c8000000e009000004000000\
    0100000051e5746400000000000000000000000000000000000000000600000000000000010000703402000034020000\
    3402000028000000280000000400000004000000000000000000000000000000000000000c0000000000000000000000\
    200000001a00000000000000000000001200000001000000880301006000000012000c00000000000200010001000100\
    2100000010000000000000001469690d000002002b000000000000000100000003000000010000001a00000000048000\
    03000000976b3a2804000029040000000000000003000000020000000100000000000000000000000000000000000000\
    00736565645f656e747279006f7074696f6e616c5f686f6f6b007072696e7466006c6962632e736f2e3600474c494243\
    5f322e3400244f524947494e006c6962736565642e736f2e31000000d0060200150100005401010034000000ac010100\
    80849b80b4010100300000007803010080849b808003010001000000e006020016010000e406020016020000419b0181\
    808480c900000000439b0181b0b0c7840000000025660a0051b4f0b296b144b0f9aeb6ad79ac43ab14aaeba8c8a7aaa6\
    92a580a473a36ba268a16aa0709f7b9e8a9d9d9cb59bd19af09913993a9865979396c495f89430946b93a992ea912e91\
    7590be8f0a8f598eaa8dfe8c548cac8b078b648ac48925898988ee875687c0862b86998508857984ec836183d8825082\
    c9814581c280408002ff0efd25fb47f973f7aaf5eaf334f287f0e3ee47edb3eb27eaa3e827e7b2e543e4dce27ae120e0\
    cbde7ddd34dcf1dab3d97bd848d71ad6f1d4cdd3add292d17bd069cf5bce51cd4acc48cb4aca4fc958c864c774c687c5\
    9dc4b7c3d4c2f4c116c13cc065bf90bebebdefbc23bc59bb91baccb90ab94ab88cb7d0b617b660b500482de90db0a0e1\
    028b2ded44009fe5108120f200009fe7000050e30000000a940000eb182b53ec2c009fe500008fe0940000ebc80bb1ee\
    400bb4ee10faf1ee028bbd7c0088bd78480bb0ee028bbdec0048bde8780000ea2c030100c8fefeff00482de90db0a0e1\
    0088bde8d4d4d4d4704c2de910b08de2102b53ec01080fe3ff0f4fe302480fe300c0a0e3ff4f4fe300e0e0e3230a90e0\
    0010cce2040050e00e00d1e04c00003a23eaa0e10305a0e10211a0e37c419fe5220b80e1011041e201001ee3010000e0\
    8315a0e15337e6e704408fe0a21a81e1833084e002018103b030d3e10318a0e1903184e0943185e0033165e2944385e0\
    931183e08510a0e18330a0e1911384e0031164e2931183e08310a0e10235a0e18235a001912384e00020a0e39140a2e0\
    940185e00000a0e39251a0e0001075e20201e0e2945186e0010180e20050a0e39261a5e0941084e0061091e00410b5e0\
    0060ace29210a6e0020051e20010c6e2a004a0e1812b80e1a154a0e1920286e0926526e0926526e0033546e0026090e0\
    a104a3e0001000e3f81f41e38e1981e0a03f92e00040a5e2211aa0e1114adfe7061092e00020a5e0016091e20010a2e2\
    103b44ec012096e1000021100116a0131100de170010a013301b401c200b301e708cbde8400bb5ee10faf1ee00000013\
    f00f47130010231001109211f7ffff0a011052e20000d3e00300003a400b70ee1010c0f2a10b80ee708cbde8050bdfed\
    3300e0e3200b60ee302b53ec23ea90e09fffffea00f020e3000000000000304328fefeff00482de90db0a0e10048bde8\
    88ffffea00000000000000000000000004e02de500e68fe210ea8ee2f0f0bee5d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4\
    00c68fe210ca8ce2d8f0bce5d4d4d4d400c68fe210ca8ce2ccf0bce5d4d4d4d41d000000350000000100000021000000\
    0e0000003d0000001e00000008000000fbffff6f01000000110000002c02000012000000080000001300000008000000\
    170000005c020000020000001000000003000000d4060200140000001100000006000000340100000b00000010000000\
    05000000e00100000a0000004a000000f5feff6f9c01000004000000b8010000f0ffff6f74010000feffff6f7c010000\
    ffffff6f01000000000000000000000000000000000000000000000000000000e0050100e0050100636c616e67207665\
    7273696f6e2032322e312e38004c696e6b65723a204c4c442032322e312e3800413f0000006165616269000135000000\
    43322e303900060a0741080109020a030c010e000f01100111021204140115001703180119011a021c011e0122012601\
    002e64796e73796d002e676e752e76657273696f6e042e676e752e76657273696f6e5f72002e676e752e68617368002e\
    68617368002e64796e737472002e72656c2e64796e002e41524d2e6578696478002e72656c2e706c74002e41524d2e65\
    78746162002e726f64617461002e74657874002e706c74002e64796e616d6963002e676f74002e676f742e706c74002e\
    72656c726f5f70616464696e67002e636f6d6d656e74002e41524d2e61747472696275746573002e7368737472746162\
    000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001000000\
    0b000000020000003401000034010000400000000600000001000000040000001000000009000000ffffff6f02000000\
    7401000074010000080000000100000000000000020000000200000016000000feffff6f020000007c0100007c010000\
    200000000600000001000000040000000000000025000000f6ffff6f020000009c0100009c0100001c00000001000000\
    0000000004000000000000002f0000000500000002000000b8010000b801000028000000010000000000000004000000\
    04000000350000000300000002000000e0010000e00100004a000000000000000000000001000000000000003d000000\
    09000000020000002c0200002c0200000800000001000000000000000400000008000000460000000100007082000000\
    3402000034020000280000000c0000000000000004000000000000005100000009000000420000005c0200005c020000\
    10000000010000001000000004000000080000005a00000001000000020000006c0200006c0200001800000000000000\
    000000000400000000000000650000000100000032000000840200008402000004010000000000000000000002000000\
    000000006d000000010000000600000088030100880300004c0200000000000000000000080000000000000073000000\
    0100000006000000e0050100e00500004000000000000000000000001000000000000000780000000600000003000000\
    2006020020060000b000000006000000000000000400000008000000810000000100000003000000d0060200d0060000\
    0400000000000000000000000400000000000000860000000100000003000000d4060200d40600001400000000000000\
    0000000004000000000000008f0000000800000003000000e8060200e806000018090000000000000000000001000000\
    000000009e000000010000003000000000000000e80600002800000000000000000000000100000001000000a7000000\
    030000700000000000000000100700004000000000000000000000000100000000000000b70000000300000000000000\
    0000000050070000c100000000000000000000000100000000000000\
";

const SECTION_NAMES_NOT_UTF8: &str = "\
    7f454c4602020100000000000000000000030015000000010000000000000000000000000000004000000000000006e0\
    000000020040003800080040001400130000000600000004000000000000004000000000000000400000000000000040\
    00000000000001f800000000000001f80000000000000008000000010000000400000000000000000000000000000000\
    000000000000000000000000000003bc00000000000003bc0000000000010000000000010000000500000000000003c0\
    00000000000103c000000000000103c000000000000000ec00000000000000ec00000000000100000000000100000006\
    00000000000004b000000000000204b000000000000204b000000000000001600000000000000b500000000000010000\
    000000020000000600000000000004b000000000000204b000000000000204b000000000000001500000000000000150\
    00000000000000086474e5520000000400000000000004b000000000000204b000000000000204b00000000000000160\
    0000000000000b5000000000000000016474e55000000004000000000000036c000000000000036c000000000000036c\
    0000000000000014000000000000001400000000000000046474e5510000000600000000000000000000000000000000\
    000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000\
    000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000\
    000000000000000000000000000000000000000c20000000000000000000000000000000000000000000001a12000000\
    00000000000000000000000000000000000000011260000a00000000000103c0000000000000007c0000000100000003\
    000000010000001a000000000080040000000003283a6b97000000040000000400000000000000030000000200000001\
    0000000000000000000000000000000000736565645f656e747279006f7074696f6e616c5f686f6f6b007072696e7466\
    00244f524947494e006c6962632e736f006c6962736565642e736f2e3100000000000000000206080000000100000026\
    000000000000000000000000000206200000000100000015000000000000000000000000000206280000000200000015\
    000000000000000025660a00011b033b000000100000000100010054000000280000001000000000017a520004784101\
    1b0c01000000002000000018000100240000007c00460e709f0211417e410d1fbf010000000000000000000000000000\
    3c4c0002384282407c0802a6fbe1fff0f821ff91f80100807c3f0b78603f0000dbff0068ffe00890e862800828230000\
    4182000c4800004de8410018fc20f8907fe400663c62fffd38637d6848000049e8410018f020f92ccbff006838210070\
    e8010010ebe1fff07c0803a64e8000200000000000000000000000007fe00008f84100183d820000e98c80207d8903a6\
    4e800420f84100183d820000e98c80287d8903a64e8004207c0802a6429f00057d6802a67c0803a67d8b6050380cffcc\
    7800f082e98b002c7d6c5a14e98b0000e96b00087d8903a64e80042000000000000101a04bffffc44bffffc000000000\
    000000000000001d000000000000002100000000000000010000000000000029000000000000000e0000000000000031\
    000000000000001e0000000000000008000000006ffffffb000000000000000100000000000000070000000000000320\
    000000000000000800000000000000180000000000000009000000000000001800000000000000170000000000000338\
    000000000000000200000000000000300000000000000003000000000002061000000000000000140000000000000007\
    00000000000000060000000000000238000000000000000b0000000000000018000000000000000500000000000002e0\
    000000000000000a000000000000003e000000006ffffef5000000000000029800000400000000000000020000000000\
    000320000000000000032000000000000000180000000100000000000000000000000800000000000000180000002b00\
    00000400000000000000420000000000000338000000000000033800002032322e312e38004c696e6b65723a204c4c44\
    2032322e312e3800002e64796e73796d002e676e752e68617368002e68617368002e64796e737472002e72656c61d298\
    796e002e72656c612e706c74002e726f64617461002e65685f6672616d655f686472002e65685f6672616d65002e7465\
    7874002e676c696e6b002e64796e616d6963002e676f74002e746f63002e706c74002e72656c726f5f70616464696e67\
    002e6272616e63685f6c74002e636f6d6d656e74002e7368737472746162000000000000000000000000000000000000\
    000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000\
    000000010000000b00000000000000020000000000000238000000000000023800000000000000600000000400000001\
    00000000000000080000000000000018000000096ffffff6000000000000000200000000000002980000000000000298\
    000000000000002000000001000000000000000000000008000000000000000000000013000000050000000000000002\
    00000000000002b800000000000002b80000000000000028000000010000000000000000000000040000000000000004\
    0000001900000003000000000000000200000000000002e000000000000002e0000000000000003e0000000000000000\
    000000000000000100000000000000000000002100000004000000000000000200000000000003200000000000000320\
    00000000000000180000000100000000000000000000000800000000000000180000002b000000040000000000000042\
    000000000000033800000000000003380000000000000030000000010000000f00000000000000080000000000000018\
    000000350000000100000000000000320000000000000368000000000000036800000000000000040000000000000000\
    000000000000000100000000000000010000003d000000010000000000000002000000000000036c000000000000036c\
    00000000000000140000000000000000000000000000000400000000000000000000004b000000010000000100000000\
    00000000000003800000000000000380000000000000003c000000000000000000000000000000080000000000000000\
    0000005500000001000000000000000600000000000103c000000000000003c000000000000000a80000000000000000\
    000000000000001000000000000000000000005b00000001000000000000000600000000000104680000000000000468\
    000000000000004400000000000000000000000000000004000000000000000000000062000000060000000000000003\
    00000000000204b000000000000004b00000000000000150000000040000000000000000000000080000000000000010\
    0000006b0000000100000000000000030000000000020600000000000000060000000000000000080000000000000000\
    000000000000000800000000000000000000007000000001000000000000000300000000000206080000000000000608\
    000000000000000800000000000000000000000000000008000000000000000000000075000000080000000000000003\
    000000000002061000000000000006100000000000000020000000000000000000000000000000080000000000000000\
    0000007a0000000800000000000000030000000000020630000000000000061000000000000009d00000000000000000\
    000000000000000100000000000000000000008900000008000000000000000300000200000306300000000000000610\
    000000000000100000000000000000000000000000000008000000000000000000000094000000010000000000000030\
    000000000000000000000000000006100000000000000028000000000000000000000000000000010000000000000001\
    0000009d0000000300000000000000000000000000000000000000000000063400000000000000a70000000000000000\
    00000000000000010000000000000000\
";

/// Seen in the first `macho_sign` run: its RSS climbed to 3.5 GB. The signer lays
/// a universal file out again at each slice's alignment from the fat header, and
/// honoured alignments up to 2^30, so a fuzzed header padded a small file to
/// gigabytes. Alignments past 2^16 are now refused.
#[test]
fn signing_a_universal_file_whose_header_asks_for_gigabyte_alignment_is_refused() {
    let wheel = common::fixture("lxml-6.1.3-cp311-cp311-macosx_10_9_universal2.whl");
    let file = std::fs::File::open(wheel).expect("open fixture wheel");
    let mut archive = zip::ZipArchive::new(file).expect("fixture wheel is a zip");
    let mut fat = Vec::new();
    archive
        .by_name("lxml/builder.cpython-311-darwin.so")
        .expect("fixture member")
        .read_to_end(&mut fat)
        .expect("read fixture member");
    assert_eq!(&fat[..4], &[0xca, 0xfe, 0xba, 0xbe], "a universal file");
    sign_adhoc(&fat, "builder.so").expect("the intact file signs");

    // fat_header (8 bytes), then fat_arch { cputype, cpusubtype, offset, size, align }.
    fat[8 + 16..8 + 20].copy_from_slice(&30u32.to_be_bytes());
    match sign_adhoc(&fat, "builder.so") {
        Err(error) => assert!(
            error.to_string().contains("aligns slice 0 to 2^30 bytes"),
            "{error}"
        ),
        Ok(signed) => panic!("signed into {} bytes", signed.len()),
    }
}
