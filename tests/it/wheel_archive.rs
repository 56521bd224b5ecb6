//! What `WheelArchive::open` accepts and rejects, on zips crafted byte by
//! byte (so each defect can be produced exactly).

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;
use crosswheel::formats::wheel::{
    CompressionMethod, Limits, ParseErrorKind, UnsafeName, WheelArchive, WheelError,
};
use sha2::Digest;

const WHEEL_FILE: &str = "demo-1.0-py3-none-any.whl";
const REGULAR_FILE: u32 = 0o100_644;

/// One zip entry as the test wants it on disk, defects included.
#[derive(Clone)]
struct Spec {
    name: Vec<u8>,
    data: Vec<u8>,
    deflate: bool,
    mode: u32,
    version_made_by: u16,
    flags: u16,
    method: Option<u16>,
    crc: Option<u32>,
    local_name: Option<Vec<u8>>,
}

impl Spec {
    fn file(name: &str, data: &[u8]) -> Self {
        Self {
            name: name.as_bytes().to_vec(),
            data: data.to_vec(),
            deflate: true,
            mode: REGULAR_FILE,
            version_made_by: (3 << 8) | 20,
            flags: 0,
            method: None,
            crc: None,
            local_name: None,
        }
    }

    fn dir(name: &str) -> Self {
        Self {
            deflate: false,
            mode: 0o040_755,
            ..Self::file(name, b"")
        }
    }

    fn mode(self, mode: u32) -> Self {
        Self { mode, ..self }
    }

    fn is_dir(&self) -> bool {
        self.name.ends_with(b"/")
    }
}

/// Lays out the specs as a zip: local headers and data, central directory,
/// end record. Returns the bytes and each entry's local header offset.
fn zip_bytes(specs: &[Spec]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for spec in specs {
        let offset = out.len() as u32;
        let stored = if spec.deflate {
            let mut encoder =
                flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
            encoder.write_all(&spec.data).unwrap();
            encoder.finish().unwrap()
        } else {
            spec.data.clone()
        };
        let method = spec.method.unwrap_or(if spec.deflate { 8 } else { 0 });
        let crc = spec.crc.unwrap_or_else(|| crc32fast::hash(&spec.data));
        let local_name = spec.local_name.as_ref().unwrap_or(&spec.name);
        let common = |out: &mut Vec<u8>, name_len: usize| {
            for field in [20u16, spec.flags, method, 0x6c00, 0x5a21] {
                out.extend_from_slice(&field.to_le_bytes());
            }
            for field in [crc, stored.len() as u32, spec.data.len() as u32] {
                out.extend_from_slice(&field.to_le_bytes());
            }
            out.extend_from_slice(&(name_len as u16).to_le_bytes());
            out.extend_from_slice(&0u16.to_le_bytes());
        };
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        common(&mut out, local_name.len());
        out.extend_from_slice(local_name);
        out.extend_from_slice(&stored);

        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        central.extend_from_slice(&spec.version_made_by.to_le_bytes());
        common(&mut central, spec.name.len());
        central.extend_from_slice(&[0; 6]); // comment length, disk, internal attributes
        central.extend_from_slice(&(spec.mode << 16).to_le_bytes());
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(&spec.name);
    }
    let central_offset = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    let count = (specs.len() as u16).to_le_bytes();
    out.extend_from_slice(&count);
    out.extend_from_slice(&count);
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&central_offset.to_le_bytes());
    out.extend_from_slice(&[0; 2]);
    out
}

fn record_line(name: &str, data: &[u8]) -> String {
    let digest =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(data));
    format!("{name},sha256={digest},{}\n", data.len())
}

fn base_files() -> Vec<Spec> {
    vec![
        Spec::file("demo/__init__.py", b"print('hello')\n"),
        Spec::file("demo/zeros.bin", &[0; 64 * 1024]),
        Spec::file(
            "demo-1.0.dist-info/METADATA",
            b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n\n",
        ),
        Spec::file(
            "demo-1.0.dist-info/WHEEL",
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        ),
    ]
}

/// Appends a RECORD listing every file spec, as a correct wheel has.
fn with_record(mut specs: Vec<Spec>) -> Vec<Spec> {
    let dist_info = specs
        .iter()
        .filter_map(|s| std::str::from_utf8(&s.name).ok())
        .filter_map(|name| name.split_once('/').map(|(top, _)| top))
        .find(|top| top.ends_with(".dist-info"))
        .unwrap_or("demo-1.0.dist-info")
        .to_owned();
    let mut record = String::new();
    for spec in specs.iter().filter(|s| !s.is_dir()) {
        record.push_str(&record_line(
            &String::from_utf8_lossy(&spec.name),
            &spec.data,
        ));
    }
    record.push_str(&format!("{dist_info}/RECORD,,\n"));
    specs.push(Spec::file(
        &format!("{dist_info}/RECORD"),
        record.as_bytes(),
    ));
    specs
}

fn write_file(dir: &Path, file_name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(file_name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn open_bytes_as(
    file_name: &str,
    bytes: &[u8],
    limits: &Limits,
) -> Result<WheelArchive, WheelError> {
    let dir = tempfile::tempdir().unwrap();
    WheelArchive::open_with_limits(write_file(dir.path(), file_name, bytes), limits)
}

fn open_specs(specs: &[Spec]) -> Result<WheelArchive, WheelError> {
    open_bytes_as(WHEEL_FILE, &zip_bytes(specs), &Limits::default())
}

fn rejection(specs: &[Spec]) -> WheelError {
    let error = open_specs(specs).expect_err("the wheel should have been rejected");
    let message = error.to_string();
    assert!(
        message.contains(WHEEL_FILE),
        "message does not name the wheel: {message}"
    );
    assert!(
        !message.contains('\n'),
        "message is not one line: {message}"
    );
    error
}

fn unsafe_name_problem(name: &str) -> UnsafeName {
    let mut specs = base_files();
    specs.push(Spec::file(name, b"x"));
    match rejection(&with_record(specs)) {
        WheelError::UnsafeEntryName { entry, problem, .. } => {
            assert_eq!(entry, name);
            problem
        }
        other => panic!("expected UnsafeEntryName for {name:?}, got {other}"),
    }
}

#[test]
fn opens_a_valid_wheel_and_exposes_its_parts() {
    let mut specs = base_files();
    specs.insert(0, Spec::dir("demo/"));
    specs.push(Spec::file("demo-1.0.data/scripts/run", b"#!python\n").mode(0o100_755));
    let archive = open_specs(&with_record(specs)).unwrap();

    assert_eq!(archive.name().file_name(), WHEEL_FILE);
    assert_eq!(archive.dist_info_dir(), "demo-1.0.dist-info");
    assert_eq!(archive.data_dir(), Some("demo-1.0.data"));
    assert_eq!(archive.wheel_metadata().tags(), ["py3-none-any"]);
    assert_eq!(archive.metadata_name_version().name, "demo");
    assert_eq!(archive.metadata_name_version().version, "1.0");
    let names: Vec<&str> = archive.entries().iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "demo/__init__.py",
            "demo/zeros.bin",
            "demo-1.0.dist-info/METADATA",
            "demo-1.0.dist-info/WHEEL",
            "demo-1.0.data/scripts/run",
            "demo-1.0.dist-info/RECORD",
        ]
    );
    assert_eq!(
        archive.read("demo/__init__.py").unwrap(),
        b"print('hello')\n"
    );
    assert_eq!(archive.read("demo/zeros.bin").unwrap(), vec![0; 64 * 1024]);
    let script = archive.entry("demo-1.0.data/scripts/run").unwrap();
    assert_eq!(script.unix_mode, Some(0o100_755));
    assert_eq!(script.method, CompressionMethod::Deflated);
    assert_eq!(script.modified.to_string(), "2025-01-01 13:32:00");
    assert_eq!(archive.record().rows().len(), 6);
    let raw = archive.raw_entry("demo/__init__.py").unwrap();
    assert!(
        raw.sha256.is_some(),
        "a verified sha256 should be kept for raw copies"
    );
    assert!(matches!(
        archive.read("nope"),
        Err(WheelError::EntryNotFound { .. })
    ));
}

#[test]
fn rejects_file_that_is_not_a_zip() {
    let error =
        open_bytes_as(WHEEL_FILE, b"this is text, not a zip", &Limits::default()).unwrap_err();
    assert!(matches!(error, WheelError::NotAZip { .. }), "{error}");
}

#[test]
fn rejects_truncated_zip() {
    let bytes = zip_bytes(&with_record(base_files()));
    let error =
        open_bytes_as(WHEEL_FILE, &bytes[..bytes.len() / 2], &Limits::default()).unwrap_err();
    assert!(matches!(error, WheelError::TruncatedZip { .. }), "{error}");
    assert!(error.to_string().contains(WHEEL_FILE));
}

#[test]
fn rejects_entry_with_parent_dir_component() {
    assert_eq!(
        unsafe_name_problem("demo/../../evil.py"),
        UnsafeName::ParentComponent
    );
}

#[test]
fn rejects_absolute_entry_name() {
    assert_eq!(unsafe_name_problem("/etc/evil"), UnsafeName::Absolute);
}

#[test]
fn rejects_entry_name_with_backslash() {
    assert_eq!(unsafe_name_problem("demo\\evil.py"), UnsafeName::Backslash);
}

#[test]
fn rejects_entry_name_with_drive_letter() {
    assert_eq!(unsafe_name_problem("C:/evil.py"), UnsafeName::DriveLetter);
}

#[test]
fn rejects_entry_name_with_nul() {
    assert_eq!(unsafe_name_problem("demo/evil\0.py"), UnsafeName::Nul);
}

#[test]
fn rejects_entry_name_with_control_character() {
    assert_eq!(
        unsafe_name_problem("demo/evil\n.py"),
        UnsafeName::ControlCharacter
    );
}

#[test]
fn rejects_entry_name_with_empty_component() {
    assert_eq!(
        unsafe_name_problem("demo//evil.py"),
        UnsafeName::EmptyComponent
    );
}

#[test]
fn rejects_non_utf8_entry_name() {
    let mut specs = with_record(base_files());
    let mut bad = Spec::file("x", b"x");
    bad.name = b"demo/\xff.py".to_vec();
    specs.push(bad);
    let error = rejection(&specs);
    assert!(
        matches!(error, WheelError::NonUtf8EntryName { .. }),
        "{error}"
    );
}

#[test]
fn rejects_duplicate_entry_names() {
    let mut specs = with_record(base_files());
    specs.push(Spec::file("demo/__init__.py", b"print('hello')\n"));
    match rejection(&specs) {
        WheelError::DuplicateEntry { entry, .. } => assert_eq!(entry, "demo/__init__.py"),
        other => panic!("expected DuplicateEntry, got {other}"),
    }
}

#[test]
fn rejects_names_differing_only_by_case() {
    let mut specs = base_files();
    specs.push(Spec::file("demo/README", b"a"));
    specs.push(Spec::file("demo/readme", b"b"));
    match rejection(&with_record(specs)) {
        WheelError::CaseCollision { entry, other, .. } => {
            assert_eq!(
                (entry.as_str(), other.as_str()),
                ("demo/readme", "demo/README")
            );
        }
        other => panic!("expected CaseCollision, got {other}"),
    }
}

#[test]
fn rejects_symlink_entry() {
    let mut specs = base_files();
    specs.push(Spec::file("demo/link", b"/etc/passwd").mode(0o120_777));
    match rejection(&with_record(specs)) {
        WheelError::SymlinkEntry { entry, .. } => assert_eq!(entry, "demo/link"),
        other => panic!("expected SymlinkEntry, got {other}"),
    }
}

#[test]
fn rejects_fifo_and_other_non_regular_entries() {
    for mode in [0o010_644, 0o060_644, 0o040_755] {
        let mut specs = base_files();
        specs.push(Spec::file("demo/special", b"").mode(mode));
        match rejection(&with_record(specs)) {
            WheelError::UnsupportedEntryType {
                entry,
                mode: file_type,
                ..
            } => {
                assert_eq!(entry, "demo/special");
                assert_eq!(file_type, mode & 0o170_000);
            }
            other => panic!("expected UnsupportedEntryType for {mode:o}, got {other}"),
        }
    }
}

#[test]
fn ignores_directory_entries_even_when_record_omits_them() {
    let mut specs = with_record(base_files());
    specs.insert(0, Spec::dir("demo/"));
    specs.insert(1, Spec::dir("demo-1.0.dist-info/"));
    let archive = open_specs(&specs).unwrap();
    assert!(archive.entries().iter().all(|e| !e.name.ends_with('/')));
}

#[test]
fn rejects_encrypted_entry() {
    let mut specs = base_files();
    specs[0].flags = 1;
    let error = rejection(&with_record(specs));
    assert!(
        matches!(error, WheelError::EncryptedEntry { .. }),
        "{error}"
    );
}

#[test]
fn rejects_unsupported_compression_method() {
    let mut specs = base_files();
    specs[0].method = Some(12);
    match rejection(&with_record(specs)) {
        WheelError::UnsupportedCompression { entry, method, .. } => {
            assert_eq!((entry.as_str(), method), ("demo/__init__.py", 12));
        }
        other => panic!("expected UnsupportedCompression, got {other}"),
    }
}

#[test]
fn rejects_local_header_naming_a_different_file() {
    let mut specs = base_files();
    specs[0].local_name = Some(b"demo/other.py".to_vec());
    let error = rejection(&with_record(specs));
    assert!(
        matches!(error, WheelError::BadLocalHeader { .. }),
        "{error}"
    );
}

#[test]
fn rejects_entries_sharing_compressed_bytes() {
    // A stored entry whose data is itself a complete local header + data of
    // a second entry: the classic overlapping-file zip bomb.
    let inner = Spec {
        deflate: false,
        ..Spec::file("demo/inner.txt", b"inner")
    };
    let inner_zip = zip_bytes(std::slice::from_ref(&inner));
    let inner_local = &inner_zip[..30 + inner.name.len() + inner.data.len()];
    let outer = Spec {
        deflate: false,
        ..Spec::file("demo/outer.bin", inner_local)
    };
    let mut specs = base_files();
    specs.push(outer.clone());
    specs.push(inner.clone());
    let mut bytes = zip_bytes(&with_record(specs.clone()));
    // Point the inner entry's central header at the copy inside outer.bin.
    let outer_data_offset = find(&bytes, inner_local).unwrap();
    let central = find_last(
        &bytes,
        &[b"PK\x01\x02".as_slice(), &[0x14, 0x03]].concat(),
        b"demo/inner.txt",
    );
    bytes[central + 42..central + 46].copy_from_slice(&(outer_data_offset as u32).to_le_bytes());
    let error = open_bytes_as(WHEEL_FILE, &bytes, &Limits::default()).unwrap_err();
    assert!(
        matches!(error, WheelError::OverlappingEntries { .. }),
        "{error}"
    );
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// Offset of the central header (starting with `prefix`) whose name is `name`.
fn find_last(bytes: &[u8], prefix: &[u8], name: &[u8]) -> usize {
    (0..bytes.len())
        .rev()
        .find(|&at| bytes[at..].starts_with(prefix) && bytes[at + 46..].starts_with(name))
        .expect("central header not found")
}

#[test]
fn rejects_total_uncompressed_size_over_limit() {
    let limits = Limits {
        max_total_size: 10_000,
        ..Limits::default()
    };
    let bytes = zip_bytes(&with_record(base_files()));
    let error = open_bytes_as(WHEEL_FILE, &bytes, &limits).unwrap_err();
    assert!(
        matches!(error, WheelError::TotalSizeLimit { limit: 10_000, .. }),
        "{error}"
    );
}

#[test]
fn rejects_entry_over_compression_ratio_limit() {
    let limits = Limits {
        max_compression_ratio: 50,
        ratio_exempt_size: 1024,
        ..Limits::default()
    };
    let bytes = zip_bytes(&with_record(base_files()));
    match open_bytes_as(WHEEL_FILE, &bytes, &limits).unwrap_err() {
        WheelError::CompressionRatioLimit { entry, size, .. } => {
            assert_eq!((entry.as_str(), size), ("demo/zeros.bin", 64 * 1024));
        }
        other => panic!("expected CompressionRatioLimit, got {other}"),
    }
}

#[test]
fn default_limits_reject_a_highly_compressed_large_entry() {
    let mut specs = base_files();
    specs.push(Spec::file("demo/bomb.bin", &vec![0; 8 << 20]));
    match rejection(&with_record(specs)) {
        WheelError::CompressionRatioLimit { entry, limit, .. } => {
            assert_eq!((entry.as_str(), limit), ("demo/bomb.bin", 1000));
        }
        other => panic!("expected CompressionRatioLimit, got {other}"),
    }
}

#[test]
fn rejects_wheel_without_dist_info() {
    let specs = vec![Spec::file("demo/__init__.py", b"")];
    assert!(matches!(rejection(&specs), WheelError::NoDistInfo { .. }));
}

#[test]
fn rejects_wheel_with_two_dist_info_directories() {
    let mut specs = base_files();
    specs.push(Spec::file(
        "other-2.0.dist-info/METADATA",
        b"Name: other\nVersion: 2.0\n",
    ));
    match rejection(&with_record(specs)) {
        WheelError::MultipleDistInfo { first, second, .. } => {
            assert_eq!(
                (first.as_str(), second.as_str()),
                ("demo-1.0.dist-info", "other-2.0.dist-info")
            );
        }
        other => panic!("expected MultipleDistInfo, got {other}"),
    }
}

#[test]
fn rejects_dist_info_not_matching_the_file_name() {
    let specs = with_record(vec![Spec::file(
        "demo-2.0.dist-info/WHEEL",
        b"Tag: py3-none-any\n",
    )]);
    match rejection(&specs) {
        WheelError::DistInfoMismatch {
            found, expected, ..
        } => {
            assert_eq!(
                (found.as_str(), expected.as_str()),
                ("demo-2.0.dist-info", "demo-1.0")
            );
        }
        other => panic!("expected DistInfoMismatch, got {other}"),
    }
}

#[test]
fn matches_dist_info_after_name_normalisation() {
    let wheel = "Foo_Bar-1.0-py3-none-any.whl";
    let specs = with_record(vec![
        Spec::file(
            "foo.bar-1.0.dist-info/METADATA",
            b"Name: foo.bar\nVersion: 1.0\n",
        ),
        Spec::file("foo.bar-1.0.dist-info/WHEEL", b"Tag: py3-none-any\n"),
    ]);
    let archive = open_bytes_as(wheel, &zip_bytes(&specs), &Limits::default()).unwrap();
    assert_eq!(archive.dist_info_dir(), "foo.bar-1.0.dist-info");
}

fn missing_dist_info_file(file: &str) -> String {
    let specs: Vec<Spec> = with_record(base_files())
        .into_iter()
        .filter(|s| s.name != format!("demo-1.0.dist-info/{file}").as_bytes())
        .collect();
    match rejection(&specs) {
        WheelError::MissingDistInfoFile { entry, .. } => entry,
        WheelError::UnlistedEntry { .. } | WheelError::MissingEntry { .. } if file != "RECORD" => {
            panic!("{file}: the missing-file check must come before RECORD's")
        }
        other => panic!("expected MissingDistInfoFile for {file}, got {other}"),
    }
}

#[test]
fn rejects_wheel_without_record_wheel_or_metadata_file() {
    for file in ["RECORD", "WHEEL", "METADATA"] {
        assert_eq!(
            missing_dist_info_file(file),
            format!("demo-1.0.dist-info/{file}")
        );
    }
}

#[test]
fn rejects_wheel_file_without_tags() {
    let mut specs = base_files();
    specs[3].data = b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\n".to_vec();
    let error = rejection(&with_record(specs));
    assert!(matches!(error, WheelError::NoWheelTags { .. }), "{error}");
}

#[test]
fn rejects_file_missing_from_record() {
    let mut specs = with_record(base_files());
    specs.push(Spec::file("demo/sneaky.py", b"import os\n"));
    match rejection(&specs) {
        WheelError::UnlistedEntry { entry, .. } => assert_eq!(entry, "demo/sneaky.py"),
        other => panic!("expected UnlistedEntry, got {other}"),
    }
}

#[test]
fn rejects_record_listing_a_file_not_in_the_archive() {
    let specs: Vec<Spec> = with_record(base_files())
        .into_iter()
        .filter(|s| s.name != b"demo/__init__.py")
        .collect();
    match rejection(&specs) {
        WheelError::MissingEntry { entry, .. } => assert_eq!(entry, "demo/__init__.py"),
        other => panic!("expected MissingEntry, got {other}"),
    }
}

/// The base wheel with RECORD's text transformed by `edit`.
fn with_edited_record(edit: impl Fn(String) -> String) -> Vec<Spec> {
    let mut specs = with_record(base_files());
    let record = specs.last_mut().unwrap();
    record.data = edit(String::from_utf8(record.data.clone()).unwrap()).into_bytes();
    specs
}

#[test]
fn rejects_content_not_matching_its_record_hash() {
    let specs = with_edited_record(|record| {
        let good = record_line("demo/__init__.py", b"print('hello')\n");
        let other = record_line("demo/__init__.py", b"print('HELLO')\n");
        record.replace(&good, &other)
    });
    match rejection(&specs) {
        WheelError::HashMismatch { entry, .. } => assert_eq!(entry, "demo/__init__.py"),
        other => panic!("expected HashMismatch, got {other}"),
    }
}

#[test]
fn rejects_size_not_matching_record() {
    let specs = with_edited_record(|record| record.replace(",15\n", ",16\n"));
    match rejection(&specs) {
        WheelError::SizeMismatch {
            entry,
            expected,
            actual,
            ..
        } => {
            assert_eq!(
                (entry.as_str(), expected, actual),
                ("demo/__init__.py", 16, 15)
            );
        }
        other => panic!("expected SizeMismatch, got {other}"),
    }
}

#[test]
fn rejects_md5_and_sha1_record_hashes() {
    for weak in [
        "md5=XUFAKrxLKna5cZ2REBfFkg",
        "sha1=qvTGHdzF6KLavt4PO0gs2a6pQ00",
    ] {
        let specs = with_edited_record(|record| {
            let good = record_line("demo/__init__.py", b"print('hello')\n");
            record.replace(&good, &format!("demo/__init__.py,{weak},15\n"))
        });
        match rejection(&specs) {
            WheelError::Malformed { entry, source, .. } => {
                assert_eq!(entry, "demo-1.0.dist-info/RECORD");
                assert!(
                    matches!(source.kind, ParseErrorKind::ForbiddenHashAlgorithm(_)),
                    "{source}"
                );
            }
            other => panic!("expected Malformed RECORD, got {other}"),
        }
    }
}

#[test]
fn rejects_record_row_without_hash() {
    let specs = with_edited_record(|record| {
        let good = record_line("demo/__init__.py", b"print('hello')\n");
        record.replace(&good, "demo/__init__.py,,15\n")
    });
    assert!(matches!(rejection(&specs), WheelError::MissingHash { .. }));
}

#[test]
fn accepts_sha512_record_hashes() {
    let specs = with_edited_record(|record| {
        let good = record_line("demo/__init__.py", b"print('hello')\n");
        let digest = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(sha2::Sha512::digest(b"print('hello')\n"));
        record.replace(&good, &format!("demo/__init__.py,sha512={digest},15\n"))
    });
    let archive = open_specs(&specs).unwrap();
    assert!(
        archive
            .raw_entry("demo/__init__.py")
            .unwrap()
            .sha256
            .is_none()
    );
}

#[test]
fn rejects_crc_mismatch() {
    let mut specs = base_files();
    specs[0].crc = Some(0xdead_beef);
    match rejection(&with_record(specs)) {
        WheelError::CorruptEntry { entry, detail, .. } => {
            assert_eq!(entry, "demo/__init__.py");
            assert!(detail.contains("CRC-32"), "{detail}");
        }
        other => panic!("expected CorruptEntry, got {other}"),
    }
}

#[test]
fn accepts_record_signature_files_not_listed_in_record() {
    let mut specs = with_record(base_files());
    specs.push(Spec::file("demo-1.0.dist-info/RECORD.jws", b"{}"));
    assert!(open_specs(&specs).is_ok());
}
