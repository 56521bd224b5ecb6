//! Malformed and lying Mach-O files: each gives one clear error (or an
//! Invalid signature status), never a panic.

use crate::common::macho::*;
use crosswheel::formats::macho::{
    LoadCommandEdit, MachOError, MachOFile, SignatureStatus, edit_load_commands, sign_adhoc,
    verify_signature,
};

// ---- malformed inputs: one clear error, never a panic ----

fn put_u32(bytes: &mut [u8], offset: usize, value: u32) {
    bytes[offset..offset + 4].copy_from_slice(&value.to_le_bytes());
}

fn get_u32(bytes: &[u8], offset: usize) -> u32 {
    u32::from_le_bytes(bytes[offset..offset + 4].try_into().unwrap())
}

/// Offsets of the load commands of a thin 64-bit image, as (cmd, offset).
fn command_offsets(bytes: &[u8]) -> Vec<(u32, usize)> {
    let mut offset = 32;
    (0..get_u32(bytes, 16))
        .map(|_| {
            let entry = (get_u32(bytes, offset), offset);
            offset += get_u32(bytes, offset + 4) as usize;
            entry
        })
        .collect()
}

fn malformed_reason(bytes: &[u8]) -> String {
    match MachOFile::parse(bytes) {
        Err(error @ MachOError::Malformed { .. }) => error.to_string(),
        other => panic!("expected a Malformed error, got {other:?}"),
    }
}

#[test]
#[ignore = "needs zig: scripts/test sets it up"]
fn truncated_files_are_errors() {
    let bytes = &built().libfoo;
    for length in [0, 3, 20, 31, 100, 1000, bytes.len() / 2, bytes.len() - 1] {
        assert!(
            MachOFile::parse(&bytes[..length]).is_err(),
            "truncated at {length}"
        );
    }
}

#[test]
#[ignore = "needs zig: scripts/test sets it up"]
fn sizeofcmds_past_the_end_is_malformed() {
    let mut bytes = built().libfoo.clone();
    let length = bytes.len() as u32;
    put_u32(&mut bytes, 20, length);
    assert!(malformed_reason(&bytes).contains("sizeofcmds"));
}

#[test]
#[ignore = "needs zig: scripts/test sets it up"]
fn zero_and_misaligned_cmdsize_are_malformed() {
    for bad_size in [0, 4, 77] {
        let mut bytes = built().libfoo.clone();
        let (_, first) = command_offsets(&bytes)[0];
        put_u32(&mut bytes, first + 4, bad_size);
        assert!(
            malformed_reason(&bytes).contains(&format!("cmdsize {bad_size}")),
            "cmdsize {bad_size}"
        );
    }
}

#[test]
#[ignore = "needs zig: scripts/test sets it up"]
fn command_overrunning_sizeofcmds_is_malformed() {
    let mut bytes = built().libfoo.clone();
    let (_, last) = *command_offsets(&bytes).last().unwrap();
    let size = get_u32(&bytes, last + 4);
    put_u32(&mut bytes, last + 4, size + 8);
    assert!(malformed_reason(&bytes).contains("overruns sizeofcmds"));
}

#[test]
#[ignore = "needs zig: scripts/test sets it up"]
fn more_commands_than_sizeofcmds_holds_is_malformed() {
    let mut bytes = built().libfoo.clone();
    let count = get_u32(&bytes, 16);
    put_u32(&mut bytes, 16, count + 1);
    assert!(malformed_reason(&bytes).contains("past the"));
}

#[test]
#[ignore = "needs zig: scripts/test sets it up"]
fn string_offset_outside_its_command_is_malformed() {
    let mut bytes = built().libfoo.clone();
    let (_, id) = command_offsets(&bytes)
        .into_iter()
        .find(|(cmd, _)| *cmd == 0xd)
        .unwrap();
    put_u32(&mut bytes, id + 8, 4000);
    assert!(malformed_reason(&bytes).contains("string offset"));
}

#[test]
#[ignore = "needs zig: scripts/test sets it up"]
fn overlapping_segments_are_malformed() {
    let mut bytes = built().libfoo.clone();
    let segments: Vec<usize> = command_offsets(&bytes)
        .into_iter()
        .filter(|(cmd, _)| *cmd == 0x19)
        .map(|(_, offset)| offset)
        .collect();
    // The second segment's fileoff (at +40) moved into __TEXT.
    bytes[segments[1] + 40..segments[1] + 48].copy_from_slice(&64u64.to_le_bytes());
    let reason = malformed_reason(&bytes);
    assert!(
        reason.contains("overlap") || reason.contains("outside"),
        "{reason}"
    );
}

#[test]
#[ignore = "needs zig: scripts/test sets it up"]
fn symbol_table_past_the_end_is_malformed() {
    let mut bytes = built().libfoo.clone();
    let (_, symtab) = command_offsets(&bytes)
        .into_iter()
        .find(|(cmd, _)| *cmd == 0x2)
        .unwrap();
    let near_the_end = bytes.len() as u32 - 4;
    put_u32(&mut bytes, symtab + 8, near_the_end);
    assert!(malformed_reason(&bytes).contains("symbol table"));
}

#[test]
#[ignore = "needs zig: scripts/test sets it up"]
fn code_signature_past_the_end_is_malformed() {
    let mut bytes = built().libfoo.clone();
    let (_, signature) = command_offsets(&bytes)
        .into_iter()
        .find(|(cmd, _)| *cmd == 0x1d)
        .unwrap();
    put_u32(&mut bytes, signature + 12, 1 << 30);
    assert!(malformed_reason(&bytes).contains("code signature"));
}

/// A fat file holding `slices` at 16 KiB boundaries, plus hooks to lie.
fn fat(slices: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0xcafe_babe_u32.to_be_bytes());
    out.extend_from_slice(&(slices.len() as u32).to_be_bytes());
    let mut offset = 16384usize;
    let mut layout = Vec::new();
    for slice in slices {
        out.extend_from_slice(&slice[4..8].iter().rev().copied().collect::<Vec<_>>()); // cputype, big-endian
        out.extend_from_slice(&slice[8..12].iter().rev().copied().collect::<Vec<_>>());
        out.extend_from_slice(&(offset as u32).to_be_bytes());
        out.extend_from_slice(&(slice.len() as u32).to_be_bytes());
        out.extend_from_slice(&14u32.to_be_bytes());
        layout.push(offset);
        offset = (offset + slice.len()).div_ceil(16384) * 16384;
    }
    for (slice, at) in slices.iter().zip(layout) {
        out.resize(at, 0);
        out.extend_from_slice(slice);
    }
    out
}

#[test]
#[ignore = "needs zig: scripts/test sets it up"]
fn well_formed_fat_wrapper_parses_and_verifies() {
    let libfoo = &built().libfoo;
    let file_bytes = fat(&[libfoo]);
    let file = MachOFile::parse(&file_bytes).unwrap();
    assert!(file.is_fat);
    assert_eq!(file.slices[0].offset, 16384);
    assert!(matches!(
        verify_signature(&file.slices[0]),
        SignatureStatus::Valid { .. }
    ));
}

#[test]
#[ignore = "needs zig: scripts/test sets it up"]
fn fat_slice_past_the_end_of_the_file_is_malformed() {
    let libfoo = &built().libfoo;
    let mut bytes = fat(&[libfoo]);
    bytes[20..24].copy_from_slice(&(libfoo.len() as u32 + 1).to_be_bytes());
    assert!(malformed_reason(&bytes).contains("fat slice 0"));
    let mut bytes = fat(&[libfoo]);
    bytes[16..20].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(malformed_reason(&bytes).contains("fat slice 0"));
}

#[test]
#[ignore = "needs zig: scripts/test sets it up"]
fn overlapping_fat_slices_are_malformed() {
    let libfoo = &built().libfoo;
    let mut bytes = fat(&[libfoo, libfoo]);
    let first_offset: [u8; 4] = bytes[16..20].try_into().unwrap();
    bytes[36..40].copy_from_slice(&first_offset);
    assert!(malformed_reason(&bytes).contains("overlap"));
}

#[test]
#[ignore = "needs zig: scripts/test sets it up"]
fn fat_header_with_no_or_absurdly_many_architectures_is_malformed() {
    let libfoo = &built().libfoo;
    let mut bytes = fat(&[libfoo]);
    bytes[4..8].copy_from_slice(&0u32.to_be_bytes());
    assert!(malformed_reason(&bytes).contains("no architectures"));
    bytes[4..8].copy_from_slice(&0x0fff_ffffu32.to_be_bytes());
    assert!(malformed_reason(&bytes).contains("past the end"));
}

#[test]
#[ignore = "needs zig: scripts/test sets it up"]
fn fat_header_lying_about_the_cpu_is_malformed() {
    let libfoo = &built().libfoo;
    let mut bytes = fat(&[libfoo]);
    bytes[8..12].copy_from_slice(&0x0100_0007u32.to_be_bytes());
    assert!(malformed_reason(&bytes).contains("fat header says x86_64"));
}

#[test]
fn non_macho_input_is_not_macho() {
    assert!(matches!(
        MachOFile::parse(b"\x7fELF\x02\x01\x01\0"),
        Err(MachOError::NotMachO { .. })
    ));
    assert!(matches!(
        MachOFile::parse(b""),
        Err(MachOError::NotMachO { .. })
    ));
}

// ---- lying signatures: Invalid, never a panic ----

fn signature_range(bytes: &[u8]) -> (usize, usize) {
    let location = MachOFile::parse(bytes).unwrap().slices[0]
        .code_signature
        .unwrap();
    (location.offset as usize, location.size as usize)
}

fn status_after(edit: impl FnOnce(&mut [u8], usize)) -> SignatureStatus {
    let mut bytes = built().libfoo.clone();
    let (offset, _) = signature_range(&bytes);
    edit(&mut bytes, offset);
    verify_signature(&MachOFile::parse(&bytes).unwrap().slices[0])
}

fn assert_invalid(status: SignatureStatus, expected: &str) {
    match status {
        SignatureStatus::Invalid(reason) => assert!(reason.contains(expected), "{reason}"),
        other => panic!("expected Invalid({expected}…), got {other:?}"),
    }
}

#[test]
#[ignore = "needs zig: scripts/test sets it up"]
fn superblob_lying_about_its_length_is_invalid() {
    assert_invalid(
        status_after(|b, at| b[at + 4..at + 8].copy_from_slice(&u32::MAX.to_be_bytes())),
        "SuperBlob claims",
    );
}

#[test]
#[ignore = "needs zig: scripts/test sets it up"]
fn blob_offset_outside_the_superblob_is_invalid() {
    assert_invalid(
        status_after(|b, at| b[at + 16..at + 20].copy_from_slice(&0xffff_0000u32.to_be_bytes())),
        "outside",
    );
}

#[test]
#[ignore = "needs zig: scripts/test sets it up"]
fn wrong_code_slot_count_is_invalid() {
    let status = status_after(|b, at| {
        let cd = at + u32::from_be_bytes(b[at + 16..at + 20].try_into().unwrap()) as usize;
        let slots = u32::from_be_bytes(b[cd + 28..cd + 32].try_into().unwrap());
        b[cd + 28..cd + 32].copy_from_slice(&(slots + 1).to_be_bytes());
    });
    assert_invalid(status, "code slots");
}

#[test]
#[ignore = "needs zig: scripts/test sets it up"]
fn wrong_code_limit_is_invalid() {
    let status = status_after(|b, at| {
        let cd = at + u32::from_be_bytes(b[at + 16..at + 20].try_into().unwrap()) as usize;
        b[cd + 32..cd + 36].copy_from_slice(&4096u32.to_be_bytes());
    });
    assert_invalid(status, "codeLimit");
}

#[test]
#[ignore = "needs zig: scripts/test sets it up"]
fn hash_offset_outside_the_code_directory_is_invalid() {
    let status = status_after(|b, at| {
        let cd = at + u32::from_be_bytes(b[at + 16..at + 20].try_into().unwrap()) as usize;
        b[cd + 16..cd + 20].copy_from_slice(&0x7fff_fff0u32.to_be_bytes());
    });
    assert_invalid(status, "outside the CodeDirectory");
}

#[test]
#[ignore = "needs zig: scripts/test sets it up"]
fn every_single_byte_corruption_of_the_signature_is_handled() {
    let original = &built().libfoo;
    let (offset, size) = signature_range(original);
    let mut invalid = 0;
    for position in offset..offset + size {
        let mut bytes = original.clone();
        bytes[position] ^= 0xff;
        if let SignatureStatus::Invalid(_) =
            verify_signature(&MachOFile::parse(&bytes).unwrap().slices[0])
        {
            invalid += 1;
        }
    }
    // Spare fields and trailing padding may change without effect; hashes,
    // magics and lengths may not.
    assert!(
        invalid > size / 2,
        "only {invalid} of {size} corruptions detected"
    );
}

#[test]
#[ignore = "needs zig: scripts/test sets it up"]
fn every_single_byte_corruption_of_the_load_commands_is_handled() {
    let original = &built().extension;
    let commands_end = 32 + get_u32(original, 20) as usize;
    for (step, position) in (0..commands_end).enumerate() {
        let mut bytes = original.clone();
        bytes[position] ^= 0xff;
        // Any outcome but a panic is acceptable; what parses must also verify,
        // edit and sign without panicking.
        let Ok(file) = MachOFile::parse(&bytes) else {
            continue;
        };
        for slice in &file.slices {
            let _ = verify_signature(slice);
        }
        let _ = edit_load_commands(
            &bytes,
            &[LoadCommandEdit::AddRpath("@loader_path/x".into())],
        );
        if step % 16 == 0 {
            let _ = sign_adhoc(&bytes, "ext");
        }
    }
}
