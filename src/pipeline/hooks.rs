//! User commands the pipeline runs: `before-all`, `before-build`,
//! `repair-wheel-command`. Output streams through; failure names the option.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};

pub fn run_shell(
    option: &str,
    command: &str,
    cwd: &Path,
    environment: &BTreeMap<String, String>,
) -> Result<()> {
    tracing::info!("{option}: {command}");
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .envs(environment)
        .status()
        .with_context(|| format!("{option}: could not start sh"))?;
    if !status.success() {
        bail!("{option} failed ({status}): {command}");
    }
    Ok(())
}
