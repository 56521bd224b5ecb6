//! The static macOS arm64 load check on real wheels that load on a Mac.

use crate::common;

use crosswheel::loadcheck::check_macos_wheel;
use crosswheel::wheel::WheelArchive;

fn check(file_name: &str) -> crosswheel::loadcheck::LoadCheckReport {
    let wheel = WheelArchive::open(common::fixture(file_name)).expect("fixture opens");
    check_macos_wheel(&wheel).unwrap_or_else(|error| panic!("{file_name}: {error:#}"))
}

#[test]
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
fn pyzmq_universal2_wheel_passes_the_load_check() {
    let report = check("pyzmq-27.3.0-cp311-cp311-macosx_10_15_universal2.whl");
    assert!(report.passed(), "{report}");
}

#[test]
fn numpy_linux_wheel_fails_for_want_of_an_arm64_macos_tag() {
    let report = check("numpy-2.2.6-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl");
    assert!(!report.passed());
    assert!(
        report.to_string().contains("no arm64 macOS platform"),
        "{report}"
    );
}
