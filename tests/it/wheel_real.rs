//! Reading and rewriting a real PyPI wheel (numpy 2.2.6, manylinux aarch64).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Instant;

use crosswheel::formats::wheel::{Contents, WheelArchive, WheelError, WriteOptions, write_wheel};

const NUMPY: &str = "numpy-2.2.6-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl";

/// A downloaded fixture wheel; panics with the command that fetches it.
fn fixture(file_name: &str) -> PathBuf {
    let dir = std::env::var_os("CROSSWHEEL_FIXTURES")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".cache/crosswheel-fixtures"))
        })
        .expect("set CROSSWHEEL_FIXTURES or HOME to locate the fixture cache");
    let path = dir.join(file_name);
    assert!(
        path.is_file(),
        "missing fixture {}; fetch it with:\n  pip download --no-deps --only-binary=:all: \
         --platform manylinux2014_aarch64 --python-version 3.11 --implementation cp --abi cp311 \
         -d {} 'numpy==2.2.6'",
        path.display(),
        dir.display()
    );
    path
}

fn record_lines(archive: &WheelArchive) -> BTreeSet<String> {
    let record = archive
        .read(&format!("{}/RECORD", archive.dist_info_dir()))
        .unwrap();
    String::from_utf8(record)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn opens_and_verifies_the_numpy_wheel() {
    let start = Instant::now();
    let archive = WheelArchive::open(fixture(NUMPY)).unwrap();
    eprintln!("open+verify {NUMPY}: {:?}", start.elapsed());

    assert_eq!(archive.dist_info_dir(), "numpy-2.2.6.dist-info");
    assert_eq!(archive.data_dir(), None);
    assert_eq!(
        archive.wheel_metadata().tags(),
        [
            "cp311-cp311-manylinux_2_17_aarch64",
            "cp311-cp311-manylinux2014_aarch64"
        ]
    );
    assert_eq!(archive.name().tags(), archive.wheel_metadata().tags());
    let metadata = archive.metadata_name_version();
    assert_eq!(
        (metadata.name.as_str(), metadata.version.as_str()),
        ("numpy", "2.2.6")
    );
    // Every file but RECORD is listed with a verified sha256.
    assert_eq!(archive.record().rows().len(), archive.entries().len());
    let without_hash: Vec<&str> = archive
        .raw_entries()
        .filter(|raw| raw.sha256.is_none())
        .map(|raw| raw.entry.name.as_str())
        .collect();
    assert_eq!(without_hash, ["numpy-2.2.6.dist-info/RECORD"]);
    assert!(
        archive
            .entries()
            .iter()
            .any(|e| e.name.starts_with("numpy.libs/"))
    );
}

#[test]
#[ignore = "needs the fixture cache and python3: scripts/test sets them up"]
fn rewriting_numpy_with_raw_copies_keeps_every_record_line() {
    let input = WheelArchive::open(fixture(NUMPY)).unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let entries: Vec<(String, Contents<'_>)> = input
        .raw_entries()
        .map(|raw| (raw.entry.name.clone(), Contents::Raw(raw)))
        .collect();
    let start = Instant::now();
    let out = write_wheel(
        out_dir.path(),
        input.name(),
        entries,
        &WriteOptions::default(),
    )
    .unwrap();
    eprintln!("raw rewrite of {NUMPY}: {:?}", start.elapsed());

    assert_eq!(out.file_name().unwrap(), NUMPY);
    let output = WheelArchive::open(&out).unwrap();
    assert_eq!(record_lines(&output), record_lines(&input));
    let tested = std::process::Command::new("python3")
        .args(["-m", "zipfile", "-t"])
        .arg(&out)
        .output()
        .expect("this test needs python3 on PATH (apt-get install python3)");
    let stdout = String::from_utf8_lossy(&tested.stdout);
    assert!(
        tested.status.success() && stdout.contains("Done testing") && !stdout.contains("corrupted"),
        "python3 -m zipfile -t rejected the rewritten wheel: {stdout}"
    );
    let record = format!("{}/RECORD", input.dist_info_dir());
    for raw in input.raw_entries().filter(|raw| raw.entry.name != record) {
        let copied = output.raw_entry(&raw.entry.name).unwrap();
        assert!(
            copied.compressed == raw.compressed,
            "{} was recompressed",
            raw.entry.name
        );
    }
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn detects_a_flipped_byte_in_the_numpy_wheel() {
    let source = fixture(NUMPY);
    let input = WheelArchive::open(&source).unwrap();
    let largest = input
        .entries()
        .iter()
        .max_by_key(|e| e.compressed_size)
        .unwrap()
        .clone();
    let mut bytes = std::fs::read(&source).unwrap();
    let middle = usize::try_from(largest.data_offset + largest.compressed_size / 2).unwrap();
    bytes[middle] ^= 0x55;
    let dir = tempfile::tempdir().unwrap();
    let tampered = dir.path().join(NUMPY);
    std::fs::write(&tampered, bytes).unwrap();
    match WheelArchive::open(&tampered).unwrap_err() {
        WheelError::CorruptEntry { entry, .. } | WheelError::HashMismatch { entry, .. } => {
            assert_eq!(entry, largest.name);
        }
        other => panic!(
            "expected the corruption of {} to be found, got {other}",
            largest.name
        ),
    }
}
