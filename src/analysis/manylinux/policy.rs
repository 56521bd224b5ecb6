//! The manylinux policies of `config/manylinux-policy.toml` and the musllinux ones of
//! `config/musllinux-policy.toml`, resolved for one architecture, and the platform tags
//! and `--plat` values that name them.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::formats::elf::facts::split_version_name;
use crate::target::Libc;

const MANYLINUX_CONFIG: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/config/manylinux-policy.toml"
));
const MUSLLINUX_CONFIG: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/config/musllinux-policy.toml"
));

/// The built-in policy file of a C library: its name (for messages) and text.
fn builtin_config(libc: Libc) -> (&'static str, &'static str) {
    match libc {
        Libc::Glibc => ("config/manylinux-policy.toml", MANYLINUX_CONFIG),
        Libc::Musl => ("config/musllinux-policy.toml", MUSLLINUX_CONFIG),
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PolicyError {
    #[error("{file}: {message}")]
    Config { file: String, message: String },
    #[error("no {family} policy exists for architecture `{arch}`; known architectures: {known}")]
    UnknownArch {
        family: String,
        arch: String,
        known: String,
    },
    #[error("unknown platform `{value}` for {arch}; use `auto` or one of: {known}")]
    UnknownPlatform {
        value: String,
        arch: String,
        known: String,
    },
    #[error(
        "platform `{value}` targets {requested}, but the binaries are {arch}; use `auto` or a {arch} tag"
    )]
    WrongArch {
        value: String,
        requested: String,
        arch: String,
    },
}

/// One policy resolved for one architecture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Policy {
    /// PEP 600 stem, e.g. `manylinux_2_17`; `linux` for the fallback.
    pub name: String,
    /// Legacy stems naming the same policy, e.g. `manylinux2014`.
    pub aliases: Vec<String>,
    /// Larger is more compatible; the fallback `linux` is 0.
    pub priority: u32,
    pub arch: String,
    /// Accepts every library and symbol (the `linux` fallback).
    pub unrestricted: bool,
    /// Sonames a binary may need without vendoring them.
    pub whitelist: BTreeSet<String>,
    /// Per whitelisted soname, symbols a binary must not import (`*`: all).
    pub blacklist: BTreeMap<String, BTreeSet<String>>,
    /// Per version prefix (`GLIBC`), the allowed versions (`2.17`, `LDBL_3.4`).
    pub symbol_versions: BTreeMap<String, BTreeSet<String>>,
}

impl Policy {
    /// The PEP 600 platform tag, e.g. `manylinux_2_17_aarch64`.
    pub fn tag(&self) -> String {
        format!("{}_{}", self.name, self.arch)
    }

    /// The tag followed by its legacy aliases:
    /// `["manylinux_2_17_aarch64", "manylinux2014_aarch64"]`.
    pub fn platform_tags(&self) -> Vec<String> {
        std::iter::once(self.tag())
            .chain(
                self.aliases
                    .iter()
                    .map(|alias| format!("{alias}_{}", self.arch)),
            )
            .collect()
    }

    /// The platform part of a wheel file name: the tags sorted and joined by
    /// '.', as the reference repair tool writes it
    /// (`manylinux2014_aarch64.manylinux_2_17_aarch64`).
    pub fn compressed_platform_tag(&self) -> String {
        let mut tags = self.platform_tags();
        tags.sort();
        tags.join(".")
    }

    /// Whether a required version such as `GLIBC_2.17` is acceptable. Prefixes
    /// the policy says nothing about (`OPENSSL`, `GFORTRAN`) are acceptable;
    /// listed prefixes require set membership, not a maximum.
    pub fn allows_version(&self, version_name: &str) -> bool {
        let (prefix, version) = split_version_name(version_name);
        self.symbol_versions
            .get(prefix)
            .is_none_or(|allowed| allowed.contains(version))
    }

    /// Whether `value` names this policy, by stem or alias, with or without
    /// the architecture suffix.
    fn is_named(&self, value: &str) -> bool {
        let stem = value
            .strip_suffix(self.arch.as_str())
            .and_then(|rest| rest.strip_suffix('_'))
            .unwrap_or(value);
        stem == self.name || self.aliases.iter().any(|alias| alias == stem)
    }
}

/// What a `--plat` value asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlatRequest<'a> {
    /// The most compatible policy the binaries satisfy.
    Auto,
    Policy(&'a Policy),
}

/// The C library of a policy family as its binaries name it (`[c_library]`): musl's
/// `libc.musl-<arch>.so.1`, which every restricted policy whitelists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CLibrary {
    /// The name musllinux wheels need it by.
    pub soname: String,
    /// Other names linkers record for it (zig's `libc.so`), renamed to `soname` by the
    /// repair.
    pub linker_names: Vec<String>,
}

/// The policies for one architecture, most compatible first, `linux` last.
#[derive(Debug, Clone)]
pub struct Policies {
    arch: String,
    /// The family's stem, `manylinux` or `musllinux`.
    family: String,
    /// The C library by its own name, where the policy file says it (musl).
    c_library: Option<CLibrary>,
    /// Never empty, most compatible first.
    restricted: Vec<Policy>,
    linux: Policy,
    /// Every architecture the configuration knows, to tell a tag for another
    /// architecture from an unknown tag.
    known_arches: BTreeSet<String>,
}

impl Policies {
    /// The built-in policies of `libc` (manylinux for glibc, musllinux for musl) for
    /// `arch` (`aarch64`, `ppc64le`, ...).
    pub fn for_arch(libc: Libc, arch: &str) -> Result<Policies, PolicyError> {
        let (file, text) = builtin_config(libc);
        Policies::from_config(file, text, arch)
    }

    /// Policies from a configuration text in the format of the built-in file.
    pub fn from_config(file: &str, text: &str, arch: &str) -> Result<Policies, PolicyError> {
        let config: ConfigFile = toml::from_str(text).map_err(|error| PolicyError::Config {
            file: file.to_owned(),
            message: error.message().trim().to_owned(),
        })?;
        resolve(config, file, arch)
    }

    pub fn arch(&self) -> &str {
        &self.arch
    }

    /// `manylinux` or `musllinux`: the stem of the family's tags.
    pub fn family(&self) -> &str {
        &self.family
    }

    /// These policies with `name` (a `--plat` value naming a restricted policy) as the
    /// only restricted one, as the reference auditor keeps only the musl it runs on: the
    /// binaries cannot tell musllinux policies apart, so the build says which.
    pub fn only(&self, name: &str) -> Result<Policies, PolicyError> {
        let kept = match self.parse_plat(name)? {
            PlatRequest::Policy(policy) => policy.clone(),
            PlatRequest::Auto => self.newest().clone(),
        };
        Ok(Policies {
            restricted: vec![kept],
            ..self.clone()
        })
    }

    /// The C library by its own name, where the policies say it (musl); `None` for glibc,
    /// whose `libc.so.6` is an ordinary whitelisted name.
    pub fn c_library(&self) -> Option<&CLibrary> {
        self.c_library.as_ref()
    }

    /// Whether the policies judge binaries by their symbol versions (manylinux). musl has
    /// none, so every musllinux policy accepts the same binaries and the tag must come
    /// from the musl a build linked (see config/musllinux-policy.toml).
    pub fn judge_symbol_versions(&self) -> bool {
        self.restricted
            .iter()
            .any(|policy| !policy.symbol_versions.is_empty())
    }

    /// Most compatible first; the last one is the unrestricted `linux`.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Policy> {
        self.restricted.iter().chain(std::iter::once(&self.linux))
    }

    /// The unrestricted fallback (`linux_<arch>`).
    pub fn linux(&self) -> &Policy {
        &self.linux
    }

    /// The most compatible restricted policy, e.g. `manylinux_2_17` on aarch64.
    pub fn most_compatible(&self) -> &Policy {
        self.restricted.first().unwrap_or(&self.linux)
    }

    /// The newest (least compatible) restricted policy.
    pub fn newest(&self) -> &Policy {
        self.restricted.last().unwrap_or(&self.linux)
    }

    /// The policy named by a stem, alias or tag of this architecture:
    /// `manylinux_2_17`, `manylinux2014_aarch64`, `linux_aarch64`.
    pub fn by_name(&self, name: &str) -> Option<&Policy> {
        self.iter().find(|policy| policy.is_named(name))
    }

    /// Parses a `--plat` value: `auto`, a tag of this architecture
    /// (`manylinux_2_28_aarch64`, `manylinux2014_ppc64le`) or a bare stem
    /// (`manylinux_2_28`). The unrestricted `linux` is not a target.
    pub fn parse_plat(&self, value: &str) -> Result<PlatRequest<'_>, PolicyError> {
        if value == "auto" {
            return Ok(PlatRequest::Auto);
        }
        if let Some(policy) = self.restricted.iter().find(|policy| policy.is_named(value)) {
            return Ok(PlatRequest::Policy(policy));
        }
        let other_arch = self.known_arches.iter().find(|arch| {
            **arch != self.arch
                && value
                    .strip_suffix(arch.as_str())
                    .is_some_and(|rest| rest.ends_with('_'))
        });
        if let Some(requested) = other_arch {
            return Err(PolicyError::WrongArch {
                value: value.to_owned(),
                requested: requested.clone(),
                arch: self.arch.clone(),
            });
        }
        let known = self
            .restricted
            .iter()
            .flat_map(Policy::platform_tags)
            .collect::<Vec<_>>()
            .join(", ");
        Err(PolicyError::UnknownPlatform {
            value: value.to_owned(),
            arch: self.arch.clone(),
            known,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    policy: Vec<ConfigPolicy>,
    #[serde(default)]
    c_library: Option<ConfigCLibrary>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigCLibrary {
    soname: BTreeMap<String, String>,
    #[serde(default)]
    linker_names: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigPolicy {
    name: String,
    #[serde(default)]
    aliases: Vec<String>,
    priority: u32,
    #[serde(default)]
    unrestricted: bool,
    #[serde(default)]
    architectures: BTreeSet<String>,
    #[serde(default)]
    whitelist_added: Vec<String>,
    #[serde(default)]
    blacklist: BTreeMap<String, BTreeSet<String>>,
    #[serde(default)]
    symbol_versions_added: BTreeMap<String, BTreeMap<String, Vec<String>>>,
}

/// Expands the per-policy changes into full sets for `arch`. Restricted
/// policies must be listed most compatible first, because each one extends
/// the previous one (for every architecture, not only `arch`).
fn resolve(config: ConfigFile, file: &str, arch: &str) -> Result<Policies, PolicyError> {
    let config_error = |message: String| PolicyError::Config {
        file: file.to_owned(),
        message,
    };
    let mut known_arches = BTreeSet::new();
    let mut unrestricted = Vec::new();
    let mut restricted = Vec::new();
    let mut whitelist = BTreeSet::new();
    let mut versions_by_arch: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> =
        BTreeMap::new();
    let mut previous_priority = u32::MAX;
    let family = config
        .policy
        .iter()
        .find(|entry| !entry.unrestricted)
        .and_then(|entry| entry.name.split('_').next())
        .unwrap_or("manylinux")
        .to_owned();
    let c_library = match &config.c_library {
        Some(c_library) => {
            let soname = c_library.soname.get(arch).cloned();
            soname.map(|soname| CLibrary {
                soname,
                linker_names: c_library.linker_names.clone(),
            })
        }
        None => None,
    };
    if let Some(c_library) = &c_library {
        whitelist.insert(c_library.soname.clone());
        whitelist.extend(c_library.linker_names.iter().cloned());
    }

    for entry in config.policy {
        if entry.unrestricted {
            unrestricted.push(Policy {
                name: entry.name,
                aliases: entry.aliases,
                priority: entry.priority,
                arch: arch.to_owned(),
                unrestricted: true,
                whitelist: BTreeSet::new(),
                blacklist: BTreeMap::new(),
                symbol_versions: BTreeMap::new(),
            });
            continue;
        }
        if entry.priority >= previous_priority {
            return Err(config_error(format!(
                "policy `{}` must come before the policies with a lower priority than {}",
                entry.name, entry.priority
            )));
        }
        previous_priority = entry.priority;
        if let Some(stray) = entry
            .symbol_versions_added
            .keys()
            .find(|a| !entry.architectures.contains(*a))
        {
            return Err(config_error(format!(
                "policy `{}` adds symbol versions for `{stray}`, which is not in its architectures",
                entry.name
            )));
        }
        whitelist.extend(entry.whitelist_added);
        for (added_arch, prefixes) in entry.symbol_versions_added {
            let versions = versions_by_arch.entry(added_arch).or_default();
            for (prefix, added) in prefixes {
                versions.entry(prefix).or_default().extend(added);
            }
        }
        known_arches.extend(entry.architectures.iter().cloned());
        if entry.architectures.contains(arch) {
            restricted.push(Policy {
                name: entry.name,
                aliases: entry.aliases,
                priority: entry.priority,
                arch: arch.to_owned(),
                unrestricted: false,
                whitelist: whitelist.clone(),
                blacklist: entry.blacklist,
                symbol_versions: versions_by_arch.get(arch).cloned().unwrap_or_default(),
            });
        }
    }

    let [linux] = <[Policy; 1]>::try_from(unrestricted).map_err(|found| {
        config_error(format!(
            "expected exactly one unrestricted policy, found {}",
            found.len()
        ))
    })?;
    if restricted.is_empty() {
        return Err(PolicyError::UnknownArch {
            family,
            arch: arch.to_owned(),
            known: known_arches.iter().cloned().collect::<Vec<_>>().join(", "),
        });
    }
    Ok(Policies {
        arch: arch.to_owned(),
        family,
        c_library,
        restricted,
        linux,
        known_arches,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two restricted policies: the older lacks `GLIBC_2.3.4` although it has
    /// a higher version, to show that membership, not a maximum, decides.
    const CONFIG: &str = r#"
        [[policy]]
        name = "linux"
        priority = 0
        unrestricted = true

        [[policy]]
        name = "manylinux_2_17"
        aliases = ["manylinux2014"]
        priority = 80
        architectures = ["aarch64", "ppc64le"]
        whitelist_added = ["libc.so.6"]
        [policy.symbol_versions_added.aarch64]
        GLIBC = ["2.0", "2.17"]
        [policy.symbol_versions_added.ppc64le]
        GLIBCXX = ["3.4", "LDBL_3.4"]

        [[policy]]
        name = "manylinux_2_28"
        priority = 64
        architectures = ["aarch64"]
        whitelist_added = ["libz.so.1"]
        [policy.blacklist]
        "libz.so.1" = ["_tr_init"]
        [policy.symbol_versions_added.aarch64]
        GLIBC = ["2.3.4", "2.28"]
    "#;

    fn policies(arch: &str) -> Policies {
        Policies::from_config("test.toml", CONFIG, arch).expect("the test configuration is valid")
    }

    fn tags(policies: &Policies) -> Vec<String> {
        policies.iter().map(Policy::tag).collect()
    }

    #[test]
    fn orders_policies_most_compatible_first_with_linux_last() {
        let aarch64 = policies("aarch64");
        assert_eq!(
            tags(&aarch64),
            [
                "manylinux_2_17_aarch64",
                "manylinux_2_28_aarch64",
                "linux_aarch64"
            ]
        );
        assert_eq!(aarch64.most_compatible().name, "manylinux_2_17");
        assert_eq!(aarch64.newest().name, "manylinux_2_28");
        assert_eq!(
            tags(&policies("ppc64le")),
            ["manylinux_2_17_ppc64le", "linux_ppc64le"]
        );
    }

    #[test]
    fn accumulates_whitelist_and_versions_from_older_policies() {
        let aarch64 = policies("aarch64");
        let newest = aarch64.newest();
        assert_eq!(
            newest.whitelist,
            BTreeSet::from(["libc.so.6".into(), "libz.so.1".into()])
        );
        let glibc = BTreeSet::from(["2.0", "2.17", "2.3.4", "2.28"].map(String::from));
        assert_eq!(newest.symbol_versions.get("GLIBC"), Some(&glibc));
        assert!(
            aarch64.most_compatible().blacklist.is_empty(),
            "blacklists are per policy"
        );
    }

    #[test]
    fn allows_versions_by_set_membership_not_by_maximum() {
        let aarch64 = policies("aarch64");
        let old = aarch64.most_compatible();
        assert!(old.allows_version("GLIBC_2.17"));
        assert!(
            !old.allows_version("GLIBC_2.3.4"),
            "2.3.4 < 2.17 but is not in the set"
        );
        assert!(aarch64.newest().allows_version("GLIBC_2.3.4"));
        assert!(
            old.allows_version("OPENSSL_1_1_0"),
            "unlisted prefixes are not judged"
        );
        assert!(
            !old.allows_version("GLIBC"),
            "a bare prefix is an empty version"
        );
    }

    #[test]
    fn treats_ldbl_entries_as_versions_of_their_prefix() {
        let ppc64le = policies("ppc64le");
        let policy = ppc64le.most_compatible();
        assert!(policy.allows_version("GLIBCXX_LDBL_3.4"));
        assert!(!policy.allows_version("GLIBCXX_LDBL_3.4.21"));
        assert!(!policy.allows_version("GLIBCXX_IEEE128_3.4.29"));
    }

    #[test]
    fn lists_the_pep600_tag_before_its_legacy_alias() {
        let aarch64 = policies("aarch64");
        let policy = aarch64.most_compatible();
        assert_eq!(
            policy.platform_tags(),
            ["manylinux_2_17_aarch64", "manylinux2014_aarch64"]
        );
        assert_eq!(
            policy.compressed_platform_tag(),
            "manylinux2014_aarch64.manylinux_2_17_aarch64"
        );
        assert_eq!(
            aarch64.newest().compressed_platform_tag(),
            "manylinux_2_28_aarch64"
        );
    }

    #[test]
    fn parses_plat_values_by_tag_alias_or_stem() {
        let aarch64 = policies("aarch64");
        let named = |value| match aarch64.parse_plat(value) {
            Ok(PlatRequest::Policy(policy)) => policy.name.clone(),
            other => panic!("{value}: {other:?}"),
        };
        assert_eq!(aarch64.parse_plat("auto"), Ok(PlatRequest::Auto));
        assert_eq!(named("manylinux_2_28_aarch64"), "manylinux_2_28");
        assert_eq!(named("manylinux2014_aarch64"), "manylinux_2_17");
        assert_eq!(named("manylinux2014"), "manylinux_2_17");
        assert_eq!(named("manylinux_2_28"), "manylinux_2_28");
    }

    #[test]
    fn rejects_plat_values_for_another_architecture() {
        let error = policies("aarch64")
            .parse_plat("manylinux2014_ppc64le")
            .unwrap_err();
        assert!(
            matches!(&error, PolicyError::WrongArch { requested, .. } if requested == "ppc64le")
        );
        assert!(
            error.to_string().contains("the binaries are aarch64"),
            "{error}"
        );
    }

    #[test]
    fn rejects_unknown_plat_values_listing_the_valid_ones() {
        let aarch64 = policies("aarch64");
        for value in [
            "manylinux_2_99_aarch64",
            "linux_aarch64",
            "linux",
            "musllinux_1_2_aarch64",
        ] {
            let error = aarch64.parse_plat(value).unwrap_err();
            assert!(
                matches!(error, PolicyError::UnknownPlatform { .. }),
                "{value}: {error:?}"
            );
            assert!(
                error.to_string().contains("manylinux2014_aarch64"),
                "{error}"
            );
        }
    }

    #[test]
    fn rejects_an_architecture_without_policies() {
        let error = Policies::from_config("test.toml", CONFIG, "mips64").unwrap_err();
        assert_eq!(
            error,
            PolicyError::UnknownArch {
                family: "manylinux".into(),
                arch: "mips64".into(),
                known: "aarch64, ppc64le".into()
            }
        );
    }

    #[test]
    fn rejects_configurations_that_break_the_cumulative_order() {
        let swapped = CONFIG.replace("priority = 64", "priority = 90");
        let error = Policies::from_config("test.toml", &swapped, "aarch64").unwrap_err();
        assert!(matches!(error, PolicyError::Config { .. }), "{error:?}");

        let stray = CONFIG.replace(
            "[policy.symbol_versions_added.ppc64le]",
            "[policy.symbol_versions_added.s390x]",
        );
        let error = Policies::from_config("test.toml", &stray, "aarch64").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("test.toml: policy `manylinux_2_17` adds"),
            "{error}"
        );

        let typo = CONFIG.replace(
            "whitelist_added = [\"libz.so.1\"]",
            "whitelist = [\"libz.so.1\"]",
        );
        assert!(Policies::from_config("test.toml", &typo, "aarch64").is_err());
    }

    #[test]
    fn builtin_policies_start_at_manylinux2014_for_the_cross_targets() {
        for arch in ["aarch64", "ppc64le"] {
            let policies =
                Policies::for_arch(Libc::Glibc, arch).expect("the built-in configuration is valid");
            assert_eq!(
                policies.most_compatible().platform_tags()[1],
                format!("manylinux2014_{arch}")
            );
            for name in [
                "manylinux_2_24",
                "manylinux_2_26",
                "manylinux_2_27",
                "manylinux_2_28",
                "manylinux_2_31",
                "manylinux_2_34",
            ] {
                assert!(policies.by_name(name).is_some(), "{arch} lacks {name}");
            }
        }
        let x86_64 =
            Policies::for_arch(Libc::Glibc, "x86_64").expect("the built-in configuration is valid");
        assert_eq!(
            x86_64.most_compatible().platform_tags(),
            ["manylinux_2_5_x86_64", "manylinux1_x86_64"]
        );
    }

    #[test]
    fn musllinux_policies_whitelist_the_architectures_musl_by_both_its_names() {
        let x86_64 = Policies::for_arch(Libc::Musl, "x86_64").expect("the built-in musllinux file");
        assert_eq!(
            x86_64.iter().map(Policy::tag).collect::<Vec<_>>(),
            [
                "musllinux_1_1_x86_64",
                "musllinux_1_2_x86_64",
                "linux_x86_64"
            ]
        );
        let c_library = x86_64.c_library().expect("musl names its C library");
        assert_eq!(c_library.soname, "libc.musl-x86_64.so.1");
        assert_eq!(c_library.linker_names, ["libc.so"]);
        for policy in x86_64.iter().filter(|policy| !policy.unrestricted) {
            for name in ["libc.musl-x86_64.so.1", "libc.so", "libz.so.1"] {
                assert!(policy.whitelist.contains(name), "{}: {name}", policy.name);
            }
            assert!(!policy.whitelist.contains("libc.musl-aarch64.so.1"));
        }
        assert!(!x86_64.judge_symbol_versions());
        assert_eq!(
            Policies::for_arch(Libc::Musl, "armv7l")
                .unwrap()
                .c_library()
                .unwrap()
                .soname,
            "libc.musl-armv7.so.1"
        );
        let only = x86_64.only("musllinux_1_2_x86_64").unwrap();
        assert_eq!(
            only.iter().map(Policy::tag).collect::<Vec<_>>(),
            ["musllinux_1_2_x86_64", "linux_x86_64"]
        );
        assert_eq!(
            x86_64.only("auto").unwrap().most_compatible().name,
            "musllinux_1_2"
        );
        assert!(x86_64.only("manylinux2014_x86_64").is_err());
        let glibc = Policies::for_arch(Libc::Glibc, "x86_64").unwrap();
        assert!(glibc.judge_symbol_versions() && glibc.c_library().is_none());
        let error = Policies::for_arch(Libc::Musl, "ppc64").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("no musllinux policy exists for architecture `ppc64`"),
            "{error}"
        );
    }
}
