//! Each Linux target builds in its own copy of the project, as each of cibuildwheel's Linux
//! containers gets its own copy at `/project`: `before-all` runs once in it, then every
//! build, hook and test of the target. What one target's hooks make (`mkdir new_path`, a
//! vendored library built in the tree) never meets another target's, and the user's tree
//! is never written to. macOS targets build in the project itself, as cibuildwheel's macOS
//! builds do.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};

use crate::input::options::{Plan, ProjectPaths};
use crate::io_error::IoError;
use crate::stages::backend::copy_source_tree;

/// The copies of a run; removed when dropped, after the run.
pub struct ProjectCopies {
    _folders: Vec<tempfile::TempDir>,
}

/// Copies the project root once per Linux target of `plan` and moves that target's builds
/// there. `resolve_in` resolves the configuration again for a copy, so that `{project}`,
/// `{package}` and `/project` in its commands and `environment` name the copy.
pub fn copy_for_linux_targets(
    plan: &mut Plan,
    resolve_in: impl Fn(&ProjectPaths) -> Result<Plan>,
) -> Result<ProjectCopies> {
    let mut copies = ProjectCopies {
        _folders: Vec::new(),
    };
    let mut moved: BTreeMap<String, Plan> = BTreeMap::new();
    for spec in plan.builds.iter_mut() {
        if spec.target.linux_arch().is_none() {
            continue;
        }
        let key = super::targets::key_of(spec);
        if !moved.contains_key(&key) {
            let (folder, paths) = copy_project(&spec.paths, spec.target.id())?;
            let resolved = resolve_in(&paths).with_context(|| {
                format!("reading the configuration in {}", paths.package.display())
            })?;
            copies._folders.push(folder);
            moved.insert(key.clone(), resolved);
        }
        let copy = moved[&key]
            .builds
            .iter()
            .find(|copy| copy.identifier == spec.identifier)
            .with_context(|| {
                format!(
                    "the copy of the project for {} has no build {}",
                    spec.target.id(),
                    spec.identifier
                )
            })?;
        spec.move_to(copy.clone());
    }
    Ok(copies)
}

/// A copy of the project root of `paths` (without VCS data, caches and earlier outputs, as
/// the build's own copy of the source), and the same folders in it.
fn copy_project(paths: &ProjectPaths, target: &str) -> Result<(tempfile::TempDir, ProjectPaths)> {
    let folder = tempfile::Builder::new()
        .prefix(&format!("crosswheel-project-{target}-"))
        .tempdir()
        .map_err(IoError::at("create a folder in", &std::env::temp_dir()))?;
    let root = folder.path().join(file_name_or(&paths.root, "project"));
    copy_source_tree(&paths.root, &root)?;
    let package = match paths.package.strip_prefix(&paths.root) {
        Ok(inside) if !inside.as_os_str().is_empty() => root.join(inside),
        _ => root.clone(),
    };
    tracing::info!(
        "{target}: builds in a copy of the project, {}",
        root.display()
    );
    Ok((folder, ProjectPaths::new(&root, &package)))
}

/// The copy keeps the project folder's name: build logs, and projects that read it, see
/// the same name.
fn file_name_or<'a>(path: &'a Path, fallback: &'a str) -> &'a std::ffi::OsStr {
    path.file_name().unwrap_or(fallback.as_ref())
}
