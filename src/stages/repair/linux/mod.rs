//! The manylinux repair (the auditwheel equivalent): vendor external
//! libraries into `<dist>.libs/`, point every reference at them, drop rpaths
//! that leave the wheel, and tag the wheel with the most compatible policy
//! its binaries satisfy.

mod edits;
pub mod graft;
mod unsupported;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use rayon::prelude::*;

use crate::analysis::facts::layout::linux_libs_dir;
use crate::analysis::facts::linux::graph::{HostSearch, resolve};
use crate::analysis::facts::linux::{
    Graph, LibrarySearch, Link, Origin, Rules, SymbolReport, SystemLibraries, check_symbols,
    choose_tags, policy_input, wheel_abi, wheel_binaries, wheel_libc,
};
use crate::analysis::manylinux::{Analysis, CLibrary, PlatRequest, Policies, is_dynamic_loader};
use crate::formats::elf::edit::{ElfEdits, apply_edits};
use crate::formats::wheel::{Contents, PlatformTag, WheelArchive};
use crate::stages::repair::rewrite_wheel;
use crate::stages::repair::sbom::Vendored;
use crate::target::Libc;

#[derive(Debug, Clone)]
pub struct LinuxRepairOptions {
    /// The policy tag asked for, judged against the policies of the wheel's architecture
    /// once it is known; `None`: `auto`. A tag also says the C library
    /// (`musllinux_1_2_x86_64`); `auto` takes it from the binaries.
    pub plat: Option<PlatformTag>,
    pub exclude: Vec<glob::Pattern>,
    pub lib_paths: Vec<PathBuf>,
    pub sysroot: Option<PathBuf>,
    /// A tree of the target's system libraries (C library, libgcc_s, libstdc++) whose
    /// symbols the symbol check reads; `sysroot`, when given, is read first. Without
    /// either, imports that system libraries may define are not judged (said once).
    pub system_libraries: Option<PathBuf>,
    pub out_dir: PathBuf,
    pub epoch: Option<u64>,
    /// The suffix of `<distribution>` naming the folder of vendored libraries (`.libs`).
    pub lib_sdir: String,
    /// Strips every ELF file the repaired wheel holds (`auditwheel repair --strip`).
    pub strip: bool,
    /// Only the policy `plat` names, not a more compatible one the wheel satisfies too.
    pub only_plat: bool,
    /// Keep the wheel's own platform tags.
    pub keep_tags: bool,
    /// Packages the binaries were compiled against, for the SBOM ([`Vendored::built_with`]).
    pub built_with: Vec<crate::formats::sbom::Package>,
}

/// What one repair did.
#[derive(Debug)]
pub struct LinuxRepairReport {
    pub output: PathBuf,
    pub platform_tags: Vec<PlatformTag>,
    /// Host path of each vendored library → its path inside the wheel.
    pub grafted: Vec<(PathBuf, String)>,
    /// Wheel files whose bytes changed.
    pub edited: Vec<String>,
    pub analysis: Analysis,
}

pub fn repair(wheel: &WheelArchive, options: &LinuxRepairOptions) -> Result<LinuxRepairReport> {
    let binaries = wheel_binaries(wheel)?;
    let libc = (options.plat.as_ref())
        .and_then(PlatformTag::libc)
        .unwrap_or_else(|| wheel_libc(&binaries));
    if let Some(refusal) = unsupported::refusal(&binaries, libc) {
        bail!("{}: {refusal}", wheel.path().display());
    }
    let Some(abi) = wheel_abi(wheel.path(), &binaries)? else {
        bail!(
            "{}: has no ELF files, so there is nothing to repair (a pure wheel needs no repair)",
            wheel.path().display()
        );
    };
    let arch = binaries[0].facts.arch.unwrap_or("unknown").to_string();
    let requested = options
        .plat
        .as_ref()
        .map_or_else(|| "auto".to_string(), ToString::to_string);
    let (policies, plat) = policies_for(libc, &arch, &requested)
        .with_context(|| format!("{}", wheel.path().display()))?;
    // Whitelisted libraries stay external; judge them by the requested policy
    // (or, for `auto`, the most compatible one, as auditwheel does).
    let whitelist_policy = match policies
        .parse_plat(&plat)
        .with_context(|| format!("{}", wheel.path().display()))?
    {
        PlatRequest::Auto => policies.most_compatible(),
        PlatRequest::Policy(policy) => policy,
    };
    let libs_dir = linux_libs_dir(wheel, &options.lib_sdir);
    let mut search = LibrarySearch::new(abi, &options.lib_paths, options.sysroot.as_deref());
    let is_system =
        |name: &str| whitelist_policy.whitelist.contains(name) || is_dynamic_loader(name);
    let rules = Rules {
        is_system: &is_system,
        exclude: &options.exclude,
    };
    let vendored_path = |found: &_, needed: &str| graft::vendored_path(&libs_dir, found, needed);
    let host = HostSearch {
        search: &mut search,
        arch_name: arch.clone(),
        vendored_path: &vendored_path,
    };
    let mut graph =
        resolve(binaries, &rules, host).with_context(|| format!("{}", wheel.path().display()))?;

    warn_dropped_libpython(wheel, &graph);
    let symbols = check_graph_symbols(&graph, options, libc);
    if let Some(first) = symbols.unresolved.first() {
        let more = match symbols.unresolved.len() - 1 {
            0 => String::new(),
            n => format!(" (and {n} more; `crosswheel inspect` lists them)"),
        };
        bail!(
            "{}: {first}{more}: the wheel would fail to import; link the library that defines it, or build with the toolchain that provides it",
            wheel.path().display()
        );
    }
    let (policy_binaries, provided) = policy_input(&graph, &symbols, &options.exclude);
    let analysis = policies.analyze(&policy_binaries, &provided);
    let chosen: Vec<PlatformTag> = choose_tags(&policies, &analysis, &plat, options.only_plat)
        .with_context(|| format!("{}", wheel.path().display()))?
        .iter()
        .map(|tag| PlatformTag::parse(tag))
        .collect();
    let platform_tags = if options.keep_tags {
        wheel.name().platform.clone()
    } else {
        chosen
    };

    // Memory: the search cache shares the grafted libraries' bytes, and each
    // library's original is freed as soon as its edited copy exists, so a
    // 30 MB OpenBLAS is held at most twice, briefly.
    drop(search);
    let edited = edit_binaries(
        wheel,
        &mut graph,
        &libs_dir,
        policies.c_library(),
        options.strip,
    )?;

    let changes = WheelChanges::sort(&graph, edited);
    let output = rewrite_wheel(
        wheel,
        platform_tags.clone(),
        changes.replaced,
        changes.added,
        &Vendored {
            built_with: options.built_with.clone(),
            ..Vendored::of_linux(&graph)
        },
        &options.out_dir,
        options.epoch,
    )?;
    Ok(LinuxRepairReport {
        output,
        platform_tags,
        grafted: changes.grafted,
        edited: changes.edited_names,
        analysis,
    })
}

/// The policies of `libc` for `arch` that judge the wheel, and the `--plat` value to
/// judge it by. musl versions no symbols, so musllinux binaries cannot say their policy:
/// the one `plat` names is the only one kept (for `auto`, the newest, as the reference
/// auditor does off a musl system), and the wheel gets it or `linux`.
fn policies_for(libc: Libc, arch: &str, plat: &str) -> Result<(Policies, String)> {
    let policies = Policies::for_arch(libc, arch)?;
    if policies.judge_symbol_versions() {
        return Ok((policies, plat.to_string()));
    }
    let only = policies.only(plat)?;
    let tag = only.most_compatible().tag();
    if plat == "auto" {
        tracing::info!(
            "musl binaries do not say which musl they need: judged for {tag}, the newest \
             musllinux policy (--plat names another)"
        );
    }
    Ok((only, tag))
}

/// The symbol check over the repaired graph: the user's sysroot first, then the tree of
/// the target's system libraries. That tree is Debian's, glibc's libraries: a musl
/// binary's imports are not judged by it (glibc would define symbols musl lacks).
fn check_graph_symbols(graph: &Graph, options: &LinuxRepairOptions, libc: Libc) -> SymbolReport {
    let machine = graph.binaries.first().map_or(0, |b| b.facts.machine);
    let system_libraries = options
        .system_libraries
        .iter()
        .filter(|_| libc == Libc::Glibc);
    let roots: Vec<&std::path::Path> = options
        .sysroot
        .iter()
        .chain(system_libraries)
        .map(PathBuf::as_path)
        .collect();
    if roots.is_empty() {
        tracing::warn!(
            "no system libraries for {}: imports the C library or the C++ runtime may define are not checked",
            graph
                .binaries
                .first()
                .and_then(|b| b.facts.arch)
                .unwrap_or("this architecture")
        );
    }
    let system = SystemLibraries::open_all(&roots, machine);
    check_symbols(&graph.binaries, &graph.links, &system)
}

/// One line per libpython dependency the repair removes, as auditwheel warns.
fn warn_dropped_libpython(wheel: &WheelArchive, graph: &Graph) {
    for (binary, links) in graph.binaries.iter().zip(&graph.links) {
        for (needed, link) in links {
            if *link == Link::Python {
                tracing::warn!(
                    "{}: dropped {needed} from {}: the interpreter that imports it provides \
                     libpython, and a manylinux wheel must not link it",
                    wheel.path().display(),
                    binary.path
                );
            }
        }
    }
}

/// The edited binaries, sorted into what the rewritten wheel replaces and what it adds.
struct WheelChanges {
    /// Wheel entry → its edited bytes.
    replaced: BTreeMap<String, Vec<u8>>,
    /// Grafted libraries, at their path inside the wheel.
    added: Vec<(String, Contents<'static>)>,
    /// Host path of each grafted library → its path inside the wheel.
    grafted: Vec<(PathBuf, String)>,
    edited_names: Vec<String>,
}

impl WheelChanges {
    fn sort(graph: &Graph, edited: Vec<(usize, Vec<u8>)>) -> WheelChanges {
        let mut changes = WheelChanges {
            replaced: BTreeMap::new(),
            added: Vec::new(),
            grafted: Vec::new(),
            edited_names: Vec::new(),
        };
        for (index, bytes) in edited {
            match &graph.binaries[index].origin {
                Origin::Wheel { entry } => {
                    changes.edited_names.push(entry.clone());
                    changes.replaced.insert(entry.clone(), bytes);
                }
                Origin::Grafted { source, .. } => {
                    let path = graph.binaries[index].path.clone();
                    changes.grafted.push((source.clone(), path.clone()));
                    changes.added.push((
                        path,
                        Contents::Bytes {
                            data: bytes,
                            mode: 0o755,
                        },
                    ));
                }
            }
        }
        changes
    }
}

/// The new bytes of every binary the repair writes: each grafted library
/// (edited or not) and each wheel file that needs edits (with `strip`, every one), by
/// index into `graph.binaries`; untouched wheel files are copied raw later. Takes the
/// grafted libraries' bytes out of the graph.
fn edit_binaries(
    wheel: &WheelArchive,
    graph: &mut Graph,
    libs_dir: &str,
    c_library: Option<&CLibrary>,
    strip: bool,
) -> Result<Vec<(usize, Vec<u8>)>> {
    let all_edits: Vec<Option<ElfEdits>> = (0..graph.binaries.len())
        .map(|index| {
            let edits = edits::edits_for(graph, index, libs_dir, c_library);
            match (edits, strip) {
                (edits, false) => edits,
                (edits, true) => Some(ElfEdits {
                    strip: true,
                    ..edits.unwrap_or_default()
                }),
            }
        })
        .collect();
    let grafted_sources: Vec<Option<Arc<Vec<u8>>>> = graph
        .binaries
        .iter_mut()
        .map(|binary| match &mut binary.origin {
            Origin::Grafted { data, .. } => Some(std::mem::take(data)),
            Origin::Wheel { .. } => None,
        })
        .collect();

    let edited = grafted_sources
        .into_par_iter()
        .zip(all_edits.into_par_iter())
        .enumerate()
        .map(
            |(index, (grafted_source, edits))| -> Result<Option<(usize, Vec<u8>)>> {
                let binary = &graph.binaries[index];
                let source: Vec<u8> = match (&binary.origin, grafted_source) {
                    (Origin::Grafted { .. }, Some(data)) => {
                        Arc::try_unwrap(data).unwrap_or_else(|shared| shared.as_ref().clone())
                    }
                    (Origin::Wheel { entry }, _) if edits.is_some() => wheel.read(entry)?,
                    _ => return Ok(None),
                };
                match edits {
                    Some(edits) => {
                        let bytes = apply_edits(&source, &edits)
                            .with_context(|| format!("editing {}", binary.path))?;
                        drop(source);
                        Ok(Some((index, bytes)))
                    }
                    None => Ok(Some((index, source))),
                }
            },
        )
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect();
    Ok(edited)
}
