//! The isolated host venv the backend runs in: build requirements installed for the
//! host, by the host pip, with every cross variable removed (`_PYTHON_HOST_PLATFORM`
//! otherwise makes pip resolve the requirements for the target arch).
//!
//! Venvs are cached by (build python, requirements); a venv is only trusted once its
//! marker lists the requirements, so an interrupted install is redone.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::BuildError;
use crate::host::{BuildPython, CROSS_ONLY_VARS, Cache, cache_key};

const MARKER: &str = "crosswheel-installed.json";

#[derive(Debug, Clone)]
pub struct HostEnv {
    pub root: PathBuf,
    pub python: PathBuf,
    pub bin: PathBuf,
    /// pip constraints (`dependency-versions`) for every install into the venv.
    pub constraints: Option<PathBuf>,
}

impl HostEnv {
    /// The venv for `requires`, installed under `constraints` (pip constraints lines, from
    /// `dependency-versions`; part of the venv's identity).
    pub fn prepare(
        cache: &Cache,
        python: &BuildPython,
        requires: &[String],
        constraints: &[String],
        offline: bool,
    ) -> Result<HostEnv, BuildError> {
        let mut sorted: Vec<&str> = requires.iter().map(String::as_str).collect();
        sorted.sort_unstable();
        let requires_text = sorted.join("\n");
        let mut parts: Vec<&[u8]> = vec![
            python.executable.as_os_str().as_encoded_bytes(),
            requires_text.as_bytes(),
        ];
        let constraints_text = constraints.join("\n");
        if !constraints.is_empty() {
            parts.push(constraints_text.as_bytes());
        }
        let key = cache_key(&parts);
        let root = cache
            .build_envs()
            .join(format!("{}-{key}", python.abi_tag()));
        let env = HostEnv {
            python: root.join("bin").join("python"),
            bin: root.join("bin"),
            constraints: (!constraints.is_empty()).then(|| root.with_extension("constraints.txt")),
            root,
        };
        if let Some(path) = &env.constraints {
            std::fs::write(path, format!("{constraints_text}\n")).map_err(|source| {
                BuildError::Io(crate::io_error::IoError::new("write", path.clone(), source))
            })?;
        }
        std::fs::create_dir_all(cache.build_envs()).map_err(|source| {
            BuildError::Io(crate::io_error::IoError::new(
                "create",
                cache.build_envs(),
                source,
            ))
        })?;
        let _lock = lock(&env.root.with_extension("lock"))?;
        if env.installed().is_none() {
            if offline {
                return Err(BuildError::OfflineRequires {
                    requires: requires.join(", "),
                });
            }
            if env.root.exists() {
                std::fs::remove_dir_all(&env.root).map_err(|source| {
                    BuildError::Io(crate::io_error::IoError::new(
                        "remove",
                        env.root.clone(),
                        source,
                    ))
                })?;
            }
            run_host(
                python.executable.as_path(),
                &["-m", "venv", "--without-pip"],
                &[env.root.as_os_str()],
            )
            .map_err(|output| BuildError::InstallRequires {
                requires: "a venv".into(),
                output,
            })?;
            env.write_marker(&BTreeSet::new())?;
        }
        env.install(python, requires, offline)?;
        Ok(env)
    }

    /// Installs requirements not yet in the venv (e.g. from `get_requires_for_build_wheel`).
    pub fn install(
        &self,
        python: &BuildPython,
        requires: &[String],
        offline: bool,
    ) -> Result<(), BuildError> {
        let mut installed = self.installed().unwrap_or_default();
        let missing: Vec<&String> = requires
            .iter()
            .filter(|req| !installed.contains(*req))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        if offline {
            return Err(BuildError::OfflineRequires {
                requires: missing
                    .iter()
                    .map(|req| req.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        tracing::info!(
            "installing the build requirements {} into the host build environment with pip (once per set of requirements)",
            missing
                .iter()
                .map(|req| req.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut args: Vec<&std::ffi::OsStr> = Vec::new();
        args.push(self.python.as_os_str());
        args.push("install".as_ref());
        if let Some(constraints) = &self.constraints {
            args.push("--constraint".as_ref());
            args.push(constraints.as_os_str());
        }
        args.extend(missing.iter().map(|req| std::ffi::OsStr::new(req.as_str())));
        run_host(
            python.executable.as_path(),
            &[
                "-m",
                "pip",
                "--disable-pip-version-check",
                "--quiet",
                "--python",
            ],
            &args,
        )
        .map_err(|output| BuildError::InstallRequires {
            requires: missing
                .iter()
                .map(|req| req.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            output,
        })?;
        installed.extend(missing.into_iter().cloned());
        self.write_marker(&installed)
    }

    fn installed(&self) -> Option<BTreeSet<String>> {
        let text = std::fs::read_to_string(self.root.join(MARKER)).ok()?;
        serde_json::from_str(&text).ok()
    }

    fn write_marker(&self, installed: &BTreeSet<String>) -> Result<(), BuildError> {
        let path = self.root.join(MARKER);
        let text = serde_json::to_string_pretty(installed).unwrap_or_default();
        std::fs::write(&path, text)
            .map_err(|source| BuildError::Io(crate::io_error::IoError::new("write", path, source)))
    }
}

/// Runs the host python with the cross variables removed; returns the combined output
/// as the error.
pub(crate) fn run_host(
    python: &Path,
    fixed: &[&str],
    rest: &[&std::ffi::OsStr],
) -> Result<String, String> {
    let mut args: Vec<&std::ffi::OsStr> = fixed.iter().map(std::ffi::OsStr::new).collect();
    args.extend_from_slice(rest);
    let mut command = duct::cmd(python, args)
        .stderr_to_stdout()
        .stdout_capture()
        .unchecked();
    for name in CROSS_ONLY_VARS {
        command = command.env_remove(name);
    }
    let output = command
        .run()
        .map_err(|err| format!("cannot run {}: {err}", python.display()))?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    if output.status.success() {
        Ok(text)
    } else {
        Err(text.trim_end().to_string())
    }
}

/// An exclusive lock held until dropped: two crosswheel runs never install into the same
/// venv at once.
pub(crate) fn lock(path: &Path) -> Result<std::fs::File, BuildError> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|source| {
            BuildError::Io(crate::io_error::IoError::new(
                "open",
                path.to_path_buf(),
                source,
            ))
        })?;
    file.lock().map_err(|source| {
        BuildError::Io(crate::io_error::IoError::new(
            "lock",
            path.to_path_buf(),
            source,
        ))
    })?;
    Ok(file)
}
