//! The wheel-level verdict: the one ABI every binary shares, what the
//! manylinux policies see, and which platform tags the wheel may carry.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Result, bail};

use super::graph::{Binary, Graph, Link};
use super::search::Abi;
use super::symbols::SymbolReport;
use crate::analysis::manylinux::{
    Analysis, Binary as PolicyBinary, Blockers, PlatRequest, Policies, provided_names,
};
use crate::target::Libc;

/// What says `binary` was linked against musl: its interpreter or C library, or an
/// extension suffix such as `.cpython-312-aarch64-linux-musl.so` (an extension module that
/// needs no library names its libc nowhere else), as the reference auditor reads it.
pub fn musl_evidence(binary: &Binary) -> Option<&str> {
    binary.facts.musl_evidence().or_else(|| {
        let file_name = binary.path.rsplit('/').next().unwrap_or(&binary.path);
        (file_name.ends_with("-linux-musl.so") || file_name.ends_with("-linux-musleabihf.so"))
            .then_some(file_name)
    })
}

/// What says `binary` was linked against glibc: glibc's C library or loader among its
/// DT_NEEDED entries, or a glibc loader as its interpreter.
pub fn glibc_evidence(binary: &Binary) -> Option<&str> {
    let is_glibc = |name: &str| {
        name == "libc.so.6" || name.starts_with("ld-linux") || name.starts_with("ld64.so.")
    };
    binary
        .facts
        .interpreter
        .as_deref()
        .filter(|path| is_glibc(path.rsplit('/').next().unwrap_or(path)))
        .or_else(|| {
            binary
                .facts
                .needed
                .iter()
                .map(String::as_str)
                .find(|name| is_glibc(name))
        })
}

/// The C library a wheel's binaries are for when nothing else says: musl when any binary
/// shows it, else glibc (as the reference auditor assumes without evidence).
pub fn wheel_libc(binaries: &[Binary]) -> Libc {
    if binaries
        .iter()
        .any(|binary| musl_evidence(binary).is_some())
    {
        Libc::Musl
    } else {
        Libc::Glibc
    }
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

/// The binaries as the policy sees them, with the unversioned imports that the symbol
/// check bound to versioned system definitions (`bound[i]` for `binaries[i]`).
pub fn policy_binaries<'a>(
    binaries: &'a [Binary],
    symbols: &'a SymbolReport,
) -> Vec<PolicyBinary<'a>> {
    binaries
        .iter()
        .enumerate()
        .map(|(index, b)| PolicyBinary {
            path: &b.path,
            facts: &b.facts,
            bound: symbols.bound.get(index).map_or(&[], Vec::as_slice),
        })
        .collect()
}

/// The binaries as the policy sees them, and the names the wheel provides:
/// every file name and SONAME it carries, the original names of grafted
/// libraries, `--exclude`d names (the user takes responsibility for them), and
/// libpython, whose DT_NEEDED the repair drops.
pub fn policy_input<'a>(
    graph: &'a Graph,
    symbols: &'a SymbolReport,
    exclude: &[glob::Pattern],
) -> (Vec<PolicyBinary<'a>>, BTreeSet<String>) {
    let binaries = policy_binaries(&graph.binaries, symbols);
    let mut provided = provided_names(&binaries);
    for links in &graph.links {
        for (needed, link) in links {
            let excluded = exclude.iter().any(|p| p.matches(needed));
            if matches!(link, Link::Internal(_) | Link::Python) || excluded {
                provided.insert(needed.clone());
            }
        }
    }
    (binaries, provided)
}

/// The platform tags for the wheel: the best policy for `auto`, or the
/// requested one when the binaries satisfy it.
pub fn choose_tags(
    policies: &Policies,
    analysis: &Analysis,
    plat: &str,
    only_plat: bool,
) -> Result<Vec<String>> {
    let achieved = policies.iter().find(|p| p.tag() == analysis.policy);
    let requested = match policies.parse_plat(plat)? {
        PlatRequest::Auto => {
            let Some(policy) = achieved.filter(|p| !p.unrestricted) else {
                let why = analysis
                    .next_blockers()
                    .map(describe_blockers)
                    .unwrap_or_default();
                bail!("cannot be tagged {}: {why}", policies.family());
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
    let mut tags = requested.platform_tags();
    // auditwheel: a wheel eligible for a higher priority (more compatible) policy than
    // the one asked for gets that policy's tags too, first, unless `--only-plat`.
    if let Some(higher) = achieved.filter(|achieved| {
        !only_plat && !achieved.unrestricted && achieved.priority > requested.priority
    }) {
        let mut all = higher.platform_tags();
        all.append(&mut tags);
        tags = all;
    }
    Ok(tags)
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
