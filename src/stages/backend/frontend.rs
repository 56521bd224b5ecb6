//! What the user's `build-frontend` decides for the build environment: which installer
//! (pip or uv) fills it, with which of the frontend's options, or, without isolation, that
//! the build's own environment (pip only, then what `before-build` installs) is used and
//! only checked.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::BuildError;
use crate::support::host::{BuildPython, CROSS_ONLY_VARS, Installer};

/// The frontend's choices for one build, filled by the pipeline from `build-frontend`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frontend {
    /// The option as written (`pip; args: --no-build-isolation`), for the build log.
    pub description: String,
    pub installer: Installer,
    /// `false`: the backend runs in the build's own environment; nothing is installed.
    pub isolation: bool,
    /// Without isolation: missing build requirements are an error before the build.
    pub check_dependencies: bool,
    /// Options for the installer (`--index-url X`, `--constraint X`, ...).
    pub installer_args: Vec<String>,
}

impl Default for Frontend {
    /// cibuildwheel's default, `build`: isolated, requirements installed by pip.
    fn default() -> Self {
        Frontend {
            description: "build".to_string(),
            installer: Installer::Pip,
            isolation: true,
            check_dependencies: true,
            installer_args: Vec::new(),
        }
    }
}

/// A resolved installer: the program and the arguments before `--python <venv>`.
#[derive(Debug, Clone)]
pub(crate) struct ResolvedInstaller {
    program: PathBuf,
    leading: Vec<&'static str>,
    pub kind: Installer,
    args: Vec<String>,
    /// The user's `environment`: PIP_*/UV_* settings (an index, a constraint file) reach the
    /// installer, as they do under cibuildwheel.
    env: BTreeMap<String, String>,
    working_dir: PathBuf,
}

impl ResolvedInstaller {
    pub fn new(
        frontend: &Frontend,
        python: &BuildPython,
        cache: &crate::support::host::Cache,
        environment: &BTreeMap<String, String>,
        working_dir: &Path,
        offline: bool,
    ) -> Result<ResolvedInstaller, BuildError> {
        let (program, leading) = match frontend.installer {
            Installer::Pip => (
                python.executable.clone(),
                vec!["-m", "pip", "--disable-pip-version-check", "--quiet"],
            ),
            Installer::Uv => {
                let uv = crate::support::host::ensure_uv(cache, &python.executable, offline)
                    .map_err(|reason| BuildError::NoUv {
                        frontend: frontend.description.clone(),
                        reason,
                    })?;
                (uv, vec!["--quiet"])
            }
        };
        let env = environment
            .iter()
            .filter(|(name, _)| !matches!(name.as_str(), "PATH" | "PYTHONPATH"))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        Ok(ResolvedInstaller {
            program,
            leading,
            kind: frontend.installer,
            args: frontend.installer_args.clone(),
            env,
            working_dir: working_dir.to_path_buf(),
        })
    }

    /// What, besides the requirements, makes two environments differ: part of the cache key.
    pub fn identity(&self) -> String {
        let mut parts = vec![self.kind_name().to_string()];
        parts.extend(self.args.iter().cloned());
        parts.extend(
            self.env
                .iter()
                .filter(|(name, _)| name.starts_with("PIP_") || name.starts_with("UV_"))
                .map(|(name, value)| format!("{name}={value}")),
        );
        parts.join("\n")
    }

    pub fn kind_name(&self) -> &'static str {
        self.kind.name()
    }

    /// Installs `requires` into the venv of `venv_python`; the output is the error.
    pub fn install(
        &self,
        venv_python: &Path,
        constraints: Option<&Path>,
        requires: &[&String],
    ) -> Result<(), String> {
        let mut args: Vec<OsString> = self.leading.iter().map(OsString::from).collect();
        match self.kind {
            Installer::Pip => {
                args.extend(["--python".into(), venv_python.into(), "install".into()])
            }
            Installer::Uv => args.extend([
                "pip".into(),
                "install".into(),
                "--python".into(),
                venv_python.into(),
            ]),
        }
        if let Some(constraints) = constraints {
            args.extend(["--constraint".into(), constraints.into()]);
        }
        args.extend(self.args.iter().map(OsString::from));
        args.extend(requires.iter().map(|req| OsString::from(req.as_str())));
        let mut command = duct::cmd(&self.program, args)
            .dir(&self.working_dir)
            .stderr_to_stdout()
            .stdout_capture()
            .unchecked();
        for name in CROSS_ONLY_VARS {
            command = command.env_remove(name);
        }
        for (name, value) in &self.env {
            command = command.env(name, value);
        }
        let output = command
            .run()
            .map_err(|err| format!("cannot run {}: {err}", self.program.display()))?;
        let failure = || {
            String::from_utf8_lossy(&output.stdout)
                .trim_end()
                .to_string()
        };
        output.status.success().then_some(()).ok_or_else(failure)
    }
}

/// Asks the build python which of `requires` it lacks (PEP 508 strings, markers evaluated
/// with `packaging` when the environment has it, else by name), as build's
/// `--no-isolation` check does.
pub(crate) fn missing_requirements(
    python: &Path,
    requires: &[String],
) -> Result<Vec<String>, BuildError> {
    if requires.is_empty() {
        return Ok(Vec::new());
    }
    let output = duct::cmd(python, ["-c", CHECK_SCRIPT])
        .stdin_bytes(serde_json::to_string(requires).unwrap_or_default())
        .stderr_to_stdout()
        .stdout_capture()
        .unchecked()
        .run()
        .map_err(|source| {
            BuildError::Io(crate::io_error::IoError::new(
                "run",
                python.to_path_buf(),
                source,
            ))
        })?;
    let text = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(text.trim()).map_err(|_| BuildError::InstallRequires {
        requires: requires.join(", "),
        output: format!("checking them in {} failed: {text}", python.display()),
    })
}

const CHECK_SCRIPT: &str = r#"
import json, re, sys
from importlib import metadata
missing = []
for text in json.load(sys.stdin):
    try:
        from packaging.requirements import Requirement
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name, spec = req.name, req.specifier
    except ImportError:
        name, spec = re.match(r"\s*([A-Za-z0-9._-]+)", text).group(1), None
    try:
        version = metadata.version(name)
    except metadata.PackageNotFoundError:
        missing.append(f"{text} (not installed)")
        continue
    if spec is not None and not spec.contains(version, prereleases=True):
        missing.append(f"{text} ({version} installed)")
print(json.dumps(missing))
"#;
