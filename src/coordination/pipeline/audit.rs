//! cibuildwheel's `audit-command` (4.0+), run on each repaired wheel before its tests.
//!
//! cibuildwheel runs abi3audit on abi3 wheels by default. abi3audit reads the wheel's ELF
//! and Mach-O files without loading them, so it runs on the build machine for every
//! target. Each audit gets a venv of its own in the identifier's work folder holding
//! `audit-requires`: the default (abi3audit) from config/audit-requirements.txt, every
//! package pinned by SHA-256; other requirements as the user gives them, like
//! `test-requires`. A venv in the work folder is the audit's alone, so concurrent builds
//! never share a half-made one, and nothing it installs outlives the build.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::exit::FatalError;
use crate::input::options::BuildOptions;
use crate::support::host::run_folder::staging_in;

/// cibuildwheel's default `audit-requires`, installed from [`PINNED_ABI3AUDIT`] instead.
const DEFAULT_REQUIRES: &str = "abi3audit";
const PINNED_ABI3AUDIT: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/config/audit-requirements.txt"
));

/// Whether the wheel file name's ABI tag is `abi3`.
fn is_abi3(wheel_name: &str) -> bool {
    crate::formats::wheel::WheelName::parse(wheel_name).is_ok_and(|name| name.is_abi3())
}

/// The commands that audit `wheel_name`: every `{wheel}` command, `{abi3_wheel}` ones only
/// for an abi3 wheel.
pub(super) fn applicable<'a>(commands: &'a [String], wheel_name: &str) -> Vec<&'a str> {
    commands
        .iter()
        .map(String::as_str)
        .filter(|command| !command.contains("{abi3_wheel}") || is_abi3(wheel_name))
        .collect()
}

/// The command with the wheel's path filled in, shell-quoted.
fn prepared(command: &str, wheel: &Path) -> String {
    let path = crate::support::host::shell_quote(&wheel.to_string_lossy()).into_owned();
    crate::input::options::fill_placeholders(command, &[("wheel", &path), ("abi3_wheel", &path)])
}

/// What cibuildwheel prints of an audit goes to stdout in its words, as there.
fn say(line: &str) {
    if crate::logging::capturing() {
        crate::logging::echo(format!("{line}\n").as_bytes());
    } else {
        println!("{line}");
    }
}

/// Runs the applicable audit commands on the repaired `wheel` in `root` (the project root);
/// `work` is the identifier's work folder, `host_python` makes the venv.
pub(super) fn audit(
    options: &BuildOptions,
    wheel: &Path,
    root: &Path,
    work: &Path,
    host_python: &Path,
    environment: &BTreeMap<String, String>,
) -> Result<()> {
    let name = wheel.file_name().map(|n| n.to_string_lossy().into_owned());
    let commands = applicable(&options.audit_command, name.as_deref().unwrap_or_default());
    if commands.is_empty() {
        if !options.audit_command.is_empty() {
            say("No audit required for this wheel, as it is not abi3");
        }
        return Ok(());
    }
    say("Auditing wheel...");
    let venv = make_venv(
        &options.audit_requires,
        &work.join("audit-venv"),
        host_python,
        true,
    )?;
    let mut env = environment.clone();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![venv.join("bin")];
    dirs.extend(std::env::split_paths(&path));
    env.insert(
        "PATH".into(),
        std::env::join_paths(dirs)?.to_string_lossy().into_owned(),
    );
    env.insert("VIRTUAL_ENV".into(), venv.to_string_lossy().into_owned());
    for command in commands {
        let command = prepared(command, wheel);
        say(&format!("Running audit command: {command}"));
        super::hooks::run_shell("audit-command", &command, root, &env).map_err(|error| {
            FatalError::AuditFailed {
                command: command.clone(),
                reason: crate::logging::one_line(&error),
            }
        })?;
    }
    Ok(())
}

/// A venv at `venv` with `requires` installed by the host's pip; the default abi3audit in
/// hash-checking mode from the pinned file. `announce`: say so on stdout, as the audit
/// stage of a build does (the `abi3audit` peer's stdout is abi3audit's report alone).
fn make_venv(
    requires: &[String],
    venv: &Path,
    host_python: &Path,
    announce: bool,
) -> Result<PathBuf> {
    let run = |args: &[&std::ffi::OsStr]| -> Result<()> {
        let output = duct::cmd(host_python, args)
            .stderr_to_stdout()
            .stdout_capture()
            .unchecked()
            .run()?;
        if !output.status.success() {
            anyhow::bail!(
                "making the audit's venv failed: {}",
                String::from_utf8_lossy(&output.stdout).trim_end()
            );
        }
        Ok(())
    };
    run(&[
        "-m".as_ref(),
        "venv".as_ref(),
        "--without-pip".as_ref(),
        venv.as_os_str(),
    ])?;
    if requires.is_empty() {
        return Ok(venv.to_path_buf());
    }
    if announce {
        say(&format!(
            "Installing audit dependencies: {}",
            requires.join(", ")
        ));
    }
    let python = venv.join("bin").join("python");
    let mut args: Vec<std::ffi::OsString> = ["-m", "pip", "--python"].map(Into::into).to_vec();
    args.extend([python.into_os_string(), "install".into(), "--quiet".into()]);
    if requires == [DEFAULT_REQUIRES] {
        let file = venv.join("crosswheel-audit-requirements.txt");
        std::fs::write(&file, PINNED_ABI3AUDIT)
            .map_err(crate::io_error::IoError::at("write", &file))?;
        args.extend([
            "--require-hashes".into(),
            "-r".into(),
            file.into_os_string(),
        ]);
    } else {
        args.extend(requires.iter().map(Into::into));
    }
    let args: Vec<&std::ffi::OsStr> = args.iter().map(AsRef::as_ref).collect();
    run(&args)?;
    Ok(venv.to_path_buf())
}

/// The cache's venv holding the pinned abi3audit, made once (aside, then renamed into
/// place) with the `python3` on PATH; for the `abi3audit` a configuration's hooks call.
pub fn pinned_abi3audit(cache: &crate::support::host::Cache) -> Result<PathBuf> {
    let tools = cache.root().join("tools");
    let key = crate::support::host::cache_key(&[PINNED_ABI3AUDIT.as_bytes()]);
    let venv = tools.join(format!("abi3audit-{key}"));
    // Renamed into place only once complete.
    if venv.is_dir() {
        return Ok(venv);
    }
    std::fs::create_dir_all(&tools).map_err(crate::io_error::IoError::at("create", &tools))?;
    let python = crate::support::host::find_on_path("python3")
        .or_else(|| crate::support::host::find_on_path("python"))
        .ok_or_else(|| anyhow::anyhow!("abi3audit needs a python3 on PATH to be installed with"))?;
    eprintln!(
        "abi3audit: installing the pinned abi3audit (config/audit-requirements.txt) into {} (once)",
        venv.display()
    );
    let staging = staging_in(&tools, ".abi3audit-")
        .map_err(crate::io_error::IoError::at("create a folder in", &tools))?;
    let staged = staging.path().join("venv");
    make_venv(&[DEFAULT_REQUIRES.to_string()], &staged, &python, false)?;
    match std::fs::rename(&staged, &venv) {
        Ok(()) => Ok(venv),
        // Another run made it first.
        Err(_) if venv.is_dir() => Ok(venv),
        Err(error) => Err(crate::io_error::IoError::new("rename", staged, error).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abi3_commands_audit_abi3_wheels_only_and_wheel_commands_every_wheel() {
        let commands = vec![
            "abi3audit --strict --report {abi3_wheel}".to_string(),
            "echo {wheel}".to_string(),
        ];
        let abi3 = "spam-0.1.0-cp310-abi3-manylinux_2_17_aarch64.manylinux2014_aarch64.whl";
        let plain = "spam-0.1.0-cp311-cp311-macosx_11_0_arm64.whl";
        assert_eq!(applicable(&commands, abi3).len(), 2);
        assert_eq!(applicable(&commands, plain), vec!["echo {wheel}"]);
    }

    #[test]
    fn the_wheel_is_filled_shell_quoted() {
        let wheel = Path::new("/tmp/a b/spam-0.1.0-cp310-abi3-macosx_11_0_arm64.whl");
        assert_eq!(
            prepared("abi3audit --report {abi3_wheel}", wheel),
            "abi3audit --report '/tmp/a b/spam-0.1.0-cp310-abi3-macosx_11_0_arm64.whl'"
        );
    }

    #[test]
    fn the_pinned_abi3audit_pins_every_package_by_hash() {
        let mut packages = 0;
        for block in PINNED_ABI3AUDIT
            .split("\n")
            .filter(|l| !l.starts_with(' ') && !l.starts_with('#'))
        {
            if block.trim().is_empty() {
                continue;
            }
            packages += 1;
            assert!(block.contains("==") && block.ends_with('\\'), "{block}");
        }
        assert!(PINNED_ABI3AUDIT.contains("abi3audit==0.0.26 \\"));
        assert!(packages > 10, "{packages}");
    }
}
