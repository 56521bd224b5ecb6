//! Merges defaults, the configuration file, `CROSSWHEEL_*` variables and flags, chooses the
//! builds and computes each build's options.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toml::de::{DeTable, DeValue};

use crate::io_error::IoError;
use crate::target::ToolchainKind;

use super::cibw;
use super::document::{ConfigDocument, Layer};
use super::error::{OptionsError, Origin};
use super::identifiers::{self, Platform, PythonTag, TargetData, targets};
use super::project_tables;
use super::requires_python::RequiresPython;
use super::schema::{self, Kind, PLATFORM_VAR, REQUIRES_PYTHON_VAR};
use super::selector::Selector;
use super::shell::{EnvAssignment, Environment};
use super::types::{BuildFrontend, DependencyVersions, FrontendName, RepairCommand};
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
    let mut notes = Notes::default();
    let mut problems = Vec::new();
    let (file, config_file) = match &cli.config_file {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(IoError::at("read", path))?;
            (read_config(path, &text, &mut notes)?, Some(path.clone()))
        }
        None => match &pyproject_text {
            Some(text) => (
                read_config(&pyproject_path, text, &mut notes)?,
                Some(pyproject_path.clone()),
            ),
            None => (ConfigDocument::default(), None),
        },
    };
    let mut env_platform = BTreeMap::new();
    let mut env_vars = EnvVarsUsed::default();
    for platform in Platform::ALL {
        let layer = env_layer(env, Some(platform), &mut env_vars);
        env_platform.insert(platform, keep(layer, &mut problems).unwrap_or_default());
    }
    let env_general = keep(env_layer(env, None, &mut env_vars), &mut problems).unwrap_or_default();
    let cli_settings = keep(cli_layer(cli), &mut problems).unwrap_or_default();
    OptionsError::from_all(problems)?;
    let mut ignored = file.ignored.clone();
    for (name, var) in &env_vars.ignored {
        if !ignored.iter().any(|known| known == name || known == var) {
            ignored.push(var.clone());
        }
    }
    notes.ignored(&ignored);
    notes.env_vars(&env_vars);
    let sources = Sources {
        defaults: defaults()?,
        file,
        env: env_general,
        env_platform,
        cli: cli_settings,
    };
    let requires_python = requires_python(&pyproject_path, pyproject_text.as_deref(), env)?;
    let allow_empty = cli.allow_empty || env_flag(env, "CIBW_ALLOW_EMPTY");

    let selected = match &cli.only {
        Some(only) => vec![only_build(only, requires_python.as_ref())?],
        None => select(
            &sources,
            env,
            requires_python.as_ref().map(|(spec, _)| spec),
            &mut notes,
        )?,
    };
    if selected.is_empty() && !allow_empty {
        let describe = |key| sources.setting(key, Platform::Linux, None).list().join(" ");
        return Err(OptionsError::NothingSelected {
            build: describe("build"),
            skip: describe("skip"),
        });
    }
    let groups = project_tables::DependencyGroups::read(&pyproject_path, pyproject_text.as_deref());
    let mut problems = Vec::new();
    let mut builds = Vec::new();
    for (python, target) in selected {
        let spec = build_spec(
            &sources,
            env,
            project_dir,
            &groups,
            python,
            target,
            &mut notes,
        );
        if let Some(spec) = keep(spec, &mut problems) {
            builds.push(spec);
        }
    }
    OptionsError::from_all(problems)?;
    Ok(Plan {
        project_dir: project_dir.to_path_buf(),
        config_file,
        builds,
        notes: notes.lines,
    })
}

/// Keeps the value, or records the problem and gives `None`.
fn keep<T>(result: Result<T, OptionsError>, problems: &mut Vec<OptionsError>) -> Option<T> {
    match result {
        Ok(value) => Some(value),
        Err(error) => {
            problems.push(error);
            None
        }
    }
}

/// `[tool.crosswheel]`, or where a file has none, `[tool.cibuildwheel]`: a cibuildwheel
/// user's configuration works unchanged. The one present table wins wholesale.
fn read_config(path: &Path, text: &str, notes: &mut Notes) -> Result<ConfigDocument, OptionsError> {
    let document = ConfigDocument::parse(path, text, &["tool", "crosswheel"])?;
    if document.table.is_some() {
        return Ok(document);
    }
    let document = ConfigDocument::parse(path, text, &["tool", "cibuildwheel"])?;
    if document.table.is_some() {
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |name| name.to_string_lossy().into_owned(),
        );
        notes.push(format!(
            "reading [tool.cibuildwheel] of {name} (no [tool.crosswheel] table)"
        ));
    }
    Ok(document)
}

/// The lines crosswheel says once per run about how it read the configuration.
#[derive(Debug, Default)]
struct Notes {
    lines: Vec<String>,
}

impl Notes {
    fn push(&mut self, line: String) {
        if !self.lines.contains(&line) {
            self.lines.push(line);
        }
    }

    fn ignored(&mut self, names: &[String]) {
        if !names.is_empty() {
            self.push(format!(
                "ignored (does not apply to cross builds): {}",
                names.join(", ")
            ));
        }
    }

    fn env_vars(&mut self, used: &EnvVarsUsed) {
        if !used.cibw.is_empty() {
            self.push(format!(
                "using cibuildwheel variables: {}",
                used.cibw.join(", ")
            ));
        }
        if !used.shadowed.is_empty() {
            self.push(format!(
                "not using {} (the CROSSWHEEL_* variable of the same option is set)",
                used.shadowed.join(", ")
            ));
        }
    }
}

/// Which `CIBW_*` variables `env_layer` read, which it passed over for a `CROSSWHEEL_*`
/// one, and which set options that do not apply to cross builds.
#[derive(Debug, Default)]
struct EnvVarsUsed {
    cibw: Vec<String>,
    shadowed: Vec<String>,
    /// (option, variable)
    ignored: Vec<(String, String)>,
}

/// A boolean variable: `1`, `true` or `yes` (any case) set it.
fn env_flag(env: &impl EnvSource, name: &str) -> bool {
    env.var(name).is_some_and(|value| {
        matches!(
            value.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes"
        )
    })
}

fn read_optional(path: &Path) -> Result<Option<String>, OptionsError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(IoError::new("read", path, source).into()),
    }
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

fn push_new(list: &mut Vec<String>, item: &str) {
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

/// `CROSSWHEEL_PROJECT_REQUIRES_PYTHON`, else `[project] requires-python`.
fn requires_python(
    pyproject_path: &Path,
    pyproject_text: Option<&str>,
    env: &impl EnvSource,
) -> Result<Option<(RequiresPython, String)>, OptionsError> {
    let from_env = [REQUIRES_PYTHON_VAR, "CIBW_PROJECT_REQUIRES_PYTHON"]
        .into_iter()
        .find_map(|name| {
            env.var(name)
                .filter(|v| !v.trim().is_empty())
                .map(|text| (text, Origin::Env(name.to_string())))
        });
    let (text, origin) = match from_env {
        Some(found) => found,
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
    env: &impl EnvSource,
    requires_python: Option<&RequiresPython>,
    notes: &mut Notes,
) -> Result<Vec<Selected>, OptionsError> {
    let groups = enabled_groups(sources);
    let extra_pythons = enabled_pythons(sources, &groups);
    let only_platform = platform_filter(env)?;
    let mut selected = Vec::new();
    let mut not_built: Vec<String> = Vec::new();
    let mut built_names = std::collections::BTreeSet::new();
    for platform in Platform::ALL {
        if only_platform.is_some_and(|only| only != platform) {
            continue;
        }
        let archs = sources.setting("archs", platform, None).list();
        let mut pythons = python_tags(sources, platform)?;
        add_enabled_pythons(&mut pythons, &extra_pythons);
        let build = sources.selector("build", platform)?;
        let skip = sources.selector("skip", platform)?;
        let mut chosen: Vec<&TargetData> = Vec::new();
        for name in &archs {
            let lower = name.to_ascii_lowercase();
            let every = matches!(lower.as_str(), "auto" | "auto64" | "native" | "all");
            let matching: Vec<&TargetData> = targets()
                .iter()
                .filter(|target| target.platform == platform && (every || target.is_named(name)))
                .collect();
            if matching.is_empty() {
                push_new(&mut not_built, name);
            } else {
                built_names.insert(lower);
                chosen.extend(matching);
            }
        }
        for target in chosen {
            for &python in &pythons {
                let allowed = requires_python.is_none_or(|spec| spec.allows(python.minor()));
                let id = identifiers::identifier(python, target);
                if allowed && build.matches(&id) && !skip.matches(&id) {
                    selected.push((python, target));
                }
            }
        }
    }
    not_built.retain(|name| !built_names.contains(&name.to_ascii_lowercase()));
    if !not_built.is_empty() {
        notes.push(format!(
            "not built here: {} (crosswheel builds {}; `auto`, `auto64`, `native` and `all` mean all of them)",
            not_built.join(", "),
            targets()
                .iter()
                .map(|target| target.arch.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    enable_notes(&groups, notes);
    let order = |target: &TargetData| targets().iter().position(|t| t == target);
    selected.sort_by_key(|(python, target)| (*python, order(target)));
    selected.dedup();
    Ok(selected)
}

/// The `enable` groups: the configured value, with `CROSSWHEEL_ENABLE` / `CIBW_ENABLE`
/// added to it rather than replacing it (as cibuildwheel does), and `all` spelt out.
fn enabled_groups(sources: &Sources) -> Vec<String> {
    let layers = [
        Some(&sources.defaults.global),
        Some(&sources.file.global),
        Some(&sources.env),
        Some(&sources.cli),
    ];
    let mut groups: Vec<String> = Vec::new();
    for found in layers
        .into_iter()
        .flatten()
        .filter_map(|layer| layer.get("enable"))
    {
        for group in found.setting.list() {
            if !groups.contains(&group) {
                groups.push(group);
            }
        }
    }
    // cibuildwheel 2.x's `free-threaded-support = true`, now `enable = cpython-freethreading`.
    if sources
        .setting("free-threaded-support", Platform::Linux, None)
        .text()
        == "true"
    {
        groups.push("cpython-freethreading".to_string());
    }
    if groups.iter().any(|group| group == "all") {
        groups.extend(cibw::enable_values().map(String::from));
        groups.push("cpython-freethreading".to_string());
    }
    let mut unique = Vec::new();
    for group in groups {
        if group != "all" && !unique.contains(&group) {
            unique.push(group);
        }
    }
    unique
}

/// What the `enable` groups add to every platform's `python` list, as cibuildwheel's
/// identifiers have it: `cpython-prerelease` the CPython after the newest default one (and
/// its free-threaded build, which cibuildwheel builds by default from 3.14 on);
/// `cpython-freethreading` the free-threaded build of each listed version that has one
/// (`cp313t`).
struct EnabledPythons {
    prerelease: Vec<PythonTag>,
    free_threading: bool,
}

fn enabled_pythons(sources: &Sources, groups: &[String]) -> EnabledPythons {
    let enabled = |name: &str| groups.iter().any(|group| group == name);
    let prerelease = enabled("cpython-prerelease")
        .then(|| next_cpython(sources))
        .flatten()
        .map(|next| {
            [Some(next), next.free_threaded()]
                .into_iter()
                .flatten()
                .collect()
        })
        .unwrap_or_default();
    EnabledPythons {
        prerelease,
        free_threading: enabled("cpython-freethreading"),
    }
}

fn add_enabled_pythons(pythons: &mut Vec<PythonTag>, enabled: &EnabledPythons) {
    if enabled.free_threading {
        let free_threaded: Vec<PythonTag> = pythons
            .iter()
            .filter_map(|python| python.free_threaded())
            .collect();
        pythons.extend(free_threaded);
    }
    pythons.extend(enabled.prerelease.iter().copied());
    pythons.sort();
    pythons.dedup();
}

/// The CPython after the newest one crosswheel builds by default: what
/// `enable = cpython-prerelease` adds.
fn next_cpython(sources: &Sources) -> Option<PythonTag> {
    let newest = sources
        .defaults
        .global
        .get("python")
        .map(|found| found.setting.list())
        .unwrap_or_default()
        .iter()
        .filter_map(|tag| PythonTag::parse(tag).ok())
        .max()?;
    PythonTag::parse(&format!("cp3{}", newest.minor() + 1)).ok()
}

/// Says once what the `enable` groups do not build here.
fn enable_notes(groups: &[String], notes: &mut Notes) {
    let other: Vec<&str> = groups
        .iter()
        .map(String::as_str)
        .filter(|group| {
            !matches!(
                *group,
                "cpython-prerelease" | "cpython-freethreading" | "cpython-experimental-riscv64"
            )
        })
        .collect();
    if !other.is_empty() {
        notes.push(format!(
            "not built: {} (enable): crosswheel builds CPython wheels only",
            other.join(", ")
        ));
    }
    if groups
        .iter()
        .any(|group| group == "cpython-experimental-riscv64")
    {
        notes.push(
            "not built: cpython-experimental-riscv64 (enable): crosswheel builds no riscv64 wheels"
                .to_string(),
        );
    }
}

/// `CROSSWHEEL_PLATFORM` / `CIBW_PLATFORM`: build one platform only (`auto`: all).
fn platform_filter(env: &impl EnvSource) -> Result<Option<Platform>, OptionsError> {
    let found = [PLATFORM_VAR, "CIBW_PLATFORM"]
        .into_iter()
        .find_map(|name| {
            env.var(name)
                .filter(|value| !value.trim().is_empty())
                .map(|value| (name, value.trim().to_ascii_lowercase()))
        });
    let Some((name, value)) = found else {
        return Ok(None);
    };
    if value == "auto" {
        return Ok(None);
    }
    if let Some(platform) = Platform::from_name(&value) {
        return Ok(Some(platform));
    }
    if cibw::data().platform_tables.contains(&value) {
        return Err(OptionsError::InvalidValue {
            origin: Origin::Env(name.to_string()),
            key: "platform".to_string(),
            message: format!(
                "crosswheel builds no {value} wheels: use linux, macos or auto (both)"
            ),
        });
    }
    Err(OptionsError::InvalidValue {
        origin: Origin::Env(name.to_string()),
        key: "platform".to_string(),
        message: format!("`{value}` is not a platform: use linux, macos or auto"),
    })
}

/// `build-frontend` for a build crosswheel makes: its args read, pyodide-build refused.
fn read_frontend_args(
    frontend: BuildFrontend,
    origin: Origin,
) -> Result<BuildFrontend, OptionsError> {
    let invalid = |message: String| OptionsError::InvalidValue {
        origin: origin.clone(),
        key: "build-frontend".to_string(),
        message,
    };
    if frontend.name == FrontendName::PyodideBuild {
        return Err(invalid(
            "pyodide-build builds Pyodide wheels only: use build, build[uv], pip or uv".to_string(),
        ));
    }
    frontend.read_args().map_err(invalid)
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
    groups: &project_tables::DependencyGroups,
    python: PythonTag,
    target: &TargetData,
    notes: &mut Notes,
) -> Result<BuildSpec, OptionsError> {
    let identifier = identifiers::identifier(python, target);
    let platform = target.platform;
    let get = |key| sources.get(key, platform, Some(&identifier));
    let setting = |key| sources.setting(key, platform, Some(&identifier));
    let text = |key| Some(setting(key).text()).filter(|text| !text.is_empty());
    // cibuildwheel fills `{project}` and `{package}` in these commands.
    let command = |key| text(key).map(|command| super::fill_project(&command, project_dir));

    let environment_pass = setting("environment-pass").list();
    let passed = environment_pass.iter().filter_map(|name| {
        env.var(name)
            .map(|value| EnvAssignment::literal(name, &value))
    });
    let mut assignments: Vec<EnvAssignment> = passed.collect();
    assignments.extend(setting("environment").environment().assignments);
    let macos_deployment_target = macos_deployment_target(
        get("macos-deployment-target"),
        platform,
        &mut assignments,
        notes,
    );

    let build_frontend = match get("build-frontend") {
        Some(Located {
            setting: Setting::Frontend(frontend),
            origin,
        }) => read_frontend_args(frontend, origin)?,
        _ => BuildFrontend::default(),
    };
    let project_text = std::path::absolute(project_dir)
        .unwrap_or_else(|_| project_dir.to_path_buf())
        .to_string_lossy()
        .into_owned();
    let fill = |value: &str| {
        super::fill_placeholders(
            value,
            &[("project", &project_text), ("package", &project_text)],
        )
    };
    let frontend_settings = build_frontend.parsed.config_settings.clone();
    let mut config_settings: Vec<(String, String)> = setting("config-settings").pairs();
    config_settings.extend(frontend_settings);
    let config_settings = config_settings
        .into_iter()
        .map(|(key, value)| (key, fill(&value)))
        .collect();

    let repair = match get("repair-wheel-command") {
        None => RepairCommand::Builtin,
        Some(located) => match located.setting.text() {
            command if command.is_empty() => RepairCommand::Skip,
            command => RepairCommand::Command(super::fill_project(&command, project_dir)),
        },
    };
    let toolchain = toolchain(get("toolchain"), platform)?;

    let (test_requires, test_groups_problem) = test_requirements(
        setting("test-requires").list(),
        get("test-groups"),
        groups,
        notes,
    );
    let build_verbosity = text("build-verbosity")
        .and_then(|level| level.parse::<i64>().ok())
        .unwrap_or(0)
        // cibuildwheel passes both build-verbosity's flags and the frontend's args on.
        + build_frontend.parsed.verbosity;
    let dependency_versions = dependency_versions(get("dependency-versions"), project_dir)?;

    Ok(BuildSpec {
        target_id: target.id.clone(),
        platform,
        python: python.version(),
        python_tag: python,
        options: BuildOptions {
            build_frontend,
            config_settings,
            environment: Environment { assignments },
            environment_pass,
            before_all: command("before-all"),
            before_build: command("before-build"),
            before_test: command("before-test"),
            repair,
            test_command: text("test-command"),
            test_requires,
            test_groups_problem,
            test_extras: setting("test-extras").list(),
            test_sources: setting("test-sources").list(),
            test_skipped: sources
                .selector("test-skip", platform)?
                .matches(&identifier),
            output_dir: output_dir(get("output-dir"), project_dir),
            toolchain,
            macos_deployment_target,
            qemu_cpu: text("qemu-cpu"),
            target_python: text("target-python").map(|path| project_dir.join(path)),
            macos_sdk: text("macos-sdk").map(|path| project_dir.join(path)),
            require_tests: setting("require-tests").text() == "true",
            debian_mirror: text("debian-mirror"),
            test_timeout: text("test-timeout")
                .and_then(|seconds| seconds.parse().ok())
                .map(std::time::Duration::from_secs),
            target_requires: setting("target-requires").list(),
            build_verbosity,
            test_environment: setting("test-environment").environment(),
            dependency_versions,
        },
        identifier,
    })
}

/// `test-requires` plus the requirements of the `test-groups`, each once; a group that
/// cannot be read is a problem for the tests only.
fn test_requirements(
    mut test_requires: Vec<String>,
    test_groups: Option<Located>,
    groups: &project_tables::DependencyGroups,
    notes: &mut Notes,
) -> (Vec<String>, Option<String>) {
    let Some(located) = test_groups else {
        return (test_requires, None);
    };
    match groups.requirements(&located.setting.list()) {
        Ok(required) => {
            for requirement in required {
                if !test_requires.contains(&requirement) {
                    test_requires.push(requirement);
                }
            }
            (test_requires, None)
        }
        // As in cibuildwheel, the groups matter to the tests only: planning goes on,
        // the tests that need them fail, and the problem is said once now.
        Err(message) => {
            let problem = format!("{}: invalid `test-groups`: {message}", located.origin);
            notes.push(format!("warning: {problem}"));
            (test_requires, Some(problem))
        }
    }
}

/// `dependency-versions`; a constraints file named in the project's file is relative to
/// the project, one from a variable or flag to the working directory.
fn dependency_versions(
    located: Option<Located>,
    project_dir: &Path,
) -> Result<DependencyVersions, OptionsError> {
    let Some(located) = located else {
        return Ok(DependencyVersions::Unconstrained);
    };
    let base = match &located.origin {
        Origin::File { .. } => project_dir.to_path_buf(),
        _ => PathBuf::new(),
    };
    DependencyVersions::parse(&located.setting.text(), &base).map_err(|message| {
        OptionsError::InvalidValue {
            origin: located.origin.clone(),
            key: "dependency-versions".to_string(),
            message,
        }
    })
}

/// `macos-deployment-target`; where it is not set, a `MACOSX_DEPLOYMENT_TARGET` of the
/// `environment` (as cibuildwheel users set it) decides it, raised to 11.0, the first
/// macOS on arm64. The variable the backend sees then says the same.
fn macos_deployment_target(
    located: Option<Located>,
    platform: Platform,
    assignments: &mut [EnvAssignment],
    notes: &mut Notes,
) -> String {
    let configured = located
        .as_ref()
        .map(|found| found.setting.text())
        .unwrap_or_default();
    let from_defaults = located.as_ref().is_none_or(|found| {
        matches!(&found.origin, Origin::File { path, .. } if path == Path::new(DEFAULTS_PATH))
    });
    if platform != Platform::Macos {
        return configured;
    }
    let Some(assignment) = assignments
        .iter_mut()
        .rev()
        .find(|assignment| assignment.name == "MACOSX_DEPLOYMENT_TARGET")
    else {
        return configured;
    };
    let literal: Option<String> = assignment
        .value
        .iter()
        .map(|part| match part {
            super::EnvPart::Literal(text) => Some(text.clone()),
            _ => None,
        })
        .collect();
    let Some(literal) = literal else {
        return configured;
    };
    let chosen = if from_defaults {
        match super::types::parse_macos_version(&literal) {
            Ok(version) => version,
            Err(_) => {
                notes.push(format!(
                    "MACOSX_DEPLOYMENT_TARGET={literal} in `environment`: arm64 macOS starts at 11.0, so macOS wheels are built for {configured}"
                ));
                configured
            }
        }
    } else {
        configured
    };
    if chosen != literal {
        *assignment = EnvAssignment::literal("MACOSX_DEPLOYMENT_TARGET", &chosen);
    }
    chosen
}

fn toolchain(located: Option<Located>, platform: Platform) -> Result<ToolchainKind, OptionsError> {
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
    match ToolchainKind::from_name(&name) {
        // Caught here rather than at build time, after the Linux builds have run.
        Some(ToolchainKind::Gcc) if platform == Platform::Macos => Err(invalid(
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
