//! The macOS repair on real PyPI wheels: what already follows the rules
//! stays byte-identical, what does not is fixed and says so.

use crate::common;

use std::path::Path;

use crosswheel::formats::macho::{MachOFile, SignatureStatus, is_macho, verify_signature};
use crosswheel::formats::wheel::WheelArchive;
use crosswheel::stages::repair::macos::{MacosRepairOptions, MacosRepairReport, repair};

fn repair_fixture(file_name: &str, out: &Path) -> (WheelArchive, MacosRepairReport) {
    let input = WheelArchive::open(common::fixture(file_name)).expect("fixture opens");
    let options = MacosRepairOptions {
        out_dir: out.to_path_buf(),
        epoch: Some(1_700_000_000),
        ..Default::default()
    };
    let report = repair(&input, &options)
        .unwrap_or_else(|error| panic!("repair of {file_name} failed: {error:#}"));
    (input, report)
}

/// Mach-O entries of `wheel` whose bytes differ from `input`'s.
fn changed_macho_entries(input: &WheelArchive, output: &WheelArchive) -> Vec<String> {
    let mut changed = Vec::new();
    for entry in input.entries() {
        let before = input.read(&entry.name).unwrap();
        if !is_macho(&before) {
            continue;
        }
        let after = output
            .read(&entry.name)
            .unwrap_or_else(|_| panic!("{} vanished from the output", entry.name));
        if before != after {
            changed.push(entry.name.clone());
        }
    }
    changed
}

fn assert_every_macho_verifies(output: &WheelArchive) {
    let mut count = 0;
    for entry in output.entries() {
        let data = output.read(&entry.name).unwrap();
        if !is_macho(&data) {
            continue;
        }
        count += 1;
        let parsed =
            MachOFile::parse(&data).unwrap_or_else(|error| panic!("{}: {error}", entry.name));
        for slice in &parsed.slices {
            let status = verify_signature(slice);
            assert!(
                matches!(status, SignatureStatus::Valid { .. }),
                "{} ({}): {status:?}",
                entry.name,
                slice.arch
            );
        }
    }
    assert!(count > 0, "no Mach-O file in the output");
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn numpy_macos_wheel_needs_nothing_and_stays_byte_identical() {
    let out = tempfile::tempdir().unwrap();
    let (input, report) =
        repair_fixture("numpy-2.2.6-cp311-cp311-macosx_11_0_arm64.whl", out.path());
    let output = WheelArchive::open(&report.output).unwrap();
    assert_eq!(report.platform_tags, ["macosx_11_0_arm64"]);
    assert!(
        report.grafted.is_empty() && report.edited.is_empty() && report.signed.is_empty(),
        "{report:?}"
    );
    assert_eq!(changed_macho_entries(&input, &output), Vec::<String>::new());
    assert_every_macho_verifies(&output);
}

/// Pillow's vendored libjpeg still carries its build machine's LC_RPATH
/// (`/Users/runner/work/Pillow/...`): the one file the rules change.
#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn pillow_macos_wheel_only_loses_the_build_machine_rpath_of_libjpeg() {
    let out = tempfile::tempdir().unwrap();
    let (input, report) = repair_fixture(
        "pillow-13.0.0-cp311-cp311-macosx_11_0_arm64.whl",
        out.path(),
    );
    let output = WheelArchive::open(&report.output).unwrap();
    let libjpeg = "PIL/.dylibs/libjpeg.62.4.0.dylib";
    assert_eq!(report.platform_tags, ["macosx_11_0_arm64"]);
    assert!(report.grafted.is_empty(), "{report:?}");
    assert_eq!(report.edited, [libjpeg]);
    assert_eq!(changed_macho_entries(&input, &output), [libjpeg]);

    let before = input.read(libjpeg).unwrap();
    let before = MachOFile::parse(&before).unwrap();
    assert!(
        before.slices[0]
            .rpaths
            .iter()
            .any(|rpath| rpath.starts_with("/Users/runner/")),
        "{:?}",
        before.slices[0].rpaths
    );
    let after = output.read(libjpeg).unwrap();
    let after = MachOFile::parse(&after).unwrap();
    assert!(
        after.slices[0]
            .rpaths
            .iter()
            .all(|rpath| !rpath.starts_with('/')),
        "{:?}",
        after.slices[0].rpaths
    );
    assert_eq!(after.slices[0].dependencies, before.slices[0].dependencies);
    assert_every_macho_verifies(&output);
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn scipy_openblas32_0_3_33_with_vendored_gfortran_stays_byte_identical() {
    let out = tempfile::tempdir().unwrap();
    let (input, report) = repair_fixture(
        "scipy_openblas32-0.3.33.201.0-py3-none-macosx_11_0_arm64.whl",
        out.path(),
    );
    let output = WheelArchive::open(&report.output).unwrap();
    assert!(
        report.edited.is_empty() && report.grafted.is_empty(),
        "{report:?}"
    );
    assert_eq!(changed_macho_entries(&input, &output), Vec::<String>::new());
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn scipy_openblas32_0_3_34_loses_its_absolute_gfortran_rpaths_and_nothing_else() {
    let out = tempfile::tempdir().unwrap();
    let (input, report) = repair_fixture(
        "scipy_openblas32-0.3.34.481.3-py3-none-macosx_11_0_arm64.whl",
        out.path(),
    );
    let output = WheelArchive::open(&report.output).unwrap();
    let dylib = "scipy_openblas32/lib/libscipy_openblas.dylib";
    assert_eq!(report.edited, [dylib]);
    assert_eq!(changed_macho_entries(&input, &output), [dylib]);

    let before = input.read(dylib).unwrap();
    let before = MachOFile::parse(&before).unwrap();
    let absolute: Vec<&String> = before.slices[0]
        .rpaths
        .iter()
        .filter(|r| r.starts_with("/opt/gfortran"))
        .collect();
    assert_eq!(
        absolute.len(),
        3,
        "the fixture should carry three /opt/gfortran rpaths"
    );

    let after = output.read(dylib).unwrap();
    let after = MachOFile::parse(&after).unwrap();
    let slice = &after.slices[0];
    assert_eq!(slice.rpaths, ["@loader_path"]);
    assert_eq!(
        slice.install_id.as_deref(),
        Some("@rpath/libscipy_openblas.dylib")
    );
    assert_eq!(slice.exported_symbols, before.slices[0].exported_symbols);
    assert_every_macho_verifies(&output);
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn repair_is_deterministic() {
    let first = tempfile::tempdir().unwrap();
    let second = tempfile::tempdir().unwrap();
    let name = "scipy_openblas32-0.3.34.481.3-py3-none-macosx_11_0_arm64.whl";
    let (_, a) = repair_fixture(name, first.path());
    let (_, b) = repair_fixture(name, second.path());
    assert_eq!(
        std::fs::read(a.output).unwrap(),
        std::fs::read(b.output).unwrap()
    );
}
