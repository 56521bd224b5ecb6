//! The repair's one hook into SBOM writing: each platform's repair says what it vendored
//! (as [`Vendored`] facts it already has), and [`sbom_entry`] turns them, with the bytes
//! the wheel will carry, into `<dist>.dist-info/sboms/crosswheel.cdx.json`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Result, bail};
use sha2::{Digest, Sha256};

use crate::analysis::facts::{linux, macos};
use crate::analysis::provenance;
use crate::formats::sbom::{FILE_STEM, Facts, Package, VendoredFile, version_in_name};
use crate::formats::wheel::{Contents, WheelArchive};

/// What a platform's repair knows about the files it vendored.
#[derive(Debug, Default, Clone)]
pub struct Vendored {
    /// Per vendored file: its path inside the wheel, the host file it was copied from, and
    /// the library's own name (its SONAME or install name's file name).
    pub files: Vec<(String, PathBuf, String)>,
    /// `(a, b)`: wheel file `a` loads the vendored `b` (paths inside the wheel).
    pub needs: Vec<(String, String)>,
    /// Packages the binaries were compiled against without a file of theirs in the wheel
    /// (the toolchain names them: CUDA's runtime and headers).
    pub built_with: Vec<Package>,
}

impl Vendored {
    /// The facts of a Linux repair's resolved graph.
    pub fn of_linux(graph: &linux::Graph) -> Vendored {
        let mut vendored = Vendored::default();
        for binary in &graph.binaries {
            if let linux::Origin::Grafted { source, .. } = &binary.origin {
                let name = binary
                    .facts
                    .soname
                    .clone()
                    .unwrap_or_else(|| file_name(source));
                vendored
                    .files
                    .push((binary.path.clone(), source.clone(), name));
            }
        }
        for (binary, links) in graph.binaries.iter().zip(&graph.links) {
            for link in links.values() {
                if let linux::Link::Internal(path) = link
                    && vendored.files.iter().any(|(file, ..)| file == path)
                {
                    vendored.needs.push((binary.path.clone(), path.clone()));
                }
            }
        }
        vendored
    }

    /// The facts of a macOS repair's plan (`paths[i]` is binary `i`'s place in the wheel).
    pub fn of_macos(graph: &macos::Graph, paths: &[String]) -> Vendored {
        let mut vendored = Vendored::default();
        for (binary, path) in graph.binaries.iter().zip(paths) {
            if let macos::Origin::Host { source } = &binary.origin {
                let name = binary
                    .install_id()
                    .map(|id| id.rsplit('/').next().unwrap_or(id).to_string())
                    .unwrap_or_else(|| binary.file_name().to_string());
                vendored.files.push((path.clone(), source.clone(), name));
            }
        }
        for (index, links) in graph.links.iter().enumerate() {
            for link in links {
                if let macos::Link::Binary { index: target, .. } = link.link
                    && graph.binaries[target].is_grafted()
                {
                    vendored
                        .needs
                        .push((paths[index].clone(), paths[target].clone()));
                }
            }
        }
        vendored
    }
}

fn file_name(path: &std::path::Path) -> String {
    path.file_name()
        .map_or_else(String::new, |name| name.to_string_lossy().into_owned())
}

/// The SBOM entry for the vendored files among `entries` (the members the rewritten wheel
/// gets new bytes for) and the packages the binaries were built with, or `None` when
/// there is neither. An SBOM the wheel already
/// has (from its build backend or an earlier repair) is kept: this one takes a free name.
pub fn sbom_entry(
    wheel: &WheelArchive,
    vendored: &Vendored,
    entries: &[(String, Contents<'_>)],
    epoch: Option<u64>,
) -> Result<Option<(String, Contents<'static>)>> {
    if vendored.files.is_empty() && vendored.built_with.is_empty() {
        return Ok(None);
    }
    let bytes: BTreeMap<&str, &[u8]> = entries
        .iter()
        .filter_map(|(name, contents)| match contents {
            Contents::Bytes { data, .. } => Some((name.as_str(), data.as_slice())),
            Contents::Raw(_) => None,
        })
        .collect();
    let mut files = Vec::with_capacity(vendored.files.len());
    for (path, source, name) in &vendored.files {
        let Some(data) = bytes.get(path.as_str()) else {
            bail!(
                "{}: the SBOM cannot describe {path}: the repair did not write it",
                wheel.path().display()
            );
        };
        let found = provenance::of_file(source);
        files.push(VendoredFile {
            path: path.clone(),
            name: name.clone(),
            name_version: version_in_name(name),
            sha256: hex(&Sha256::digest(data)),
            source: found.source,
            licence: found.licence,
        });
    }
    let metadata = wheel.metadata_name_version();
    let facts = Facts {
        wheel: Package {
            name: metadata.name.clone(),
            version: metadata.version.clone(),
        },
        vendored: files,
        needs: vendored.needs.clone(),
        built_with: vendored.built_with.clone(),
        epoch,
    };
    let path = free_sbom_path(wheel);
    Ok(Some((
        path,
        Contents::Bytes {
            data: facts.to_bom().to_json(),
            mode: 0o644,
        },
    )))
}

/// `<dist-info>/sboms/crosswheel.cdx.json`, or `crosswheel-2.cdx.json`… when the wheel
/// already carries that name.
fn free_sbom_path(wheel: &WheelArchive) -> String {
    let folder = format!("{}/sboms", wheel.dist_info_dir());
    (1..)
        .map(|n| match n {
            1 => format!("{folder}/{FILE_STEM}.cdx.json"),
            n => format!("{folder}/{FILE_STEM}-{n}.cdx.json"),
        })
        .find(|path| wheel.entry(path).is_none())
        .expect("some numbered name is free")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
