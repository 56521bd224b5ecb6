//! The DT_NEEDED graph of a wheel's ELF files: for every needed library,
//! whether the wheel carries it, the target system provides it, it is
//! libpython, or it is external and must be found on this host (and then
//! its own needs, transitively). `inspect` asks the same question as
//! `repair` through [`needed_link`], so the two never disagree.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

use super::search::{FoundLibrary, LibrarySearch, expand_origin};
use crate::analysis::facts::layout;
use crate::formats::elf::facts::ElfFacts;

/// One ELF file of the wheel, or one that the repair will add to it.
#[derive(Debug, Clone)]
pub struct Binary {
    /// Install-relative path (what `$ORIGIN` sees).
    pub path: String,
    pub facts: Arc<ElfFacts>,
    pub origin: Origin,
}

#[derive(Debug, Clone)]
pub enum Origin {
    /// Already in the wheel, under this zip entry name.
    Wheel { entry: String },
    /// Found on the host file system, to be vendored.
    Grafted { source: PathBuf, data: Arc<Vec<u8>> },
}

/// How one DT_NEEDED of one binary is satisfied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    /// A file the wheel carries (possibly a grafted one), by install path.
    Internal(String),
    /// Left to the target system (policy whitelist, dynamic loader, `--exclude`).
    System,
    /// libpython: the interpreter provides it, so it is never looked up nor
    /// vendored; the manylinux policy still reports the dependency, since a
    /// wheel must not link libpython (auditwheel's rule).
    Python,
}

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error(
        "{binary} needs {library}, which was not found in the wheel, --lib-path, its RUNPATH, LD_LIBRARY_PATH or the sysroot; pass --lib-path DIR with a {arch} build of it, or --exclude {library}"
    )]
    MissingLibrary {
        binary: String,
        library: String,
        arch: String,
    },
}

/// The graph: every ELF of the (repaired) wheel and how each of its
/// DT_NEEDED entries is satisfied.
#[derive(Debug, Default)]
pub struct Graph {
    /// Wheel files first, in entry order; host libraries found for them after.
    pub binaries: Vec<Binary>,
    /// `links[i]` maps each DT_NEEDED of `binaries[i]` to how it is satisfied.
    pub links: Vec<BTreeMap<String, Link>>,
}

/// What decides a DT_NEEDED without looking at the host.
pub struct Rules<'a> {
    /// Libraries the target system provides (a policy's whitelist, the loader).
    pub is_system: &'a dyn Fn(&str) -> bool,
    /// Names the user takes responsibility for (`--exclude`).
    pub exclude: &'a [glob::Pattern],
}

/// What the walk needs to follow external libraries onto the host.
pub struct HostSearch<'a> {
    pub search: &'a mut LibrarySearch,
    /// Architecture name for the missing-library error, e.g. `aarch64`.
    pub arch_name: String,
    /// The install path a library found on the host gets in the wheel,
    /// given the library and the DT_NEEDED name that found it.
    pub vendored_path: &'a dyn Fn(&FoundLibrary, &str) -> String,
}

/// `libpython3.11.so.1.0`, `libpython3.13t.so`, `libpython2.7m.so`,
/// `libpython3.so`: the interpreter's own library, whatever its ABI flags
/// and version suffix.
pub fn is_libpython(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("libpython") else {
        return false;
    };
    let Some((version, suffix)) = rest.split_once(".so") else {
        return false;
    };
    let version = version.trim_end_matches(|c: char| c.is_ascii_lowercase());
    let numeric = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    // `3.11`, or `3` for the stable-ABI forwarder `libpython3.so`.
    let version_ok = match version.split_once('.') {
        Some((major, minor)) => numeric(major) && numeric(minor),
        None => numeric(version),
    };
    let suffix_ok = suffix.is_empty()
        || suffix
            .strip_prefix('.')
            .is_some_and(|tail| tail.split('.').all(numeric));
    version_ok && suffix_ok
}

/// The wheel's binaries by install path and by file name.
#[derive(Debug, Default)]
pub struct WheelFiles {
    by_path: BTreeMap<String, usize>,
    /// File name → install path of the first wheel file with that name.
    by_file_name: BTreeMap<String, String>,
}

impl WheelFiles {
    pub fn new(binaries: &[Binary]) -> WheelFiles {
        let mut files = WheelFiles::default();
        for (index, binary) in binaries.iter().enumerate() {
            let file_name = binary.path.rsplit('/').next().unwrap_or(&binary.path);
            files
                .by_file_name
                .entry(file_name.to_string())
                .or_insert_with(|| binary.path.clone());
            files.by_path.insert(binary.path.clone(), index);
        }
        files
    }

    fn contains(&self, path: &str) -> bool {
        self.by_path.contains_key(path)
    }
}

/// How `needed`, a DT_NEEDED of `binary`, is satisfied without looking at
/// the host; `None` when it is external. The order is the rule: libpython
/// first (never vendored), then the system and `--exclude`, then the wheel.
pub fn needed_link(
    binary: &Binary,
    needed: &str,
    files: &WheelFiles,
    rules: &Rules<'_>,
) -> Option<Link> {
    if is_libpython(needed) {
        Some(Link::Python)
    } else if (rules.is_system)(needed) || rules.exclude.iter().any(|p| p.matches(needed)) {
        Some(Link::System)
    } else {
        find_in_wheel(binary, needed, files).map(Link::Internal)
    }
}

/// Resolves every DT_NEEDED of `wheel_binaries`, finding external libraries
/// on the host and adding them (and what they need) to the graph under
/// their vendored paths.
pub fn resolve(
    wheel_binaries: Vec<Binary>,
    rules: &Rules<'_>,
    host: HostSearch<'_>,
) -> Result<Graph, ResolveError> {
    let mut files = WheelFiles::new(&wheel_binaries);
    let mut graph = Graph {
        links: vec![BTreeMap::new(); wheel_binaries.len()],
        binaries: wheel_binaries,
    };
    let mut grafted_sources: BTreeMap<PathBuf, String> = BTreeMap::new();
    let mut queue: VecDeque<usize> = (0..graph.binaries.len()).collect();
    while let Some(index) = queue.pop_front() {
        let binary = graph.binaries[index].clone();
        let mut links = BTreeMap::new();
        for needed in &binary.facts.needed {
            let link = match needed_link(&binary, needed, &files, rules) {
                Some(link) => link,
                None => {
                    let found = find_on_host(&binary, needed, host.search).ok_or_else(|| {
                        ResolveError::MissingLibrary {
                            binary: binary.path.clone(),
                            library: needed.clone(),
                            arch: host.arch_name.clone(),
                        }
                    })?;
                    let install = match grafted_sources.get(&found.path) {
                        Some(existing) => existing.clone(),
                        None => {
                            let install = (host.vendored_path)(&found, needed);
                            grafted_sources.insert(found.path.clone(), install.clone());
                            if !files.contains(&install) {
                                files.by_path.insert(install.clone(), graph.binaries.len());
                                graph.binaries.push(Binary {
                                    path: install.clone(),
                                    facts: found.facts.clone(),
                                    origin: Origin::Grafted {
                                        source: found.path.clone(),
                                        data: found.data.clone(),
                                    },
                                });
                                graph.links.push(BTreeMap::new());
                                queue.push_back(graph.binaries.len() - 1);
                            }
                            install
                        }
                    };
                    Link::Internal(install)
                }
            };
            links.insert(needed.clone(), link);
        }
        graph.links[index] = links;
    }
    Ok(graph)
}

/// A DT_NEEDED is internal when one of the binary's `$ORIGIN` rpaths leads to
/// a wheel file of that name; failing that, any wheel file with that name
/// (packages that preload their libraries from Python rely on this).
fn find_in_wheel(binary: &Binary, needed: &str, files: &WheelFiles) -> Option<String> {
    if let Origin::Wheel { .. } = binary.origin {
        let entries = binary.facts.runpath.iter().chain(&binary.facts.rpath);
        for folder in entries.filter_map(|entry| layout::rpath_in_wheel(entry, &binary.path)) {
            let candidate = layout::join(&folder, needed)?;
            if files.contains(&candidate) {
                return Some(candidate);
            }
        }
        return files.by_file_name.get(needed).cloned();
    }
    // A grafted library's siblings are the other grafted libraries.
    let sibling = layout::join(layout::parent(&binary.path), needed)?;
    files.contains(&sibling).then_some(sibling)
}

fn find_on_host(binary: &Binary, needed: &str, search: &mut LibrarySearch) -> Option<FoundLibrary> {
    // Only a grafted library's rpaths mean anything on this host; a wheel
    // file's `$ORIGIN` points into the wheel, and absolute entries are
    // honoured the way the build machine's loader would have.
    let origin = match &binary.origin {
        Origin::Grafted { source, .. } => source.parent().map(|p| p.to_path_buf()),
        Origin::Wheel { .. } => None,
    };
    let expand = |entries: &[String]| -> Vec<PathBuf> {
        entries
            .iter()
            .filter_map(|entry| match &origin {
                Some(dir) => Some(expand_origin(entry, dir)),
                None if entry.starts_with('/') => Some(PathBuf::from(entry)),
                None => None,
            })
            .collect()
    };
    search.find(
        needed,
        &expand(&binary.facts.rpath),
        &expand(&binary.facts.runpath),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libpython_names_with_any_abi_flags_and_version_suffix() {
        for name in [
            "libpython3.11.so.1.0",
            "libpython3.13t.so.1.0",
            "libpython3.8d.so",
            "libpython2.7m.so.1",
            "libpython3.12.so",
            "libpython3.so",
        ] {
            assert!(is_libpython(name), "{name}");
        }
        for name in [
            "libpython.so",
            "libpythonista.so.1",
            "libpython3.11.a",
            "libpython3.11.so.x",
            "libz.so.1",
        ] {
            assert!(!is_libpython(name), "{name}");
        }
    }
}
