//! Resolving install names the way dyld does, statically.
//!
//! `@loader_path` is the folder of the image that records the name;
//! `@executable_path` the main executable's folder; `@rpath/` tries the
//! LC_RPATHs of the loading image and then those of every image that loaded
//! it (dyld walks the chain of loaders). Locations are either virtual paths
//! inside the wheel or host paths, so the same rules serve `inspect`, the
//! load check (wheel only) and the repair (wheel first, then the host).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::{Component, Path, PathBuf};

use crate::analysis::facts::layout;
use crate::formats::macho::{Arch, Dependency, DependencyKind, is_macho, is_system_library};

use super::binaries::{MachOBinary, Origin};

/// Where an install name points.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Location {
    /// An install path inside the wheel.
    Wheel(String),
    /// A path on this host.
    Host(PathBuf),
}

/// Which rule found a dependency; the repair keeps only references that
/// work wherever the wheel is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// `@loader_path/...` of the image itself.
    LoaderPath,
    /// `@rpath/...` through one of the image's own LC_RPATHs.
    OwnRpath,
    /// `@rpath/...` through an LC_RPATH of an image that loads this one:
    /// works only when loaded through that image.
    LoaderRpath,
    /// `@executable_path/...`.
    ExecutablePath,
    /// An absolute name equal to another image's LC_ID_DYLIB.
    InstallId,
    /// An absolute name found at that path on the host.
    AbsolutePath,
    /// The name's file name found in a `--lib-path` folder.
    LibPath,
}

/// How one dependency of one binary is satisfied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    /// macOS provides it.
    System,
    /// The user asked to leave it alone.
    Excluded,
    /// Another binary of the graph.
    Binary { index: usize, via: Via },
    /// Nothing found.
    Unresolved,
}

#[derive(Debug, Clone)]
pub struct DependencyLink {
    pub dependency: Dependency,
    pub link: Link,
}

impl DependencyLink {
    /// A weak dependency may be missing at load time; every other kind must load.
    pub fn is_required(&self) -> bool {
        self.dependency.kind != DependencyKind::Weak
    }
}

/// The binaries (wheel files first, then host libraries found for them)
/// and how each dependency resolves.
#[derive(Debug, Clone)]
pub struct Graph {
    pub binaries: Vec<MachOBinary>,
    /// `links[i]` follows `binaries[i].dependencies()`.
    pub links: Vec<Vec<DependencyLink>>,
    /// Host files found for a dependency but skipped for lacking an architecture its
    /// binary has, by (binary index, install name): the reason a dependency that stays
    /// unresolved was not found.
    pub wrong_arch: BTreeMap<(usize, String), WrongArch>,
}

/// A host library found under a dependency's name that lacks one of the architectures
/// of the binary that needs it (dyld skips such files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrongArch {
    pub path: PathBuf,
    pub has: Vec<Arch>,
    pub wanted: Vec<Arch>,
}

pub struct Rules<'a> {
    pub exclude: &'a [glob::Pattern],
    /// Folders searched by file name before anything else on the host
    /// (what DYLD_LIBRARY_PATH does on a Mac).
    pub lib_paths: &'a [PathBuf],
    /// Host folder standing in for `@executable_path` of extension modules.
    pub executable_path: Option<&'a Path>,
    /// Whether to look outside the wheel at all.
    pub search_host: bool,
}

/// Resolves every dependency of `binaries`, adding host libraries (and
/// theirs, transitively) when `rules.search_host` allows. Candidates inside
/// the wheel always win over host files.
pub fn resolve(binaries: Vec<MachOBinary>, rules: &Rules<'_>) -> Graph {
    let links = binaries
        .iter()
        .map(|binary| {
            binary
                .dependencies()
                .into_iter()
                .map(|dependency| DependencyLink {
                    dependency,
                    link: Link::Unresolved,
                })
                .collect()
        })
        .collect();
    let mut graph = Graph {
        binaries,
        links,
        wrong_arch: BTreeMap::new(),
    };
    let mut known: HashMap<Location, usize> = graph
        .binaries
        .iter()
        .enumerate()
        .map(|(index, binary)| (location_of(binary), index))
        .collect();
    let mut host_cache: HashMap<PathBuf, Option<MachOBinary>> = HashMap::new();

    loop {
        // Every new link can lengthen some image's loader chain and so make
        // another `@rpath` resolvable: settle inside the known set first.
        let mut changed = false;
        for (index, position) in unresolved(&graph) {
            if let Some(link) = known_link(&graph, &known, rules, index, position) {
                graph.links[index][position].link = link;
                changed = true;
            }
        }
        if changed {
            continue;
        }
        if !rules.search_host {
            break;
        }
        let mut found = None;
        for (index, position) in unresolved(&graph) {
            match host_file(&graph, rules, &mut host_cache, index, position) {
                HostFile::Usable(binary, via) => {
                    found = Some((index, position, (binary, via)));
                    break;
                }
                HostFile::WrongArch(wrong) => {
                    let name = graph.links[index][position].dependency.install_name.clone();
                    graph.wrong_arch.entry((index, name)).or_insert(wrong);
                }
                HostFile::Missing => {}
            }
        }
        let Some((index, position, (binary, via))) = found else {
            break;
        };
        let location = location_of(&binary);
        let target = match known.get(&location) {
            Some(&existing) => existing,
            None => {
                let target = graph.binaries.len();
                graph.links.push(
                    binary
                        .dependencies()
                        .into_iter()
                        .map(|dependency| DependencyLink {
                            dependency,
                            link: Link::Unresolved,
                        })
                        .collect(),
                );
                graph.binaries.push(binary);
                known.insert(location, target);
                target
            }
        };
        graph.links[index][position].link = Link::Binary { index: target, via };
    }
    graph
}

fn unresolved(graph: &Graph) -> Vec<(usize, usize)> {
    graph
        .links
        .iter()
        .enumerate()
        .flat_map(|(index, links)| {
            links
                .iter()
                .enumerate()
                .filter(|(_, link)| link.link == Link::Unresolved)
                .map(move |(position, _)| (index, position))
        })
        .collect()
}

pub fn location_of(binary: &MachOBinary) -> Location {
    match &binary.origin {
        Origin::Wheel { .. } => Location::Wheel(binary.path.clone()),
        Origin::Host { source } => Location::Host(source.clone()),
    }
}

fn folder_of(location: &Location) -> Location {
    match location {
        Location::Wheel(path) => Location::Wheel(layout::parent(path).to_string()),
        Location::Host(path) => {
            Location::Host(path.parent().map(Path::to_path_buf).unwrap_or_default())
        }
    }
}

/// `folder` + `relative`; `None` when a wheel path would leave the wheel.
fn join(folder: &Location, relative: &str) -> Option<Location> {
    let relative = relative.trim_start_matches('/');
    match folder {
        Location::Wheel(dir) => layout::join(dir, relative).map(Location::Wheel),
        Location::Host(dir) => Some(Location::Host(normalize(&dir.join(relative)))),
    }
}

/// Lexical normalisation (dyld does not resolve symlinks before `..`
/// either; the file is canonicalised only once found).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The text after `prefix` when it is followed by nothing or a `/`.
fn after_prefix<'n>(name: &'n str, prefix: &str) -> Option<&'n str> {
    name.strip_prefix(prefix)
        .filter(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Images that load `index`, nearest first (breadth-first, each once).
pub fn loaders(graph: &Graph, index: usize) -> Vec<usize> {
    let mut parents: HashMap<usize, BTreeSet<usize>> = HashMap::new();
    for (loader, links) in graph.links.iter().enumerate() {
        for link in links {
            if let Link::Binary { index: target, .. } = link.link {
                parents.entry(target).or_default().insert(loader);
            }
        }
    }
    let mut order = Vec::new();
    let mut seen = BTreeSet::from([index]);
    let mut queue = VecDeque::from([index]);
    while let Some(current) = queue.pop_front() {
        for &parent in parents.get(&current).into_iter().flatten() {
            if seen.insert(parent) {
                order.push(parent);
                queue.push_back(parent);
            }
        }
    }
    order
}

/// The folder `@executable_path` stands for when `index` is loaded: the
/// image itself or a loading image if one is an executable, else the
/// configured host folder.
fn executable_folder(graph: &Graph, rules: &Rules<'_>, index: usize) -> Option<Location> {
    std::iter::once(index)
        .chain(loaders(graph, index))
        .find(|&candidate| graph.binaries[candidate].is_executable())
        .map(|executable| folder_of(&location_of(&graph.binaries[executable])))
        .or_else(|| {
            rules
                .executable_path
                .map(|dir| Location::Host(dir.to_path_buf()))
        })
}

/// Expands an `@loader_path`, `@executable_path` or absolute path recorded
/// in the image `holder` (an install name or an LC_RPATH).
fn expand(graph: &Graph, rules: &Rules<'_>, path: &str, holder: usize) -> Option<Location> {
    if let Some(rest) = after_prefix(path, "@loader_path") {
        join(&folder_of(&location_of(&graph.binaries[holder])), rest)
    } else if let Some(rest) = after_prefix(path, "@executable_path") {
        join(&executable_folder(graph, rules, holder)?, rest)
    } else if path.starts_with('/') {
        Some(Location::Host(normalize(Path::new(path))))
    } else if !path.starts_with('@') {
        // dyld reads a relative path from the current folder (a build tree's `libs/`).
        let cwd = std::env::current_dir().ok()?;
        Some(Location::Host(normalize(&cwd.join(path))))
    } else {
        None
    }
}

/// Where dyld would look for `name` recorded in `index`, in its order.
fn candidates(graph: &Graph, rules: &Rules<'_>, index: usize, name: &str) -> Vec<(Location, Via)> {
    if let Some(rest) = after_prefix(name, "@rpath") {
        let own = graph.binaries[index]
            .rpaths()
            .into_iter()
            .map(|rpath| (index, rpath));
        let inherited = loaders(graph, index).into_iter().flat_map(|loader| {
            graph.binaries[loader]
                .rpaths()
                .into_iter()
                .map(move |rpath| (loader, rpath))
        });
        return own
            .chain(inherited)
            .filter_map(|(holder, rpath)| {
                let via = if holder == index {
                    Via::OwnRpath
                } else {
                    Via::LoaderRpath
                };
                Some((join(&expand(graph, rules, &rpath, holder)?, rest)?, via))
            })
            .collect();
    }
    let via = if name.starts_with("@loader_path") {
        Via::LoaderPath
    } else if name.starts_with("@executable_path") {
        Via::ExecutablePath
    } else {
        Via::AbsolutePath
    };
    expand(graph, rules, name, index)
        .map(|location| vec![(location, via)])
        .unwrap_or_default()
}

fn is_excluded(rules: &Rules<'_>, name: &str) -> bool {
    let file_name = name.rsplit('/').next().unwrap_or(name);
    rules
        .exclude
        .iter()
        .any(|pattern| pattern.matches(name) || pattern.matches(file_name))
}

/// Resolves a dependency among the binaries already in the graph.
fn known_link(
    graph: &Graph,
    known: &HashMap<Location, usize>,
    rules: &Rules<'_>,
    index: usize,
    position: usize,
) -> Option<Link> {
    let name = &graph.links[index][position].dependency.install_name;
    if is_system_library(name) {
        return Some(Link::System);
    }
    if is_excluded(rules, name) {
        return Some(Link::Excluded);
    }
    for (location, via) in candidates(graph, rules, index, name) {
        let location = match location {
            Location::Host(path) => match std::fs::canonicalize(&path) {
                Ok(canonical) => Location::Host(canonical),
                Err(_) => continue,
            },
            wheel => wheel,
        };
        if let Some(&target) = known.get(&location) {
            return Some(Link::Binary { index: target, via });
        }
    }
    // Names that are not paths dyld could open (e.g. `/DLC/...` ids a
    // previous repair gave vendored libraries) still match the image that
    // carries them as its install id.
    if !name.starts_with('@') {
        let owner =
            graph.binaries.iter().enumerate().find(|(other, binary)| {
                *other != index && binary.install_id() == Some(name.as_str())
            });
        if let Some((target, _)) = owner {
            return Some(Link::Binary {
                index: target,
                via: Via::InstallId,
            });
        }
    }
    None
}

/// What the host has under a dependency's name.
enum HostFile {
    Usable(MachOBinary, Via),
    /// Only files lacking one of the binary's architectures (the first of them).
    WrongArch(WrongArch),
    Missing,
}

/// Finds a not-yet-known host library for a dependency: `--lib-path`
/// folders by file name first, then the host locations dyld would try.
fn host_file(
    graph: &Graph,
    rules: &Rules<'_>,
    cache: &mut HashMap<PathBuf, Option<MachOBinary>>,
    index: usize,
    position: usize,
) -> HostFile {
    let name = &graph.links[index][position].dependency.install_name;
    let Some(file_name) = name.rsplit('/').next().filter(|leaf| !leaf.is_empty()) else {
        return HostFile::Missing;
    };
    let from_lib_paths = rules
        .lib_paths
        .iter()
        .map(|dir| (Location::Host(dir.join(file_name)), Via::LibPath));
    let wanted = graph.binaries[index].arches();
    let mut outcome = HostFile::Missing;
    for (location, via) in from_lib_paths.chain(candidates(graph, rules, index, name)) {
        let Location::Host(path) = location else {
            continue;
        };
        let Some(binary) = load_host_library(cache, &path) else {
            continue;
        };
        let has = binary.arches();
        if wanted.iter().all(|arch| has.contains(arch)) {
            return HostFile::Usable(binary, via);
        }
        tracing::debug!("skipping {} (lacks one of {wanted:?})", path.display());
        if matches!(outcome, HostFile::Missing) {
            outcome = HostFile::WrongArch(WrongArch {
                path: std::fs::canonicalize(&path).unwrap_or(path),
                has,
                wanted: wanted.clone(),
            });
        }
    }
    outcome
}

/// A host Mach-O file, parsed once per canonical path.
fn load_host_library(
    cache: &mut HashMap<PathBuf, Option<MachOBinary>>,
    path: &Path,
) -> Option<MachOBinary> {
    let canonical = std::fs::canonicalize(path).ok()?;
    cache
        .entry(canonical.clone())
        .or_insert_with(|| {
            let data = std::fs::read(&canonical)
                .ok()
                .filter(|data| is_macho(data))?;
            let file_name = canonical.file_name()?.to_string_lossy().into_owned();
            match MachOBinary::parse(
                file_name,
                Origin::Host {
                    source: canonical.clone(),
                },
                data,
            ) {
                Ok(binary) => Some(binary),
                Err(error) => {
                    tracing::warn!("ignoring {}: {error}", canonical.display());
                    None
                }
            }
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loader_path_prefix_needs_a_separator() {
        assert_eq!(
            after_prefix("@loader_path/../x", "@loader_path"),
            Some("/../x")
        );
        assert_eq!(after_prefix("@loader_path", "@loader_path"), Some(""));
        assert_eq!(after_prefix("@loader_pathx/y", "@loader_path"), None);
    }

    #[test]
    fn wheel_locations_never_leave_the_wheel() {
        let folder = Location::Wheel("pkg".into());
        assert_eq!(
            join(&folder, "/.dylibs/liba.dylib"),
            Some(Location::Wheel("pkg/.dylibs/liba.dylib".into()))
        );
        assert_eq!(join(&folder, "/../../lib/liba.dylib"), None);
    }

    #[test]
    fn host_locations_normalise_parent_components() {
        let folder = Location::Host(PathBuf::from("/opt/x/lib"));
        assert_eq!(
            join(&folder, "/../.dylibs/libg.dylib"),
            Some(Location::Host(PathBuf::from("/opt/x/.dylibs/libg.dylib")))
        );
    }
}
