//! The Linux half of `inspect`: ELF facts per file, where each DT_NEEDED
//! resolves, and the manylinux verdict for the wheel.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::analysis::facts::linux::Unresolved;
use crate::analysis::facts::linux::abi::policy_binaries;
use crate::analysis::facts::linux::{
    Binary, Link, Rules, SymbolReport, SystemLibraries, WheelFiles, check_symbols, needed_link,
    wheel_abi, wheel_binaries, wheel_libc,
};
use crate::analysis::manylinux::{
    Analysis, BoundImport, Policies, is_dynamic_loader, provided_names,
};
use crate::formats::elf::facts::{ElfClass, Endianness};
use crate::formats::wheel::WheelArchive;

/// Version of the JSON document; bumped only on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Serialize)]
pub struct LinuxReport {
    pub schema: u32,
    pub wheel: String,
    pub os: &'static str,
    pub arch: Option<String>,
    pub binaries: Vec<BinaryReport>,
    /// Absent for a wheel without ELF files.
    pub manylinux: Option<Analysis>,
    /// Imports that no library a binary loads defines: the wheel fails to import.
    pub unresolved_symbols: Vec<Unresolved>,
    /// Needed system libraries whose symbols could not be read, so imports they might
    /// define were not judged.
    pub unchecked_libraries: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct BinaryReport {
    pub path: String,
    pub machine: String,
    pub class: ElfClass,
    pub endianness: Endianness,
    pub soname: Option<String>,
    pub needed: Vec<NeededReport>,
    pub rpath: Vec<String>,
    pub runpath: Vec<String>,
    /// Version names required, grouped by prefix (`GLIBC` → `["2.17", ...]`).
    pub versioned_symbols: BTreeMap<String, BTreeSet<String>>,
    /// Imports without a version that bind to a versioned system definition.
    pub unversioned_imports: Vec<BoundImport>,
}

#[derive(Debug, Serialize)]
pub struct NeededReport {
    pub name: String,
    pub resolution: Resolution,
    /// The wheel file it resolves to, for `wheel`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolution {
    /// Carried by the wheel.
    Wheel,
    /// Provided by every system the most compatible policy covers.
    System,
    /// The interpreter itself provides it.
    Python,
    /// Must be vendored by `repair`.
    External,
}

/// `system_libraries`: the target's system libraries for the symbol check
/// (`sysroot::system_libraries`); without it, imports they may define are not judged.
pub fn inspect(wheel: &WheelArchive, system_libraries: Option<&Path>) -> Result<LinuxReport> {
    let binaries = wheel_binaries(wheel)?;
    let file_name = wheel.name().file_name();
    let abi_checked = wheel_abi(wheel.path(), &binaries)?;
    let Some(first) = binaries.first().filter(|_| abi_checked.is_some()) else {
        return Ok(LinuxReport {
            schema: SCHEMA_VERSION,
            wheel: file_name,
            os: "linux",
            arch: None,
            binaries: Vec::new(),
            manylinux: None,
            unresolved_symbols: Vec::new(),
            unchecked_libraries: Vec::new(),
        });
    };
    let arch = first.facts.arch.unwrap_or("unknown").to_string();
    // The C library the wheel's tag promises, else the one its binaries show; musllinux
    // policies are narrowed to the tag's (or the newest), as the repair judges them.
    let own_tag = wheel
        .name()
        .platform
        .iter()
        .find_map(|tag| tag.libc().map(|libc| (libc, tag.to_string())));
    let libc = own_tag
        .as_ref()
        .map_or_else(|| wheel_libc(&binaries), |(libc, _)| *libc);
    let mut policies =
        Policies::for_arch(libc, &arch).with_context(|| wheel.path().display().to_string())?;
    if !policies.judge_symbol_versions() {
        let named = own_tag.as_ref().map_or("auto", |(_, tag)| tag.as_str());
        policies = policies
            .only(named)
            .or_else(|_| policies.only("auto"))
            .with_context(|| wheel.path().display().to_string())?;
    }
    // What `repair --plat auto` would leave to the system.
    let whitelist = &policies.most_compatible().whitelist;
    let is_system = |name: &str| whitelist.contains(name) || is_dynamic_loader(name);
    let rules = Rules {
        is_system: &is_system,
        exclude: &[],
    };
    let files = WheelFiles::new(&binaries);
    let symbols = wheel_symbols(&binaries, &files, &rules, system_libraries);
    let reports = binaries
        .iter()
        .zip(&symbols.bound)
        .map(|(binary, bound)| binary_report(binary, &files, &rules, bound))
        .collect();
    let policy_binaries = policy_binaries(&binaries, &symbols);
    let analysis = policies.analyze(&policy_binaries, &provided_names(&policy_binaries));
    Ok(LinuxReport {
        schema: SCHEMA_VERSION,
        wheel: file_name,
        os: "linux",
        arch: Some(arch),
        binaries: reports,
        manylinux: Some(analysis),
        unchecked_libraries: symbols.unread.iter().cloned().collect(),
        unresolved_symbols: symbols.unresolved,
    })
}

/// The repair's symbol check, on the wheel as it is: each DT_NEEDED resolved as
/// `repair --plat auto` would leave it (external libraries are not judged).
fn wheel_symbols(
    binaries: &[Binary],
    files: &WheelFiles,
    rules: &Rules<'_>,
    system_libraries: Option<&Path>,
) -> SymbolReport {
    let links: Vec<BTreeMap<String, Link>> = binaries
        .iter()
        .map(|binary| {
            binary
                .facts
                .needed
                .iter()
                .filter_map(|name| Some((name.clone(), needed_link(binary, name, files, rules)?)))
                .collect()
        })
        .collect();
    let machine = binaries.first().map_or(0, |b| b.facts.machine);
    let roots: Vec<&Path> = system_libraries.into_iter().collect();
    check_symbols(
        binaries,
        &links,
        &SystemLibraries::open_all(&roots, machine),
    )
}

fn binary_report(
    binary: &Binary,
    files: &WheelFiles,
    rules: &Rules<'_>,
    bound: &[BoundImport],
) -> BinaryReport {
    let facts = &binary.facts;
    let needed = facts
        .needed
        .iter()
        .map(|name| {
            let (resolution, path) = match needed_link(binary, name, files, rules) {
                Some(Link::Internal(path)) => (Resolution::Wheel, Some(path)),
                Some(Link::System) => (Resolution::System, None),
                Some(Link::Python) => (Resolution::Python, None),
                None => (Resolution::External, None),
            };
            NeededReport {
                name: name.clone(),
                resolution,
                path,
            }
        })
        .collect();
    BinaryReport {
        path: binary.path.clone(),
        machine: facts.arch.unwrap_or("unknown").to_string(),
        class: facts.class,
        endianness: facts.endianness,
        soname: facts.soname.clone(),
        needed,
        rpath: facts.rpath.clone(),
        runpath: facts.runpath.clone(),
        versioned_symbols: facts.versions_by_prefix(),
        unversioned_imports: bound.to_vec(),
    }
}

/// The human-readable form of the report.
pub fn render(report: &LinuxReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "{}", report.wheel);
    for binary in &report.binaries {
        let _ = writeln!(
            out,
            "\n{} ({}, {:?}, {:?})",
            binary.path, binary.machine, binary.class, binary.endianness
        );
        if let Some(soname) = &binary.soname {
            let _ = writeln!(out, "  SONAME   {soname}");
        }
        for needed in &binary.needed {
            let place = match (&needed.resolution, &needed.path) {
                (Resolution::Wheel, Some(path)) => format!("in wheel: {path}"),
                (resolution, _) => format!("{resolution:?}").to_lowercase(),
            };
            let _ = writeln!(out, "  NEEDED   {} ({place})", needed.name);
        }
        if !binary.rpath.is_empty() {
            let _ = writeln!(out, "  RPATH    {}", binary.rpath.join(":"));
        }
        if !binary.runpath.is_empty() {
            let _ = writeln!(out, "  RUNPATH  {}", binary.runpath.join(":"));
        }
        for (prefix, versions) in &binary.versioned_symbols {
            let list: Vec<&str> = versions.iter().map(String::as_str).collect();
            let _ = writeln!(out, "  {prefix:<8} {}", list.join(" "));
        }
        for bound in &binary.unversioned_imports {
            let _ = writeln!(
                out,
                "  UNVERSIONED {} (from {}, which has it only since {})",
                bound.symbol, bound.library, bound.version
            );
        }
    }
    for unresolved in &report.unresolved_symbols {
        let _ = writeln!(out, "\nunresolved: {unresolved}");
    }
    if !report.unchecked_libraries.is_empty() {
        let _ = writeln!(
            out,
            "\nsymbols not checked against: {} (not among the target's system libraries crosswheel reads)",
            report.unchecked_libraries.join(", ")
        );
    }
    match &report.manylinux {
        None => {
            let _ = writeln!(out, "\nno ELF files: a pure wheel needs no repair");
        }
        Some(analysis) => {
            let _ = writeln!(
                out,
                "\npolicy: {} ({})",
                analysis.policy,
                analysis.platform_tags.join(".")
            );
            for (library, users) in &analysis.external_libraries {
                let users: Vec<&str> = users.iter().map(String::as_str).collect();
                let _ = writeln!(out, "external: {library} (needed by {})", users.join(", "));
            }
            if let Some(next) = analysis.next_blockers() {
                let _ = writeln!(out, "not {}:", next.policy);
                for violation in next.violations.iter().take(10) {
                    let _ = writeln!(out, "  {violation}");
                }
                if next.violations.len() > 10 {
                    let _ = writeln!(out, "  ... and {} more", next.violations.len() - 10);
                }
            }
        }
    }
    out
}
