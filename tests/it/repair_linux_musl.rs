//! The musllinux repair of what zig's musl really links: zig names musl's C library
//! `libc.so`, where musllinux wheels and auditwheel's policy name it
//! `libc.musl-<arch>.so.1` (musl's loader takes either for itself). The repair leaves it to
//! the system under the musllinux name, and `auditwheel show` agrees with the tag. Debian's
//! trees of system libraries are glibc's: the repair of a musl wheel neither fetches nor
//! reads them.

use crate::common;

use std::process::Command;

use crosswheel::formats::elf::facts::{ElfFacts, is_elf};

/// The DT_NEEDED entries of every ELF file in `wheel`.
fn needed_in(wheel: &std::path::Path) -> Vec<String> {
    let mut archive =
        zip::ZipArchive::new(std::fs::File::open(wheel).expect("open")).expect("a zip");
    let mut needed = Vec::new();
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).expect("entry");
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut bytes).expect("read entry");
        if is_elf(&bytes) {
            needed.extend(ElfFacts::parse(&bytes).expect("ELF").needed);
        }
    }
    needed
}

#[test]
#[ignore = "slow: links with zig's musl"]
fn zigs_name_for_musl_is_repaired_to_the_name_musllinux_wheels_need() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let source = dir.path().join("hello.c");
    std::fs::write(
        &source,
        "#include <stdio.h>\nint hello(void) { return puts(\"hello\"); }\n",
    )
    .expect("write source");
    let module = dir.path().join("hello.cpython-311-x86_64-linux-musl.so");
    let cc = common::zig_wrapper("musllinux-x86_64", false);
    let compiled = Command::new(&cc)
        .args(["-shared", "-fPIC", "-o"])
        .arg(&module)
        .arg(&source)
        .output()
        .expect("run zig");
    assert!(
        compiled.status.success(),
        "{}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    let bytes = std::fs::read(&module).expect("read the module");
    assert_eq!(
        ElfFacts::parse(&bytes).expect("ELF").needed,
        ["libc.so"],
        "what zig's musl links (if zig changes this, the rename has nothing to do)"
    );
    let mut files = common::minimal_metadata("hello", "0.1", "cp311-cp311-linux_x86_64");
    files.push(("hello.cpython-311-x86_64-linux-musl.so".into(), bytes));
    let named: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(name, data)| (name.as_str(), data.as_slice()))
        .collect();
    let wheel = common::make_wheel(dir.path(), "hello-0.1-cp311-cp311-linux_x86_64.whl", &named);

    // An empty cache and a mirror nothing answers: a fetch of Debian's glibc libraries
    // would fail the repair.
    let output = Command::new(common::crosswheel_under_test())
        .arg("repair")
        .arg(&wheel)
        .arg("-w")
        .arg(dir.path().join("out"))
        .env("CROSSWHEEL_CACHE", dir.path().join("empty-cache"))
        .env("CROSSWHEEL_DEBIAN_MIRROR", "http://127.0.0.1:9/debian")
        .output()
        .expect("run crosswheel");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let repaired = std::path::PathBuf::from(
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .last()
            .expect("the repaired wheel's path"),
    );
    assert_eq!(
        repaired.file_name().unwrap().to_string_lossy(),
        "hello-0.1-cp311-cp311-musllinux_1_2_x86_64.whl"
    );
    assert_eq!(needed_in(&repaired), ["libc.musl-x86_64.so.1"]);

    let shown = Command::new("auditwheel")
        .args(["show", "--json"])
        .arg(&repaired)
        .output()
        .unwrap_or_else(|err| panic!("cannot run auditwheel ({err}): scripts/setup-test-env"));
    let json: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap_or_else(|err| {
        panic!(
            "auditwheel show: {err}: {}",
            String::from_utf8_lossy(&shown.stderr)
        )
    });
    assert_eq!(json["overall_tag"], "musllinux_1_2_x86_64", "{json}");
}
