//! The build python: a host CPython of the target's version that runs the build backend.
//! Its headers serve the target (LP64 layouts are identical, see DESIGN.md) and its
//! sysconfig is the template the target's sysconfig is derived from.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::CrossEnvError;

/// Variables that redirect sysconfig or imports; none of them may reach a probe of the host.
pub(crate) const CROSS_ONLY_VARS: &[&str] = &[
    "_PYTHON_HOST_PLATFORM",
    "_PYTHON_SYSCONFIGDATA_NAME",
    "PYTHONPATH",
    "PYTHONHOME",
];

const PROBE: &str = r#"
import importlib, json, sys, sysconfig
name = sysconfig._get_sysconfigdata_name()
print(json.dumps({
    "executable": sys.executable,
    "version": list(sys.version_info[:2]),
    "implementation": sys.implementation.name,
    "abiflags": getattr(sys, "abiflags", ""),
    "sysconfigdata_name": name,
    "include": sysconfig.get_path("include"),
    "platinclude": sysconfig.get_path("platinclude"),
    "vars": importlib.import_module(name).build_time_vars,
}))
"#;

#[derive(Debug, Clone, Deserialize)]
pub struct BuildPython {
    pub executable: PathBuf,
    pub version: (u32, u32),
    pub implementation: String,
    pub abiflags: String,
    pub sysconfigdata_name: String,
    /// Directory of `Python.h`.
    pub include: PathBuf,
    /// Directory of `pyconfig.h` (differs from `include` on multiarch Debian builds).
    pub platinclude: PathBuf,
    /// The host's `build_time_vars`, the template of the target's sysconfig.
    pub vars: BTreeMap<String, serde_json::Value>,
}

impl BuildPython {
    /// Probes an interpreter given by path or name (`python3.11`).
    pub fn probe(python: &Path) -> Result<BuildPython, CrossEnvError> {
        let mut command = duct::cmd(python, ["-I", "-c", PROBE])
            .stdout_capture()
            .stderr_capture()
            .unchecked();
        for name in CROSS_ONLY_VARS {
            command = command.env_remove(name);
        }
        let output = command.run().map_err(|err| CrossEnvError::PythonProbe {
            python: python.to_path_buf(),
            reason: format!("cannot run it: {err}"),
        })?;
        if !output.status.success() {
            return Err(CrossEnvError::PythonProbe {
                python: python.to_path_buf(),
                reason: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            });
        }
        let probed: BuildPython =
            serde_json::from_slice(&output.stdout).map_err(|err| CrossEnvError::PythonProbe {
                python: python.to_path_buf(),
                reason: format!("unexpected probe output: {err}"),
            })?;
        if probed.implementation != "cpython" {
            return Err(CrossEnvError::PythonProbe {
                python: python.to_path_buf(),
                reason: format!(
                    "it is {}, only CPython can build for the targets",
                    probed.implementation
                ),
            });
        }
        Ok(probed)
    }

    /// Finds `python3.X` on PATH for a version such as `3.11`, else asks
    /// `uv python find` when uv is installed, and probes it.
    pub fn find(version: &str) -> Result<BuildPython, CrossEnvError> {
        let name = format!("python{version}");
        let exe = crate::toolchain::find_on_path(&name)
            .or_else(|| find_with_uv(version))
            .ok_or_else(|| CrossEnvError::PythonNotFound {
                version: version.to_string(),
                name: name.clone(),
            })?;
        let python = BuildPython::probe(&exe)?;
        let wanted = format!("{}.{}", python.version.0, python.version.1);
        if wanted != version {
            return Err(CrossEnvError::PythonProbe {
                python: exe,
                reason: format!("it reports version {wanted}, expected {version}"),
            });
        }
        Ok(python)
    }

    /// `311`, `313t`: the part of EXT_SUFFIX/SOABI naming the CPython ABI.
    pub fn abi_name(&self) -> String {
        format!("{}{}{}", self.version.0, self.version.1, self.abiflags)
    }

    /// `cp311`, the wheel's python/abi tag.
    pub fn abi_tag(&self) -> String {
        format!("cp{}", self.abi_name())
    }

    /// `3.11`.
    pub fn version_text(&self) -> String {
        format!("{}.{}", self.version.0, self.version.1)
    }
}

/// The interpreter uv manages for `version`, when uv is on PATH and has one
/// (`uv python find` never downloads).
fn find_with_uv(version: &str) -> Option<PathBuf> {
    let uv = crate::toolchain::find_on_path("uv")?;
    let output = duct::cmd(uv, ["python", "find", "--no-project", version])
        .stdout_capture()
        .stderr_null()
        .unchecked()
        .run()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let path = PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
    path.is_file().then_some(path)
}
