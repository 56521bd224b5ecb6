//! Edits, signing and malformed-input handling on small Mach-O images built
//! with zig, checked against llvm-otool.

use crate::common::macho::*;
use crosswheel::formats::macho::{
    LibraryOrdinal, LoadCommandEdit, MachOError, MachOFile, SignatureStatus, Version,
    edit_load_commands, sign_adhoc, verify_signature,
};

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
#[ignore = "slow: zig-built Mach-O files"]
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
#[ignore = "slow: zig-built Mach-O files"]
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
#[ignore = "slow: zig-built Mach-O files"]
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
#[ignore = "slow: zig-built Mach-O files"]
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
#[ignore = "slow: zig-built Mach-O files"]
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
#[ignore = "slow: zig-built Mach-O files"]
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
#[ignore = "slow: zig-built Mach-O files"]
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
#[ignore = "slow: zig-built Mach-O files"]
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

#[test]
#[ignore = "slow: zig-built Mach-O files"]
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
    let edited =
        edit_load_commands(&bytes, &[LoadCommandEdit::AddRpath("@loader_path".into())]).unwrap();

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
    assert!(
        matches!(status, SignatureStatus::Valid { adhoc: true, .. }),
        "{status:?}"
    );
}

#[test]
#[ignore = "slow: zig-built Mach-O files"]
fn old_deployment_target_gets_sha1_and_sha256_code_directories_that_both_verify() {
    // macOS before 10.11.4 only knows SHA-1 page hashes, so the signer adds a
    // SHA-1 CodeDirectory first and a SHA-256 one in the alternate slot.
    let edited = edit_load_commands(
        &built().libfoo,
        &[LoadCommandEdit::SetMinos(Version::new(10, 9, 0))],
    )
    .unwrap();
    let signed = sign_adhoc(&edited, "libfoo.dylib").unwrap();
    let file = MachOFile::parse(&signed).unwrap();
    let slice = &file.slices[0];
    assert!(matches!(
        verify_signature(slice),
        SignatureStatus::Valid { adhoc: true, .. }
    ));

    let location = slice.code_signature.unwrap();
    let superblob = &signed[location.offset as usize..(location.offset + location.size) as usize];
    let be = |at: usize| u32::from_be_bytes(superblob[at..at + 4].try_into().unwrap()) as usize;
    let hash_types: Vec<(usize, u8)> = (0..be(8))
        .map(|index| (be(12 + index * 8), be(16 + index * 8)))
        .filter(|&(slot, _)| slot == 0 || slot == 0x1000)
        .map(|(slot, offset)| (slot, superblob[offset + 37]))
        .collect();
    assert_eq!(
        hash_types,
        [(0, 1), (0x1000, 2)],
        "(slot, hash type) of the CodeDirectories"
    );

    // A page corrupted under both hashes is caught.
    let mut corrupted = signed.clone();
    corrupted[location.offset as usize / 2] ^= 0x55;
    let status = verify_signature(&MachOFile::parse(&corrupted).unwrap().slices[0]);
    assert!(matches!(status, SignatureStatus::Invalid(_)), "{status:?}");
}
