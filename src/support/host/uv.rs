//! uv, for host CPythons a build needs and the machine lacks: from PATH, else installed
//! from PyPI into crosswheel's cache the way zig is.

use std::path::{Path, PathBuf};

use super::Cache;
use crate::target::Tool;

/// uv on PATH, else the one in the cache's private venv, installing it there with
/// `host_python`'s pip unless `offline`.
pub fn ensure_uv(cache: &Cache, host_python: &Path, offline: bool) -> Result<PathBuf, String> {
    if let Some(uv) = super::find_on_path("uv") {
        return Ok(uv);
    }
    let venv = cache.uv_venv();
    let in_venv = |venv: &Path| venv.join("bin").join("uv");
    if in_venv(&venv).is_file() {
        return Ok(in_venv(&venv));
    }
    if offline {
        return Err(format!(
            "uv is not installed and --offline forbids installing {}",
            Tool::Uv.requirement()
        ));
    }
    tracing::info!(
        "installing uv ({}, ~40 MB) into {}: once, to install the host CPythons builds need",
        Tool::Uv.requirement(),
        venv.display()
    );
    super::tool_venv::install(&venv, Tool::Uv, host_python, |venv| in_venv(venv).is_file())?;
    Ok(in_venv(&venv))
}
