//! The host environment the backend runs in. Isolated (the default): a venv with the build
//! requirements installed for the host, by pip or uv as `build-frontend` says, with every
//! cross variable removed (`_PYTHON_HOST_PLATFORM` otherwise makes the installer resolve the
//! requirements for the target arch). Without isolation (`--no-isolation`,
//! `--no-build-isolation`): the build's own fresh environment (pip and whatever
//! `before-build` installed, as in cibuildwheel's build venv), where nothing is installed.
//!
//! Venvs are cached by (build python, requirements, installer and its options); a venv is
//! only trusted once its marker lists the requirements, so an interrupted install is redone.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::BuildError;
use super::frontend::{Frontend, ResolvedInstaller, missing_requirements};
use crate::support::host::{BuildPython, CROSS_ONLY_VARS, Cache, cache_key};

const MARKER: &str = "crosswheel-installed.json";

#[derive(Debug, Clone)]
pub struct HostEnv {
    pub root: PathBuf,
    pub python: PathBuf,
    pub bin: PathBuf,
    /// pip constraints (`dependency-versions`) for every install into the venv.
    pub constraints: Option<PathBuf>,
    /// `None` without isolation: the build's own environment (docs/hooks.md).
    installer: Option<ResolvedInstaller>,
    /// Without isolation, whether missing requirements are an error (build without `-x`).
    check_dependencies: bool,
}

/// What a build environment is made from.
pub(crate) struct EnvRequest<'a> {
    pub cache: &'a Cache,
    pub python: &'a BuildPython,
    pub frontend: &'a Frontend,
    /// pip constraints lines (`dependency-versions`); part of the venv's identity.
    pub constraints: &'a [String],
    pub environment: &'a std::collections::BTreeMap<String, String>,
    /// Where the installer runs: the user's relative paths (`PIP_CONSTRAINT=requirements/x.txt`
    /// in `environment`) are the project's, as under cibuildwheel.
    pub project_dir: &'a Path,
    pub offline: bool,
    /// The build's own environment, where a build without isolation runs.
    pub own_env: Option<&'a super::HookEnv>,
}

impl HostEnv {
    /// The environment for `requires`: a cached venv, or the build's own one (no isolation).
    pub(crate) fn prepare(
        request: &EnvRequest<'_>,
        requires: &[String],
    ) -> Result<HostEnv, BuildError> {
        let python = request.python;
        if !request.frontend.isolation {
            let executable = request
                .own_env
                .map_or(&python.executable, |env| &env.python);
            let bin = executable
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default();
            let env = HostEnv {
                root: request
                    .own_env
                    .map_or_else(|| bin.clone(), |env| env.root.clone()),
                python: executable.clone(),
                bin,
                constraints: None,
                installer: None,
                check_dependencies: request.frontend.check_dependencies,
            };
            env.install(requires, request.offline)?;
            return Ok(env);
        }
        let installer = ResolvedInstaller::new(
            request.frontend,
            python,
            request.cache,
            request.environment,
            request.project_dir,
            request.offline,
        )?;
        let mut sorted: Vec<&str> = requires.iter().map(String::as_str).collect();
        sorted.sort_unstable();
        let requires_text = sorted.join("\n");
        let identity = installer.identity();
        let mut parts: Vec<&[u8]> = vec![
            python.executable.as_os_str().as_encoded_bytes(),
            requires_text.as_bytes(),
        ];
        let constraints_text = request.constraints.join("\n");
        if !request.constraints.is_empty() {
            parts.push(constraints_text.as_bytes());
        }
        // pip with no options keeps the key it always had, so existing venvs stay valid.
        if identity != "pip" {
            parts.push(identity.as_bytes());
        }
        let key = cache_key(&parts);
        let cache = request.cache;
        let root = cache
            .build_envs()
            .join(format!("{}-{key}", python.abi_tag()));
        let env = HostEnv {
            python: root.join("bin").join("python"),
            bin: root.join("bin"),
            constraints: (!request.constraints.is_empty())
                .then(|| root.with_extension("constraints.txt")),
            root,
            installer: Some(installer),
            check_dependencies: false,
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
            if request.offline {
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
        env.install(requires, request.offline)?;
        Ok(env)
    }

    /// Whether this is an isolated build environment (crosswheel installed its packages).
    pub(crate) fn isolated(&self) -> bool {
        self.installer.is_some()
    }

    /// What the build log says about this environment.
    pub(crate) fn describe(&self) -> String {
        match &self.installer {
            Some(installer) => format!(
                "isolated build environment {}, build requirements installed with {}",
                self.root.display(),
                installer.kind_name()
            ),
            None => format!(
                "no build isolation: the backend runs in the build's own environment {} (pip and what before-build installed); build requirements are not installed{}",
                self.python.display(),
                if self.check_dependencies {
                    ", only checked"
                } else {
                    " nor checked"
                }
            ),
        }
    }

    /// Installs requirements not yet in the venv (e.g. from `get_requires_for_build_wheel`);
    /// without isolation, checks them when the frontend does.
    pub fn install(&self, requires: &[String], offline: bool) -> Result<(), BuildError> {
        let Some(installer) = &self.installer else {
            return self.check(requires);
        };
        let mut installed = self.installed().unwrap_or_default();
        let missing: Vec<&String> = requires
            .iter()
            .filter(|req| !installed.contains(*req))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let listed = missing
            .iter()
            .map(|req| req.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        if offline {
            return Err(BuildError::OfflineRequires { requires: listed });
        }
        tracing::info!(
            "installing the build requirements {listed} into the host build environment with {} (once per set of requirements)",
            installer.kind_name()
        );
        installer
            .install(&self.python, self.constraints.as_deref(), &missing)
            .map_err(|output| BuildError::InstallRequires {
                requires: listed,
                output,
            })?;
        installed.extend(missing.into_iter().cloned());
        self.write_marker(&installed)
    }

    fn check(&self, requires: &[String]) -> Result<(), BuildError> {
        if !self.check_dependencies {
            return Ok(());
        }
        let missing = missing_requirements(&self.python, requires)?;
        if missing.is_empty() {
            return Ok(());
        }
        Err(BuildError::MissingWithoutIsolation {
            python: self.python.clone(),
            missing: missing.join(", "),
        })
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
