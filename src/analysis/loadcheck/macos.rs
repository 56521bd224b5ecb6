//! The static load check for macOS: what dyld would do with each Mach-O of a
//! wheel, once per architecture its tags promise (arm64, x86_64, both for
//! universal2). Every required dylib must resolve inside the wheel or to a
//! system library; every symbol bound to a dylib of the wheel must be exported
//! by it (or by what it re-exports) in the same slice; every image needs a slice
//! of the architecture and a minos the wheel tag allows; an arm64 slice needs a
//! valid signature, an x86_64 one a valid signature if it has one.

use std::collections::{HashMap, HashSet, VecDeque};

use anyhow::{Context, Result};
use rayon::prelude::*;

use super::{LoadCheckReport, LoadFailure, LoadProblem};
use crate::analysis::facts::macos::{
    Graph, Link, MacosTag, Rules, resolve, tag_version, wheel_binaries,
};
use crate::formats::macho::{
    Arch, DependencyKind, LibraryOrdinal, MachOFile, SignatureStatus, Slice, Version,
};
use crate::formats::wheel::WheelArchive;

/// Flat-namespace names the interpreter itself provides: extension modules
/// link with `-undefined dynamic_lookup` and bind the C API at load time.
const INTERPRETER_SYMBOL_PREFIXES: &[&str] = &["_Py", "__Py"];

/// The architectures a load check can stand in for, in the order reports list them.
const CHECKED_ARCHES: [Arch; 2] = [Arch::X86_64, Arch::Arm64];

pub fn check_macos_wheel(wheel: &WheelArchive) -> Result<LoadCheckReport> {
    let wheel_name = wheel.name().file_name();
    let binaries = wheel_binaries(wheel)?;
    let rules = Rules {
        exclude: &[],
        lib_paths: &[],
        executable_path: None,
        search_host: false,
    };
    let graph = resolve(binaries, &rules);

    let mut failures = Vec::new();
    let arches = tagged_arches(wheel);
    if arches.is_empty() {
        failures.push(LoadFailure {
            file: wheel_name.clone(),
            arch: None,
            problem: LoadProblem::NotMacosWheel {
                tags: crate::formats::wheel::join_platform_tags(&wheel.name().platform),
            },
        });
    }

    let parsed: Vec<MachOFile<'_>> = graph
        .binaries
        .par_iter()
        .map(|binary| {
            MachOFile::parse(&binary.data)
                .with_context(|| format!("{}: {}", wheel.path().display(), binary.path))
        })
        .collect::<Result<_>>()?;
    for (arch, tag_floor) in arches {
        let slices: Vec<Option<&Slice<'_>>> = parsed
            .iter()
            .map(|file| file.slices.iter().find(|slice| slice.arch == arch))
            .collect();
        let mut exports = ExportIndex {
            graph: &graph,
            slices: &slices,
            memo: HashMap::new(),
        };
        for (index, binary) in graph.binaries.iter().enumerate() {
            let problems = match slices[index] {
                None => vec![LoadProblem::NoSlice {
                    arches: binary
                        .slices
                        .iter()
                        .map(|slice| slice.arch.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                }],
                Some(slice) => slice_problems(&graph, index, slice, tag_floor, &mut exports),
            };
            failures.extend(problems.into_iter().map(|problem| LoadFailure {
                file: binary.path.clone(),
                arch: Some(arch.to_string()),
                problem,
            }));
        }
    }
    Ok(LoadCheckReport {
        wheel: wheel_name,
        checked: graph
            .binaries
            .iter()
            .map(|binary| binary.path.clone())
            .collect(),
        failures,
    })
}

/// Each architecture some tag of the wheel speaks for, with the oldest macOS its slices
/// may require: pip may pick any tag of the wheel, so the most permissive one counts.
fn tagged_arches(wheel: &WheelArchive) -> Vec<(Arch, Version)> {
    let tags: Vec<MacosTag> = wheel
        .name()
        .platform
        .iter()
        .filter_map(MacosTag::parse)
        .collect();
    CHECKED_ARCHES
        .into_iter()
        .filter_map(|arch| {
            tags.iter()
                .filter(|tag| tag.covers(arch))
                .map(|tag| tag.floor_for(arch))
                .min()
                .map(|floor| (arch, floor))
        })
        .collect()
}

/// What dyld would refuse in `slice` of binary `index`: its signature, a minos above the
/// tag's floor, unresolved dependencies and missing symbols.
fn slice_problems(
    graph: &Graph,
    index: usize,
    slice: &Slice<'_>,
    tag_floor: Version,
    exports: &mut ExportIndex<'_, '_>,
) -> Vec<LoadProblem> {
    let mut problems = Vec::new();
    let facts = graph.binaries[index]
        .slices
        .iter()
        .find(|facts| facts.arch == slice.arch);
    match facts.map(|facts| &facts.signature) {
        Some(SignatureStatus::Valid { .. }) => {}
        Some(SignatureStatus::Invalid(reason)) => problems.push(LoadProblem::InvalidSignature {
            reason: reason.clone(),
        }),
        // Intel Macs load unsigned images; Apple silicon refuses them.
        Some(SignatureStatus::Missing) | None if slice.arch == Arch::X86_64 => {}
        Some(SignatureStatus::Missing) | None => problems.push(LoadProblem::MissingSignature),
    }
    // A tag for macOS 11 or later cannot say 13.1: the repair tags it 13.0 and says so.
    if let Some(target) = slice.deployment_target.filter(|t| t.is_macos())
        && tag_version(target.minos) > tag_floor
    {
        problems.push(LoadProblem::MinosTooNew {
            minos: target.minos.to_string(),
            tag_version: tag_floor.to_string(),
        });
    }
    for link in &graph.links[index] {
        if link.link == Link::Unresolved && link.is_required() {
            problems.push(LoadProblem::UnresolvedDependency {
                install_name: link.dependency.install_name.clone(),
            });
        }
    }
    problems.extend(symbol_problems(graph, index, slice, exports));
    problems
}

fn is_interpreter_symbol(name: &str) -> bool {
    INTERPRETER_SYMBOL_PREFIXES
        .iter()
        .any(|prefix| name.starts_with(prefix))
}

fn symbol_problems(
    graph: &Graph,
    index: usize,
    slice: &Slice<'_>,
    exports: &mut ExportIndex<'_, '_>,
) -> Vec<LoadProblem> {
    let mut problems = Vec::new();
    let mut closure: Option<Exports> = None;
    for import in slice.imported_symbols.iter().filter(|import| !import.weak) {
        match import.library {
            LibraryOrdinal::Dylib(ordinal) => {
                let Some(dependency) = slice.dependency_for(import.library) else {
                    problems.push(LoadProblem::BadOrdinal {
                        symbol: import.name.clone(),
                        ordinal,
                        dependencies: slice.dependencies.len(),
                    });
                    continue;
                };
                let link = graph.links[index]
                    .iter()
                    .find(|link| link.dependency.install_name == dependency.install_name);
                // System and excluded libraries cannot be inspected from
                // here; unresolved ones are reported once, as a dependency.
                let Some(Link::Binary { index: target, .. }) = link.map(|link| &link.link) else {
                    continue;
                };
                if !exports.of(*target).provides(&import.name) {
                    problems.push(LoadProblem::MissingSymbol {
                        symbol: import.name.clone(),
                        library: graph.binaries[*target].path.clone(),
                    });
                }
            }
            LibraryOrdinal::DynamicLookup
            | LibraryOrdinal::Executable
            | LibraryOrdinal::SelfImage => {
                if is_interpreter_symbol(&import.name) {
                    continue;
                }
                let closure = closure.get_or_insert_with(|| exports.of_closure(index));
                if !closure.provides(&import.name) {
                    problems.push(LoadProblem::MissingFlatSymbol {
                        symbol: import.name.clone(),
                    });
                }
            }
            LibraryOrdinal::WeakLookup => {}
        }
    }
    problems
}

/// What an image makes visible. `open` when part of it cannot be known
/// from here (a re-exported system library): then every name may exist.
#[derive(Debug, Clone, Default)]
struct Exports {
    names: HashSet<String>,
    open: bool,
}

impl Exports {
    fn provides(&self, name: &str) -> bool {
        self.open || self.names.contains(name)
    }
}

struct ExportIndex<'g, 's> {
    graph: &'g Graph,
    /// The slice of the architecture being checked, of each binary of the graph.
    slices: &'s [Option<&'s Slice<'s>>],
    memo: HashMap<usize, Exports>,
}

impl ExportIndex<'_, '_> {
    /// The image's own exports plus those of the libraries it re-exports.
    fn of(&mut self, index: usize) -> Exports {
        if let Some(known) = self.memo.get(&index) {
            return known.clone();
        }
        let mut exports = Exports::default();
        let mut queue = VecDeque::from([index]);
        let mut seen = HashSet::from([index]);
        while let Some(current) = queue.pop_front() {
            let Some(slice) = self.slices.get(current).copied().flatten() else {
                continue;
            };
            exports.names.extend(slice.exported_symbols.iter().cloned());
            for link in &self.graph.links[current] {
                if link.dependency.kind != DependencyKind::Reexport {
                    continue;
                }
                match link.link {
                    Link::Binary { index: target, .. } => {
                        if seen.insert(target) {
                            queue.push_back(target);
                        }
                    }
                    _ => exports.open = true,
                }
            }
        }
        self.memo.insert(index, exports.clone());
        exports
    }

    /// Everything dyld's flat lookup could find among the wheel's images
    /// loaded with `index`: the image and its dependencies, transitively.
    fn of_closure(&mut self, index: usize) -> Exports {
        let mut all = Exports::default();
        let mut queue = VecDeque::from([index]);
        let mut seen = HashSet::from([index]);
        while let Some(current) = queue.pop_front() {
            let exports = self.of(current);
            all.names.extend(exports.names);
            all.open |= exports.open;
            for link in &self.graph.links[current] {
                if let Link::Binary { index: target, .. } = link.link
                    && seen.insert(target)
                {
                    queue.push_back(target);
                }
            }
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_c_api_names_come_from_the_interpreter() {
        assert!(is_interpreter_symbol("_PyModule_Create2"));
        assert!(is_interpreter_symbol("__Py_NoneStruct"));
        assert!(!is_interpreter_symbol("_scipy_cblas_sdot"));
    }

    #[test]
    fn open_exports_provide_every_name() {
        let exports = Exports {
            names: HashSet::new(),
            open: true,
        };
        assert!(exports.provides("_anything"));
        assert!(!Exports::default().provides("_anything"));
    }
}
