//! The manylinux repair (the auditwheel equivalent): vendor external
//! libraries into `<dist>.libs/`, point every reference at them, drop rpaths
//! that leave the wheel, and tag the wheel with the most compatible policy
//! its binaries satisfy.

mod edits;
pub mod graft;
pub mod layout;
pub mod search;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use rayon::prelude::*;

use crate::elf::edit::{ElfEdits, apply_edits};
use crate::elf::facts::{ElfFacts, is_elf};
use std::collections::BTreeSet;

use crate::manylinux::{
    Analysis, Binary as PolicyBinary, Blockers, PlatRequest, Policies, is_dynamic_loader,
    provided_names,
};
use crate::repair::rewrite_wheel;
use crate::wheel::{Contents, WheelArchive};
use graft::{Binary, GraftPlan, Link, Origin, Rules};
use search::{Abi, LibrarySearch};

#[derive(Debug, Clone)]
pub struct LinuxRepairOptions {
    /// `auto` or a platform tag, parsed once the wheel's architecture is known.
    pub plat: String,
    pub exclude: Vec<glob::Pattern>,
    pub lib_paths: Vec<PathBuf>,
    pub sysroot: Option<PathBuf>,
    pub out_dir: PathBuf,
    pub epoch: Option<u64>,
}

/// What one repair did.
#[derive(Debug)]
pub struct LinuxRepairReport {
    pub output: PathBuf,
    pub platform_tags: Vec<String>,
    /// Host path of each vendored library → its path inside the wheel.
    pub grafted: Vec<(PathBuf, String)>,
    /// Wheel files whose bytes changed.
    pub edited: Vec<String>,
    pub analysis: Analysis,
}

/// The ELF files of a wheel, parsed (in parallel: big wheels have hundreds).
pub fn wheel_binaries(wheel: &WheelArchive) -> Result<Vec<Binary>> {
    let candidates: Vec<_> = wheel.entries().iter().collect();
    let parsed: Vec<Option<Binary>> = candidates
        .par_iter()
        .map(|entry| -> Result<Option<Binary>> {
            let data = wheel.read(&entry.name)?;
            if !is_elf(&data) {
                return Ok(None);
            }
            let facts = ElfFacts::parse(&data)
                .with_context(|| format!("{}: {}", wheel.path().display(), entry.name))?;
            Ok(Some(Binary {
                path: layout::install_path(&entry.name).to_string(),
                facts: Arc::new(facts),
                origin: Origin::Wheel {
                    entry: entry.name.clone(),
                },
            }))
        })
        .collect::<Result<_>>()?;
    Ok(parsed.into_iter().flatten().collect())
}

/// The one ABI every binary of the wheel shares.
pub fn wheel_abi(wheel: &Path, binaries: &[Binary]) -> Result<Option<Abi>> {
    let Some(first) = binaries.first() else {
        return Ok(None);
    };
    let abi = Abi::of(&first.facts);
    if let Some(other) = binaries.iter().find(|b| Abi::of(&b.facts) != abi) {
        bail!(
            "{}: mixes architectures: {} is {} but {} is {}",
            wheel.display(),
            first.path,
            first.facts.arch.unwrap_or("unknown"),
            other.path,
            other.facts.arch.unwrap_or("unknown")
        );
    }
    Ok(Some(abi))
}

/// The binaries as the policy sees them, and the names the wheel provides:
/// every file name and SONAME it carries, the original names of grafted
/// libraries, and `--exclude`d names (the user takes responsibility for them).
fn policy_input<'a>(
    plan: &'a GraftPlan,
    exclude: &[glob::Pattern],
) -> (Vec<PolicyBinary<'a>>, BTreeSet<String>) {
    let binaries: Vec<PolicyBinary> = plan
        .binaries
        .iter()
        .map(|b| PolicyBinary {
            path: &b.path,
            facts: &b.facts,
        })
        .collect();
    let mut provided = provided_names(&binaries);
    for links in &plan.links {
        for (needed, link) in links {
            let excluded = exclude.iter().any(|p| p.matches(needed));
            if matches!(link, Link::Internal(_)) || excluded {
                provided.insert(needed.clone());
            }
        }
    }
    (binaries, provided)
}

/// The platform tags for the wheel: the best policy for `auto`, or the
/// requested one when the binaries satisfy it.
fn choose_tags(policies: &Policies, analysis: &Analysis, plat: &str) -> Result<Vec<String>> {
    let achieved = policies.iter().find(|p| p.tag() == analysis.policy);
    let requested = match policies.parse_plat(plat)? {
        PlatRequest::Auto => {
            let Some(policy) = achieved.filter(|p| !p.unrestricted) else {
                let why = analysis
                    .next_blockers()
                    .map(describe_blockers)
                    .unwrap_or_default();
                bail!("cannot be tagged manylinux: {why}");
            };
            policy
        }
        PlatRequest::Policy(policy) => {
            if let Some(blockers) = analysis.blocked.iter().find(|b| b.policy == policy.tag()) {
                bail!(
                    "cannot satisfy --plat {plat}: {} (the best it can have is {})",
                    describe_blockers(blockers),
                    analysis.policy
                );
            }
            policy
        }
    };
    Ok(requested.platform_tags())
}

fn describe_blockers(blockers: &Blockers) -> String {
    let shown: Vec<String> = blockers
        .violations
        .iter()
        .take(3)
        .map(|v| v.to_string())
        .collect();
    let more = blockers.violations.len().saturating_sub(shown.len());
    let suffix = if more > 0 {
        format!(" (and {more} more)")
    } else {
        String::new()
    };
    format!(
        "{} fails because {}{}",
        blockers.policy,
        shown.join("; "),
        suffix
    )
}

pub fn repair(wheel: &WheelArchive, options: &LinuxRepairOptions) -> Result<LinuxRepairReport> {
    let binaries = wheel_binaries(wheel)?;
    let Some(abi) = wheel_abi(wheel.path(), &binaries)? else {
        bail!(
            "{}: has no ELF files, so there is nothing to repair (a pure wheel needs no repair)",
            wheel.path().display()
        );
    };
    let arch = binaries[0].facts.arch.unwrap_or("unknown").to_string();
    let policies =
        Policies::for_arch(&arch).with_context(|| format!("{}", wheel.path().display()))?;
    // Whitelisted libraries stay external; judge them by the requested policy
    // (or, for `auto`, the most compatible one, as auditwheel does).
    let whitelist_policy = match policies
        .parse_plat(&options.plat)
        .with_context(|| format!("{}", wheel.path().display()))?
    {
        PlatRequest::Auto => policies.most_compatible(),
        PlatRequest::Policy(policy) => policy,
    };
    let libs_dir = format!("{}.libs", wheel.name().distribution);
    let mut search = LibrarySearch::new(abi, &options.lib_paths, options.sysroot.as_deref());
    let is_system =
        |name: &str| whitelist_policy.whitelist.contains(name) || is_dynamic_loader(name);
    let rules = Rules {
        is_system: &is_system,
        exclude: &options.exclude,
        libs_dir: libs_dir.clone(),
        arch_name: arch.clone(),
    };
    let mut plan = graft::plan(binaries, &mut search, &rules)
        .with_context(|| format!("{}", wheel.path().display()))?;

    let (policy_binaries, provided) = policy_input(&plan, &options.exclude);
    let analysis = policies.analyze(&policy_binaries, &provided);
    let platform_tags = choose_tags(&policies, &analysis, &options.plat)
        .with_context(|| format!("{}", wheel.path().display()))?;

    // Memory: the search cache shares the grafted libraries' bytes, and each
    // library's original is freed as soon as its edited copy exists, so a
    // 30 MB OpenBLAS is held at most twice, briefly.
    drop(search);
    let all_edits: Vec<Option<ElfEdits>> = (0..plan.binaries.len())
        .map(|index| edits::edits_for(&plan, index, &libs_dir))
        .collect();
    let grafted_sources: Vec<Option<Arc<Vec<u8>>>> = plan
        .binaries
        .iter_mut()
        .map(|binary| match &mut binary.origin {
            Origin::Grafted { data, .. } => Some(std::mem::take(data)),
            Origin::Wheel { .. } => None,
        })
        .collect();

    // Edit every binary that needs it; untouched wheel files are copied raw.
    let edited: Vec<(usize, Vec<u8>)> = grafted_sources
        .into_par_iter()
        .zip(all_edits.into_par_iter())
        .enumerate()
        .map(
            |(index, (grafted_source, edits))| -> Result<Option<(usize, Vec<u8>)>> {
                let binary = &plan.binaries[index];
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

    let mut entries = Vec::new();
    let mut replaced = std::collections::BTreeMap::new();
    let mut grafted = Vec::new();
    let mut edited_names = Vec::new();
    for (index, bytes) in edited {
        match &plan.binaries[index].origin {
            Origin::Wheel { entry } => {
                edited_names.push(entry.clone());
                replaced.insert(entry.clone(), bytes);
            }
            Origin::Grafted { source, .. } => {
                grafted.push((source.clone(), plan.binaries[index].path.clone()));
                entries.push((
                    plan.binaries[index].path.clone(),
                    Contents::Bytes {
                        data: bytes,
                        mode: 0o755,
                    },
                ));
            }
        }
    }
    let output = rewrite_wheel(
        wheel,
        platform_tags.clone(),
        replaced,
        entries,
        &options.out_dir,
        options.epoch,
    )?;
    Ok(LinuxRepairReport {
        output,
        platform_tags,
        grafted,
        edited: edited_names,
        analysis,
    })
}
