//! `crosswheel repair --lib-path DIR` on a macOS wheel goes through the
//! macOS repair: the dylib found in DIR is vendored and referenced with
//! `@loader_path`.

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use crosswheel::analysis::loadcheck::check_macos_wheel;
use crosswheel::formats::macho::MachOFile;
use crosswheel::formats::wheel::WheelArchive;

const SOURCE: &str = "extern char *scipy_openblas_get_corename(void);\nconst char *PyInit__blas(void) { return scipy_openblas_get_corename(); }\n";

#[test]
#[ignore = "slow: a zig-built dylib"]
fn cli_repair_vendors_a_lib_path_dylib_into_a_macos_wheel() {
    let work = tempfile::tempdir().unwrap();
    common::unzip_to(
        &common::fixture("scipy_openblas32-0.3.34.481.3-py3-none-macosx_11_0_arm64.whl"),
        &work.path().join("blas"),
    );
    let lib_dir = work.path().join("blas/scipy_openblas32/lib");
    std::fs::write(work.path().join("blas.c"), SOURCE).unwrap();
    let cache = std::env::var_os("ZIG_GLOBAL_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/root/.cache/crosswheel/zig".into());
    let built = Command::new("python3")
        .args([
            "-m",
            "ziglang",
            "cc",
            "-target",
            "aarch64-macos.11.0",
            "-O2",
            "-shared",
            "-undefined",
            "dynamic_lookup",
        ])
        .args([
            "-Wl,-headerpad_max_install_names",
            "-o",
            "_blas.cpython-311-darwin.so",
            "blas.c",
            "-lscipy_openblas",
        ])
        .arg(format!("-L{}", lib_dir.display()))
        .current_dir(work.path())
        .env("ZIG_GLOBAL_CACHE_DIR", cache)
        .status()
        .expect("this test needs python3 with the ziglang package: pip install ziglang");
    assert!(built.success(), "zig cc failed");
    let extension = std::fs::read(work.path().join("_blas.cpython-311-darwin.so")).unwrap();
    let metadata = common::minimal_metadata("blasext", "1.0", "cp311-cp311-macosx_11_0_arm64");
    let mut files: Vec<(&str, &[u8])> = metadata
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_slice()))
        .collect();
    files.push(("blasext/__init__.py", b""));
    files.push(("blasext/_blas.cpython-311-darwin.so", &extension));
    let wheel = common::make_wheel(
        work.path(),
        "blasext-1.0-cp311-cp311-macosx_11_0_arm64.whl",
        &files,
    );

    let out = work.path().join("wheelhouse");
    let run = Command::new(common::crosswheel_bin())
        .arg("repair")
        .arg("--lib-path")
        .arg(&lib_dir)
        .arg("-w")
        .arg(&out)
        .arg(&wheel)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "crosswheel repair failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );

    let repaired =
        WheelArchive::open(out.join("blasext-1.0-cp311-cp311-macosx_11_0_arm64.whl")).unwrap();
    assert!(
        repaired
            .entry("blasext/.dylibs/libscipy_openblas.dylib")
            .is_some()
    );
    let ext = repaired
        .read("blasext/_blas.cpython-311-darwin.so")
        .unwrap();
    let parsed = MachOFile::parse(&ext).unwrap();
    assert!(
        parsed.slices[0]
            .dependencies
            .iter()
            .any(|d| d.install_name == "@loader_path/.dylibs/libscipy_openblas.dylib")
    );
    assert!(check_macos_wheel(&repaired).unwrap().passed());
}
