//! cibuildwheel's check once `environment` is applied: `python` and `pip` found on PATH
//! must still be the build's own environment's. A PATH that puts another `python` first
//! would have every hook and build step that runs `python` by name use an interpreter the
//! wheel is not built for, so the build stops there instead, with cibuildwheel's words.

use std::path::{Path, PathBuf};

use crate::support::host::find_in_path;

/// `python` or `pip` on the PATH `environment` left is not the build environment's.
#[derive(Debug, thiserror::Error)]
#[error(
    "{program} available on PATH doesn't match our installed instance: with `environment` applied, {} instead of the build environment's {}; if you set PATH, keep $PATH in it and insert no folder holding another {program} before it",
    found_text(.program, .found.as_deref()),
    .expected.display()
)]
pub struct NotTheBuildsOwn {
    pub program: &'static str,
    pub found: Option<PathBuf>,
    pub expected: PathBuf,
}

fn found_text(program: &str, found: Option<&Path>) -> String {
    match found {
        Some(found) => format!("PATH finds {}", found.display()),
        None => format!("PATH holds no {program}"),
    }
}

/// Checks that `programs` resolve on `path` to the ones in `bin`, the build environment's
/// folder, as cibuildwheel compares `which python` (and `which pip`) with its venv's.
pub fn check_build_env_first(
    path: &str,
    bin: &Path,
    programs: &[&'static str],
) -> Result<(), NotTheBuildsOwn> {
    for &program in programs {
        let expected = bin.join(program);
        let found = find_in_path(program, path.as_ref());
        if found.as_deref() != Some(expected.as_path()) {
            return Err(NotTheBuildsOwn {
                program,
                found,
                expected,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn executable(dir: &Path, name: &str) {
        use std::os::unix::fs::PermissionsExt;
        let file = dir.join(name);
        std::fs::write(&file, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn the_build_environment_first_on_path_passes() {
        let bin = tempfile::tempdir().unwrap();
        executable(bin.path(), "python");
        executable(bin.path(), "pip");
        let path = format!("{}:/usr/bin:/bin", bin.path().display());
        check_build_env_first(&path, bin.path(), &["python", "pip"]).unwrap();
    }

    #[test]
    fn a_python_inserted_above_the_build_environment_is_named() {
        let (bin, fake) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        executable(bin.path(), "python");
        executable(fake.path(), "python");
        let path = format!("{}:{}", fake.path().display(), bin.path().display());
        let error = check_build_env_first(&path, bin.path(), &["python"]).unwrap_err();
        let message = error.to_string();
        assert!(
            message.starts_with("python available on PATH doesn't match our installed instance: "),
            "{message}"
        );
        assert!(
            message.contains(&format!(
                "PATH finds {}",
                fake.path().join("python").display()
            )),
            "{message}"
        );
    }

    #[test]
    fn a_path_without_the_build_environment_says_so() {
        let bin = tempfile::tempdir().unwrap();
        executable(bin.path(), "pip");
        let error = check_build_env_first("/nonexistent", bin.path(), &["pip"]).unwrap_err();
        assert!(error.to_string().contains("PATH holds no pip"), "{error}");
    }
}
