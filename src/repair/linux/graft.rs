//! Deciding what to vendor: walks the DT_NEEDED graph of a wheel's ELF files,
//! separates what the wheel carries, what the policy lets the system provide,
//! and what must be grafted into `<dist>.libs/`, transitively.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::layout;
use super::search::{FoundLibrary, LibrarySearch, expand_origin};
use crate::elf::facts::ElfFacts;

/// One ELF file that will be in the repaired wheel.
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
    /// Vendored from the host file system.
    Grafted { source: PathBuf, data: Arc<Vec<u8>> },
}

/// How one DT_NEEDED of one binary is satisfied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    /// A file the wheel carries (possibly a grafted one), by install path.
    Internal(String),
    /// Left to the target system (policy whitelist, libpython, `--exclude`).
    System,
}

#[derive(Debug, thiserror::Error)]
pub enum GraftError {
    #[error(
        "{binary} needs {library}, which was not found in the wheel, --lib-path, its RUNPATH, LD_LIBRARY_PATH or the sysroot; pass --lib-path DIR with a {arch} build of it, or --exclude {library}"
    )]
    MissingLibrary {
        binary: String,
        library: String,
        arch: String,
    },
}

/// What the repair will do, before any byte is written.
#[derive(Debug, Default)]
pub struct GraftPlan {
    /// Every ELF of the repaired wheel, wheel files first, grafted ones after.
    pub binaries: Vec<Binary>,
    /// `links[i]` maps each DT_NEEDED of `binaries[i]` to how it is satisfied.
    pub links: Vec<BTreeMap<String, Link>>,
    /// Original DT_NEEDED name → new hash-mangled file name, for grafted libraries.
    pub renamed: BTreeMap<String, String>,
}

pub struct Rules<'a> {
    /// Libraries the target system provides (the policy's whitelist).
    pub is_system: &'a dyn Fn(&str) -> bool,
    pub exclude: &'a [glob::Pattern],
    /// Folder (install path) that receives grafted libraries: `<dist>.libs`.
    pub libs_dir: String,
    pub arch_name: String,
}

fn is_libpython(name: &str) -> bool {
    name.starts_with("libpython") && name.contains(".so")
}

/// `libfoo.so.1` + contents → `libfoo-1a2b3c4d.so.1`: the hash of the contents
/// keeps two different builds of one SONAME from ever sharing a name.
pub fn mangled_name(soname: &str, contents: &[u8]) -> String {
    let digest = Sha256::digest(contents);
    let short: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    match soname.split_once('.') {
        Some((stem, rest)) => format!("{stem}-{short}.{rest}"),
        None => format!("{soname}-{short}"),
    }
}

pub fn plan(
    wheel_binaries: Vec<Binary>,
    search: &mut LibrarySearch,
    rules: &Rules,
) -> Result<GraftPlan, GraftError> {
    let mut plan = GraftPlan::default();
    let mut by_path: BTreeMap<String, usize> = BTreeMap::new();
    let mut by_file_name: BTreeMap<String, String> = BTreeMap::new();
    for binary in &wheel_binaries {
        let file_name = binary
            .path
            .rsplit('/')
            .next()
            .unwrap_or(&binary.path)
            .to_string();
        by_file_name
            .entry(file_name)
            .or_insert_with(|| binary.path.clone());
    }
    for binary in wheel_binaries {
        by_path.insert(binary.path.clone(), plan.binaries.len());
        plan.binaries.push(binary);
    }
    let mut grafted_sources: BTreeMap<PathBuf, String> = BTreeMap::new();
    let mut queue: VecDeque<usize> = (0..plan.binaries.len()).collect();
    plan.links = vec![BTreeMap::new(); plan.binaries.len()];

    while let Some(index) = queue.pop_front() {
        let binary = plan.binaries[index].clone();
        let mut links = BTreeMap::new();
        for needed in &binary.facts.needed {
            let link = if (rules.is_system)(needed)
                || is_libpython(needed)
                || rules.exclude.iter().any(|p| p.matches(needed))
            {
                Link::System
            } else if let Some(path) = find_in_wheel(&binary, needed, &by_path, &by_file_name) {
                Link::Internal(path)
            } else {
                let found = find_on_host(&binary, needed, search).ok_or_else(|| {
                    GraftError::MissingLibrary {
                        binary: binary.path.clone(),
                        library: needed.clone(),
                        arch: rules.arch_name.clone(),
                    }
                })?;
                let install = match grafted_sources.get(&found.path) {
                    Some(existing) => existing.clone(),
                    None => {
                        let soname = found.facts.soname.clone().unwrap_or_else(|| needed.clone());
                        let new_name = mangled_name(&soname, &found.data);
                        let install = format!("{}/{}", rules.libs_dir, new_name);
                        grafted_sources.insert(found.path.clone(), install.clone());
                        if !by_path.contains_key(&install) {
                            by_path.insert(install.clone(), plan.binaries.len());
                            plan.binaries.push(Binary {
                                path: install.clone(),
                                facts: found.facts.clone(),
                                origin: Origin::Grafted {
                                    source: found.path.clone(),
                                    data: found.data.clone(),
                                },
                            });
                            plan.links.push(BTreeMap::new());
                            queue.push_back(plan.binaries.len() - 1);
                        }
                        install
                    }
                };
                let new_name = install.rsplit('/').next().unwrap_or(&install).to_string();
                plan.renamed.insert(needed.clone(), new_name);
                Link::Internal(install)
            };
            links.insert(needed.clone(), link);
        }
        plan.links[index] = links;
    }
    Ok(plan)
}

/// A DT_NEEDED is internal when one of the binary's `$ORIGIN` rpaths leads to
/// a wheel file of that name; failing that, any wheel file with that name
/// (packages that preload their libraries from Python rely on this).
fn find_in_wheel(
    binary: &Binary,
    needed: &str,
    by_path: &BTreeMap<String, usize>,
    by_file_name: &BTreeMap<String, String>,
) -> Option<String> {
    if let Origin::Wheel { .. } = binary.origin {
        let entries = binary.facts.runpath.iter().chain(&binary.facts.rpath);
        for folder in entries.filter_map(|entry| layout::rpath_in_wheel(entry, &binary.path)) {
            let candidate = layout::join(&folder, needed)?;
            if by_path.contains_key(&candidate) {
                return Some(candidate);
            }
        }
        return by_file_name.get(needed).cloned();
    }
    // A grafted library's siblings are the other grafted libraries.
    let sibling = layout::join(layout::parent(&binary.path), needed)?;
    by_path.contains_key(&sibling).then_some(sibling)
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
    fn mangled_name_keeps_the_version_suffix() {
        let name = mangled_name("libscipy_openblas.so", b"contents");
        assert!(
            name.starts_with("libscipy_openblas-") && name.ends_with(".so"),
            "{name}"
        );
        assert_eq!(name.len(), "libscipy_openblas-12345678.so".len());
        assert!(mangled_name("libgfortran.so.5", b"x").ends_with(".so.5"));
    }

    #[test]
    fn different_contents_never_share_a_mangled_name() {
        assert_ne!(
            mangled_name("libz.so.1", b"one build"),
            mangled_name("libz.so.1", b"another build")
        );
        assert_eq!(
            mangled_name("libz.so.1", b"same"),
            mangled_name("libz.so.1", b"same")
        );
    }
}
