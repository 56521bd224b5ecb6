//! Edits, signing and malformed-input handling on small Mach-O images built
//! with zig, checked against llvm-otool.

mod macho_support;

use std::path::PathBuf;
use std::sync::OnceLock;

use crosswheel::macho::{
    LibraryOrdinal, LoadCommandEdit, MachOError, MachOFile, SignatureStatus, Version,
    edit_load_commands, sign_adhoc, verify_signature,
};
use macho_support::*;

struct Built {
    /// `@rpath/libfoo.dylib`, minos 11.0, max header padding.
    libfoo: Vec<u8>,
    /// Extension linked against libfoo, rpath `@loader_path/../lib`.
    extension: Vec<u8>,
    /// A dylib built for macOS 10.15 (below the arm64 floor).
    old_target: Vec<u8>,
    dir: PathBuf,
}

fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("macho_zig");
        std::fs::create_dir_all(&dir).unwrap();
        let headerpad = "-Wl,-headerpad_max_install_names";
        let libfoo = zig_dylib(
            &dir,
            "libfoo.dylib",
            "int foo_value(void) { return 42; }\n",
            "aarch64-macos.11.0",
            &[headerpad, "-Wl,-install_name,@rpath/libfoo.dylib"],
        );
        let search = format!("-L{}", dir.display());
        let extension = zig_dylib(
            &dir,
            "ext.so",
            "extern int foo_value(void);\nextern void *PyLong_FromLong(long);\n\
             void *PyInit_ext(void) { return PyLong_FromLong(foo_value()); }\n",
            "aarch64-macos.11.0",
            &[
                headerpad,
                &search,
                "-lfoo",
                "-Wl,-rpath,@loader_path/../lib",
            ],
        );
        let old_target = zig_dylib(
            &dir,
            "libold.dylib",
            "int old_value(void) { return 7; }\n",
            "aarch64-macos.10.15",
            &[],
        );
        let read = |path: PathBuf| std::fs::read(path).unwrap();
        Built {
            libfoo: read(libfoo),
            extension: read(extension),
            old_target: read(old_target),
            dir,
        }
    })
}

fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let path = built().dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn valid_adhoc(bytes: &[u8]) -> bool {
    let file = MachOFile::parse(bytes).unwrap();
    file.slices.iter().all(|slice| {
        matches!(
            verify_signature(slice),
            SignatureStatus::Valid { adhoc: true, .. }
        )
    })
}

#[test]
fn zig_outputs_are_linker_signed_and_verify() {
    let built = built();
    for bytes in [&built.libfoo, &built.extension, &built.old_target] {
        let file = MachOFile::parse(bytes).unwrap();
        assert_eq!(
            verify_signature(&file.slices[0]),
            SignatureStatus::Valid {
                adhoc: true,
                linker_signed: true
            }
        );
    }
}

#[test]
fn extension_facts_match_otool_and_imports_bind_to_the_right_library() {
    let bytes = &built().extension;
    let file = MachOFile::parse(bytes).unwrap();
    let slice = &file.slices[0];
    assert_eq!(our_reading(slice), otool_thin(&write("ext-read.so", bytes)));
    assert_eq!(slice.rpaths, ["@loader_path/../lib"]);
    assert_eq!(
        slice.deployment_target.unwrap().minos,
        Version::new(11, 0, 0)
    );

    let library_of = |name: &str| {
        slice
            .imported_symbols
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.library)
    };
    let foo = library_of("_foo_value").expect("_foo_value is imported");
    assert_eq!(
        slice.dependency_for(foo).unwrap().install_name,
        "@rpath/libfoo.dylib"
    );
    assert_eq!(
        library_of("_PyLong_FromLong"),
        Some(LibraryOrdinal::DynamicLookup)
    );
    assert!(
        slice.exported_symbols.iter().any(|s| s == "_PyInit_ext"),
        "{:?}",
        slice.exported_symbols
    );
}

#[test]
fn install_name_and_rpath_edits_then_signing_verify_and_otool_agrees() {
    let edited = edit_load_commands(
        &built().extension,
        &[
            LoadCommandEdit::ChangeDependency {
                from: "@rpath/libfoo.dylib".into(),
                to: "@loader_path/.dylibs/libfoo.dylib".into(),
            },
            LoadCommandEdit::DeleteRpath("@loader_path/../lib".into()),
            LoadCommandEdit::AddRpath("@loader_path/.dylibs".into()),
            LoadCommandEdit::SetInstallId("ext.cpython-311-darwin.so".into()),
        ],
    )
    .unwrap();
    let signed = sign_adhoc(&edited, "ext.cpython-311-darwin.so").unwrap();
    let file = MachOFile::parse(&signed).unwrap();
    assert_eq!(
        verify_signature(&file.slices[0]),
        SignatureStatus::Valid {
            adhoc: true,
            linker_signed: false
        }
    );

    let reading = otool_thin(&write("ext-edited.so", &signed));
    assert_eq!(
        reading.install_id.as_deref(),
        Some("ext.cpython-311-darwin.so")
    );
    assert_eq!(
        reading
            .dependencies
            .iter()
            .map(|(_, name)| name.as_str())
            .collect::<Vec<_>>(),
        [
            "/usr/lib/libSystem.B.dylib",
            "@loader_path/.dylibs/libfoo.dylib"
        ]
    );
    assert_eq!(reading.rpaths, ["@loader_path/.dylibs"]);
    assert_eq!(reading, our_reading(&file.slices[0]));
}

#[test]
fn minos_edit_raises_10_15_to_11_0_and_keeps_the_sdk() {
    let original = &built().old_target;
    let before = otool_thin(&write("old-before.dylib", original));
    assert_eq!(before.minos.as_deref(), Some("10.15"));

    let edited = edit_load_commands(
        original,
        &[LoadCommandEdit::SetMinos(Version::new(11, 0, 0))],
    )
    .unwrap();
    let signed = sign_adhoc(&edited, "libold.dylib").unwrap();
    assert!(valid_adhoc(&signed));
    let after = otool_thin(&write("old-after.dylib", &signed));
    assert_eq!(after.minos.as_deref(), Some("11.0"));
    assert_eq!(after.sdk, before.sdk);
}

#[test]
fn huge_install_name_exhausts_header_padding_with_a_relink_hint() {
    let bytes = &built().libfoo;
    let padding = MachOFile::parse(bytes).unwrap().slices[0].header_padding;
    let name = format!("@rpath/{}.dylib", "x".repeat(padding as usize + 64));
    let error = edit_load_commands(bytes, &[LoadCommandEdit::SetInstallId(name)]).unwrap_err();
    match &error {
        MachOError::HeaderPaddingExhausted {
            needed, available, ..
        } => assert!(needed > available),
        other => panic!("expected HeaderPaddingExhausted, got {other}"),
    }
    assert!(
        error.to_string().contains("-headerpad_max_install_names"),
        "{error}"
    );
}

#[test]
fn a_name_that_exactly_fills_the_padding_fits() {
    let bytes = &built().libfoo;
    let slice = &MachOFile::parse(bytes).unwrap().slices[0];
    let id_command = (24 + "@rpath/libfoo.dylib".len() + 1).div_ceil(8) * 8;
    // The largest 8-byte-aligned command that fits where the old one and the
    // free bytes are, and the longest name that yields it.
    let room = (slice.header_padding as usize + id_command) / 8 * 8;
    let name = "y".repeat(room - 24 - 1);
    let edited = edit_load_commands(bytes, &[LoadCommandEdit::SetInstallId(name.clone())]).unwrap();
    let after = &MachOFile::parse(&edited).unwrap().slices[0];
    assert_eq!(after.install_id.as_deref(), Some(name.as_str()));
    assert_eq!(
        after.header_padding as usize,
        slice.header_padding as usize + id_command - room
    );
    let too_long = edit_load_commands(bytes, &[LoadCommandEdit::SetInstallId(name + "y")]);
    assert!(matches!(
        too_long,
        Err(MachOError::HeaderPaddingExhausted { .. })
    ));
}

#[test]
fn edits_that_find_nothing_or_carry_bad_names_are_errors() {
    let bytes = &built().extension;
    for edit in [
        LoadCommandEdit::DeleteRpath("/nowhere".into()),
        LoadCommandEdit::ChangeDependency {
            from: "/nowhere/libx.dylib".into(),
            to: "@rpath/libx.dylib".into(),
        },
        LoadCommandEdit::AddRpath(String::new()),
        LoadCommandEdit::SetInstallId("a\0b".into()),
    ] {
        let error = edit_load_commands(bytes, std::slice::from_ref(&edit)).unwrap_err();
        assert!(
            matches!(error, MachOError::EditNotApplicable { .. }),
            "{edit:?}: {error}"
        );
    }
}

#[test]
fn adding_an_existing_rpath_does_not_duplicate_it() {
    let edited = edit_load_commands(
        &built().extension,
        &[LoadCommandEdit::AddRpath("@loader_path/../lib".into())],
    )
    .unwrap();
    assert_eq!(
        MachOFile::parse(&edited).unwrap().slices[0].rpaths,
        ["@loader_path/../lib"]
    );
}

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
fn sizeofcmds_past_the_end_is_malformed() {
    let mut bytes = built().libfoo.clone();
    let length = bytes.len() as u32;
    put_u32(&mut bytes, 20, length);
    assert!(malformed_reason(&bytes).contains("sizeofcmds"));
}

#[test]
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
fn command_overrunning_sizeofcmds_is_malformed() {
    let mut bytes = built().libfoo.clone();
    let (_, last) = *command_offsets(&bytes).last().unwrap();
    let size = get_u32(&bytes, last + 4);
    put_u32(&mut bytes, last + 4, size + 8);
    assert!(malformed_reason(&bytes).contains("overruns sizeofcmds"));
}

#[test]
fn more_commands_than_sizeofcmds_holds_is_malformed() {
    let mut bytes = built().libfoo.clone();
    let count = get_u32(&bytes, 16);
    put_u32(&mut bytes, 16, count + 1);
    assert!(malformed_reason(&bytes).contains("past the"));
}

#[test]
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
fn overlapping_fat_slices_are_malformed() {
    let libfoo = &built().libfoo;
    let mut bytes = fat(&[libfoo, libfoo]);
    let first_offset: [u8; 4] = bytes[16..20].try_into().unwrap();
    bytes[36..40].copy_from_slice(&first_offset);
    assert!(malformed_reason(&bytes).contains("overlap"));
}

#[test]
fn fat_header_with_no_or_absurdly_many_architectures_is_malformed() {
    let libfoo = &built().libfoo;
    let mut bytes = fat(&[libfoo]);
    bytes[4..8].copy_from_slice(&0u32.to_be_bytes());
    assert!(malformed_reason(&bytes).contains("no architectures"));
    bytes[4..8].copy_from_slice(&0x0fff_ffffu32.to_be_bytes());
    assert!(malformed_reason(&bytes).contains("past the end"));
}

#[test]
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
fn superblob_lying_about_its_length_is_invalid() {
    assert_invalid(
        status_after(|b, at| b[at + 4..at + 8].copy_from_slice(&u32::MAX.to_be_bytes())),
        "SuperBlob claims",
    );
}

#[test]
fn blob_offset_outside_the_superblob_is_invalid() {
    assert_invalid(
        status_after(|b, at| b[at + 16..at + 20].copy_from_slice(&0xffff_0000u32.to_be_bytes())),
        "outside",
    );
}

#[test]
fn wrong_code_slot_count_is_invalid() {
    let status = status_after(|b, at| {
        let cd = at + u32::from_be_bytes(b[at + 16..at + 20].try_into().unwrap()) as usize;
        let slots = u32::from_be_bytes(b[cd + 28..cd + 32].try_into().unwrap());
        b[cd + 28..cd + 32].copy_from_slice(&(slots + 1).to_be_bytes());
    });
    assert_invalid(status, "code slots");
}

#[test]
fn wrong_code_limit_is_invalid() {
    let status = status_after(|b, at| {
        let cd = at + u32::from_be_bytes(b[at + 16..at + 20].try_into().unwrap()) as usize;
        b[cd + 32..cd + 36].copy_from_slice(&4096u32.to_be_bytes());
    });
    assert_invalid(status, "codeLimit");
}

#[test]
fn hash_offset_outside_the_code_directory_is_invalid() {
    let status = status_after(|b, at| {
        let cd = at + u32::from_be_bytes(b[at + 16..at + 20].try_into().unwrap()) as usize;
        b[cd + 16..cd + 20].copy_from_slice(&0x7fff_fff0u32.to_be_bytes());
    });
    assert_invalid(status, "outside the CodeDirectory");
}

#[test]
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

#[test]
fn signing_a_30_mb_dylib_verifies_and_reports_its_timing() {
    let dir = &built().dir;
    let path = zig_dylib(
        dir,
        "libbig.dylib",
        "const unsigned char big_table[30 * 1024 * 1024] = {1, 2, 3};\n\
         const unsigned char *big(void) { return big_table; }\n",
        "aarch64-macos.11.0",
        &["-Wl,-headerpad_max_install_names"],
    );
    let bytes = std::fs::read(path).unwrap();
    assert!(bytes.len() > 30 * 1024 * 1024, "{} bytes", bytes.len());
    let edited = edit_load_commands(&bytes, &[LoadCommandEdit::AddRpath("@loader_path".into())]).unwrap();

    let started = std::time::Instant::now();
    let signed = sign_adhoc(&edited, "libbig.dylib").unwrap();
    let signing = started.elapsed();
    let started = std::time::Instant::now();
    let file = MachOFile::parse(&signed).unwrap();
    let status = verify_signature(&file.slices[0]);
    let verifying = started.elapsed();
    eprintln!(
        "{:.1} MB dylib: sign_adhoc (including its own verification) {signing:?}, parse + verify {verifying:?}",
        signed.len() as f64 / 1e6
    );
    assert!(matches!(status, SignatureStatus::Valid { adhoc: true, .. }), "{status:?}");
}
