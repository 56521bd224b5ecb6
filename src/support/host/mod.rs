//! The machine crosswheel runs on: its cache folder, programs on `PATH`, the host CPythons
//! that run builds and native tests (found, or installed with uv), tools installed from
//! PyPI into private venvs of the cache, quoting for its shell, and the interface through
//! which stages ask for a package built for a target. Stages take these as
//! plain inputs; nothing here knows a stage (tool pins come from `target::config`).

mod built_python;
mod cache;
mod network;
pub mod package_index;
mod python;
mod requirement_build;
pub mod run_folder;
mod shell;
pub(crate) mod tool_venv;
mod uv;
mod wrapper_notes;

use std::path::{Path, PathBuf};

pub use built_python::HostBuildError;
pub use cache::{Cache, NoCacheDir, cache_key, sha256_of_file};
pub use network::Network;
pub(crate) use python::CROSS_ONLY_VARS;
pub use python::{BuildPython, PythonError};
pub use requirement_build::{
    BuildPurpose, BuiltRequirement, RequirementBuildFailure, RequirementBuilder,
};
pub use shell::{shell_quote, shell_quote_path};
pub use uv::ensure_uv;
pub use wrapper_notes::{WRAPPER_NOTES_VAR, wrapper_notices};

/// The program that installs build requirements into an isolated build environment: what
/// `build-frontend` chooses and the backend runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Installer {
    /// The build python's pip, `python -m pip --python <venv> install` (`build`, `pip`).
    Pip,
    /// uv from PATH or crosswheel's cache, `uv pip install --python <venv>` (`build[uv]`,
    /// `uv`, `build --installer uv`).
    Uv,
}

impl Installer {
    pub fn name(self) -> &'static str {
        match self {
            Installer::Pip => "pip",
            Installer::Uv => "uv",
        }
    }
}

/// `CROSSWHEEL_ZIG`: a zig executable to use instead of the `ziglang` package of the cache.
pub fn zig_override() -> Option<PathBuf> {
    std::env::var_os("CROSSWHEEL_ZIG")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
}

/// The build machine's `PATH`, as programs run from here search it (empty when unset).
pub fn search_path() -> std::ffi::OsString {
    std::env::var_os("PATH").unwrap_or_default()
}

/// The first executable file called `name` in a folder of `PATH`.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    find_in_path(name, &std::env::var_os("PATH")?)
}

/// The first executable file called `name` in a folder of `path` (a `PATH` value), as
/// `which` finds it.
pub fn find_in_path(name: &str, path: &std::ffi::OsStr) -> Option<PathBuf> {
    std::env::split_paths(path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}
