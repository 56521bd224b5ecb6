//! Mach-O facts, signatures, edits and signing on binaries from real macOS
//! wheels, checked against LLVM's own readers.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::Instant;

use crate::common::macho::*;
use crosswheel::formats::macho::{
    Arch, LibraryOrdinal, LoadCommandEdit, MachOError, MachOFile, SignatureStatus,
    edit_load_commands, sign_adhoc, verify_signature,
};

const NUMPY: &str = "numpy-2.2.6-cp311-cp311-macosx_11_0_arm64.whl";
const NUMPY_ACCELERATE: &str = "numpy-2.2.6-cp311-cp311-macosx_14_0_arm64.whl";
const OPENBLAS_GFORTRAN: &str = "scipy_openblas32-0.3.30.0.8-py3-none-macosx_11_0_arm64.whl";
const OPENBLAS_STATIC: &str = "scipy_openblas32-0.3.34.481.3-py3-none-macosx_11_0_arm64.whl";
const PILLOW: &str = "pillow-13.0.0-cp311-cp311-macosx_11_0_arm64.whl";
const LXML_UNIVERSAL: &str = "lxml-6.1.3-cp311-cp311-macosx_10_9_universal2.whl";
const ALL_WHEELS: &[&str] = &[
    NUMPY,
    NUMPY_ACCELERATE,
    OPENBLAS_GFORTRAN,
    OPENBLAS_STATIC,
    PILLOW,
    LXML_UNIVERSAL,
];

fn write_temp(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = dir.path().join(name.replace('/', "_"));
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
#[ignore = "needs the fixture cache and llvm: scripts/test sets them up"]
fn facts_agree_with_llvm_otool_for_every_binary_of_the_macos_fixture_wheels() {
    let dir = tempfile::tempdir().unwrap();
    let mut slices_checked = 0;
    for wheel in ALL_WHEELS {
        for (member, bytes) in wheel_binaries(&fixture(wheel)) {
            let path = write_temp(&dir, &member, &bytes);
            let file = MachOFile::parse(&bytes).unwrap_or_else(|e| panic!("{wheel}/{member}: {e}"));
            let ours: BTreeMap<String, OtoolReading> = file
                .slices
                .iter()
                .map(|slice| (slice.arch.to_string(), our_reading(slice)))
                .collect();
            assert_eq!(ours, otool_slices(&path), "{wheel}/{member}");
            slices_checked += ours.len();
        }
    }
    assert!(slices_checked > 50, "only {slices_checked} slices checked");
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn universal2_wheel_binaries_have_an_x86_64_and_an_arm64_slice() {
    for (member, bytes) in wheel_binaries(&fixture(LXML_UNIVERSAL)) {
        let file = MachOFile::parse(&bytes).unwrap();
        assert!(file.is_fat, "{member}");
        let archs: Vec<Arch> = file.slices.iter().map(|slice| slice.arch).collect();
        assert_eq!(archs, [Arch::X86_64, Arch::Arm64], "{member}");
    }
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn vendored_openblas_records_gfortran_dependency_and_gcc_rpaths() {
    let bytes = wheel_member(
        OPENBLAS_GFORTRAN,
        "scipy_openblas32/lib/libscipy_openblas.dylib",
    );
    let file = MachOFile::parse(&bytes).unwrap();
    let slice = &file.slices[0];
    assert_eq!(
        slice.install_id.as_deref(),
        Some("@rpath/libscipy_openblas.dylib")
    );
    assert!(
        slice
            .dependencies
            .iter()
            .any(|d| d.install_name == "@loader_path/../.dylibs/libgfortran.5.dylib"),
        "{:?}",
        slice.dependencies
    );
    assert!(slice.header_padding > 0);
}

#[test]
#[ignore = "needs the fixture cache and llvm: scripts/test sets them up"]
fn imports_and_exports_agree_with_llvm_nm_and_objdump() {
    let dir = tempfile::tempdir().unwrap();
    for (wheel, member) in [
        (
            OPENBLAS_GFORTRAN,
            "scipy_openblas32/.dylibs/libgfortran.5.dylib",
        ),
        (
            OPENBLAS_GFORTRAN,
            "scipy_openblas32/lib/libscipy_openblas.dylib",
        ),
        (PILLOW, "PIL/_imaging.cpython-311-darwin.so"),
    ] {
        let bytes = wheel_member(wheel, member);
        let path = write_temp(&dir, member, &bytes);
        let file = MachOFile::parse(&bytes).unwrap();
        let slice = &file.slices[0];

        // llvm-nm names a library by a prefix of its file name ("libSystem",
        // "libz.1.3.1.zlib-ng"), so compare names exactly and libraries by prefix.
        let ours: BTreeMap<String, String> = slice
            .imported_symbols
            .iter()
            .map(|symbol| {
                let from = match symbol.library {
                    LibraryOrdinal::DynamicLookup => "dynamically looked up".to_string(),
                    ordinal => file_name(
                        &slice
                            .dependency_for(ordinal)
                            .expect("ordinal in range")
                            .install_name,
                    ),
                };
                (symbol.name.clone(), from)
            })
            .collect();
        let nm = run(Command::new(llvm_tool("llvm-nm"))
            .arg("-m")
            .arg("--undefined-only")
            .arg(&path));
        let theirs: BTreeMap<String, String> = nm.lines().filter_map(parse_nm_import).collect();
        assert!(!ours.is_empty(), "{member}");
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            theirs.keys().collect::<Vec<_>>(),
            "{member}"
        );
        for (symbol, library) in &theirs {
            assert!(
                ours[symbol].starts_with(library.as_str()),
                "{member}: {symbol} from {} vs {library}",
                ours[symbol]
            );
        }

        let trie = run(Command::new(llvm_tool("llvm-objdump"))
            .args(["--macho", "--exports-trie"])
            .arg(&path));
        let exported: BTreeSet<String> = trie
            .lines()
            .filter(|line| line.starts_with("0x") || line.starts_with("[re-export]"))
            .filter_map(|line| line.split_whitespace().nth(1).map(str::to_string))
            .collect();
        let ours: BTreeSet<String> = slice.exported_symbols.iter().cloned().collect();
        assert!(!ours.is_empty(), "{member}");
        assert_eq!(ours, exported, "{member}");
    }
}

/// `(undefined) external _foo (from libSystem)` → (`_foo`, `libSystem`).
fn parse_nm_import(line: &str) -> Option<(String, String)> {
    let rest = line.trim_start().strip_prefix("(undefined) ")?;
    let rest = rest
        .strip_prefix("weak ")
        .unwrap_or(rest)
        .strip_prefix("external ")?;
    let (name, from) = rest.split_once(" (")?;
    let from = from.trim_end_matches(')').trim_start_matches("from ");
    Some((name.to_string(), from.to_string()))
}

fn file_name(install_name: &str) -> String {
    install_name
        .rsplit('/')
        .next()
        .unwrap_or(install_name)
        .to_string()
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn original_signatures_of_every_fixture_binary_verify() {
    let mut verified = 0;
    for wheel in ALL_WHEELS {
        for (member, bytes) in wheel_binaries(&fixture(wheel)) {
            for slice in MachOFile::parse(&bytes).unwrap().slices {
                match (verify_signature(&slice), slice.arch) {
                    (SignatureStatus::Valid { .. }, _) => verified += 1,
                    // Intel Macs load unsigned images; universal2 wheels ship them.
                    (SignatureStatus::Missing, Arch::X86_64) => {}
                    (other, arch) => panic!("{wheel}/{member} ({arch}): {other:?}"),
                }
            }
        }
    }
    assert!(verified > 50, "only {verified} signatures verified");
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn corrupting_one_byte_of_code_invalidates_only_that_slice() {
    let (member, mut bytes) = wheel_binaries(&fixture(LXML_UNIVERSAL)).swap_remove(0);
    let file = MachOFile::parse(&bytes).unwrap();
    assert_eq!(file.slices[0].arch, Arch::X86_64);
    let arm64 = file
        .slices
        .iter()
        .find(|slice| slice.arch == Arch::Arm64)
        .unwrap();
    let text = arm64
        .segment("__TEXT")
        .unwrap()
        .sections
        .iter()
        .find(|s| s.name == "__text")
        .unwrap();
    let target = (arm64.offset + text.file_offset + text.size / 2) as usize;
    let x86_64_before = verify_signature(&file.slices[0]);
    bytes[target] ^= 0x01;

    let file = MachOFile::parse(&bytes).unwrap();
    for slice in &file.slices {
        let status = verify_signature(slice);
        match slice.arch {
            Arch::Arm64 => {
                assert!(
                    matches!(&status, SignatureStatus::Invalid(reason) if reason.contains("page")),
                    "{member}: {status:?}"
                )
            }
            _ => assert_eq!(status, x86_64_before, "{member}"),
        }
    }
}

#[test]
#[ignore = "needs the fixture cache and llvm: scripts/test sets them up"]
fn repairing_vendored_openblas_then_signing_verifies_and_otool_reads_the_edits() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = wheel_member(
        OPENBLAS_GFORTRAN,
        "scipy_openblas32/lib/libscipy_openblas.dylib",
    );
    let edits = [
        LoadCommandEdit::SetInstallId("@rpath/libscipy_openblas.crosswheel.dylib".into()),
        LoadCommandEdit::ChangeDependency {
            from: "@loader_path/../.dylibs/libgfortran.5.dylib".into(),
            to: "@loader_path/../../scipy_openblas32.dylibs/libgfortran.5.dylib".into(),
        },
        LoadCommandEdit::AddRpath("@loader_path/../../scipy_openblas32.dylibs".into()),
    ];
    let edited = edit_load_commands(&bytes, &edits).unwrap();
    assert_eq!(
        edited.len(),
        bytes.len(),
        "edits stay inside the header padding"
    );
    let stale = MachOFile::parse(&edited).unwrap();
    assert!(matches!(
        verify_signature(&stale.slices[0]),
        SignatureStatus::Invalid(_)
    ));

    let started = Instant::now();
    let signed = sign_adhoc(&edited, "libscipy_openblas.dylib").unwrap();
    eprintln!(
        "signing a {:.1} MB dylib took {:?}",
        edited.len() as f64 / 1e6,
        started.elapsed()
    );
    let file = MachOFile::parse(&signed).unwrap();
    assert_eq!(
        verify_signature(&file.slices[0]),
        SignatureStatus::Valid {
            adhoc: true,
            linker_signed: false
        }
    );

    let reading = otool_thin(&write_temp(&dir, "signed.dylib", &signed));
    assert_eq!(
        reading.install_id.as_deref(),
        Some("@rpath/libscipy_openblas.crosswheel.dylib")
    );
    assert!(
        reading
            .dependencies
            .iter()
            .any(|(_, name)| name.starts_with("@loader_path/../../scipy_openblas32.dylibs/"))
    );
    assert!(
        !reading
            .dependencies
            .iter()
            .any(|(_, name)| name == "@loader_path/../.dylibs/libgfortran.5.dylib")
    );
    assert!(
        reading
            .rpaths
            .contains(&"@loader_path/../../scipy_openblas32.dylibs".to_string())
    );
    assert_eq!(reading, our_reading(&file.slices[0]));
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn leftover_absolute_rpaths_of_openblas_0_3_34_can_be_deleted() {
    let bytes = wheel_member(
        OPENBLAS_STATIC,
        "scipy_openblas32/lib/libscipy_openblas.dylib",
    );
    let file = MachOFile::parse(&bytes).unwrap();
    let absolute: Vec<String> = file.slices[0]
        .rpaths
        .iter()
        .filter(|r| r.starts_with('/'))
        .cloned()
        .collect();
    assert!(
        !absolute.is_empty(),
        "expected leftover absolute rpaths in {OPENBLAS_STATIC}"
    );
    let edits: Vec<LoadCommandEdit> = absolute
        .iter()
        .cloned()
        .map(LoadCommandEdit::DeleteRpath)
        .collect();
    let edited = edit_load_commands(&bytes, &edits).unwrap();
    let signed = sign_adhoc(&edited, "libscipy_openblas.dylib").unwrap();
    let file = MachOFile::parse(&signed).unwrap();
    assert!(
        file.slices[0]
            .rpaths
            .iter()
            .all(|rpath| !rpath.starts_with('/'))
    );
    assert!(matches!(
        verify_signature(&file.slices[0]),
        SignatureStatus::Valid { adhoc: true, .. }
    ));
}

#[test]
#[ignore = "needs the fixture cache and llvm: scripts/test sets them up"]
fn editing_and_signing_a_universal_binary_keeps_both_slices_valid() {
    let dir = tempfile::tempdir().unwrap();
    let (member, bytes) = wheel_binaries(&fixture(LXML_UNIVERSAL)).swap_remove(0);
    let edited = edit_load_commands(
        &bytes,
        &[
            LoadCommandEdit::AddRpath("@loader_path".into()),
            LoadCommandEdit::SetMinos("10.13".parse().unwrap()),
        ],
    )
    .unwrap();
    let signed = sign_adhoc(&edited, "objectify").unwrap();
    let file = MachOFile::parse(&signed).unwrap();
    assert_eq!(file.slices.len(), 2, "{member}");
    for slice in &file.slices {
        assert!(
            matches!(
                verify_signature(slice),
                SignatureStatus::Valid { adhoc: true, .. }
            ),
            "{}",
            slice.arch
        );
        assert_eq!(slice.rpaths, ["@loader_path"]);
    }
    let readings = otool_slices(&write_temp(&dir, "signed-fat.so", &signed));
    for slice in &file.slices {
        assert_eq!(readings[&slice.arch.to_string()], our_reading(slice));
        assert_eq!(
            readings[&slice.arch.to_string()].minos.as_deref(),
            Some("10.13")
        );
    }
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn edits_keep_room_for_the_signature_an_unsigned_slice_will_need() {
    // lxml's unsigned x86_64 slice has 48 free bytes: a 40-byte rpath fits on
    // its own but leaves no room for the 16-byte LC_CODE_SIGNATURE signing adds.
    let (_, bytes) = wheel_binaries(&fixture(LXML_UNIVERSAL)).swap_remove(0);
    let x86_64 = &MachOFile::parse(&bytes).unwrap().slices[0];
    assert_eq!((x86_64.arch, x86_64.code_signature), (Arch::X86_64, None));
    let rpath =
        "@loader_path/".to_string() + &"x".repeat(x86_64.header_padding as usize - 12 - 13 - 8);
    let error = edit_load_commands(&bytes, &[LoadCommandEdit::AddRpath(rpath)]).unwrap_err();
    assert!(
        matches!(error, MachOError::HeaderPaddingExhausted { ref arch, .. } if arch == "x86_64"),
        "{error}"
    );
    assert!(
        error.to_string().contains("-headerpad_max_install_names"),
        "{error}"
    );
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn signing_is_deterministic() {
    let bytes = wheel_member(PILLOW, "PIL/_imaging.cpython-311-darwin.so");
    let first = sign_adhoc(&bytes, "_imaging").unwrap();
    let second = sign_adhoc(&bytes, "_imaging").unwrap();
    assert!(first == second, "two signatures of the same input differ");
    let resigned = sign_adhoc(&first, "_imaging").unwrap();
    assert!(first == resigned, "re-signing a signed file changed it");
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn dependency_rename_of_an_absent_name_is_reported() {
    let bytes = wheel_member(PILLOW, "PIL/_imaging.cpython-311-darwin.so");
    let error = edit_load_commands(
        &bytes,
        &[LoadCommandEdit::ChangeDependency {
            from: "/nonexistent/libnothing.dylib".into(),
            to: "@rpath/x.dylib".into(),
        }],
    )
    .unwrap_err();
    assert!(
        matches!(error, MachOError::EditNotApplicable { .. }),
        "{error}"
    );
}
