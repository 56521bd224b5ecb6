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
    let mut shell = std::process::Command::new("sh");
    shell.arg("-c").arg(command);
    run(option, command, shell, cwd, environment)
}

/// Runs `shell`, a program that runs the user's `command` (`sh -c`, or `sh -c` inside a
/// private mount namespace), as [`run_shell`] does.
pub fn run(
    option: &str,
    command: &str,
    mut shell: std::process::Command,
    cwd: &Path,
    environment: &BTreeMap<String, String>,
) -> Result<()> {
    tracing::info!("{option}: {command}");
    shell.current_dir(cwd).envs(environment);
    // Output streams through, unless this identifier's output is being kept together
    // (concurrent builds): then it is collected and echoed into that block.
    let status = if crate::logging::capturing() {
        let output = shell
            .stdin(std::process::Stdio::null())
            .output()
            .with_context(|| format!("{option}: could not start sh"))?;
        crate::logging::echo_stdout(&output.stdout);
        crate::logging::echo(&output.stderr);
        output.status
    } else {
        shell
            .status()
            .with_context(|| format!("{option}: could not start sh"))?
    };
    if !status.success() {
        bail!("{option} failed ({status}): {command}");
    }
    Ok(())
}

/// `environment` with the peers first on its PATH (its own, or crosswheel's) and the
/// variable that tells them the build's `target`: what `before-all`, `before-build`,
/// `repair-wheel-command` and the test command run with, so `auditwheel repair ...` in a
/// configuration answers for the target, as the real tool does in its container.
pub fn with_peers(
    mut environment: BTreeMap<String, String>,
    parent: &Path,
    target: &crate::target::Target,
) -> Result<BTreeMap<String, String>> {
    let peers = peer_programs(parent)?;
    let path = environment.get("PATH").cloned().unwrap_or_else(|| {
        crate::support::host::search_path()
            .to_string_lossy()
            .into_owned()
    });
    environment.insert("PATH".into(), format!("{}:{path}", peers.display()));
    environment.insert(
        crate::cli::peers::TARGET_VARIABLE.into(),
        target.id().to_string(),
    );
    Ok(environment)
}

/// `<parent>/peers`, where the peers' program names (`auditwheel`, `delocate-wheel`,
/// `abi3audit`, ...) lead to crosswheel: put first on a hook's PATH, crosswheel answers
/// to them for the hook's target (see `commands::peers`).
pub fn peer_programs(parent: &Path) -> Result<std::path::PathBuf> {
    let folder = parent.join("peers");
    if folder.is_dir() {
        return Ok(folder);
    }
    let crosswheel = std::env::current_exe().context("find crosswheel's own program")?;
    std::fs::create_dir_all(&folder).map_err(crate::io_error::IoError::at("create", &folder))?;
    for peer in crate::cli::peers::Peer::ALL {
        let link = folder.join(peer.program());
        std::os::unix::fs::symlink(&crosswheel, &link)
            .map_err(crate::io_error::IoError::at("create", &link))?;
    }
    Ok(folder)
}
