//! Resolving the plan: reads the project's files, stacks the sources of settings, chooses
//! the builds and computes each build's options. Each step reports all of its problems
//! together before the next runs.

use std::path::{Path, PathBuf};

use crate::io_error::IoError;

use super::build_spec::build_spec;
use super::document::ConfigDocument;
use super::error::{OptionsError, keep};
use super::notes::Notes;
use super::project_tables::DependencyGroups;
use super::requires_python;
use super::selection::{self, Selected};
use super::sources::Sources;
use super::{BuildSpec, CliOverrides, EnvSource, Plan, ProjectPaths};

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
    let (files, config_file) =
        config_documents(cli, &pyproject_path, pyproject_text.as_deref(), &mut notes)?;
    let sources = Sources::read(files, env, cli, &mut notes)?;
    let requires_python = requires_python::read(&pyproject_path, pyproject_text.as_deref(), env)?;
    let selected = selection::selected(&sources, env, cli, requires_python.as_ref(), &mut notes)?;
    let groups = DependencyGroups::read(&pyproject_path, pyproject_text.as_deref());
    let root = cli.project_root.as_deref().unwrap_or(project_dir);
    let paths = ProjectPaths::new(root, project_dir);
    let builds = build_specs(&sources, env, &paths, &groups, selected, &mut notes)?;
    Ok(Plan {
        project_dir: project_dir.to_path_buf(),
        project_root: paths.root,
        config_file,
        builds,
        notes: notes.lines,
    })
}

/// The configuration file's tables and the file: `--config-file`, else the project's
/// pyproject.toml when there is one.
fn config_documents(
    cli: &CliOverrides,
    pyproject_path: &Path,
    pyproject_text: Option<&str>,
    notes: &mut Notes,
) -> Result<(Vec<ConfigDocument>, Option<PathBuf>), OptionsError> {
    Ok(match &cli.config_file {
        Some(given) => {
            // cibuildwheel fills `{package}` in --config-file
            // (`--config-file {package}/wheel_build_config.toml`, as in its test_from_sdist).
            let package = pyproject_path.parent().unwrap_or(Path::new("."));
            let path = PathBuf::from(
                given
                    .to_string_lossy()
                    .replace("{package}", &package.to_string_lossy()),
            );
            let text = std::fs::read_to_string(&path).map_err(IoError::at("read", &path))?;
            (read_config(&path, &text, notes)?, Some(path))
        }
        None => match pyproject_text {
            Some(text) => (
                read_config(pyproject_path, text, notes)?,
                Some(pyproject_path.to_path_buf()),
            ),
            None => (Vec::new(), None),
        },
    })
}

/// Each selected build's options; the problems of every build are reported together.
fn build_specs(
    sources: &Sources,
    env: &impl EnvSource,
    paths: &ProjectPaths,
    groups: &DependencyGroups,
    selected: Vec<Selected>,
    notes: &mut Notes,
) -> Result<Vec<BuildSpec>, OptionsError> {
    let mut problems = Vec::new();
    let mut builds = Vec::new();
    for (python, target) in selected {
        let spec = build_spec(sources, env, paths, groups, python, target, notes);
        if let Some(spec) = keep(spec, &mut problems) {
            builds.push(spec);
        }
    }
    OptionsError::from_all(problems)?;
    Ok(builds)
}

/// The file's `[tool.cibuildwheel]` and `[tool.crosswheel]` tables, lowest precedence
/// first: a cibuildwheel user's configuration works unchanged, and a `[tool.crosswheel]`
/// table beside it extends it (its keys win). One line says which were read.
fn read_config(
    path: &Path,
    text: &str,
    notes: &mut Notes,
) -> Result<Vec<ConfigDocument>, OptionsError> {
    // Both tables are checked, so that the problems of both are reported in one run.
    let cibuildwheel = ConfigDocument::parse(path, text, &["tool", "cibuildwheel"]);
    let crosswheel = ConfigDocument::parse(path, text, &["tool", "crosswheel"]);
    let mut problems = Vec::new();
    let cibuildwheel = keep(cibuildwheel, &mut problems);
    let crosswheel = keep(crosswheel, &mut problems);
    // A syntax error, the same for both, is said once.
    OptionsError::from_all(problems)?;
    let documents: Vec<ConfigDocument> = [cibuildwheel, crosswheel]
        .into_iter()
        .flatten()
        .filter(|document| document.table.is_some())
        .collect();
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    );
    match documents.as_slice() {
        [only] if only.table.as_deref() == Some("tool.cibuildwheel") => notes.push(format!(
            "reading [tool.cibuildwheel] of {name} (no [tool.crosswheel] table)"
        )),
        [cibuildwheel, crosswheel] => {
            let shadowed = shadowed_keys(cibuildwheel, crosswheel);
            let wins = if shadowed.is_empty() {
                String::new()
            } else {
                format!(": {}", shadowed.join(", "))
            };
            notes.push(format!(
                "reading [tool.cibuildwheel] and [tool.crosswheel] of {name} ([tool.crosswheel]'s keys win{wins})"
            ));
        }
        _ => {}
    }
    Ok(documents)
}

/// The options both tables set (their platform tables included), which `[tool.crosswheel]`
/// decides: `archs`, `linux.before-all`.
fn shadowed_keys(below: &ConfigDocument, above: &ConfigDocument) -> Vec<String> {
    let mut keys = Vec::new();
    let sets_anywhere = |document: &ConfigDocument, key: &str| {
        document.global.contains_key(key)
            || document
                .platforms
                .values()
                .any(|layer| layer.contains_key(key))
    };
    for key in above.global.keys() {
        if sets_anywhere(below, key) {
            keys.push((*key).to_string());
        }
    }
    for (platform, layer) in &above.platforms {
        for key in layer.keys() {
            let in_below = below.global.contains_key(key)
                || below
                    .platforms
                    .get(platform)
                    .is_some_and(|below| below.contains_key(key));
            if in_below && !above.global.contains_key(key) {
                keys.push(format!("{}.{key}", platform.name()));
            }
        }
    }
    keys
}

fn read_optional(path: &Path) -> Result<Option<String>, OptionsError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(IoError::new("read", path, source).into()),
    }
}
