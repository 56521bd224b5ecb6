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
use crate::formats::elf::facts::ElfFacts;

/// One ELF file of the set being judged.
#[derive(Debug, Clone, Copy)]
pub struct Binary<'a> {
    /// How reports name the file, e.g. its path inside a wheel.
    pub path: &'a str,
    pub facts: &'a ElfFacts,
    /// Its unversioned imports that bind to versioned system definitions: requirements
    /// as real as the `.gnu.version_r` ones (see `analysis::linux::symbols`).
    pub bound: &'a [BoundImport],
}

/// An unversioned import that binds to a versioned definition of a system library, so
/// the binary needs `version` from `library` although its version table does not say so.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct BoundImport {
    pub symbol: String,
    pub library: String,
    /// The oldest version the library defines the symbol at, e.g. `GLIBC_2.32`.
    pub version: String,
}

/// Why a policy does not hold.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Violation {
    /// `binary` requires `version` (e.g. `GLIBC_2.28`) from `library`, and the
    /// policy's set for that prefix lacks it.
    SymbolVersion {
        binary: String,
        library: String,
        version: String,
    },
    /// `binary` imports `symbol` without a version, and `library` defines it only at
    /// `version`, which the policy's set lacks (glibc's `__*ieee128` functions, 2.32).
    UnversionedSymbol {
        binary: String,
        library: String,
        symbol: String,
        version: String,
    },
    /// `binary` needs `library`, which is neither provided alongside nor
    /// whitelisted: it would have to be vendored.
    Library { binary: String, library: String },
    /// `binary` imports `symbol` from whitelisted `library`, which the policy
    /// bans (`*` bans the whole library).
    Blacklisted {
        binary: String,
        library: String,
        symbol: String,
    },
    /// `binary` imports `symbol` (`PyFPE_jbuf`, ...), which only CPythons built
    /// `--with-fpectl` export: no manylinux policy allows it (the reference's rule).
    PyFpe { binary: String, symbol: String },
}

/// The fpectl symbols of old CPythons (2.x, 3.6 and earlier, `--with-fpectl`).
const PYFPE_SYMBOLS: [&str; 3] = ["PyFPE_jbuf", "PyFPE_dummy", "PyFPE_counter"];

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
/// versions are not judged (glibc's `ld-linux-*`, `ld64.so.*`; musl's `ld-musl-*`).
pub fn is_dynamic_loader(library: &str) -> bool {
    library.contains("ld-linux")
        || library.starts_with("ld-musl-")
        || library == "ld64.so.1"
        || library == "ld64.so.2"
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
            let symbols_hold = !violations.iter().any(|v| {
                matches!(
                    v,
                    Violation::SymbolVersion { .. } | Violation::UnversionedSymbol { .. }
                )
            });
            if symbols_hold && symbol_policy.is_none() {
                symbol_policy = Some(policy);
            }
            if violations.is_empty() {
                satisfied = policy;
                break;
            }
            blocked.push(Blockers {
                policy: policy.tag(),
                violations,
            });
        }
        blocked.reverse();

        let most_compatible = self.most_compatible();
        let mut external_libraries: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for binary in binaries {
            for library in external_needed(binary, most_compatible, provided) {
                external_libraries
                    .entry(library.to_owned())
                    .or_default()
                    .insert(binary.path.to_owned());
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
    for bound in binaries.iter().flat_map(|b| b.bound) {
        by_library
            .entry(bound.library.clone())
            .or_default()
            .insert(bound.version.clone());
    }
    by_library
}

/// Needed libraries of `binary` that `policy` would require to be vendored.
fn external_needed<'a>(
    binary: &'a Binary<'_>,
    policy: &'a Policy,
    provided: &'a BTreeSet<String>,
) -> impl Iterator<Item = &'a str> {
    binary
        .facts
        .needed
        .iter()
        .map(String::as_str)
        .filter(move |library| {
            !policy.unrestricted
                && !is_dynamic_loader(library)
                && !provided.contains(*library)
                && !policy.whitelist.contains(*library)
        })
}

fn violations(
    policy: &Policy,
    binaries: &[Binary<'_>],
    provided: &BTreeSet<String>,
) -> Vec<Violation> {
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
            for version in requirement
                .versions
                .iter()
                .filter(|v| !policy.allows_version(v))
            {
                found.insert(Violation::SymbolVersion {
                    binary: binary.path.to_owned(),
                    library: requirement.file.clone(),
                    version: version.clone(),
                });
            }
        }
        for bound in binary
            .bound
            .iter()
            .filter(|b| !policy.allows_version(&b.version))
        {
            found.insert(Violation::UnversionedSymbol {
                binary: binary.path.to_owned(),
                library: bound.library.clone(),
                symbol: bound.symbol.clone(),
                version: bound.version.clone(),
            });
        }
        for library in external_needed(binary, policy, provided) {
            found.insert(Violation::Library {
                binary: binary.path.to_owned(),
                library: library.to_owned(),
            });
        }
        found.extend(blacklisted_imports(policy, binary, provided));
        for symbol in &binary.facts.undefined_symbols {
            if PYFPE_SYMBOLS.contains(&symbol.name.as_str()) {
                found.insert(Violation::PyFpe {
                    binary: binary.path.to_owned(),
                    symbol: symbol.name.clone(),
                });
            }
        }
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

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Violation::SymbolVersion {
                binary,
                library,
                version,
            } => write!(f, "{binary} needs {version} from {library}"),
            Violation::UnversionedSymbol {
                binary,
                library,
                symbol,
                version,
            } => write!(
                f,
                "{binary} imports {symbol} without a version, which {library} has only since {version}"
            ),
            Violation::Library { binary, library } => write!(
                f,
                "{binary} needs {library}, which the policy does not allow"
            ),
            Violation::Blacklisted {
                binary,
                library,
                symbol,
            } => write!(
                f,
                "{binary} imports {symbol} from {library}, which the policy forbids"
            ),
            Violation::PyFpe { binary, symbol } => write!(
                f,
                "{binary} uses {symbol}, which only CPythons built --with-fpectl provide"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::elf::facts::{ElfClass, Endianness, UndefinedSymbol, VersionRequirement};

    const CONFIG: &str = r#"
        [[policy]]
        name = "linux"
        priority = 0
        unrestricted = true

        [[policy]]
        name = "manylinux_2_17"
        aliases = ["manylinux2014"]
        priority = 80
        architectures = ["aarch64"]
        whitelist_added = ["libc.so.6", "libz.so.1"]
        [policy.blacklist]
        "libz.so.1" = ["_tr_init", "*"]
        [policy.symbol_versions_added.aarch64]
        GLIBC = ["2.0", "2.17"]

        [[policy]]
        name = "manylinux_2_28"
        priority = 64
        architectures = ["aarch64"]
        [policy.blacklist]
        "libz.so.1" = ["_tr_init"]
        [policy.symbol_versions_added.aarch64]
        GLIBC = ["2.3.4", "2.28"]
    "#;

    fn policies() -> Policies {
        Policies::from_config("test.toml", CONFIG, "aarch64")
            .expect("the test configuration is valid")
    }

    fn facts(needed: &[&str], requirements: &[(&str, &[&str])]) -> ElfFacts {
        ElfFacts {
            machine: 183,
            arch: Some("aarch64"),
            class: ElfClass::Elf64,
            endianness: Endianness::Little,
            file_type: 3,
            flags: 0,
            interpreter: None,
            soname: None,
            needed: needed.iter().map(|s| s.to_string()).collect(),
            rpath: Vec::new(),
            runpath: Vec::new(),
            version_requirements: requirements
                .iter()
                .map(|(file, versions)| VersionRequirement {
                    file: file.to_string(),
                    versions: versions.iter().map(|v| v.to_string()).collect(),
                })
                .collect(),
            undefined_symbols: Vec::new(),
            defined_symbols: Vec::new(),
        }
    }

    fn import(name: &str, weak: bool) -> UndefinedSymbol {
        UndefinedSymbol {
            name: name.into(),
            version: None,
            library: None,
            weak,
        }
    }

    fn analyze(facts: &ElfFacts) -> Analysis {
        let binaries = [Binary {
            path: "pkg/_ext.so",
            facts,
            bound: &[],
        }];
        policies().analyze(&binaries, &provided_names(&binaries))
    }

    #[test]
    fn picks_the_most_compatible_policy_whose_sets_hold_every_version() {
        let analysis = analyze(&facts(&["libc.so.6"], &[("libc.so.6", &["GLIBC_2.17"])]));
        assert_eq!(analysis.policy, "manylinux_2_17_aarch64");
        assert_eq!(
            analysis.platform_tags,
            ["manylinux_2_17_aarch64", "manylinux2014_aarch64"]
        );
        assert!(analysis.blocked.is_empty());
    }

    #[test]
    fn explains_a_missing_version_as_a_symbol_version_violation() {
        let analysis = analyze(&facts(
            &["libc.so.6"],
            &[("libc.so.6", &["GLIBC_2.17", "GLIBC_2.28"])],
        ));
        assert_eq!(analysis.policy, "manylinux_2_28_aarch64");
        assert_eq!(analysis.symbol_policy, "manylinux_2_28_aarch64");
        let blockers = analysis.next_blockers().expect("manylinux_2_17 fails");
        assert_eq!(blockers.policy, "manylinux_2_17_aarch64");
        assert_eq!(
            blockers.violations,
            [Violation::SymbolVersion {
                binary: "pkg/_ext.so".into(),
                library: "libc.so.6".into(),
                version: "GLIBC_2.28".into()
            }]
        );
    }

    #[test]
    fn judges_membership_so_an_older_version_outside_the_set_fails() {
        let analysis = analyze(&facts(&["libc.so.6"], &[("libc.so.6", &["GLIBC_2.3.4"])]));
        assert_eq!(analysis.policy, "manylinux_2_28_aarch64");
    }

    #[test]
    fn falls_back_to_linux_and_lists_every_better_policy_nearest_first() {
        let analysis = analyze(&facts(&["libc.so.6"], &[("libc.so.6", &["GLIBC_2.35"])]));
        assert_eq!(analysis.policy, "linux_aarch64");
        assert_eq!(analysis.symbol_policy, "linux_aarch64");
        let order: Vec<_> = analysis.blocked.iter().map(|b| b.policy.as_str()).collect();
        assert_eq!(order, ["manylinux_2_28_aarch64", "manylinux_2_17_aarch64"]);
    }

    #[test]
    fn ignores_prefixes_the_policies_do_not_list_and_the_dynamic_loader() {
        let analysis = analyze(&facts(
            &["libc.so.6", "ld-linux-aarch64.so.1"],
            &[
                ("libssl.so.3", &["OPENSSL_3.0.0"]),
                ("ld-linux-aarch64.so.1", &["GLIBC_2.99"]),
            ],
        ));
        assert_eq!(analysis.policy, "manylinux_2_17_aarch64");
        assert!(
            !analysis
                .versioned_symbols
                .contains_key("ld-linux-aarch64.so.1")
        );
        assert!(analysis.versioned_symbols.contains_key("libssl.so.3"));
    }

    #[test]
    fn reports_needed_libraries_outside_the_whitelist_unless_provided() {
        let extension = facts(&["libc.so.6", "libssl.so.3"], &[]);
        let analysis = analyze(&extension);
        assert_eq!(analysis.policy, "linux_aarch64");
        assert_eq!(analysis.symbol_policy, "manylinux_2_17_aarch64");
        let binaries_needing_ssl = BTreeSet::from(["pkg/_ext.so".to_string()]);
        assert_eq!(
            analysis.external_libraries.get("libssl.so.3"),
            Some(&binaries_needing_ssl)
        );
        assert!(
            analysis.blocked[0]
                .violations
                .contains(&Violation::Library {
                    binary: "pkg/_ext.so".into(),
                    library: "libssl.so.3".into()
                })
        );

        let mut vendored = facts(&["libc.so.6"], &[]);
        vendored.soname = Some("libssl.so.3".into());
        let binaries = [
            Binary {
                path: "pkg/_ext.so",
                facts: &extension,
                bound: &[],
            },
            Binary {
                path: "pkg.libs/libssl-1234abcd.so.3",
                facts: &vendored,
                bound: &[],
            },
        ];
        let analysis = policies().analyze(&binaries, &provided_names(&binaries));
        assert_eq!(analysis.policy, "manylinux_2_17_aarch64");
        assert!(analysis.external_libraries.is_empty());
    }

    #[test]
    fn reports_blacklisted_imports_but_not_weak_ones() {
        let mut extension = facts(&["libc.so.6", "libz.so.1"], &[]);
        extension.undefined_symbols = vec![import("_tr_init", false), import("deflate", false)];
        let analysis = analyze(&extension);
        assert_eq!(analysis.policy, "linux_aarch64");
        let manylinux_2_28 = &analysis.blocked[0];
        assert_eq!(
            manylinux_2_28.violations,
            [Violation::Blacklisted {
                binary: "pkg/_ext.so".into(),
                library: "libz.so.1".into(),
                symbol: "_tr_init".into()
            }]
        );
        // manylinux_2_17 bans the whole library with "*".
        assert_eq!(analysis.blocked[1].violations.len(), 2);

        extension.undefined_symbols = vec![import("_tr_init", true)];
        extension.needed = vec!["libc.so.6".into()];
        assert_eq!(analyze(&extension).policy, "manylinux_2_17_aarch64");
    }

    #[test]
    fn pyfpe_symbols_hold_no_manylinux_policy() {
        let mut extension = facts(&["libc.so.6"], &[]);
        extension.undefined_symbols = vec![import("PyFPE_jbuf", false)];
        let analysis = analyze(&extension);
        assert_eq!(analysis.policy, "linux_aarch64");
        assert_eq!(
            analysis.blocked[0].violations,
            [Violation::PyFpe {
                binary: "pkg/_ext.so".into(),
                symbol: "PyFPE_jbuf".into()
            }]
        );
    }

    #[test]
    fn serializes_violations_with_a_kind_tag() {
        let analysis = analyze(&facts(&["libc.so.6", "libfoo.so.1"], &[]));
        let json = serde_json::to_value(&analysis).expect("the analysis serializes");
        let violation = &json["blocked"][0]["violations"][0];
        assert_eq!(violation["kind"], "library");
        assert_eq!(violation["library"], "libfoo.so.1");
        assert_eq!(json["policy"], "linux_aarch64");
    }

    #[test]
    fn an_unversioned_import_bound_to_a_newer_glibc_lowers_the_tag() {
        let facts = facts(&["libc.so.6"], &[("libc.so.6", &["GLIBC_2.17"])]);
        let bound = [BoundImport {
            symbol: "__snprintfieee128".into(),
            library: "libc.so.6".into(),
            version: "GLIBC_2.28".into(),
        }];
        let binaries = [Binary {
            path: "pkg/_ext.so",
            facts: &facts,
            bound: &bound,
        }];
        let analysis = policies().analyze(&binaries, &provided_names(&binaries));
        assert_eq!(analysis.policy, "manylinux_2_28_aarch64");
        assert_eq!(analysis.symbol_policy, "manylinux_2_28_aarch64");
        assert!(analysis.versioned_symbols["libc.so.6"].contains("GLIBC_2.28"));
        let blocker = &analysis.blocked[0];
        assert_eq!(blocker.policy, "manylinux_2_17_aarch64");
        assert_eq!(
            blocker.violations[0].to_string(),
            "pkg/_ext.so imports __snprintfieee128 without a version, which libc.so.6 has only since GLIBC_2.28"
        );
    }
}
