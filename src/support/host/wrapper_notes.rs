//! The folder where a build's compiler wrappers leave notes for the build (one-line notices
//! said once per build): set by the backend for a project's build, written by the wrapper
//! scripts. Here, below the stages, so the catalogue's library builds can name it to keep
//! it unset (a library build has no debug-info request to carry from compile to link).

use std::path::{Path, PathBuf};

/// The variable naming the build's folder where the wrappers leave notes: a marker once a
/// compile asked for debug info, and `*.notice` files, each one line said once per build.
pub const WRAPPER_NOTES_VAR: &str = "CROSSWHEEL_WRAPPER_NOTES";

/// The `*.notice` lines the wrappers left in `dir` during a build, sorted.
pub fn wrapper_notices(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "notice"))
        .collect();
    files.sort();
    files
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .map(|text| text.trim().to_string())
        .filter(|text| !text.is_empty())
        .collect()
}
