//! Tools crosswheel installs from the package index into private venvs of its cache (zig
//! from `ziglang`, uv): the host pip installs them, verified against the SHA-256 pinned in
//! `config/targets.toml` (`[tool_hashes]`), and a venv only appears under its final name
//! once complete.

use std::path::Path;

use crate::support::host::run_folder::staging_in;
use crate::target::Tool;

/// Installs `tool`'s pinned release with `host_python`'s pip into a new venv at `venv`,
/// unless `ready` already holds for it. pip refuses a wheel whose SHA-256 is not pinned.
pub(crate) fn install(
    venv: &Path,
    tool: Tool,
    host_python: &Path,
    ready: impl Fn(&Path) -> bool,
) -> Result<(), String> {
    install_pinned(
        venv,
        tool.requirement(),
        tool.hashes(),
        &[],
        host_python,
        ready,
    )
}

/// The requirements file that pins `spec` to `hashes`: pip's hash-checking mode.
fn requirements(spec: &str, hashes: &[String]) -> String {
    let mut line = spec.to_string();
    for hash in hashes {
        line.push_str(&format!(" --hash=sha256:{hash}"));
    }
    line.push('\n');
    line
}

/// pip's "THESE PACKAGES DO NOT MATCH THE HASHES" report as one line, with the hash it got.
fn hash_mismatch(spec: &str, pip_output: &str) -> Option<String> {
    if !pip_output.contains("DO NOT MATCH THE HASHES") {
        return None;
    }
    let got = pip_output
        .lines()
        .find_map(|line| line.trim().strip_prefix("Got"))
        .map(str::trim)
        .unwrap_or("an unpinned hash");
    Some(format!(
        "refusing to install {spec}: the wheel pip downloaded has SHA-256 {got}, which is not \
         pinned in config/targets.toml [tool_hashes]; the package index (or a proxy) served other \
         bytes than the ones crosswheel was released with"
    ))
}

/// [`install`] with the hashes given, and `pip_args` added to pip's (the tests' local index).
fn install_pinned(
    venv: &Path,
    spec: &str,
    hashes: &[String],
    pip_args: &[&str],
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
    let staging = staging_in(parent, ".tool-venv-")
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
    let requirements_file = staging.path().join("crosswheel-requirements.txt");
    std::fs::write(&requirements_file, requirements(spec, hashes))
        .map_err(|err| format!("cannot write {}: {err}", requirements_file.display()))?;
    let mut args: Vec<std::ffi::OsString> = vec![
        "-m".into(),
        "pip".into(),
        "--python".into(),
        venv_python.into(),
        "install".into(),
        "--quiet".into(),
        // The tools are single wheels without dependencies; hash-checking mode needs
        // every requirement pinned, so none may be pulled in.
        "--no-deps".into(),
        "--only-binary=:all:".into(),
        "--require-hashes".into(),
        "-r".into(),
        requirements_file.clone().into(),
    ];
    args.extend(pip_args.iter().map(Into::into));
    run(args).map_err(|output| hash_mismatch(spec, &output).unwrap_or(output))?;
    let _ = std::fs::remove_file(&requirements_file);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_pinned_hashes() {
        for tool in Tool::ALL {
            let (spec, hashes) = (tool.requirement(), tool.hashes());
            assert!(!hashes.is_empty(), "{spec}");
            for hash in hashes {
                assert!(
                    hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()),
                    "{spec}: `{hash}` is not a SHA-256"
                );
            }
        }
    }

    #[test]
    fn the_requirements_file_pins_every_hash() {
        let hashes = ["aa".repeat(32), "bb".repeat(32)];
        assert_eq!(
            requirements("uv==0.13.9", &hashes),
            format!(
                "uv==0.13.9 --hash=sha256:{} --hash=sha256:{}\n",
                hashes[0], hashes[1]
            )
        );
    }

    /// A real pip, a wheel on a local index, and a pin it does not match.
    #[test]
    #[ignore = "needs python3: scripts/test sets it up"]
    fn a_wheel_with_another_hash_is_refused_in_one_line() {
        let index = tempfile::tempdir().unwrap();
        let wheel = index.path().join("pinned_tool-1.0-py3-none-any.whl");
        write_minimal_wheel(&wheel);
        let python = crate::support::host::find_on_path("python3").expect("python3 on PATH");
        let venv = index.path().join("venv");
        let local = ["--no-index", "--find-links", index.path().to_str().unwrap()];
        let error = install_pinned(
            &venv,
            "pinned-tool==1.0",
            &["00".repeat(32)],
            &local,
            &python,
            |venv| venv.join("ok").exists(),
        )
        .unwrap_err();
        assert!(
            error.starts_with(
                "refusing to install pinned-tool==1.0: the wheel pip downloaded has SHA-256 "
            ),
            "{error}"
        );
        assert!(!error.contains('\n'), "{error}");
        assert!(!venv.exists(), "a refused install left {}", venv.display());
        // pip found the wheel and hashed it: the hash it reports is the file's.
        let actual = {
            use sha2::Digest;
            let digest = sha2::Sha256::digest(std::fs::read(&wheel).unwrap());
            digest
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        };
        assert!(error.contains(&actual), "{error}");
    }

    fn write_minimal_wheel(path: &Path) {
        use crate::formats::wheel::{Contents, WheelName, WriteOptions, write_wheel};
        let file = |text: &str| Contents::Bytes {
            data: text.as_bytes().to_vec(),
            mode: 0o644,
        };
        let name = WheelName::parse(&path.file_name().unwrap().to_string_lossy()).unwrap();
        let entries = vec![
            ("pinned_tool/__init__.py".to_string(), file("")),
            (
                "pinned_tool-1.0.dist-info/WHEEL".to_string(),
                file("Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
            ),
            (
                "pinned_tool-1.0.dist-info/METADATA".to_string(),
                file("Metadata-Version: 2.1\nName: pinned-tool\nVersion: 1.0\n"),
            ),
        ];
        write_wheel(
            path.parent().unwrap(),
            &name,
            entries,
            &WriteOptions::default(),
        )
        .unwrap();
    }
}
