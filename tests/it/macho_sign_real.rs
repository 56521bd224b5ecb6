//! crosswheel's ad-hoc signer against Apple's: every Mach-O of real macOS
//! wheels (signed by Apple's linker or codesign) is re-signed, and the new
//! CodeDirectories are read back with a parser written here, independently of
//! crosswheel's, and compared with the originals field by field. The page
//! hashes must be Apple's own for every page the re-signing did not touch.

use crate::common::macho::*;
use crosswheel::formats::macho::{MachOFile, SignatureStatus, sign_adhoc, verify_signature};

const WHEELS: &[&str] = &[
    "numpy-2.2.6-cp311-cp311-macosx_11_0_arm64.whl",
    "numpy-2.2.6-cp311-cp311-macosx_14_0_arm64.whl",
    "pillow-13.0.0-cp311-cp311-macosx_11_0_arm64.whl",
    "scipy_openblas32-0.3.30.0.8-py3-none-macosx_11_0_arm64.whl",
    // universal2: fat files with signed arm64 and unsigned x86_64 (10.9) slices
    "lxml-6.1.3-cp311-cp311-macosx_10_9_universal2.whl",
];

const CSMAGIC_EMBEDDED_SIGNATURE: u32 = 0xfade_0cc0;
const CSMAGIC_CODEDIRECTORY: u32 = 0xfade_0c02;

fn be32(data: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(data[at..at + 4].try_into().unwrap())
}

fn le32(data: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(data[at..at + 4].try_into().unwrap())
}

/// One CodeDirectory as `cs_blobs.h` lays it out.
#[derive(Debug)]
struct CodeDirectory {
    flags: u32,
    identifier: String,
    code_limit: u32,
    hash_type: u8,
    page_shift: u8,
    exec_seg_base: u64,
    code_hashes: Vec<Vec<u8>>,
}

/// The CodeDirectories of a thin Mach-O image, read without crosswheel; none
/// for an unsigned image.
fn code_directories(image: &[u8]) -> Vec<CodeDirectory> {
    assert_eq!(le32(image, 0), 0xfeed_facf, "a 64-bit little-endian image");
    let commands = le32(image, 16) as usize;
    let mut at = 32;
    let mut signature = None;
    for _ in 0..commands {
        let (cmd, size) = (le32(image, at), le32(image, at + 4) as usize);
        if cmd == 0x1d {
            signature = Some((le32(image, at + 8) as usize, le32(image, at + 12) as usize));
        }
        at += size;
    }
    let Some((offset, _)) = signature else {
        return Vec::new();
    };
    let blob = &image[offset..];
    assert_eq!(be32(blob, 0), CSMAGIC_EMBEDDED_SIGNATURE);
    (0..be32(blob, 8) as usize)
        .map(|index| be32(blob, 16 + index * 8) as usize)
        .map(|cd_offset| &blob[cd_offset..])
        .filter(|cd| be32(cd, 0) == CSMAGIC_CODEDIRECTORY)
        .map(|cd| {
            let hash_offset = be32(cd, 16) as usize;
            let ident_offset = be32(cd, 20) as usize;
            let code_slots = be32(cd, 28) as usize;
            let hash_size = cd[36] as usize;
            let identifier_end = cd[ident_offset..].iter().position(|&b| b == 0).unwrap();
            CodeDirectory {
                flags: be32(cd, 12),
                identifier: String::from_utf8(
                    cd[ident_offset..ident_offset + identifier_end].to_vec(),
                )
                .unwrap(),
                code_limit: be32(cd, 32),
                hash_type: cd[37],
                page_shift: cd[39],
                exec_seg_base: if be32(cd, 8) >= 0x20400 {
                    u64::from_be_bytes(cd[64..72].try_into().unwrap())
                } else {
                    0
                },
                code_hashes: (0..code_slots)
                    .map(|slot| {
                        cd[hash_offset + slot * hash_size..hash_offset + (slot + 1) * hash_size]
                            .to_vec()
                    })
                    .collect(),
            }
        })
        .collect()
}

/// The images of a thin or universal file.
fn images(file: &[u8]) -> Vec<&[u8]> {
    MachOFile::parse(file)
        .unwrap()
        .slices
        .iter()
        .map(|slice| slice.bytes())
        .collect()
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn re_signing_apple_signed_binaries_reproduces_apples_page_hashes() {
    let mut images_compared = 0;
    let mut sha1_directories = 0;
    let mut unsigned_images_signed = 0;
    for wheel in WHEELS {
        for (member, original) in wheel_binaries(&fixture(wheel)) {
            let original_images = images(&original);
            let file_name = member.rsplit('/').next().unwrap().to_string();
            let identifier = code_directories(original_images[0])
                .first()
                .map_or(file_name, |cd| cd.identifier.clone());
            let signed = sign_adhoc(&original, &identifier)
                .unwrap_or_else(|e| panic!("{wheel}/{member}: {e}"));
            let signed_file = MachOFile::parse(&signed).unwrap();
            for slice in &signed_file.slices {
                assert!(
                    matches!(
                        verify_signature(slice),
                        SignatureStatus::Valid { adhoc: true, .. }
                    ),
                    "{member} {}",
                    slice.arch
                );
            }
            let signed_images = images(&signed);
            assert_eq!(original_images.len(), signed_images.len());
            for (before, after) in original_images.iter().zip(&signed_images) {
                let apple = code_directories(before);
                let ours = code_directories(after);
                if apple.is_empty() {
                    // Unsigned before (x86_64 slices need not be signed): signed now,
                    // with SHA-1 too for the old deployment targets universal2 slices have.
                    assert!(
                        ours.iter().any(|cd| cd.hash_type == 2),
                        "{member}: a SHA-256 CodeDirectory"
                    );
                    unsigned_images_signed += 1;
                    continue;
                }
                let kinds =
                    |cds: &[CodeDirectory]| cds.iter().map(|cd| cd.hash_type).collect::<Vec<_>>();
                assert_eq!(
                    kinds(&ours),
                    kinds(&apple),
                    "{member}: hash types of the CodeDirectories"
                );
                for (apple, ours) in apple.iter().zip(&ours) {
                    let context = format!("{wheel}/{member} hash type {}", apple.hash_type);
                    assert_eq!(ours.identifier, apple.identifier, "{context}");
                    assert_eq!(
                        ours.code_limit, apple.code_limit,
                        "{context}: the signature stays where it was"
                    );
                    assert_eq!(ours.page_shift, apple.page_shift, "{context}");
                    assert_eq!(ours.exec_seg_base, apple.exec_seg_base, "{context}");
                    assert_eq!(ours.code_hashes.len(), apple.code_hashes.len(), "{context}");
                    assert_ne!(ours.flags & 0x2, 0, "{context}: ad hoc");
                    assert_eq!(
                        ours.flags & 0x2_0000,
                        0,
                        "{context}: no longer linker-signed"
                    );
                    // Page 0 holds LC_CODE_SIGNATURE's size and __LINKEDIT's, which
                    // follow the new signature's length; every other page is
                    // untouched and must hash as Apple hashed it.
                    assert_eq!(ours.code_hashes[1..], apple.code_hashes[1..], "{context}");
                    if apple.hash_type == 1 {
                        sha1_directories += 1;
                    }
                }
                images_compared += 1;
            }
        }
    }
    assert!(
        images_compared > 40,
        "only {images_compared} images compared"
    );
    assert!(
        unsigned_images_signed > 0,
        "no unsigned image among the fixtures"
    );
    eprintln!(
        "{images_compared} images compared with Apple's signatures ({sha1_directories} SHA-1 directories), \
         {unsigned_images_signed} unsigned ones signed"
    );
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn signing_is_deterministic_and_idempotent() {
    for (member, original) in wheel_binaries(&fixture(WHEELS[0])).into_iter().take(5) {
        let once = sign_adhoc(&original, "x").unwrap();
        assert_eq!(once, sign_adhoc(&original, "x").unwrap(), "{member}");
        assert_eq!(
            once,
            sign_adhoc(&once, "x").unwrap(),
            "{member}: signing a signed file changes nothing"
        );
    }
}
