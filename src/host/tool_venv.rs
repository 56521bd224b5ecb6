//! Tools crosswheel installs from PyPI into private venvs of its cache (zig from
//! `ziglang`, uv): the host pip installs them, and a venv only appears under its final name
//! once complete.

use std::path::Path;

/// Installs `spec` (`ziglang==0.17.1`) with `host_python`'s pip into a new venv at `venv`,
/// unless `ready` already holds for it.
pub(crate) fn install(
    venv: &Path,
    spec: &str,
    host_python: &Path,
    ready: impl Fn(&Path) -> bool,
) -> Result<(), String> {
    // A half-created venv from an interrupted install (before installs were staged)
    // would be reused forever: start over.
    if venv.exists() && !ready(venv) {
        std::fs::remove_dir_all(venv)
            .map_err(|err| format!("cannot remove {}: {err}", venv.display()))?;
    }
    // Install into a private folder renamed into place once complete: a concurrent
    // run never sees, uses or deletes a half-installed tool.
    let parent = venv.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .map_err(|err| format!("cannot create {}: {err}", parent.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".tool-venv-")
        .tempdir_in(parent)
        .map_err(|err| format!("cannot create a folder in {}: {err}", parent.display()))?;
    let run = |args: Vec<std::ffi::OsString>| -> Result<(), String> {
        let output = duct::cmd(host_python, &args)
            .stderr_to_stdout()
            .stdout_capture()
            .unchecked()
            .run()
            .map_err(|err| format!("cannot run {}: {err}", host_python.display()))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&output.stdout)
                .trim_end()
                .to_string())
        }
    };
    run(vec![
        "-m".into(),
        "venv".into(),
        "--without-pip".into(),
        staging.path().into(),
    ])?;
    let venv_python = staging.path().join("bin").join("python");
    run(vec![
        "-m".into(),
        "pip".into(),
        "--python".into(),
        venv_python.into(),
        "install".into(),
        "--quiet".into(),
        spec.into(),
    ])?;
    match std::fs::rename(staging.path(), venv) {
        Ok(()) => {
            // The folder lives on as the venv: it must not be deleted on drop.
            let _venv = staging.keep();
            Ok(())
        }
        // Another run finished first: use its install, drop ours.
        Err(_) if ready(venv) => Ok(()),
        Err(err) => Err(format!(
            "cannot move the new venv to {}: {err}",
            venv.display()
        )),
    }
}
