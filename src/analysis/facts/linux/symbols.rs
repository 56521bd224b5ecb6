//! Does every symbol a wheel's binaries import resolve where they will be loaded?
//!
//! auditwheel checks symbol *versions* only: a reference that carries no version (the
//! linker found no versioned definition, as when zig's glibc stubs lack a function) or
//! that no needed library defines at all passes it and then fails at import time
//! (`undefined symbol: __gcc_qmul`), or loads only on systems newer than the tag says
//! (`__snprintfieee128`, glibc 2.32, in a `manylinux_2_17` wheel). This check walks the
//! loader's search scope of every binary — its DT_NEEDED libraries, transitively, inside
//! the wheel or on the target system, plus what the interpreter process always has
//! loaded — and reports each non-weak import that no library of that scope defines, and
//! each unversioned import that binds to a versioned system definition (its version is
//! what the binary really requires from the system).
//!
//! The target system's libraries are read from a root folder (a Debian tree of the
//! target's C library and compiler runtimes). A needed system library the root lacks
//! (libGL, libX11) could define anything: a binary that needs one is never reported
//! unresolved, and the report says which libraries could not be read.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::graph::{Binary, Link};
pub use crate::analysis::manylinux::BoundImport;
use crate::formats::elf::facts::{ElfFacts, is_elf, split_version_name};

/// Libraries every interpreter process has loaded before it imports an extension: CPython
/// links the C library and libm, so their symbols are in the global scope whatever the
/// extension's own DT_NEEDED entries say.
const INTERPRETER_LIBRARIES: [&str; 2] = ["libc.so.6", "libm.so.6"];

/// Symbols whose unversioned imports bind on every system of a manylinux tag, whatever
/// glibc version defined them upstream (`config/symbol-backports.toml`).
fn backported(symbol: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Backports {
        unversioned: Vec<String>,
    }
    static BACKPORTS: std::sync::OnceLock<Backports> = std::sync::OnceLock::new();
    BACKPORTS
        .get_or_init(|| {
            toml::from_str(include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/config/symbol-backports.toml"
            )))
            // Compiled in; the unit test below parses it.
            .unwrap_or_else(|err| panic!("config/symbol-backports.toml is invalid: {err}"))
        })
        .unversioned
        .iter()
        .any(|name| name == symbol)
}

/// The interpreter exports CPython's C API, whose names all start with `Py` or `_Py`.
fn interpreter_provides(symbol: &str) -> bool {
    symbol.starts_with("Py") || symbol.starts_with("_Py")
}

/// The target system's shared libraries, read from a root folder on demand.
#[derive(Debug)]
pub struct SystemLibraries {
    search_dirs: Vec<PathBuf>,
    machine: u16,
    loaded: Mutex<BTreeMap<String, Option<Arc<ElfFacts>>>>,
}

impl SystemLibraries {
    /// The libraries under `root` (`lib/`, `usr/lib/`, their multiarch and `64` folders)
    /// for ELF machine `machine`; files of another machine are ignored.
    pub fn open(root: &Path, machine: u16) -> SystemLibraries {
        Self::open_all(&[root], machine)
    }

    /// [`SystemLibraries::open`] over several roots, searched in order.
    pub fn open_all(roots: &[&Path], machine: u16) -> SystemLibraries {
        let mut search_dirs = Vec::new();
        for (root, base) in roots
            .iter()
            .flat_map(|root| ["lib", "usr/lib", "lib64", "usr/lib64"].map(|base| (root, base)))
        {
            let dir = root.join(base);
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut multiarch: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| {
                    path.is_dir()
                        && path
                            .file_name()
                            .is_some_and(|name| name.to_string_lossy().contains("-linux-"))
                })
                .collect();
            multiarch.sort();
            search_dirs.extend(multiarch);
            search_dirs.push(dir);
        }
        SystemLibraries {
            search_dirs,
            machine,
            loaded: Mutex::new(BTreeMap::new()),
        }
    }

    /// The facts of system library `name`, or `None` when the root has no readable file
    /// of that name for this machine.
    pub fn library(&self, name: &str) -> Option<Arc<ElfFacts>> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        loaded
            .entry(name.to_owned())
            .or_insert_with(|| self.read(name))
            .clone()
    }

    fn read(&self, name: &str) -> Option<Arc<ElfFacts>> {
        self.search_dirs.iter().find_map(|dir| {
            let data = std::fs::read(dir.join(name)).ok()?;
            if !is_elf(&data) {
                return None;
            }
            let facts = ElfFacts::parse(&data).ok()?;
            (facts.machine == self.machine).then(|| Arc::new(facts))
        })
    }
}

/// An import that nothing in the binary's scope defines: loading it fails.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unresolved {
    pub binary: String,
    pub symbol: String,
    /// The version the import names, if any.
    pub version: Option<String>,
    /// The libraries searched, in scope order.
    pub searched: Vec<String>,
}

impl std::fmt::Display for Unresolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let symbol = match &self.version {
            Some(version) => format!("{}@{version}", self.symbol),
            None => self.symbol.clone(),
        };
        let mut searched = self.searched.clone();
        searched.push("the interpreter".to_owned());
        write!(
            f,
            "{} imports {symbol}, which none of the libraries it loads defines ({})",
            self.binary,
            searched.join(", ")
        )
    }
}

/// The result of checking every binary.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SymbolReport {
    /// Per binary (same order as the input), its unversioned imports bound to versioned
    /// system definitions.
    pub bound: Vec<Vec<BoundImport>>,
    pub unresolved: Vec<Unresolved>,
    /// Needed system libraries the root could not provide, so imports that might come
    /// from them were not judged.
    pub unread: BTreeSet<String>,
}

/// What provides symbols in a binary's scope.
enum Provider {
    File {
        name: String,
        facts: Arc<ElfFacts>,
    },
    /// A needed library nobody could read: it may define anything.
    Unknown,
}

/// Checks every binary; `links[i]` says how each DT_NEEDED of `binaries[i]` is
/// satisfied (an entry missing from the map is an external library not in the wheel).
pub fn check_symbols(
    binaries: &[Binary],
    links: &[BTreeMap<String, Link>],
    system: &SystemLibraries,
) -> SymbolReport {
    let by_path: BTreeMap<&str, usize> = binaries
        .iter()
        .enumerate()
        .map(|(index, binary)| (binary.path.as_str(), index))
        .collect();
    let mut report = SymbolReport::default();
    for (index, binary) in binaries.iter().enumerate() {
        let scope = Scope::of(index, binaries, links, &by_path, system, &mut report.unread);
        let (bound, unresolved) = scope.judge(binary);
        report.bound.push(bound);
        report.unresolved.extend(unresolved);
    }
    report
}

struct Scope {
    providers: Vec<Provider>,
}

impl Scope {
    /// The loader's breadth-first order: the binary's own needed libraries, theirs, ...;
    /// then the interpreter's libraries.
    fn of(
        index: usize,
        binaries: &[Binary],
        links: &[BTreeMap<String, Link>],
        by_path: &BTreeMap<&str, usize>,
        system: &SystemLibraries,
        unread: &mut BTreeSet<String>,
    ) -> Scope {
        let mut providers = Vec::new();
        let mut seen = BTreeSet::new();
        let mut queue: VecDeque<(Option<usize>, String)> = binaries[index]
            .facts
            .needed
            .iter()
            .map(|name| (Some(index), name.clone()))
            .chain(
                INTERPRETER_LIBRARIES
                    .iter()
                    .map(|name| (None, (*name).to_owned())),
            )
            .collect();
        while let Some((from, name)) = queue.pop_front() {
            // A wheel binary's needs resolve as the graph says; a system library's (and
            // the interpreter's, which `from = None` marks) on the system.
            let link = match from {
                Some(from) => links.get(from).and_then(|links| links.get(&name)).cloned(),
                None => Some(Link::System),
            };
            let (key, provider, wheel_index) = match link {
                Some(Link::Python) => continue,
                Some(Link::Internal(path)) => match by_path.get(path.as_str()) {
                    Some(&target) => {
                        let facts = binaries[target].facts.clone();
                        let provider = Provider::File {
                            name: path.clone(),
                            facts,
                        };
                        (path, provider, Some(target))
                    }
                    None => (path, Provider::Unknown, None),
                },
                Some(Link::System) => match system.library(&name) {
                    Some(facts) => (name.clone(), Provider::File { name, facts }, None),
                    None => {
                        unread.insert(name.clone());
                        (name, Provider::Unknown, None)
                    }
                },
                // Outside the wheel and the system: the repair vendors it or fails.
                None => (name, Provider::Unknown, None),
            };
            if !seen.insert(key) {
                continue;
            }
            if let Provider::File { facts, .. } = &provider {
                for needed in &facts.needed {
                    queue.push_back((wheel_index, needed.clone()));
                }
            }
            providers.push(provider);
        }
        Scope { providers }
    }

    fn judge(&self, binary: &Binary) -> (Vec<BoundImport>, Vec<Unresolved>) {
        let uncertain = self
            .providers
            .iter()
            .any(|p| matches!(p, Provider::Unknown));
        let mut bound = BTreeSet::new();
        let mut unresolved = Vec::new();
        for import in binary.facts.undefined_symbols.iter().filter(|s| !s.weak) {
            if interpreter_provides(&import.name) {
                continue;
            }
            let found = match &import.version {
                Some(version) => self.defines_at(&import.name, version),
                None => match self.unversioned_definition(&import.name) {
                    Some(Some(binding)) if !backported(&import.name) => {
                        bound.insert(binding);
                        true
                    }
                    Some(_) => true,
                    None => false,
                },
            };
            if !found && !uncertain {
                unresolved.push(Unresolved {
                    binary: binary.path.clone(),
                    symbol: import.name.clone(),
                    version: import.version.clone(),
                    searched: self.names(),
                });
            }
        }
        (bound.into_iter().collect(), unresolved)
    }

    fn defines_at(&self, symbol: &str, version: &str) -> bool {
        self.files().any(|(_, facts)| {
            facts
                .defined_symbols
                .iter()
                .any(|s| s.name == symbol && s.version.as_deref() == Some(version))
        })
    }

    /// Where an unversioned import binds: `None` when nothing defines it, `Some(None)`
    /// when an unversioned definition (or a wheel library) serves it, `Some(Some(_))`
    /// when it binds to a system library's versioned definition.
    fn unversioned_definition(&self, symbol: &str) -> Option<Option<BoundImport>> {
        let (name, facts) = self
            .files()
            .find(|(_, facts)| facts.defined_symbols.iter().any(|s| s.name == symbol))?;
        let oldest = facts
            .defined_symbols
            .iter()
            .filter(|s| s.name == symbol)
            .filter_map(|s| s.version.as_deref())
            .min_by(|a, b| compare_versions(a, b));
        Some(oldest.map(|version| BoundImport {
            symbol: symbol.to_owned(),
            library: name.to_owned(),
            version: version.to_owned(),
        }))
    }

    fn files(&self) -> impl Iterator<Item = (&str, &ElfFacts)> {
        self.providers.iter().filter_map(|provider| match provider {
            Provider::File { name, facts } => Some((name.as_str(), facts.as_ref())),
            Provider::Unknown => None,
        })
    }

    fn names(&self) -> Vec<String> {
        self.files()
            .map(|(name, _)| name.rsplit('/').next().unwrap_or(name).to_owned())
            .collect()
    }
}

/// Orders `GLIBC_2.3.4` before `GLIBC_2.17`: by prefix, then numerically part by part.
fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    let (prefix_a, version_a) = split_version_name(a);
    let (prefix_b, version_b) = split_version_name(b);
    let numbers = |version: &str| -> Vec<u64> {
        version
            .split(['.', '_'])
            .map(|part| part.parse().unwrap_or(u64::MAX))
            .collect()
    };
    prefix_a
        .cmp(prefix_b)
        .then_with(|| numbers(version_a).cmp(&numbers(version_b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_order_numerically_within_a_prefix() {
        use std::cmp::Ordering::*;
        assert_eq!(compare_versions("GLIBC_2.3.4", "GLIBC_2.17"), Less);
        assert_eq!(compare_versions("GLIBC_2.32", "GLIBC_2.17"), Greater);
        assert_eq!(compare_versions("GLIBC_2.17", "GLIBC_2.17"), Equal);
    }

    #[test]
    fn symbols_backported_to_the_manylinux2014_glibc_are_not_held_to_their_upstream_version() {
        assert!(backported("__parse_hwcap_and_convert_at_platform"));
        assert!(!backported("__snprintfieee128"));
    }

    #[test]
    fn the_interpreter_provides_the_c_api_only() {
        assert!(interpreter_provides("PyLong_FromLong"));
        assert!(interpreter_provides("_Py_Dealloc"));
        assert!(!interpreter_provides("__gcc_qmul"));
        assert!(!interpreter_provides("pyfoo"));
    }
}
