//! Merges defaults, the configuration file, `CROSSWHEEL_*` variables and flags, chooses the
//! builds and computes each build's options.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toml::de::{DeTable, DeValue};

use super::document::{ConfigDocument, Layer};
use super::error::{OptionsError, Origin};
use super::identifiers::{self, Platform, PythonTag, TargetData, targets};
use super::requires_python::RequiresPython;
use super::schema::{self, REQUIRES_PYTHON_VAR};
use super::selector::Selector;
use super::shell::{EnvAssignment, Environment};
use super::types::{BuildFrontend, FrontendName, RepairCommand, Toolchain};
use super::value::{self, Inherit, Located, Setting};
use super::{BuildOptions, BuildSpec, CliOverrides, EnvSource, Plan};

pub(crate) const DEFAULTS_TOML: &str = include_str!("../../config/defaults.toml");
/// How messages name the bundled defaults.
const DEFAULTS_PATH: &str = "crosswheel's config/defaults.toml";

pub(crate) fn defaults() -> Result<ConfigDocument, OptionsError> {
    ConfigDocument::parse(Path::new(DEFAULTS_PATH), DEFAULTS_TOML, &["options"])
}

/// Every layer, lowest precedence first.
struct Sources {
    defaults: ConfigDocument,
    file: ConfigDocument,
    env: Layer,
    env_platform: BTreeMap<Platform, Layer>,
    cli: Layer,
}

impl Sources {
    /// The value of `key` for a platform, and for one build when `identifier` is given
    /// (overrides apply only then).
    fn get(
        &self,
        key: &'static str,
        platform: Platform,
        identifier: Option<&str>,
    ) -> Option<Located> {
        let mut current: Option<Located> = None;
        let file_layers = [
            Some(&self.defaults.global),
            self.defaults.platforms.get(&platform),
            Some(&self.file.global),
            self.file.platforms.get(&platform),
        ];
        for layer in file_layers.into_iter().flatten() {
            if let Some(found) = layer.get(key) {
                current = Some(found.clone());
            }
        }
        if let Some(identifier) = identifier {
            let matching = self
                .file
                .overrides
                .iter()
                .filter(|o| o.select.matches(identifier));
            for entry in matching {
                if let Some(found) = entry.values.get(key) {
                    let rule = entry.inherit.get(key).copied().unwrap_or(Inherit::None);
                    let previous = current.as_ref().map(|located| &located.setting);
                    current = Some(Located {
                        setting: value::inherit(previous, found.setting.clone(), rule),
                        origin: found.origin.clone(),
                    });
                }
            }
        }
        let late_layers = [
            Some(&self.env),
            self.env_platform.get(&platform),
            Some(&self.cli),
        ];
        for layer in late_layers.into_iter().flatten() {
            if let Some(found) = layer.get(key) {
                current = Some(found.clone());
            }
        }
        current
    }

    fn setting(&self, key: &'static str, platform: Platform, identifier: Option<&str>) -> Setting {
        self.get(key, platform, identifier)
            .map_or(Setting::List(Vec::new()), |located| located.setting)
    }

    fn selector(&self, key: &'static str, platform: Platform) -> Result<Selector, OptionsError> {
        let Some(located) = self.get(key, platform, None) else {
            return Ok(Selector::empty());
        };
        Selector::new(&located.setting.list()).map_err(|message| OptionsError::InvalidValue {
            origin: located.origin,
            key: key.to_string(),
            message,
        })
    }
}

/// A folder a PEP 517 frontend can build: checked first, so a mistyped path is one error
/// instead of one per build identifier.
fn require_project(project_dir: &Path) -> Result<(), OptionsError> {
    if !project_dir.is_dir() {
        return Err(OptionsError::NoProject {
            path: project_dir.to_path_buf(),
        });
    }
    if !project_dir.join("pyproject.toml").is_file() && !project_dir.join("setup.py").is_file() {
        return Err(OptionsError::NotAProject {
            path: project_dir.to_path_buf(),
        });
    }
    Ok(())
}

pub(crate) fn resolve(
    project_dir: &Path,
    cli: &CliOverrides,
    env: &impl EnvSource,
) -> Result<Plan, OptionsError> {
    require_project(project_dir)?;
    let pyproject_path = project_dir.join("pyproject.toml");
    let pyproject_text = read_optional(&pyproject_path)?;
    let (file, config_file) = match &cli.config_file {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| OptionsError::Read {
                path: path.clone(),
                source,
            })?;
            let document = ConfigDocument::parse(path, &text, &["tool", "crosswheel"])?;
            (document, Some(path.clone()))
        }
        None => match &pyproject_text {
            Some(text) => (
                ConfigDocument::parse(&pyproject_path, text, &["tool", "crosswheel"])?,
                Some(pyproject_path.clone()),
            ),
            None => (ConfigDocument::default(), None),
        },
    };
    let mut env_platform = BTreeMap::new();
    for platform in Platform::ALL {
        env_platform.insert(platform, env_layer(env, Some(platform))?);
    }
    let sources = Sources {
        defaults: defaults()?,
        file,
        env: env_layer(env, None)?,
        env_platform,
        cli: cli_layer(cli)?,
    };
    let requires_python = requires_python(&pyproject_path, pyproject_text.as_deref(), env)?;

    let selected = match &cli.only {
        Some(only) => vec![only_build(only, requires_python.as_ref())?],
        None => select(&sources, requires_python.as_ref().map(|(spec, _)| spec))?,
    };
    if selected.is_empty() && !cli.allow_empty {
        let describe = |key| sources.setting(key, Platform::Linux, None).list().join(" ");
        return Err(OptionsError::NothingSelected {
            build: describe("build"),
            skip: describe("skip"),
        });
    }
    let builds = selected
        .into_iter()
        .map(|(python, target)| build_spec(&sources, env, project_dir, python, target))
        .collect::<Result<_, _>>()?;
    Ok(Plan {
        project_dir: project_dir.to_path_buf(),
        config_file,
        builds,
    })
}

fn read_optional(path: &Path) -> Result<Option<String>, OptionsError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(OptionsError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn env_layer(env: &impl EnvSource, platform: Option<Platform>) -> Result<Layer, OptionsError> {
    let mut layer = Layer::new();
    for spec in schema::OPTIONS {
        let mut name = schema::env_var_name(spec.key);
        if let Some(platform) = platform {
            name = format!("{name}_{}", platform.name().to_ascii_uppercase());
        }
        let Some(text) = env.var(&name) else {
            continue;
        };
        if text.trim().is_empty() && !spec.kind.empty_is_a_value() {
            continue;
        }
        let origin = Origin::Env(name);
        let setting =
            value::parse_text(spec.kind, &text).map_err(|message| OptionsError::InvalidValue {
                origin: origin.clone(),
                key: spec.key.to_string(),
                message,
            })?;
        let key = schema::canonical_key(spec.key);
        if layer.contains_key(key) {
            return Err(OptionsError::ArchsAndTargets { origin });
        }
        layer.insert(key, Located { setting, origin });
    }
    Ok(layer)
}

fn cli_layer(cli: &CliOverrides) -> Result<Layer, OptionsError> {
    let mut layer = Layer::new();
    for setting in &cli.settings {
        let origin = Origin::Cli(setting.flag.clone());
        let Some(spec) = schema::find(&setting.key) else {
            return Err(OptionsError::UnknownKey {
                origin,
                key: setting.key.clone(),
                table: "the command line".to_string(),
                suggestion: schema::closest(&setting.key, schema::OPTIONS.iter().map(|o| o.key))
                    .map(String::from),
            });
        };
        if setting.value.trim().is_empty() && !spec.kind.empty_is_a_value() {
            continue;
        }
        let parsed = value::parse_text(spec.kind, &setting.value).map_err(|message| {
            OptionsError::InvalidValue {
                origin: origin.clone(),
                key: spec.key.to_string(),
                message,
            }
        })?;
        // A later flag wins over an earlier one, as with repeated flags elsewhere.
        layer.insert(
            schema::canonical_key(spec.key),
            Located {
                setting: parsed,
                origin,
            },
        );
    }
    Ok(layer)
}

/// `CROSSWHEEL_PROJECT_REQUIRES_PYTHON`, else `[project] requires-python`.
fn requires_python(
    pyproject_path: &Path,
    pyproject_text: Option<&str>,
    env: &impl EnvSource,
) -> Result<Option<(RequiresPython, String)>, OptionsError> {
    let (text, origin) = match env
        .var(REQUIRES_PYTHON_VAR)
        .filter(|v| !v.trim().is_empty())
    {
        Some(text) => (text, Origin::Env(REQUIRES_PYTHON_VAR.to_string())),
        None => match pyproject_text.and_then(|text| project_requires_python(pyproject_path, text))
        {
            Some(found) => found,
            None => return Ok(None),
        },
    };
    RequiresPython::parse(&text)
        .map(|spec| Some((spec, text.clone())))
        .map_err(|message| OptionsError::InvalidValue {
            origin,
            key: "requires-python".to_string(),
            message,
        })
}

/// The `[project] requires-python` string and its line; a malformed pyproject.toml was
/// reported when `[tool.crosswheel]` was read, and a missing value restricts nothing.
fn project_requires_python(path: &Path, text: &str) -> Option<(String, Origin)> {
    let root = DeTable::parse(text).ok()?;
    let DeValue::Table(project) = root.get_ref().get("project")?.get_ref() else {
        return None;
    };
    let value = project.get("requires-python")?;
    let DeValue::String(spec) = value.get_ref() else {
        return None;
    };
    let line = text
        .get(..value.span().start)
        .map_or(1, |before| before.matches('\n').count() + 1);
    Some((
        spec.to_string(),
        Origin::File {
            path: PathBuf::from(path),
            line,
        },
    ))
}

type Selected = (PythonTag, &'static TargetData);

fn only_build(
    identifier: &str,
    requires_python: Option<&(RequiresPython, String)>,
) -> Result<Selected, OptionsError> {
    let bad = |message| OptionsError::BadOnly {
        identifier: identifier.to_string(),
        message,
    };
    let (python, target) = identifiers::parse_identifier(identifier).map_err(bad)?;
    if let Some((spec, text)) = requires_python
        && !spec.allows(python.minor())
    {
        return Err(bad(format!(
            "the project's requires-python `{text}` excludes CPython {}",
            python.version()
        )));
    }
    Ok((python, target))
}

fn select(
    sources: &Sources,
    requires_python: Option<&RequiresPython>,
) -> Result<Vec<Selected>, OptionsError> {
    let mut selected = Vec::new();
    for platform in Platform::ALL {
        let archs = sources.setting("archs", platform, None).list();
        let pythons = python_tags(sources, platform)?;
        let build = sources.selector("build", platform)?;
        let skip = sources.selector("skip", platform)?;
        let chosen_targets = targets().iter().filter(|target| {
            target.platform == platform
                && archs
                    .iter()
                    .any(|name| matches!(name.as_str(), "all" | "auto") || target.is_named(name))
        });
        for target in chosen_targets {
            for &python in &pythons {
                let allowed = requires_python.is_none_or(|spec| spec.allows(python.minor()));
                let id = identifiers::identifier(python, target);
                if allowed && build.matches(&id) && !skip.matches(&id) {
                    selected.push((python, target));
                }
            }
        }
    }
    let order = |target: &TargetData| targets().iter().position(|t| t == target);
    selected.sort_by_key(|(python, target)| (*python, order(target)));
    selected.dedup();
    Ok(selected)
}

fn python_tags(sources: &Sources, platform: Platform) -> Result<Vec<PythonTag>, OptionsError> {
    let Some(located) = sources.get("python", platform, None) else {
        return Ok(Vec::new());
    };
    located
        .setting
        .list()
        .iter()
        .map(|tag| PythonTag::parse(tag))
        .collect::<Result<_, _>>()
        .map_err(|message| OptionsError::InvalidValue {
            origin: located.origin,
            key: "python".to_string(),
            message,
        })
}

fn build_spec(
    sources: &Sources,
    env: &impl EnvSource,
    project_dir: &Path,
    python: PythonTag,
    target: &TargetData,
) -> Result<BuildSpec, OptionsError> {
    let identifier = identifiers::identifier(python, target);
    let platform = target.platform;
    let get = |key| sources.get(key, platform, Some(&identifier));
    let setting = |key| sources.setting(key, platform, Some(&identifier));
    let text = |key| Some(setting(key).text()).filter(|text| !text.is_empty());

    let environment_pass = setting("environment-pass").list();
    let passed = environment_pass.iter().filter_map(|name| {
        env.var(name)
            .map(|value| EnvAssignment::literal(name, &value))
    });
    let mut assignments: Vec<EnvAssignment> = passed.collect();
    assignments.extend(setting("environment").environment().assignments);

    let build_frontend = match setting("build-frontend") {
        Setting::Frontend(frontend) => frontend,
        _ => BuildFrontend {
            name: FrontendName::Build,
            args: Vec::new(),
        },
    };
    let repair = match get("repair-wheel-command") {
        None => RepairCommand::Builtin,
        Some(located) => match located.setting.text() {
            command if command.is_empty() => RepairCommand::Skip,
            command => RepairCommand::Command(command),
        },
    };
    let toolchain = toolchain(get("toolchain"), platform)?;

    Ok(BuildSpec {
        target_id: target.id.clone(),
        platform,
        python: python.version(),
        python_tag: python.to_string(),
        options: BuildOptions {
            build_frontend,
            config_settings: setting("config-settings").pairs(),
            environment: Environment { assignments },
            environment_pass,
            before_all: text("before-all"),
            before_build: text("before-build"),
            before_test: text("before-test"),
            repair,
            test_command: text("test-command"),
            test_requires: setting("test-requires").list(),
            test_extras: setting("test-extras").list(),
            test_sources: setting("test-sources").list(),
            test_skipped: sources
                .selector("test-skip", platform)?
                .matches(&identifier),
            output_dir: output_dir(get("output-dir"), project_dir),
            toolchain,
            macos_deployment_target: text("macos-deployment-target").unwrap_or_default(),
            qemu_cpu: text("qemu-cpu"),
            target_requires: setting("target-requires").list(),
        },
        identifier,
    })
}

fn toolchain(located: Option<Located>, platform: Platform) -> Result<Toolchain, OptionsError> {
    let origin = located.as_ref().map_or_else(
        || Origin::File {
            path: PathBuf::from(DEFAULTS_PATH),
            line: 1,
        },
        |located| located.origin.clone(),
    );
    let invalid = |message| OptionsError::InvalidValue {
        origin,
        key: "toolchain".to_string(),
        message,
    };
    let name = located
        .map(|located| located.setting.text())
        .unwrap_or_default();
    match Toolchain::from_name(&name) {
        // Caught here rather than at build time, after the Linux builds have run.
        Some(Toolchain::Gcc) if platform == Platform::Macos => Err(invalid(
            "no cross gcc exists for macOS: use zig for macOS builds (set `toolchain = \"gcc\"` in [tool.crosswheel.linux] only)".to_string(),
        )),
        Some(toolchain) => Ok(toolchain),
        None => Err(invalid(format!("use one of {}", schema::TOOLCHAINS.join(", ")))),
    }
}

/// A relative `output-dir` from the project's file is relative to the project; from the
/// defaults, a variable or a flag, to the working directory (as cibuildwheel's).
fn output_dir(located: Option<Located>, project_dir: &Path) -> PathBuf {
    let Some(located) = located else {
        return PathBuf::new();
    };
    let dir = PathBuf::from(located.setting.text());
    match located.origin {
        Origin::File { path, .. } if path != Path::new(DEFAULTS_PATH) && dir.is_relative() => {
            project_dir.join(dir)
        }
        _ => dir,
    }
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
