//! zig from the `ziglang` Python package, installed into a private venv on first use.

use std::path::{Path, PathBuf};

use super::ToolchainError;
use crate::support::host::Cache;
use crate::target::Tool;

/// A usable zig executable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zig {
    pub exe: PathBuf,
    pub version: String,
}

/// The shell command that installs zig the way crosswheel does (for hints and `doctor`).
pub fn zig_install_command(cache: &Cache, host_python: &Path) -> String {
    let venv = cache.zig_venv();
    format!(
        "{python} -m venv --without-pip {venv} && {python} -m pip --python {venv}/bin/python install '{spec}'",
        python = host_python.display(),
        venv = venv.display(),
        spec = Tool::Ziglang.requirement(),
    )
}

/// Finds zig without installing anything: `$CROSSWHEEL_ZIG` first (an explicit zig
/// executable), then the `ziglang` package in the cache's private venv.
pub fn find_zig(cache: &Cache) -> Result<Option<Zig>, ToolchainError> {
    if let Some(exe) = crate::support::host::zig_override() {
        let version = zig_version(&exe).map_err(|reason| ToolchainError::BrokenZig {
            exe: exe.clone(),
            reason: format!("{reason} (it comes from CROSSWHEEL_ZIG)"),
        })?;
        return Ok(Some(Zig { exe, version }));
    }
    let Some(exe) = zig_in_venv(&cache.zig_venv()) else {
        return Ok(None);
    };
    let version = zig_version(&exe).map_err(|reason| ToolchainError::BrokenZig {
        exe: exe.clone(),
        reason,
    })?;
    Ok(Some(Zig { exe, version }))
}

/// Finds zig, installing `ziglang` with the host pip when it is missing and `offline` is off.
pub fn ensure_zig(cache: &Cache, host_python: &Path, offline: bool) -> Result<Zig, ToolchainError> {
    if let Some(zig) = find_zig(cache)? {
        return Ok(zig);
    }
    let install_command = zig_install_command(cache, host_python);
    if offline {
        return Err(ToolchainError::ZigMissingOffline {
            venv: cache.zig_venv(),
            install_command,
        });
    }
    tracing::info!(
        "installing the zig cross compiler ({}, ~410 MB installed) into {}: once, for every target",
        Tool::Ziglang.requirement(),
        cache.zig_venv().display()
    );
    install_ziglang(cache, host_python).map_err(|reason| ToolchainError::ZigInstallFailed {
        venv: cache.zig_venv(),
        reason,
        install_command: install_command.clone(),
    })?;
    find_zig(cache)?.ok_or_else(|| ToolchainError::ZigInstallFailed {
        venv: cache.zig_venv(),
        reason: "pip succeeded but no ziglang/zig executable appeared".to_string(),
        install_command,
    })
}

fn install_ziglang(cache: &Cache, host_python: &Path) -> Result<(), String> {
    crate::support::host::tool_venv::install(
        &cache.zig_venv(),
        Tool::Ziglang,
        host_python,
        |venv| zig_in_venv(venv).is_some(),
    )
}

fn zig_in_venv(venv: &Path) -> Option<PathBuf> {
    let lib = venv.join("lib");
    let mut candidates: Vec<PathBuf> = std::fs::read_dir(&lib)
        .ok()?
        .filter_map(|entry| entry.ok())
        .map(|entry| {
            entry
                .path()
                .join("site-packages")
                .join("ziglang")
                .join("zig")
        })
        .filter(|exe| exe.is_file())
        .collect();
    candidates.sort();
    candidates.pop()
}

fn zig_version(exe: &Path) -> Result<String, String> {
    let output = duct::cmd(exe, ["version"])
        .stderr_to_stdout()
        .stdout_capture()
        .unchecked()
        .run()
        .map_err(|err| format!("cannot run it: {err}"))?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
    if output.status.success() && !text.is_empty() {
        Ok(text)
    } else {
        Err(format!("`zig version` failed: {text}"))
    }
}
