//! Which manylinux policy a set of ELF files satisfies, and why the more
//! compatible ones fail.
//!
//! The semantics mirror the reference auditor: a policy holds when every
//! required symbol version whose prefix the policy lists is in the policy's
//! set for that prefix, every needed library that is not provided alongside
//! is on the whitelist, and no blacklisted symbol is imported from a
//! whitelisted library. Policies are tried from the most compatible down; the
//! unrestricted `linux` always holds.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::policy::{Policies, Policy};
use crate::elf::facts::ElfFacts;

/// One ELF file of the set being judged.
#[derive(Debug, Clone, Copy)]
pub struct Binary<'a> {
    /// How reports name the file, e.g. its path inside a wheel.
    pub path: &'a str,
    pub facts: &'a ElfFacts,
}

/// Why a policy does not hold.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Violation {
    /// `binary` requires `version` (e.g. `GLIBC_2.28`) from `library`, and the
    /// policy's set for that prefix lacks it.
    SymbolVersion { binary: String, library: String, version: String },
    /// `binary` needs `library`, which is neither provided alongside nor
    /// whitelisted: it would have to be vendored.
    Library { binary: String, library: String },
    /// `binary` imports `symbol` from whitelisted `library`, which the policy
    /// bans (`*` bans the whole library).
    Blacklisted { binary: String, library: String, symbol: String },
}

/// A more compatible policy than the one that holds, and why it fails.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Blockers {
    /// The policy's tag, e.g. `manylinux_2_17_aarch64`.
    pub policy: String,
    pub violations: Vec<Violation>,
}

/// The verdict on a set of binaries, stable for `--json` output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Analysis {
    pub arch: String,
    /// Tag of the most compatible policy that holds (`linux_<arch>` at worst).
    pub policy: String,
    /// That policy's tag and legacy aliases, e.g.
    /// `["manylinux_2_17_aarch64", "manylinux2014_aarch64"]`.
    pub platform_tags: Vec<String>,
    /// Tag of the most compatible policy the symbol versions alone allow.
    pub symbol_policy: String,
    /// Per needed library, the version names required from it (dynamic
    /// loader entries excluded).
    pub versioned_symbols: BTreeMap<String, BTreeSet<String>>,
    /// Needed libraries neither provided alongside nor whitelisted by the
    /// most compatible policy, with the binaries that need them.
    pub external_libraries: BTreeMap<String, BTreeSet<String>>,
    /// Every more compatible policy, nearest first, with its violations; the
    /// first entry says what stands between the binaries and a better tag.
    pub blocked: Vec<Blockers>,
}

impl Analysis {
    /// Why the next more compatible policy fails, if there is one.
    pub fn next_blockers(&self) -> Option<&Blockers> {
        self.blocked.first()
    }
}

/// Library names a set of binaries provides to each other: their SONAMEs and
/// file names, so that a DT_NEEDED resolving inside the set is not external.
pub fn provided_names(binaries: &[Binary<'_>]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for binary in binaries {
        let file_name = binary.path.rsplit('/').next().unwrap_or(binary.path);
        names.insert(file_name.to_owned());
        if let Some(soname) = &binary.facts.soname {
            names.insert(soname.clone());
        }
    }
    names
}

/// The dynamic loader is part of libc: it is never vendored, and its symbol
/// versions are not judged.
fn is_dynamic_loader(library: &str) -> bool {
    library.contains("ld-linux") || library == "ld64.so.1" || library == "ld64.so.2"
}

impl Policies {
    /// Judges `binaries`; `provided` holds the library names available beside
    /// them (see [`provided_names`]), which therefore need no whitelisting.
    pub fn analyze(&self, binaries: &[Binary<'_>], provided: &BTreeSet<String>) -> Analysis {
        let mut blocked = Vec::new();
        let mut symbol_policy = None;
        let mut satisfied = self.linux();
        for policy in self.iter() {
            let violations = violations(policy, binaries, provided);
            let symbols_hold =
                !violations.iter().any(|v| matches!(v, Violation::SymbolVersion { .. }));
            if symbols_hold && symbol_policy.is_none() {
                symbol_policy = Some(policy);
            }
            if violations.is_empty() {
                satisfied = policy;
                break;
            }
            blocked.push(Blockers { policy: policy.tag(), violations });
        }
        blocked.reverse();

        let most_compatible = self.most_compatible();
        let mut external_libraries: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for binary in binaries {
            for library in external_needed(binary, most_compatible, provided) {
                external_libraries.entry(library.to_owned()).or_default().insert(binary.path.to_owned());
            }
        }

        Analysis {
            arch: self.arch().to_owned(),
            policy: satisfied.tag(),
            platform_tags: satisfied.platform_tags(),
            symbol_policy: symbol_policy.unwrap_or(satisfied).tag(),
            versioned_symbols: versioned_symbols(binaries),
            external_libraries,
            blocked,
        }
    }
}

fn versioned_symbols(binaries: &[Binary<'_>]) -> BTreeMap<String, BTreeSet<String>> {
    let mut by_library: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for requirement in binaries.iter().flat_map(|b| &b.facts.version_requirements) {
        if !is_dynamic_loader(&requirement.file) {
            by_library
                .entry(requirement.file.clone())
                .or_default()
                .extend(requirement.versions.iter().cloned());
        }
    }
    by_library
}

/// Needed libraries of `binary` that `policy` would require to be vendored.
fn external_needed<'a>(
    binary: &'a Binary<'_>,
    policy: &'a Policy,
    provided: &'a BTreeSet<String>,
) -> impl Iterator<Item = &'a str> {
    binary.facts.needed.iter().map(String::as_str).filter(move |library| {
        !policy.unrestricted
            && !is_dynamic_loader(library)
            && !provided.contains(*library)
            && !policy.whitelist.contains(*library)
    })
}

fn violations(policy: &Policy, binaries: &[Binary<'_>], provided: &BTreeSet<String>) -> Vec<Violation> {
    if policy.unrestricted {
        return Vec::new();
    }
    let mut found = BTreeSet::new();
    for binary in binaries {
        // Versions are judged whoever provides them, as the reference does:
        // a vendored libstdc++ does not excuse a too-new GLIBCXX version.
        for requirement in &binary.facts.version_requirements {
            if is_dynamic_loader(&requirement.file) {
                continue;
            }
            for version in requirement.versions.iter().filter(|v| !policy.allows_version(v)) {
                found.insert(Violation::SymbolVersion {
                    binary: binary.path.to_owned(),
                    library: requirement.file.clone(),
                    version: version.clone(),
                });
            }
        }
        for library in external_needed(binary, policy, provided) {
            found.insert(Violation::Library {
                binary: binary.path.to_owned(),
                library: library.to_owned(),
            });
        }
        found.extend(blacklisted_imports(policy, binary, provided));
    }
    found.into_iter().collect()
}

fn blacklisted_imports<'a>(
    policy: &'a Policy,
    binary: &'a Binary<'_>,
    provided: &'a BTreeSet<String>,
) -> impl Iterator<Item = Violation> + 'a {
    // A library shipped alongside provides its own symbols; the blacklist is
    // about what the system copy lacks. Weak imports may stay unresolved.
    let imported: BTreeSet<&str> = binary
        .facts
        .undefined_symbols
        .iter()
        .filter(|symbol| !symbol.weak)
        .map(|symbol| symbol.name.as_str())
        .chain(["*"])
        .collect();
    binary
        .facts
        .needed
        .iter()
        .filter(|library| !provided.contains(*library))
        .filter_map(|library| Some((library, policy.blacklist.get(library)?)))
        .flat_map(move |(library, banned)| {
            banned
                .iter()
                .filter(|symbol| imported.contains(symbol.as_str()))
                .map(move |symbol| Violation::Blacklisted {
                    binary: binary.path.to_owned(),
                    library: library.clone(),
                    symbol: symbol.clone(),
                })
                .collect::<Vec<_>>()
        })
}
