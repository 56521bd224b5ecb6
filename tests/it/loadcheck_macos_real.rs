//! The static macOS load check on real wheels that load on a Mac, per slice: arm64, x86_64,
//! both for universal2.

use crate::common;

use crosswheel::analysis::loadcheck::check_macos_wheel;
use crosswheel::formats::wheel::WheelArchive;

fn check(file_name: &str) -> crosswheel::analysis::loadcheck::LoadCheckReport {
    let wheel = WheelArchive::open(common::fixture(file_name)).expect("fixture opens");
    check_macos_wheel(&wheel).unwrap_or_else(|error| panic!("{file_name}: {error:#}"))
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn numpy_macos_arm64_wheel_passes_the_load_check() {
    let report = check("numpy-2.2.6-cp311-cp311-macosx_11_0_arm64.whl");
    assert!(report.passed(), "{report}");
    assert!(
        report
            .checked
            .iter()
            .any(|path| path == "numpy/.dylibs/libscipy_openblas64_.dylib")
    );
    assert!(report.checked.len() > 20, "{:?}", report.checked);
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn pillow_macos_arm64_wheel_passes_the_load_check() {
    let report = check("pillow-13.0.0-cp311-cp311-macosx_11_0_arm64.whl");
    assert!(report.passed(), "{report}");
    assert!(
        report
            .checked
            .iter()
            .any(|path| path == "PIL/_imaging.cpython-311-darwin.so")
    );
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn pyzmq_universal2_wheel_passes_the_load_check() {
    let report = check("pyzmq-27.3.0-cp311-cp311-macosx_10_15_universal2.whl");
    assert!(report.passed(), "{report}");
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn numpy_linux_wheel_fails_for_want_of_an_arm64_macos_tag() {
    let report = check("numpy-2.2.6-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl");
    assert!(!report.passed());
    assert!(
        report
            .to_string()
            .contains("no arm64 or x86_64 macOS platform"),
        "{report}"
    );
}

/// A universal2 wheel is checked in both slices: with one binary thinned to x86_64, the
/// arm64 check fails for it (and only for it), naming the slice.
#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn universal2_wheels_are_checked_in_each_slice() {
    let name = "pyzmq-27.3.0-cp311-cp311-macosx_10_15_universal2.whl";
    let wheel = WheelArchive::open(common::fixture(name)).unwrap();
    let thinned = "zmq/backend/cython/_zmq.cpython-311-darwin.so";
    let dir = tempfile::tempdir().unwrap();
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for entry in wheel.entries() {
        if entry.name.ends_with("/RECORD") {
            continue;
        }
        let data = wheel.read(&entry.name).unwrap();
        let data = if entry.name == thinned {
            crosswheel::formats::macho::thin_slice(&data, crosswheel::formats::macho::Arch::X86_64)
                .unwrap()
        } else {
            data
        };
        files.push((entry.name.clone(), data));
    }
    let borrowed: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_slice()))
        .collect();
    let path = common::make_wheel(dir.path(), name, &borrowed);
    let report = check_macos_wheel(&WheelArchive::open(&path).unwrap()).unwrap();
    let failures: Vec<String> = report.failures.iter().map(ToString::to_string).collect();
    assert_eq!(
        failures,
        [format!(
            "{thinned} (arm64): has no slice of this architecture, which the wheel's tags promise (only x86_64)"
        )],
        "{report}"
    );
}
