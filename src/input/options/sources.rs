//! Where option values come from and which wins: the bundled defaults, the configuration
//! file's tables (`[tool.cibuildwheel]`, then `[tool.crosswheel]` over it, each with its
//! platform tables and overrides), `CROSSWHEEL_*` variables (falling back to
//! cibuildwheel's `CIBW_*` ones) and flags, lowest precedence first.

use std::collections::BTreeMap;
use std::path::Path;

use super::cibw;
use super::document::{ConfigDocument, Layer};
use super::error::{OptionsError, Origin, keep};
use super::identifiers::Platform;
use super::notes::Notes;
use super::schema::{self, Kind};
use super::selector::Selector;
use super::value::{self, Inherit, Located, Setting};
use super::{CliOverrides, EnvSource};

pub(crate) const DEFAULTS_TOML: &str =
    include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/config/defaults.toml"));
/// How messages name the bundled defaults.
pub(super) const DEFAULTS_PATH: &str = "crosswheel's config/defaults.toml";

fn defaults() -> Result<ConfigDocument, OptionsError> {
    ConfigDocument::parse(Path::new(DEFAULTS_PATH), DEFAULTS_TOML, &["options"])
}

/// Every layer, lowest precedence first.
pub(super) struct Sources {
    pub(super) defaults: ConfigDocument,
    /// The configuration file's tables, lowest precedence first: `[tool.cibuildwheel]`,
    /// then `[tool.crosswheel]`; either, both or none.
    pub(super) files: Vec<ConfigDocument>,
    pub(super) env: Layer,
    pub(super) env_platform: BTreeMap<Platform, Layer>,
    /// `CROSSWHEEL_INHERIT` (or `CIBW_INHERIT`): how the variables combine with the
    /// configuration.
    pub(super) env_inherit: EnvInherit,
    pub(super) cli: Layer,
}

impl Sources {
    /// The layers around the configuration file: the bundled defaults below it, the
    /// variables and flags above it. Every problem of the variables and flags is reported
    /// at once; what they set that does not apply to cross builds, or that a `CIBW_*`
    /// variable set, goes into the notes.
    pub(super) fn read(
        files: Vec<ConfigDocument>,
        env: &impl EnvSource,
        cli: &CliOverrides,
        notes: &mut Notes,
    ) -> Result<Sources, OptionsError> {
        let mut problems = Vec::new();
        let mut env_platform = BTreeMap::new();
        let mut env_vars = EnvVarsUsed::default();
        for platform in Platform::ALL {
            let layer = env_layer(env, Some(platform), &mut env_vars);
            env_platform.insert(platform, keep(layer, &mut problems).unwrap_or_default());
        }
        let env_general =
            keep(env_layer(env, None, &mut env_vars), &mut problems).unwrap_or_default();
        let cli_settings = keep(cli_layer(cli), &mut problems).unwrap_or_default();
        let env_inherit = keep(env_inherit(env), &mut problems).unwrap_or_default();
        if env.var("CROSSWHEEL_INHERIT").is_none() && env.var("CIBW_INHERIT").is_some() {
            push_new(&mut env_vars.cibw, "CIBW_INHERIT");
        }
        for name in cibw::not_applicable_env_vars() {
            if env.var(name).is_some_and(|value| !value.trim().is_empty()) {
                env_vars.ignored.push((name.to_string(), name.to_string()));
            }
        }
        OptionsError::from_all(problems)?;
        let mut ignored = Vec::new();
        for name in files.iter().flat_map(|file| &file.ignored) {
            push_new(&mut ignored, name);
        }
        for (name, var) in &env_vars.ignored {
            if !ignored.iter().any(|known| known == name || known == var) {
                ignored.push(var.clone());
            }
        }
        notes.ignored(&ignored);
        notes.env_vars(&env_vars);
        Ok(Sources {
            defaults: defaults()?,
            files,
            env: env_general,
            env_platform,
            env_inherit,
            cli: cli_settings,
        })
    }

    /// The value of `key` for a platform, and for one build when `identifier` is given
    /// (overrides apply only then).
    pub(super) fn get(
        &self,
        key: &'static str,
        platform: Platform,
        identifier: Option<&str>,
    ) -> Option<Located> {
        let mut current: Option<Located> = None;
        let defaults = [
            Some(&self.defaults.global),
            self.defaults.platforms.get(&platform),
        ];
        for layer in defaults.into_iter().flatten() {
            if let Some(found) = layer.get(key) {
                current = Some(found.clone());
            }
        }
        // Each table whole (its own table, platform table and overrides) over the one
        // before it: `[tool.crosswheel]`'s keys win over anything `[tool.cibuildwheel]` says.
        let combine = |current: &mut Option<Located>, found: &Located, rule: Option<&Inherit>| {
            let previous = current.as_ref().map(|located| &located.setting);
            let rule = rule.copied().unwrap_or(Inherit::None);
            *current = Some(Located {
                setting: value::inherit(previous, found.setting.clone(), rule),
                origin: found.origin.clone(),
            });
        };
        for file in &self.files {
            let tables = [
                Some((&file.global, &file.global_inherit)),
                file.platforms
                    .get(&platform)
                    .zip(file.platform_inherit.get(&platform)),
            ];
            for (layer, inherit) in tables.into_iter().flatten() {
                if let Some(found) = layer.get(key) {
                    combine(&mut current, found, inherit.get(key));
                }
            }
            let Some(identifier) = identifier else {
                continue;
            };
            let matching = file
                .overrides
                .iter()
                .filter(|o| o.select.matches(identifier));
            for entry in matching {
                if let Some(found) = entry.values.get(key) {
                    combine(&mut current, found, entry.inherit.get(key));
                }
            }
        }
        let late_layers = [
            Some((&self.env, self.env_inherit.per_option.get(key))),
            self.env_platform.get(&platform).map(|layer| {
                let suffixed = format!("{key}-{}", platform.name());
                let rule = self
                    .env_inherit
                    .per_platform_variable
                    .iter()
                    .find(|(name, _)| *name == suffixed)
                    .map(|(_, rule)| rule);
                (layer, rule)
            }),
            Some((&self.cli, None)),
        ];
        for (layer, rule) in late_layers.into_iter().flatten() {
            if let Some(found) = layer.get(key) {
                combine(&mut current, found, rule);
            }
        }
        current
    }

    pub(super) fn setting(
        &self,
        key: &'static str,
        platform: Platform,
        identifier: Option<&str>,
    ) -> Setting {
        self.get(key, platform, identifier)
            .map_or(Setting::List(Vec::new()), |located| located.setting)
    }

    /// A selector option; one that selects nothing where unset.
    pub(super) fn selector(&self, key: &'static str, platform: Platform) -> Selector {
        self.setting(key, platform, None).selector()
    }
}

/// `CROSSWHEEL_INHERIT`, or cibuildwheel's `CIBW_INHERIT`: `audit-requires;
/// before-all-linux: prepend`, an option without a rule appending. Rules of options (and
/// of an option with a platform's suffix) that take no inheritance are refused by name.
/// The rules of `CROSSWHEEL_INHERIT` (or `CIBW_INHERIT`).
#[derive(Debug, Default)]
pub(super) struct EnvInherit {
    /// Per option (`before-all`).
    per_option: BTreeMap<&'static str, Inherit>,
    /// Per platform variable (`before-all-linux`).
    per_platform_variable: Vec<(String, Inherit)>,
}

fn env_inherit(env: &impl EnvSource) -> Result<EnvInherit, OptionsError> {
    let Some((variable, text)) = ["CROSSWHEEL_INHERIT", "CIBW_INHERIT"]
        .into_iter()
        .find_map(|name| Some((name, env.var(name).filter(|text| !text.trim().is_empty())?)))
    else {
        return Ok(Default::default());
    };
    let mut general = BTreeMap::new();
    let mut suffixed = Vec::new();
    for (name, rule) in super::document::inherit_rules(&text) {
        let invalid = |message: String| OptionsError::InvalidValue {
            origin: Origin::Env(variable.to_string()),
            key: name.clone(),
            message,
        };
        let rule = Inherit::parse(&rule)
            .ok_or_else(|| invalid("use \"none\", \"append\" or \"prepend\"".to_string()))?;
        let platform = Platform::ALL
            .into_iter()
            .find(|platform| name.ends_with(&format!("-{}", platform.name())));
        let option = platform.map_or(name.as_str(), |platform| {
            &name[..name.len() - platform.name().len() - 1]
        });
        let spec =
            schema::find(option).ok_or_else(|| invalid(format!("`{option}` is no option")))?;
        if !spec.kind.accepts_inherit() {
            return Err(invalid(format!(
                "`{option}` is a single value; only commands, lists and tables can be inherited"
            )));
        }
        match platform {
            Some(_) => suffixed.push((
                format!(
                    "{}{}",
                    schema::canonical_key(spec.key),
                    &name[option.len()..]
                ),
                rule,
            )),
            None => {
                general.insert(schema::canonical_key(spec.key), rule);
            }
        }
    }
    Ok(EnvInherit {
        per_option: general,
        per_platform_variable: suffixed,
    })
}

/// Which `CIBW_*` variables `env_layer` read, which it passed over for a `CROSSWHEEL_*`
/// one, and which set options that do not apply to cross builds.
#[derive(Debug, Default)]
pub(super) struct EnvVarsUsed {
    pub(super) cibw: Vec<String>,
    pub(super) shadowed: Vec<String>,
    /// (option, variable)
    ignored: Vec<(String, String)>,
}

/// The `CROSSWHEEL_<OPTION>` (or `..._<PLATFORM>`) variables, each falling back to
/// cibuildwheel's `CIBW_<OPTION>` (`..._<PLATFORM>`) where it is unset.
fn env_layer(
    env: &impl EnvSource,
    platform: Option<Platform>,
    used: &mut EnvVarsUsed,
) -> Result<Layer, OptionsError> {
    let mut layer = Layer::new();
    let mut problems = Vec::new();
    let platform_name = platform.map(Platform::name);
    for spec in schema::all() {
        let mut name = schema::env_var_name(spec.key);
        if let Some(platform) = platform_name {
            name = format!("{name}_{}", platform.to_ascii_uppercase());
        }
        let is_set = |text: &String| !text.trim().is_empty() || spec.kind.empty_is_a_value();
        let own = env.var(&name).filter(is_set);
        let cibw_name = cibw_env_var(spec.key, platform_name);
        let cibw = cibw_name
            .and_then(|cibw_name| env.var(cibw_name).map(|text| (cibw_name, text)))
            .filter(|(_, text)| is_set(text));
        let (name, text) = match (own, cibw) {
            (Some(text), shadowed) => {
                if let Some((cibw_name, _)) = shadowed {
                    push_new(&mut used.shadowed, cibw_name);
                }
                (name, text)
            }
            (None, Some((cibw_name, text))) => {
                push_new(&mut used.cibw, cibw_name);
                (cibw_name.to_string(), text)
            }
            (None, None) => continue,
        };
        if spec.kind == Kind::Ignored {
            used.ignored.push((spec.key.to_string(), name));
            continue;
        }
        let origin = Origin::Env(name);
        let setting = match value::parse_text(spec.kind, &text) {
            Ok(setting) => setting,
            Err(message) => {
                problems.push(OptionsError::InvalidValue {
                    origin,
                    key: spec.key.to_string(),
                    message,
                });
                continue;
            }
        };
        let key = schema::canonical_key(spec.key);
        if layer.contains_key(key) {
            problems.push(OptionsError::ArchsAndTargets { origin });
            continue;
        }
        layer.insert(key, Located { setting, origin });
    }
    OptionsError::from_all(problems)?;
    Ok(layer)
}

/// cibuildwheel's variable for an option (`CIBW_OUTPUT_DIR` too, which its schema lacks).
fn cibw_env_var(key: &str, platform: Option<&str>) -> Option<&'static str> {
    match (key, platform) {
        ("output-dir", None) => Some("CIBW_OUTPUT_DIR"),
        _ => cibw::env_var(key, platform),
    }
}

pub(super) fn push_new(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|known| known == item) {
        list.push(item.to_string());
    }
}

fn cli_layer(cli: &CliOverrides) -> Result<Layer, OptionsError> {
    let mut layer = Layer::new();
    let mut problems = Vec::new();
    for setting in &cli.settings {
        let origin = Origin::Cli(setting.flag.clone());
        let Some(spec) = schema::find(&setting.key) else {
            problems.push(OptionsError::UnknownKey {
                origin,
                key: setting.key.clone(),
                table: "the command line".to_string(),
                suggestion: schema::closest(&setting.key, schema::all().iter().map(|o| o.key))
                    .map(String::from),
            });
            continue;
        };
        if setting.value.trim().is_empty() && !spec.kind.empty_is_a_value() {
            continue;
        }
        match value::parse_text(spec.kind, &setting.value) {
            // A later flag wins over an earlier one, as with repeated flags elsewhere.
            Ok(parsed) => {
                layer.insert(
                    schema::canonical_key(spec.key),
                    Located {
                        setting: parsed,
                        origin,
                    },
                );
            }
            Err(message) => problems.push(OptionsError::InvalidValue {
                origin,
                key: spec.key.to_string(),
                message,
            }),
        }
    }
    OptionsError::from_all(problems)?;
    Ok(layer)
}

/// Keys `config/defaults.toml` must define; see `bundled_defaults_define_every_option`.
#[cfg(test)]
pub(crate) fn keys_needing_defaults() -> impl Iterator<Item = &'static str> {
    schema::OPTIONS
        .iter()
        .map(|option| option.key)
        .filter(|key| *key != "targets" && !schema::WITHOUT_DEFAULT.contains(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_defaults_define_every_option() {
        let defaults = defaults().unwrap();
        for key in keys_needing_defaults() {
            assert!(
                defaults.global.contains_key(key),
                "config/defaults.toml lacks `{key}`"
            );
        }
        for key in schema::WITHOUT_DEFAULT {
            assert!(
                !defaults.global.contains_key(key),
                "`{key}` must stay unset by default"
            );
        }
    }
}
