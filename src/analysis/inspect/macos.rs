//! The macOS half of `inspect`: Mach-O facts per file and slice, where each
//! dependency resolves (as dyld would, inside the wheel), and signatures.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;
use serde::Serialize;

use crate::analysis::facts::macos::{Graph, Link, Rules, SliceFacts, Via, resolve, wheel_binaries};
use crate::formats::macho::{DependencyKind, FileType, SignatureStatus};
use crate::formats::wheel::WheelArchive;

/// One library a wheel's binaries depend on, as `delocate-listdeps` lists it: a host
/// file by its path, a file of the wheel by its path in the wheel, a system library or
/// one not found by its install name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ListedDependency {
    pub name: String,
    /// macOS provides it (delocate's `filter_system_libs` drops these without `--all`).
    pub system: bool,
}

/// Every library the wheel's binaries (and the host libraries they pull in) depend on,
/// found as the repair would find them (`lib_paths` first), with the binaries depending
/// on each.
pub fn host_dependencies(
    wheel: &WheelArchive,
    lib_paths: &[std::path::PathBuf],
) -> Result<BTreeMap<ListedDependency, BTreeSet<String>>> {
    use crate::analysis::facts::macos::Origin;
    let rules = Rules {
        exclude: &[],
        lib_paths,
        executable_path: None,
        search_host: true,
    };
    let graph = resolve(wheel_binaries(wheel)?, &rules);
    let name_of = |index: usize| match &graph.binaries[index].origin {
        Origin::Host { source } => source.display().to_string(),
        Origin::Wheel { entry } => entry.clone(),
    };
    let mut listed: BTreeMap<ListedDependency, BTreeSet<String>> = BTreeMap::new();
    for (index, links) in graph.links.iter().enumerate() {
        for link in links {
            let dependency = match link.link {
                Link::System | Link::Excluded => ListedDependency {
                    name: link.dependency.install_name.clone(),
                    system: true,
                },
                Link::Binary { index: found, .. } => ListedDependency {
                    name: name_of(found),
                    system: false,
                },
                Link::Unresolved => ListedDependency {
                    name: link.dependency.install_name.clone(),
                    system: false,
                },
            };
            listed.entry(dependency).or_default().insert(name_of(index));
        }
    }
    Ok(listed)
}

/// Version of the JSON document; bumped only on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Serialize)]
pub struct MacosReport {
    pub schema: u32,
    pub wheel: String,
    pub os: &'static str,
    pub platform_tags: Vec<String>,
    pub binaries: Vec<BinaryReport>,
    /// Install name → wheel files that depend on it, by where it resolves.
    pub in_wheel: BTreeMap<String, BTreeSet<String>>,
    pub system: BTreeMap<String, BTreeSet<String>>,
    pub unresolved: BTreeMap<String, BTreeSet<String>>,
}

#[derive(Debug, Serialize)]
pub struct BinaryReport {
    pub path: String,
    pub fat: bool,
    pub slices: Vec<SliceReport>,
}

#[derive(Debug, Serialize)]
pub struct SliceReport {
    pub arch: String,
    pub file_type: String,
    pub install_id: Option<String>,
    pub dependencies: Vec<DependencyReport>,
    pub rpaths: Vec<String>,
    pub minos: Option<String>,
    pub sdk: Option<String>,
    /// Bytes free between the load commands and the first section.
    pub header_padding: u64,
    pub signature: SignatureReport,
}

#[derive(Debug, Serialize)]
pub struct DependencyReport {
    pub install_name: String,
    pub kind: &'static str,
    pub resolution: Resolution,
    /// The wheel file it resolves to, for `wheel`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// How it was found, for `wheel`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<Via>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolution {
    Wheel,
    System,
    /// Not found: `repair` must vendor it (or a weak dependency may be absent).
    Unresolved,
}

#[derive(Debug, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum SignatureReport {
    Missing,
    Valid { adhoc: bool, linker_signed: bool },
    Invalid { reason: String },
}

fn kind_name(kind: DependencyKind) -> &'static str {
    match kind {
        DependencyKind::Load => "load",
        DependencyKind::Weak => "weak",
        DependencyKind::Reexport => "reexport",
        DependencyKind::Upward => "upward",
        DependencyKind::Lazy => "lazy",
    }
}

fn file_type_name(file_type: FileType) -> String {
    match file_type {
        FileType::Object => "object".into(),
        FileType::Execute => "execute".into(),
        FileType::Dylib => "dylib".into(),
        FileType::Dylinker => "dylinker".into(),
        FileType::Bundle => "bundle".into(),
        FileType::DylibStub => "dylib_stub".into(),
        FileType::Dsym => "dsym".into(),
        FileType::KextBundle => "kext_bundle".into(),
        FileType::Other(raw) => format!("0x{raw:x}"),
    }
}

pub fn inspect(wheel: &WheelArchive) -> Result<MacosReport> {
    let binaries = wheel_binaries(wheel)?;
    let rules = Rules {
        exclude: &[],
        lib_paths: &[],
        executable_path: None,
        search_host: false,
    };
    let graph = resolve(binaries, &rules);
    let mut report = MacosReport {
        schema: SCHEMA_VERSION,
        wheel: wheel.name().file_name(),
        os: "macos",
        platform_tags: wheel
            .name()
            .platform
            .iter()
            .map(ToString::to_string)
            .collect(),
        binaries: Vec::new(),
        in_wheel: BTreeMap::new(),
        system: BTreeMap::new(),
        unresolved: BTreeMap::new(),
    };
    for (index, binary) in graph.binaries.iter().enumerate() {
        let slices = binary
            .slices
            .iter()
            .map(|slice| slice_report(&graph, index, slice))
            .collect();
        for link in &graph.links[index] {
            let bucket = match link.link {
                Link::Binary { .. } => &mut report.in_wheel,
                Link::System | Link::Excluded => &mut report.system,
                Link::Unresolved => &mut report.unresolved,
            };
            bucket
                .entry(link.dependency.install_name.clone())
                .or_default()
                .insert(binary.path.clone());
        }
        report.binaries.push(BinaryReport {
            path: binary.path.clone(),
            fat: binary.is_fat,
            slices,
        });
    }
    Ok(report)
}

fn slice_report(graph: &Graph, index: usize, slice: &SliceFacts) -> SliceReport {
    let dependencies = slice
        .dependencies
        .iter()
        .map(|dependency| {
            let link = graph.links[index]
                .iter()
                .find(|link| link.dependency.install_name == dependency.install_name)
                .map(|link| &link.link);
            let (resolution, path, via) = match link {
                Some(Link::Binary { index: target, via }) => (
                    Resolution::Wheel,
                    Some(graph.binaries[*target].path.clone()),
                    Some(*via),
                ),
                Some(Link::System | Link::Excluded) => (Resolution::System, None, None),
                Some(Link::Unresolved) | None => (Resolution::Unresolved, None, None),
            };
            DependencyReport {
                install_name: dependency.install_name.clone(),
                kind: kind_name(dependency.kind),
                resolution,
                path,
                via,
            }
        })
        .collect();
    let target = slice.deployment_target;
    SliceReport {
        arch: slice.arch.to_string(),
        file_type: file_type_name(slice.file_type),
        install_id: slice.install_id.clone(),
        dependencies,
        rpaths: slice.rpaths.clone(),
        minos: target.map(|target| target.minos.to_string()),
        sdk: target.map(|target| target.sdk.to_string()),
        header_padding: slice.header_padding,
        signature: match &slice.signature {
            SignatureStatus::Missing => SignatureReport::Missing,
            SignatureStatus::Valid {
                adhoc,
                linker_signed,
            } => SignatureReport::Valid {
                adhoc: *adhoc,
                linker_signed: *linker_signed,
            },
            SignatureStatus::Invalid(reason) => SignatureReport::Invalid {
                reason: reason.clone(),
            },
        },
    }
}

/// The human-readable form of the report.
pub fn render(report: &MacosReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "{}", report.wheel);
    for binary in &report.binaries {
        let arches: Vec<&str> = binary
            .slices
            .iter()
            .map(|slice| slice.arch.as_str())
            .collect();
        let _ = writeln!(out, "\n{} ({})", binary.path, arches.join(", "));
        for slice in &binary.slices {
            if binary.slices.len() > 1 {
                let _ = writeln!(out, "  [{}]", slice.arch);
            }
            let _ = writeln!(out, "  type       {}", slice.file_type);
            if let Some(id) = &slice.install_id {
                let _ = writeln!(out, "  id         {id}");
            }
            for dependency in &slice.dependencies {
                let place = match (&dependency.resolution, &dependency.path) {
                    (Resolution::Wheel, Some(path)) => format!("in wheel: {path}"),
                    (resolution, _) => format!("{resolution:?}").to_lowercase(),
                };
                let weak = if dependency.kind == "load" {
                    String::new()
                } else {
                    format!(", {}", dependency.kind)
                };
                let _ = writeln!(
                    out,
                    "  dylib      {} ({place}{weak})",
                    dependency.install_name
                );
            }
            for rpath in &slice.rpaths {
                let _ = writeln!(out, "  rpath      {rpath}");
            }
            if let (Some(minos), Some(sdk)) = (&slice.minos, &slice.sdk) {
                let _ = writeln!(out, "  minos      {minos} (sdk {sdk})");
            }
            let _ = writeln!(out, "  padding    {} bytes", slice.header_padding);
            let signature = match &slice.signature {
                SignatureReport::Missing => "missing".to_string(),
                SignatureReport::Valid {
                    adhoc,
                    linker_signed,
                } => {
                    let kind = if *linker_signed {
                        "linker-signed"
                    } else if *adhoc {
                        "ad-hoc"
                    } else {
                        "signed"
                    };
                    format!("valid ({kind})")
                }
                SignatureReport::Invalid { reason } => format!("INVALID: {reason}"),
            };
            let _ = writeln!(out, "  signature  {signature}");
        }
    }
    if report.binaries.is_empty() {
        let _ = writeln!(out, "\nno Mach-O files: a pure wheel needs no repair");
    }
    for (title, bucket) in [
        ("unresolved", &report.unresolved),
        ("system", &report.system),
    ] {
        for (name, users) in bucket {
            let users: Vec<&str> = users.iter().map(String::as_str).collect();
            let _ = writeln!(out, "{title}: {name} (needed by {})", users.join(", "));
        }
    }
    out
}
