//! Damaged Mach-O files inside a wheel: one clear line naming the wheel
//! entry, no panic, and no output wheel.

use crate::common;

use std::path::Path;

use crosswheel::analysis::loadcheck::check_macos_wheel;
use crosswheel::formats::wheel::WheelArchive;
use crosswheel::stages::repair::macos::{MacosRepairOptions, repair};

fn wheel_with(dir: &Path, binary: &[u8]) -> WheelArchive {
    let metadata = common::minimal_metadata("broken", "1.0", "cp311-cp311-macosx_11_0_arm64");
    let mut files: Vec<(&str, &[u8])> = metadata
        .iter()
        .map(|(name, data)| (name.as_str(), data.as_slice()))
        .collect();
    files.push(("broken/__init__.py", b""));
    files.push(("broken/_x.cpython-311-darwin.so", binary));
    let path = common::make_wheel(dir, "broken-1.0-cp311-cp311-macosx_11_0_arm64.whl", &files);
    WheelArchive::open(path).unwrap()
}

/// A 64-bit arm64 dylib header claiming 4 load commands of 4096 bytes in a 64-byte file.
fn truncated_load_commands() -> Vec<u8> {
    let mut data = Vec::new();
    for word in [0xfeed_facfu32, 0x0100_000c, 0, 6, 4, 4096, 0x85, 0] {
        data.extend(word.to_le_bytes());
    }
    data.resize(64, 0);
    data
}

/// A universal header whose only slice lies at 16 KiB in a 64-byte file.
fn fat_slice_past_the_end() -> Vec<u8> {
    let mut data = Vec::new();
    for word in [0xcafe_babeu32, 1, 0x0100_000c, 0, 16384, 100_000, 14] {
        data.extend(word.to_be_bytes());
    }
    data.resize(64, 0);
    data
}

fn assert_clean_failure(binary: Vec<u8>, expected: &str) {
    let work = tempfile::tempdir().unwrap();
    let wheel = wheel_with(work.path(), &binary);
    let out = work.path().join("out");
    let options = MacosRepairOptions {
        out_dir: out.clone(),
        ..Default::default()
    };
    let error = format!("{:#}", repair(&wheel, &options).unwrap_err());
    assert!(
        error.contains("broken/_x.cpython-311-darwin.so") && error.contains(expected),
        "{error}"
    );
    assert!(!error.contains('\n'), "not one line: {error}");
    assert!(
        !out.exists() || std::fs::read_dir(&out).unwrap().next().is_none(),
        "output left behind"
    );

    let error = format!("{:#}", check_macos_wheel(&wheel).unwrap_err());
    assert!(
        error.contains("broken/_x.cpython-311-darwin.so") && !error.contains('\n'),
        "{error}"
    );
}

#[test]
fn truncated_load_commands_are_a_one_line_error_without_output() {
    assert_clean_failure(truncated_load_commands(), "malformed Mach-O");
}

#[test]
fn fat_slice_past_the_end_of_the_file_is_a_one_line_error_without_output() {
    assert_clean_failure(fat_slice_past_the_end(), "fat slice 0");
}

#[test]
fn pure_wheel_has_nothing_to_repair() {
    let work = tempfile::tempdir().unwrap();
    let metadata = common::minimal_metadata("pure", "1.0", "py3-none-any");
    let files: Vec<(&str, &[u8])> = metadata
        .iter()
        .map(|(name, data)| (name.as_str(), data.as_slice()))
        .collect();
    let path = common::make_wheel(work.path(), "pure-1.0-py3-none-any.whl", &files);
    let options = MacosRepairOptions {
        out_dir: work.path().join("out"),
        ..Default::default()
    };
    let error = format!(
        "{:#}",
        repair(&WheelArchive::open(path).unwrap(), &options).unwrap_err()
    );
    assert!(error.contains("no Mach-O files"), "{error}");
}
