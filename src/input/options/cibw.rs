//! cibuildwheel's options as data (`config/cibuildwheel-options.toml`, read from its
//! published JSON schema): every key a `[tool.cibuildwheel]` table may hold, its
//! `CIBW_*` variables, the platform tables, the `enable` groups and the architecture names,
//! each with what crosswheel does with it. The option checks, the `CIBW_*` fallback, the
//! "ignored" report and the options table of `crosswheel help config` (and
//! docs/configuration.md) all come from here.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

pub(crate) const CIBW_OPTIONS_TOML: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/config/cibuildwheel-options.toml"
));

/// What crosswheel does with a cibuildwheel option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Handling {
    /// Same meaning as in cibuildwheel.
    Implemented,
    /// Accepted and reported once per run as ignored: it does not apply to cross builds.
    NotApplicable,
}

/// One option; the file's other fields (type, defaults, notes on the judgement calls) are
/// for its readers.
#[derive(Debug, Deserialize)]
pub(crate) struct CibwOption {
    pub name: String,
    pub env: String,
    #[serde(default)]
    pub env_platform: Vec<String>,
    #[serde(default)]
    pub overridable: bool,
    /// What crosswheel does with it, for `crosswheel help config`.
    pub doc: String,
    pub handling: Handling,
    #[serde(default = "yes")]
    pub in_schema: bool,
}

fn yes() -> bool {
    true
}

/// Options cibuildwheel reads only from its command line or the environment.
#[derive(Debug, Deserialize)]
pub(crate) struct CliEnvOnly {
    pub name: String,
    pub env: String,
    /// `not-applicable`: its variable, when set, is named on the run's "ignored" line.
    #[serde(default = "implemented")]
    pub handling: Handling,
}

fn implemented() -> Handling {
    Handling::Implemented
}

/// The variables of cibuildwheel's command-line-or-environment options that do not apply
/// to crosswheel's builds (`CIBW_DEBUG_KEEP_CONTAINER`, `CIBW_LOG_FOLD_MODE`).
pub(crate) fn not_applicable_env_vars() -> impl Iterator<Item = &'static str> {
    data()
        .cli_env_only
        .iter()
        .filter(|option| option.handling == Handling::NotApplicable && !option.env.is_empty())
        .map(|option| option.env.as_str())
}

#[derive(Debug, Deserialize)]
pub(crate) struct ArchPlatform {
    pub names: Vec<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Archs {
    #[serde(flatten)]
    pub platforms: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct CibwData {
    pub schema_version: String,
    pub platform_tables: Vec<String>,
    pub enable_values: Vec<String>,
    pub enable_values_code_only: Vec<String>,
    pub enable_values_removed: Vec<String>,
    pub archs: Archs,
    pub option: Vec<CibwOption>,
    pub cli_env_only: Vec<CliEnvOnly>,
}

pub(crate) fn data() -> &'static CibwData {
    static DATA: OnceLock<CibwData> = OnceLock::new();
    DATA.get_or_init(|| match toml::from_str(CIBW_OPTIONS_TOML) {
        Ok(data) => data,
        // The file is compiled in; the unit test `bundled_data_parses` guards it.
        Err(err) => panic!("config/cibuildwheel-options.toml is invalid: {err}"),
    })
}

pub(crate) fn find(name: &str) -> Option<&'static CibwOption> {
    data().option.iter().find(|option| option.name == name)
}

/// The names of the not-applicable options, in the data file's order.
pub(crate) fn not_applicable_names() -> impl Iterator<Item = &'static str> {
    data()
        .option
        .iter()
        .filter(|option| option.handling == Handling::NotApplicable)
        .map(|option| option.name.as_str())
}

/// Platform tables of `[tool.cibuildwheel]` crosswheel builds nothing for (`windows`,
/// `pyodide`, `ios`, `android`): accepted, reported as ignored.
pub(crate) fn foreign_platform_tables() -> impl Iterator<Item = &'static str> {
    data()
        .platform_tables
        .iter()
        .map(String::as_str)
        .filter(|name| super::identifiers::Platform::from_name(name).is_none())
}

/// The `CIBW_*` variable cibuildwheel reads for an option, optionally for one platform
/// (`CIBW_ARCHS_LINUX`); `None` where cibuildwheel has none.
pub(crate) fn env_var(option: &str, platform: Option<&str>) -> Option<&'static str> {
    let option = find(option)?;
    match platform {
        None => Some(option.env.as_str()),
        Some(platform) => {
            let wanted = format!("{}_{}", option.env, platform.to_ascii_uppercase());
            option
                .env_platform
                .iter()
                .find(|name| **name == wanted)
                .map(String::as_str)
        }
    }
}

/// Every variable name cibuildwheel reads (options, their platform variants and the
/// command-line-or-environment options such as `CIBW_PLATFORM`).
pub(crate) fn all_env_vars() -> impl Iterator<Item = &'static str> {
    let options = data().option.iter().flat_map(|option| {
        std::iter::once(option.env.as_str()).chain(option.env_platform.iter().map(String::as_str))
    });
    let others = data()
        .cli_env_only
        .iter()
        .map(|option| option.env.as_str())
        .filter(|name| !name.is_empty());
    options.chain(others)
}

/// The architecture names cibuildwheel knows for a platform (`x86_64`, `universal2`, ...),
/// and which of them crosswheel builds.
pub(crate) fn arch_platform(platform: &str) -> Option<ArchPlatform> {
    let value = data().archs.platforms.get(platform)?.clone();
    value.try_into().ok()
}

/// Whether `name` is an architecture of any platform cibuildwheel builds for, compared
/// case-insensitively as cibuildwheel 4.1.1+ does.
pub(crate) fn is_known_arch(name: &str) -> bool {
    data().platform_tables.iter().any(|platform| {
        arch_platform(platform).is_some_and(|archs| {
            archs
                .names
                .iter()
                .any(|known| known.eq_ignore_ascii_case(name))
        })
    })
}

/// Every value `enable` accepts: the schema's, those only cibuildwheel's code accepts,
/// and removed ones that real configurations still carry.
pub(crate) fn enable_values() -> impl Iterator<Item = &'static str> {
    let data = data();
    data.enable_values
        .iter()
        .chain(&data.enable_values_code_only)
        .chain(&data.enable_values_removed)
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_data_parses() {
        let data = data();
        assert!(!data.schema_version.is_empty());
        assert!(data.option.len() > 40);
        assert!(find("test-command").is_some());
        assert!(not_applicable_names().any(|name| name == "container-engine"));
        assert!(!not_applicable_names().any(|name| name == "manylinux-x86_64-image"));
        assert!(!not_applicable_names().any(|name| name == "environment"));
        assert_eq!(
            foreign_platform_tables().collect::<Vec<_>>(),
            ["windows", "pyodide", "android", "ios"]
        );
        assert_eq!(env_var("archs", Some("linux")), Some("CIBW_ARCHS_LINUX"));
        assert_eq!(env_var("build", Some("linux")), None);
        assert!(is_known_arch("amd64") && is_known_arch("universal2"));
        assert!(!is_known_arch("sparc"));
        assert!(arch_platform("linux").is_some_and(|a| a.names.len() == 7));
    }

    #[test]
    fn every_option_names_its_variable_by_cibuildwheel_rule() {
        for option in &data().option {
            let expected = format!(
                "CIBW_{}",
                option.name.to_ascii_uppercase().replace('-', "_")
            );
            assert_eq!(option.env, expected, "{}", option.name);
            for variant in &option.env_platform {
                assert!(variant.starts_with(&format!("{expected}_")), "{variant}");
            }
        }
    }
}
