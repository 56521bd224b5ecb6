//! Which builds to make: the `--only` identifier, or every target of the `archs` crossed
//! with the `python` versions (and those the `enable` groups add), kept by `build`, `skip`,
//! the platform filter and the project's `requires-python`.

use super::archs;
use super::cibw;
use super::error::{OptionsError, Origin};
use super::identifiers::{self, Platform, PythonTag, TargetData, targets};
use super::notes::Notes;
use super::requires_python::RequiresPython;
use super::schema::PLATFORM_VAR;
use super::sources::{Sources, push_new};
use super::{CliOverrides, EnvSource};

/// A CPython version for a target: one build.
pub(super) type Selected = (PythonTag, &'static TargetData);

/// The builds to make, ordered by CPython version, then target. An empty selection is an
/// error unless `--allow-empty` (or `CIBW_ALLOW_EMPTY`) allows it.
pub(super) fn selected(
    sources: &Sources,
    env: &impl EnvSource,
    cli: &CliOverrides,
    requires_python: Option<&(RequiresPython, String)>,
    notes: &mut Notes,
) -> Result<Vec<Selected>, OptionsError> {
    let allow_empty = cli.allow_empty || env_flag(env, "CIBW_ALLOW_EMPTY");
    let (selected, excluded) = match &cli.only {
        Some(only) => (vec![only_build(only, requires_python)?], Vec::new()),
        None => select(sources, env, requires_python.map(|(spec, _)| spec), notes)?,
    };
    if !selected.is_empty() {
        return Ok(selected);
    }
    if let (Some((_, text)), false) = (requires_python, excluded.is_empty()) {
        let excluded = excluded
            .iter()
            .map(|python| python.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        if !allow_empty {
            return Err(OptionsError::RequiresPythonExcludesAll {
                requires_python: text.clone(),
                excluded,
            });
        }
        notes.push(format!(
            "no build selected: requires-python `{text}` excludes every CPython the selection names ({excluded})"
        ));
    } else if !allow_empty {
        let describe = |key| sources.setting(key, Platform::Linux, None).list().join(" ");
        return Err(OptionsError::NothingSelected {
            build: describe("build"),
            skip: describe("skip"),
        });
    }
    Ok(selected)
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

/// The builds, and the CPython versions of those `requires-python` left out.
fn select(
    sources: &Sources,
    env: &impl EnvSource,
    requires_python: Option<&RequiresPython>,
    notes: &mut Notes,
) -> Result<(Vec<Selected>, Vec<PythonTag>), OptionsError> {
    let groups = enabled_groups(sources);
    let extra_pythons = enabled_pythons(sources, &groups);
    let only_platform = platform_filter(env)?;
    if let Some((platform, chosen_by)) = &only_platform {
        check_archs_fit(sources, *platform, chosen_by)?;
    }
    let only_platform = only_platform.map(|(platform, _)| platform);
    let mut selected = Vec::new();
    let mut excluded: Vec<PythonTag> = Vec::new();
    let mut not_built: Vec<String> = Vec::new();
    let mut built_names = std::collections::BTreeSet::new();
    for platform in Platform::ALL {
        if only_platform.is_some_and(|only| only != platform) {
            continue;
        }
        let archs = sources.setting("archs", platform, None).list();
        let mut pythons = python_tags(sources, platform);
        add_enabled_pythons(&mut pythons, &extra_pythons);
        let build = sources.selector("build", platform);
        let skip = sources.selector("skip", platform);
        let mut chosen: Vec<&TargetData> = Vec::new();
        for name in &archs {
            let picked = archs::pick(name, platform);
            if !picked.targets.is_empty() {
                built_names.insert(name.to_ascii_lowercase());
                chosen.extend(picked.targets);
            }
            for missing in &picked.missing {
                // An architecture of this platform is reported as the identifier platform it
                // would have built (`macosx_x86_64`, `manylinux_i686` of `auto`); any other
                // name only if no platform builds it (`arm64` is macOS's, `AMD64` nobody's).
                if is_platform_arch(missing, platform) {
                    push_new(
                        &mut not_built,
                        &format!("{}_{missing}", platform.identifier_prefix()),
                    );
                } else if !archs::is_keyword(name)
                    && (only_platform.is_none() || !is_crosswheel_platform_arch(name))
                {
                    // With one platform chosen, another platform's architecture in a
                    // shared list (`archs = ["aarch64", "arm64"]`) is that platform's, not
                    // missing.
                    push_new(&mut not_built, name);
                }
            }
        }
        for target in chosen {
            for &python in &pythons {
                let allowed = requires_python.is_none_or(|spec| spec.allows(python.minor()));
                let id = identifiers::identifier(python, target);
                if build.matches(&id) && !skip.matches(&id) {
                    if allowed {
                        selected.push((python, target));
                    } else if !excluded.contains(&python) {
                        excluded.push(python);
                    }
                }
            }
        }
    }
    not_built.retain(|name| !built_names.contains(&name.to_ascii_lowercase()));
    if !not_built.is_empty() {
        notes.push(format!(
            "not built here: {} (crosswheel builds {}; docs/configuration.md says what `auto`, `auto64`, `auto32`, `native` and `all` build)",
            not_built.join(", "),
            targets()
                .iter()
                .map(|target| target.identifier_platform())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    enable_notes(&groups, notes);
    let order = |target: &TargetData| targets().iter().position(|t| t == target);
    selected.sort_by_key(|(python, target)| (*python, order(target)));
    selected.dedup();
    excluded.sort();
    Ok((selected, excluded))
}

/// With one platform chosen (`CIBW_PLATFORM=macos`), an `archs` value none of whose names
/// that platform knows (`aarch64`) is cibuildwheel's "Invalid archs option", a
/// configuration error, not an empty run. A list that also names the other platform's
/// architectures (crosswheel's shared lists) is fine as long as one name fits.
fn check_archs_fit(
    sources: &Sources,
    platform: Platform,
    chosen_by: &str,
) -> Result<(), OptionsError> {
    let names = sources.setting("archs", platform, None).list();
    let fits = |name: &String| {
        archs::is_keyword(name)
            || is_platform_arch(name, platform)
            || !archs::pick(name, platform).targets.is_empty()
    };
    if names.is_empty() || names.iter().any(fits) {
        return Ok(());
    }
    let supported = cibw::arch_platform(platform.name())
        .map(|known| {
            let mut names = known.names;
            names.sort();
            names
        })
        .unwrap_or_default();
    Err(OptionsError::InvalidArchs {
        names,
        platform: match platform {
            Platform::Linux => "Linux",
            Platform::Macos => "macOS",
        },
        supported,
        chosen_by: chosen_by.to_string(),
    })
}

/// Whether `arch` is an architecture of a platform crosswheel builds for.
fn is_crosswheel_platform_arch(arch: &str) -> bool {
    Platform::ALL
        .into_iter()
        .any(|platform| is_platform_arch(arch, platform))
}

/// Whether cibuildwheel knows `arch` as an architecture of `platform` (`universal2` of
/// macOS, `i686` of Linux).
fn is_platform_arch(arch: &str, platform: Platform) -> bool {
    cibw::arch_platform(platform.name()).is_some_and(|known| {
        known
            .names
            .iter()
            .any(|name| name.eq_ignore_ascii_case(arch))
    })
}

/// The `enable` groups: the configured value, with `CROSSWHEEL_ENABLE` / `CIBW_ENABLE`
/// added to it rather than replacing it (as cibuildwheel does), and `all` spelt out.
fn enabled_groups(sources: &Sources) -> Vec<String> {
    // Of the file's tables, the last that sets `enable` (`[tool.crosswheel]`'s wins).
    let file = sources
        .files
        .iter()
        .rev()
        .map(|file| &file.global)
        .find(|layer| layer.contains_key("enable"));
    let layers = [
        Some(&sources.defaults.global),
        file,
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
        .flag()
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
        .map(|found| found.setting.pythons())
        .unwrap_or_default()
        .into_iter()
        .max()?;
    Some(newest.with_gil().next_minor())
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
            "enable cpython-experimental-riscv64 changes nothing here: crosswheel builds riscv64 wheels whenever `archs` names riscv64"
                .to_string(),
        );
    }
}

/// `CROSSWHEEL_PLATFORM` / `CIBW_PLATFORM`: build one platform only (`auto`: all), with the
/// variable that chose it.
fn platform_filter(env: &impl EnvSource) -> Result<Option<(Platform, String)>, OptionsError> {
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
        return Ok(Some((platform, format!("{name}={value}"))));
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

fn python_tags(sources: &Sources, platform: Platform) -> Vec<PythonTag> {
    sources
        .get("python", platform, None)
        .map(|located| located.setting.pythons())
        .unwrap_or_default()
}
