//! `crosswheel repair` on real, already repaired manylinux wheels: nothing
//! that matters changes, and the output is a pure function of the input.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{crosswheel_bin, fixture};

const ALREADY_REPAIRED: &[&str] = &[
    "numpy-2.2.6-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
    "psycopg2_binary-2.9.10-cp311-cp311-manylinux_2_17_ppc64le.manylinux2014_ppc64le.whl",
    "psycopg2_binary-2.9.10-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
    "zstandard-0.25.0-cp311-cp311-manylinux2014_ppc64le.manylinux_2_17_ppc64le.whl",
];

fn repair(wheel: &Path, out: &Path, epoch: &str) -> PathBuf {
    let output = Command::new(crosswheel_bin())
        .args(["repair", "-w"])
        .arg(out)
        .arg(wheel)
        .env("SOURCE_DATE_EPOCH", epoch)
        .output()
        .expect("run crosswheel");
    assert!(
        output.status.success(),
        "repair of {} failed: {}",
        wheel.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    PathBuf::from(String::from_utf8(output.stdout).expect("utf-8").trim())
}

/// Every file of a wheel (name → uncompressed bytes), RECORD lines apart.
fn contents(wheel: &Path) -> (BTreeMap<String, Vec<u8>>, Vec<String>) {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(wheel).expect("open")).expect("zip");
    let mut files = BTreeMap::new();
    let mut record = Vec::new();
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).expect("entry");
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut data).expect("read");
        let name = entry.name().expect("utf-8 name").to_string();
        if name.ends_with('/') {
            continue; // directory entries are not files; writers may omit them
        }
        if name.ends_with(".dist-info/RECORD") {
            record = String::from_utf8(data)
                .expect("utf-8")
                .lines()
                .map(|l| l.trim_end_matches('\r').to_string())
                .collect();
            record.sort();
        } else {
            files.insert(name, data);
        }
    }
    (files, record)
}

#[test]
#[ignore = "slow: Debian's system libraries for the symbol check (a download on first use)"]
fn repairing_a_repaired_wheel_keeps_every_file_and_record_line() {
    let out = tempfile::tempdir().expect("tempdir");
    for name in ALREADY_REPAIRED {
        let input = fixture(name);
        let repaired = repair(&input, out.path(), "1700000000");
        let (before, before_record) = contents(&input);
        let (after, after_record) = contents(&repaired);
        let only_before: Vec<_> = before.keys().filter(|k| !after.contains_key(*k)).collect();
        let only_after: Vec<_> = after.keys().filter(|k| !before.contains_key(*k)).collect();
        assert!(
            only_before.is_empty() && only_after.is_empty(),
            "{name}: file set changed: lost {only_before:?}, gained {only_after:?}"
        );
        for (file, bytes) in &before {
            if file.ends_with(".dist-info/WHEEL") {
                continue; // the Tag lines may be reordered to the policy's order
            }
            assert!(after[file] == *bytes, "{name}: {file} changed");
        }
        let unchanged_lines = |record: &[String]| -> Vec<String> {
            record
                .iter()
                .filter(|l| !l.contains(".dist-info/WHEEL,"))
                .cloned()
                .collect()
        };
        assert_eq!(
            unchanged_lines(&before_record),
            unchanged_lines(&after_record),
            "{name}: RECORD lines changed"
        );
    }
}

#[test]
#[ignore = "slow: Debian's system libraries for the symbol check (a download on first use)"]
fn repairing_twice_with_one_source_date_epoch_gives_identical_bytes() {
    let first = tempfile::tempdir().expect("tempdir");
    let second = tempfile::tempdir().expect("tempdir");
    let input = fixture(ALREADY_REPAIRED[1]);
    let a = repair(&input, first.path(), "1600000000");
    let b = repair(&input, second.path(), "1600000000");
    assert_eq!(a.file_name(), b.file_name());
    assert!(
        std::fs::read(&a).expect("read") == std::fs::read(&b).expect("read"),
        "outputs differ"
    );
    let c = repair(&input, first.path(), "1600000002");
    assert!(
        std::fs::read(&c).expect("read") != std::fs::read(&b).expect("read"),
        "SOURCE_DATE_EPOCH had no effect"
    );
}

#[test]
#[ignore = "slow: Debian's system libraries for the symbol check (a download on first use)"]
fn repair_never_modifies_its_input() {
    let input = fixture(ALREADY_REPAIRED[0]);
    let before = common::sha256_of(&input).expect("hash");
    let out = tempfile::tempdir().expect("tempdir");
    repair(&input, out.path(), "1700000000");
    assert_eq!(common::sha256_of(&input).expect("hash"), before);
}

#[test]
#[ignore = "slow: Debian's system libraries for the symbol check (a download on first use)"]
fn repaired_wheels_keep_the_policy_auditwheel_finds() {
    let out = tempfile::tempdir().expect("tempdir");
    for name in ALREADY_REPAIRED {
        let repaired = repair(&fixture(name), out.path(), "1700000000");
        let file_name = repaired
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        assert!(
            file_name.contains("manylinux_2_17_") && file_name.contains("manylinux2014_"),
            "{file_name}"
        );
    }
}
