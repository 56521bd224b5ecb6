//! Bad input to `crosswheel repair` gets one clear error line, a non-zero
//! exit, and no output file.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{crosswheel_bin, fixture, make_wheel, minimal_metadata};

/// Runs `crosswheel repair` and returns its one error line.
fn repair_fails(wheel: &Path, extra: &[&str]) -> String {
    let out = tempfile::tempdir().expect("tempdir");
    let output = Command::new(crosswheel_bin())
        .arg("repair")
        .arg("-w")
        .arg(out.path())
        .args(extra)
        .arg(wheel)
        .output()
        .expect("run crosswheel");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        !output.status.success(),
        "repair of {} succeeded",
        wheel.display()
    );
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one error line, got:\n{stderr}");
    assert!(lines[0].starts_with("error: "), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(out.path()).expect("read out").collect();
    assert!(
        left.is_empty(),
        "output folder not empty after failure: {left:?}"
    );
    lines[0].to_string()
}

fn wheel_with(dir: &Path, file_name: &str, extra: &[(&str, &[u8])]) -> std::path::PathBuf {
    let metadata = minimal_metadata("demo", "1.0", "cp311-cp311-linux_aarch64");
    let mut files: Vec<(&str, &[u8])> = metadata
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_slice()))
        .collect();
    files.extend_from_slice(extra);
    make_wheel(dir, file_name, &files)
}

#[test]
fn a_file_that_is_not_a_zip_is_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("demo-1.0-cp311-cp311-linux_aarch64.whl");
    std::fs::write(&path, b"this is not a zip archive").expect("write");
    let line = repair_fails(&path, &[]);
    assert!(line.contains("zip"), "{line}");
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn a_truncated_wheel_is_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let real = std::fs::read(fixture(
        "zstandard-0.25.0-cp311-cp311-manylinux2014_ppc64le.manylinux_2_17_ppc64le.whl",
    ))
    .expect("read");
    let path = dir
        .path()
        .join("zstandard-0.25.0-cp311-cp311-manylinux2014_ppc64le.manylinux_2_17_ppc64le.whl");
    std::fs::write(&path, &real[..real.len() / 2]).expect("write");
    repair_fails(&path, &[]);
}

#[test]
fn an_entry_escaping_the_wheel_is_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = wheel_with(
        dir.path(),
        "demo-1.0-cp311-cp311-linux_aarch64.whl",
        &[("../evil.py", b"x")],
    );
    let line = repair_fails(&path, &[]);
    assert!(line.contains("../evil.py"), "{line}");
}

#[test]
fn an_absolute_entry_is_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = wheel_with(
        dir.path(),
        "demo-1.0-cp311-cp311-linux_aarch64.whl",
        &[("/etc/evil.py", b"x")],
    );
    let line = repair_fails(&path, &[]);
    assert!(line.contains("/etc/evil.py"), "{line}");
}

#[test]
fn a_symlink_entry_is_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("demo-1.0-cp311-cp311-linux_aarch64.whl");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).expect("create"));
    let options = zip::write::SimpleFileOptions::default();
    for (name, data) in minimal_metadata("demo", "1.0", "cp311-cp311-linux_aarch64") {
        zip.start_file(name, options).expect("start");
        std::io::Write::write_all(&mut zip, &data).expect("write");
    }
    zip.add_symlink("demo/link.so", "/usr/lib/libc.so.6", options)
        .expect("symlink");
    zip.finish().expect("finish");
    let line = repair_fails(&path, &[]);
    assert!(line.contains("demo/link.so"), "{line}");
}

#[test]
fn a_record_hash_mismatch_is_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let metadata = minimal_metadata("demo", "1.0", "cp311-cp311-linux_aarch64");
    let mut record: String = metadata
        .iter()
        .map(|(n, d)| common::record_line(n, d))
        .collect();
    // The right size, the hash of other contents.
    record.push_str(&common::record_line("demo/__init__.py", b"HELLO"));
    record.push_str("demo-1.0.dist-info/RECORD,,\n");
    let mut files: Vec<(&str, &[u8])> = vec![
        ("demo/__init__.py", b"hello"),
        ("demo-1.0.dist-info/RECORD", record.as_bytes()),
    ];
    files.extend(metadata.iter().map(|(n, d)| (n.as_str(), d.as_slice())));
    let path = make_wheel(dir.path(), "demo-1.0-cp311-cp311-linux_aarch64.whl", &files);
    let line = repair_fails(&path, &[]);
    assert!(line.contains("demo/__init__.py"), "{line}");
}

#[test]
#[ignore = "slow: Debian's system libraries for the symbol check (a download on first use)"]
fn an_unparseable_elf_file_is_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broken = b"\x7fELF\x02\x01\x01".to_vec();
    broken.resize(100, 0xff);
    let path = wheel_with(
        dir.path(),
        "demo-1.0-cp311-cp311-linux_aarch64.whl",
        &[("demo/_x.so", &broken)],
    );
    let line = repair_fails(&path, &[]);
    assert!(line.contains("demo/_x.so"), "{line}");
}

#[test]
#[ignore = "slow: Debian's system libraries for the symbol check (a download on first use)"]
fn a_missing_library_is_named_with_the_binary_that_needs_it() {
    // psycopg2's extension without the libraries its wheel vendors.
    let source = fixture(
        "psycopg2_binary-2.9.10-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
    );
    let unpacked = tempfile::tempdir().expect("tempdir");
    common::unzip_to(&source, unpacked.path());
    let extension = std::fs::read(
        unpacked
            .path()
            .join("psycopg2/_psycopg.cpython-311-aarch64-linux-gnu.so"),
    )
    .expect("read");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = wheel_with(
        dir.path(),
        "demo-1.0-cp311-cp311-linux_aarch64.whl",
        &[("demo/_psycopg.cpython-311-aarch64-linux-gnu.so", &extension)],
    );
    let line = repair_fails(&path, &[]);
    assert!(
        line.contains("demo/_psycopg.cpython-311-aarch64-linux-gnu.so") && line.contains("libpq-"),
        "{line}"
    );
    assert!(
        line.contains("--lib-path"),
        "the error should say how to fix it: {line}"
    );
}

#[test]
#[ignore = "slow: Debian's system libraries for the symbol check (a download on first use)"]
fn an_impossible_plat_is_refused_with_the_reason() {
    let wheel =
        fixture("pillow-13.0.0-cp311-cp311-manylinux_2_27_aarch64.manylinux_2_28_aarch64.whl");
    let line = repair_fails(&wheel, &["--plat", "manylinux_2_17_aarch64"]);
    assert!(
        line.contains("manylinux_2_17_aarch64") && line.contains("GLIBC_2."),
        "{line}"
    );
}

#[test]
#[ignore = "slow: Debian's system libraries for the symbol check (a download on first use)"]
fn a_plat_for_another_architecture_is_refused() {
    let wheel =
        fixture("pillow-13.0.0-cp311-cp311-manylinux_2_27_aarch64.manylinux_2_28_aarch64.whl");
    let line = repair_fails(&wheel, &["--plat", "manylinux_2_28_x86_64"]);
    assert!(line.contains("x86_64"), "{line}");
}
