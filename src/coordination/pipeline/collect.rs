//! The last step: a finished wheel moves into the wheelhouse, and one that failed its tests
//! goes apart into the run's log folder, never into the output folder.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::RunLogs;
use crate::io_error::IoError;

pub(super) fn file_name_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Moves `file` to `destination` so that no partial file ever carries the
/// destination's name: a rename, or across file systems a copy into a temporary
/// file beside `destination` that is then renamed over it.
pub(super) fn move_file(file: &Path, destination: &Path) -> Result<()> {
    match std::fs::rename(file, destination) {
        Err(error) if error.kind() == std::io::ErrorKind::CrossesDevices => {}
        other => return Ok(other.map_err(IoError::at("move", file))?),
    }
    let folder = destination
        .parent()
        .context("the destination has no folder")?;
    let temporary = tempfile::Builder::new()
        .prefix(".crosswheel-")
        .suffix(".partial")
        .tempfile_in(folder)
        .map_err(IoError::at("create a temporary file in", folder))?;
    std::fs::copy(file, temporary.path()).map_err(IoError::at("copy", file))?;
    temporary
        .persist(destination)
        .map_err(|error| IoError::new("write", destination, error.error))?;
    std::fs::remove_file(file).map_err(IoError::at("remove", file))?;
    Ok(())
}

/// A wheel that built and repaired but failed its tests, or could not be tested, goes to
/// `failed/<id>/` in this run's log folder with a copy of its logs and `REASON.txt`: never
/// into the output folder, which holds only finished wheels (cibuildwheel leaves it empty
/// when a test fails, and CI upload steps take whatever is there).
pub(super) fn keep_apart(
    run_logs: &RunLogs,
    identifier: &str,
    wheel: &Path,
    logs: &[PathBuf],
    reason: &str,
) -> Result<PathBuf> {
    let folder = run_logs.failed_folder(identifier);
    if folder.exists() {
        std::fs::remove_dir_all(&folder).map_err(IoError::at("remove", &folder))?;
    }
    std::fs::create_dir_all(&folder).map_err(IoError::at("create", &folder))?;
    if let Some(name) = wheel.file_name() {
        move_file(wheel, &folder.join(name))?;
    }
    for log in logs {
        if let Some(name) = log.file_name() {
            std::fs::copy(log, folder.join(name)).map_err(IoError::at("copy", log))?;
        }
    }
    let reason_file = folder.join("REASON.txt");
    std::fs::write(&reason_file, format!("{reason}\n"))
        .map_err(IoError::at("write", &reason_file))?;
    Ok(folder)
}
