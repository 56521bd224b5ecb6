//! `inspect` on real macOS wheels: per-slice facts, resolution, signatures.

use crate::common;

use crosswheel::analysis::inspect::macos::{Resolution, SignatureReport, inspect, render};
use crosswheel::formats::wheel::WheelArchive;

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn openblas_0_3_34_report_shows_the_gfortran_rpaths_and_a_linker_signature() {
    let wheel = WheelArchive::open(common::fixture(
        "scipy_openblas32-0.3.34.481.3-py3-none-macosx_11_0_arm64.whl",
    ))
    .unwrap();
    let report = inspect(&wheel).unwrap();
    assert_eq!((report.schema, report.os), (1, "macos"));
    let dylib = report
        .binaries
        .iter()
        .find(|b| b.path == "scipy_openblas32/lib/libscipy_openblas.dylib")
        .unwrap();
    let slice = &dylib.slices[0];
    assert_eq!(slice.arch, "arm64");
    assert_eq!(slice.file_type, "dylib");
    assert_eq!(
        slice.install_id.as_deref(),
        Some("@rpath/libscipy_openblas.dylib")
    );
    assert_eq!(
        slice
            .rpaths
            .iter()
            .filter(|r| r.starts_with("/opt/gfortran"))
            .count(),
        3
    );
    assert_eq!(slice.minos.as_deref(), Some("11.0"));
    assert!(
        matches!(slice.signature, SignatureReport::Valid { .. }),
        "{:?}",
        slice.signature
    );
    assert!(report.system.contains_key("/usr/lib/libSystem.B.dylib"));
    assert!(report.unresolved.is_empty());

    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["schema"], 1);
    assert_eq!(json["os"], "macos");
    assert_eq!(
        json["binaries"][0]["slices"][0]["signature"]["status"],
        "valid"
    );
    assert!(render(&report).contains("rpath      /opt/gfortran"));
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn numpy_extensions_resolve_their_openblas_inside_the_wheel() {
    let wheel = WheelArchive::open(common::fixture(
        "numpy-2.2.6-cp311-cp311-macosx_11_0_arm64.whl",
    ))
    .unwrap();
    let report = inspect(&wheel).unwrap();
    let linalg = report
        .binaries
        .iter()
        .find(|b| b.path == "numpy/linalg/_umath_linalg.cpython-311-darwin.so")
        .unwrap();
    let openblas = linalg.slices[0]
        .dependencies
        .iter()
        .find(|d| d.install_name == "@loader_path/../.dylibs/libscipy_openblas64_.dylib")
        .unwrap();
    assert_eq!(openblas.resolution, Resolution::Wheel);
    assert_eq!(
        openblas.path.as_deref(),
        Some("numpy/.dylibs/libscipy_openblas64_.dylib")
    );
    assert!(report.unresolved.is_empty(), "{:?}", report.unresolved);
    assert!(
        report
            .in_wheel
            .contains_key("@loader_path/libgfortran.5.dylib")
    );
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn pyzmq_universal2_reports_both_slices() {
    let wheel = WheelArchive::open(common::fixture(
        "pyzmq-27.3.0-cp311-cp311-macosx_10_15_universal2.whl",
    ))
    .unwrap();
    let report = inspect(&wheel).unwrap();
    let zmq = report
        .binaries
        .iter()
        .find(|b| b.path == "zmq/.dylibs/libzmq.5.dylib")
        .unwrap();
    assert!(zmq.fat);
    let arches: Vec<&str> = zmq.slices.iter().map(|s| s.arch.as_str()).collect();
    assert!(
        arches.contains(&"arm64") && arches.contains(&"x86_64"),
        "{arches:?}"
    );
    assert!(render(&report).contains("[x86_64]"));
}
