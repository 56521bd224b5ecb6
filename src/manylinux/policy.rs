//! The manylinux policies of `config/manylinux-policy.toml`, resolved for one
//! architecture, and the platform tags and `--plat` values that name them.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::elf::facts::split_version_name;

const BUILTIN_CONFIG: &str = include_str!("../../config/manylinux-policy.toml");
const BUILTIN_CONFIG_NAME: &str = "config/manylinux-policy.toml";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PolicyError {
    #[error("{file}: {message}")]
    Config { file: String, message: String },
    #[error("no manylinux policy exists for architecture `{arch}`; known architectures: {known}")]
    UnknownArch { arch: String, known: String },
    #[error("unknown platform `{value}` for {arch}; use `auto` or one of: {known}")]
    UnknownPlatform { value: String, arch: String, known: String },
    #[error("platform `{value}` targets {requested}, but the binaries are {arch}; use `auto` or a {arch} tag")]
    WrongArch { value: String, requested: String, arch: String },
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
            .chain(self.aliases.iter().map(|alias| format!("{alias}_{}", self.arch)))
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
        self.symbol_versions.get(prefix).is_none_or(|allowed| allowed.contains(version))
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

/// The policies for one architecture, most compatible first, `linux` last.
#[derive(Debug, Clone)]
pub struct Policies {
    arch: String,
    /// Never empty, most compatible first.
    restricted: Vec<Policy>,
    linux: Policy,
    /// Every architecture the configuration knows, to tell a tag for another
    /// architecture from an unknown tag.
    known_arches: BTreeSet<String>,
}

impl Policies {
    /// The built-in policies for `arch` (`aarch64`, `ppc64le`, ...).
    pub fn for_arch(arch: &str) -> Result<Policies, PolicyError> {
        Policies::from_config(BUILTIN_CONFIG_NAME, BUILTIN_CONFIG, arch)
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
                && value.strip_suffix(arch.as_str()).is_some_and(|rest| rest.ends_with('_'))
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
        Err(PolicyError::UnknownPlatform { value: value.to_owned(), arch: self.arch.clone(), known })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    policy: Vec<ConfigPolicy>,
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
    let config_error = |message: String| PolicyError::Config { file: file.to_owned(), message };
    let mut known_arches = BTreeSet::new();
    let mut unrestricted = Vec::new();
    let mut restricted = Vec::new();
    let mut whitelist = BTreeSet::new();
    let mut versions_by_arch: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    let mut previous_priority = u32::MAX;

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
        if let Some(stray) = entry.symbol_versions_added.keys().find(|a| !entry.architectures.contains(*a)) {
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

    let [linux] = <[Policy; 1]>::try_from(unrestricted)
        .map_err(|found| {
            config_error(format!("expected exactly one unrestricted policy, found {}", found.len()))
        })?;
    if restricted.is_empty() {
        return Err(PolicyError::UnknownArch {
            arch: arch.to_owned(),
            known: known_arches.iter().cloned().collect::<Vec<_>>().join(", "),
        });
    }
    Ok(Policies { arch: arch.to_owned(), restricted, linux, known_arches })
}
