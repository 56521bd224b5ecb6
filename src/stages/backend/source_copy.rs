//! The copy of the project's source tree a build runs in: per-target isolation, and the
//! user's tree never gets setuptools' `build/` or `*.egg-info`.

use std::path::Path;

use super::BuildError;

/// Folders a build must not see: VCS data, caches, previous build outputs.
fn skip_in_copy(relative: &Path, is_dir: bool) -> bool {
    let Some(name) = relative.file_name().and_then(|name| name.to_str()) else {
        return false;
    };
    let top_level = relative.components().count() == 1;
    is_dir
        && (matches!(
            name,
            ".git" | ".hg" | "__pycache__" | ".tox" | ".nox" | ".venv" | ".pytest_cache"
        ) || name.ends_with(".egg-info")
            || name.starts_with(".mesonpy-")
            || (top_level && matches!(name, "build" | "dist" | "wheelhouse" | "target")))
}

/// Copies the project tree `from` to `to`, without what a build must not see; `to` may lie
/// inside `from` (a project in the temporary folder), and is never copied into itself.
pub fn copy_source_tree(from: &Path, to: &Path) -> Result<(), BuildError> {
    let walker = walkdir::WalkDir::new(from)
        .into_iter()
        .filter_entry(|entry| {
            let relative = entry.path().strip_prefix(from).unwrap_or(entry.path());
            !skip_in_copy(relative, entry.file_type().is_dir()) && entry.path() != to
        });
    for entry in walker {
        let entry = entry.map_err(|err| {
            BuildError::Io(crate::io_error::IoError::new(
                "copy",
                from.to_path_buf(),
                std::io::Error::other(err.to_string()),
            ))
        })?;
        let relative = entry.path().strip_prefix(from).unwrap_or(entry.path());
        let dest = to.join(relative);
        let io = |source| {
            BuildError::Io(crate::io_error::IoError::new(
                "copy",
                entry.path().to_path_buf(),
                source,
            ))
        };
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).map_err(io)?;
        } else if entry.file_type().is_symlink() {
            let link = std::fs::read_link(entry.path()).map_err(io)?;
            std::os::unix::fs::symlink(link, &dest).map_err(io)?;
        } else {
            std::fs::copy(entry.path(), &dest).map_err(io)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_copy_skips_vcs_and_previous_outputs_but_not_nested_build_dirs() {
        assert!(skip_in_copy(Path::new(".git"), true));
        assert!(skip_in_copy(Path::new("build"), true));
        assert!(skip_in_copy(Path::new("src/pkg.egg-info"), true));
        assert!(!skip_in_copy(Path::new("src/build"), true));
        assert!(!skip_in_copy(Path::new("build"), false));
    }
}
