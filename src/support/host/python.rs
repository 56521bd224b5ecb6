//! The build python: a host CPython of the target's version that runs the build backend.
//! Its headers serve the target — CPython's public struct layouts are the same on every
//! LP64 target, and `pyconfig.h` is rewritten for the target (docs/cross-environment.md)
//! — and its sysconfig is the template the target's sysconfig is derived from.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::built_python::{HostBuild, HostBuildError};
use crate::python_tag::PythonTag;

/// A host CPython that cannot be found, installed or used.
#[derive(Debug, thiserror::Error)]
pub enum PythonError {
    #[error(
        "no python{version} on PATH, from `uv python find {version}` or among pyenv's versions: install CPython {version} (e.g. `uv python install {version}`, `pyenv install {version}` or apt)"
    )]
    NotFound { version: String, name: String },
    #[error(
        "no CPython {version} on this machine and `uv python install {version}` failed ({reason}): install CPython {version} (`uv python install {version}`, `pyenv install {version}` or your distribution's package) and run again"
    )]
    InstallFailed { version: String, reason: String },
    #[error(
        "no CPython {version} on this machine{uv}, and crosswheel cannot build one from Debian's source: {build}; or install CPython {version} (`uv python install {version}`, `pyenv install {version}` or your distribution's package) and run again",
        uv = uv_failed.as_deref().unwrap_or_default()
    )]
    NotBuilt {
        version: String,
        /// `, \`uv python install 3.14\` failed (...)`, when it was tried.
        uv_failed: Option<String>,
        build: Box<HostBuildError>,
    },
    #[error("build python {python} is unusable: {reason}")]
    Probe { python: PathBuf, reason: String },
}

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
    /// `sys.version_info[:2]` as the probe reports it; the rest of crosswheel sees the
    /// interpreter's version as a `PythonTag` ([`BuildPython::target_python`],
    /// [`BuildPython::version_text`]).
    version: (u32, u32),
    pub implementation: String,
    /// The interpreter's own `sys.abiflags`.
    pub abiflags: String,
    /// Whether the build targets CPython's free-threaded ABI; `None` until
    /// [`BuildPython::targeting`] says, meaning the interpreter's own ABI.
    #[serde(skip)]
    target_free_threaded: Option<bool>,
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
    pub fn probe(python: &Path) -> Result<BuildPython, PythonError> {
        let mut command = duct::cmd(python, ["-I", "-c", PROBE])
            .stdout_capture()
            .stderr_capture()
            .unchecked();
        for name in CROSS_ONLY_VARS {
            command = command.env_remove(name);
        }
        let output = command.run().map_err(|err| PythonError::Probe {
            python: python.to_path_buf(),
            reason: format!("cannot run it: {err}"),
        })?;
        if !output.status.success() {
            return Err(PythonError::Probe {
                python: python.to_path_buf(),
                reason: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            });
        }
        let probed: BuildPython =
            serde_json::from_slice(&output.stdout).map_err(|err| PythonError::Probe {
                python: python.to_path_buf(),
                reason: format!("unexpected probe output: {err}"),
            })?;
        if probed.implementation != "cpython" {
            return Err(PythonError::Probe {
                python: python.to_path_buf(),
                reason: format!(
                    "it is {}, only CPython can build for the targets",
                    probed.implementation
                ),
            });
        }
        Ok(probed)
    }

    /// Finds the CPython `python` names (`cp311`: `python3.11`; `cp313t`: the free-threaded
    /// `python3.13t`): `python3.X` on PATH, else the one
    /// `uv python find` names when uv is installed, else the newest pyenv install of that
    /// version — so an unusable pyenv shim on PATH (a version pyenv has but has not
    /// activated) does not hide an interpreter that is there. The first candidate that
    /// runs and reports `version` wins.
    pub fn find(python: PythonTag) -> Result<BuildPython, PythonError> {
        let version = python.interpreter_version();
        let version = version.as_str();
        let name = format!("python{version}");
        let finders: [&dyn Fn() -> Option<PathBuf>; 3] = [
            &|| super::find_on_path(&name),
            &|| find_with_uv(version),
            &|| find_in_pyenv(&pyenv_root()?, version),
        ];
        let mut first_error = None;
        for exe in finders.iter().filter_map(|finder| finder()) {
            match BuildPython::probe_version(&exe, python) {
                Ok(python) => return Ok(python),
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        Err(first_error.unwrap_or(PythonError::NotFound {
            version: version.to_string(),
            name,
        }))
    }

    /// [`BuildPython::find`], and when the machine has no CPython `version`: the one
    /// crosswheel built before, else (unless `offline`) one `uv python install` installs
    /// (uv from PATH, or installed into crosswheel's cache from PyPI like zig), else one
    /// crosswheel builds from Debian's source (config/host-cpython.toml, fetched as
    /// `network` reaches Debian's archive; offline only from a source the cache holds).
    pub fn find_or_install(
        python: PythonTag,
        cache: &super::Cache,
        network: &super::Network,
    ) -> Result<BuildPython, PythonError> {
        let offline = network.offline;
        let version = python.interpreter_version();
        let version = version.as_str();
        let missing = match BuildPython::find(python) {
            Err(missing @ PythonError::NotFound { .. }) => missing,
            other => return other,
        };
        let host_build = HostBuild::for_version(version, network);
        let mut uv_failed = None;
        for provider in providers(offline, host_build.is_some()) {
            let found = match (provider, &host_build) {
                (Provider::BuiltBefore, Some(build)) => build.cached(cache),
                (Provider::UvInstall, _) => install_with_uv(cache, version)
                    .map_err(|reason| {
                        tracing::debug!("`uv python install {version}` failed: {reason}");
                        uv_failed = Some(reason);
                    })
                    .ok(),
                (Provider::DebianSource, Some(build)) => {
                    Some(build.build(cache).map_err(|build| PythonError::NotBuilt {
                        version: version.to_string(),
                        uv_failed: uv_failed.take().map(|reason| {
                            format!(", `uv python install {version}` failed ({reason})")
                        }),
                        build: Box::new(build),
                    })?)
                }
                (Provider::BuiltBefore | Provider::DebianSource, None) => None,
            };
            if let Some(exe) = found {
                tracing::debug!("build python for {version}: {}", exe.display());
                return BuildPython::probe_version(&exe, python);
            }
        }
        Err(match uv_failed {
            Some(reason) => PythonError::InstallFailed {
                version: version.to_string(),
                reason,
            },
            None => missing,
        })
    }

    /// The interpreter at `exe`, if it is CPython 3.X of `wanted`; for a free-threaded tag it
    /// must also be the free-threaded build (a GIL tag accepts either: see [`Self::targeting`]).
    fn probe_version(exe: &Path, wanted: PythonTag) -> Result<BuildPython, PythonError> {
        let python = BuildPython::probe(exe)?;
        let abi_differs = wanted.is_free_threaded() && python.abiflags != wanted.abiflags();
        if python.version != (3, wanted.minor()) || abi_differs {
            let found = format!(
                "{}.{}{}",
                python.version.0,
                python.version.1,
                if wanted.is_free_threaded() {
                    python.abiflags.as_str()
                } else {
                    ""
                }
            );
            return Err(PythonError::Probe {
                python: exe.to_path_buf(),
                reason: format!(
                    "it reports version {found}, expected {}",
                    wanted.interpreter_version()
                ),
            });
        }
        Ok(python)
    }

    /// This interpreter building for CPython's free-threaded ABI or not. Either works with
    /// either interpreter: an extension's ABI comes from the `pyconfig.h` and sysconfig it
    /// is built with, which the cross environment writes for the target's ABI, and the
    /// build backend's own Python code runs the same on both.
    pub fn targeting(mut self, free_threaded: bool) -> BuildPython {
        self.target_free_threaded = Some(free_threaded);
        self
    }

    /// Whether the wheels built target the free-threaded ABI (`cp313t`).
    pub fn targets_free_threaded(&self) -> bool {
        self.target_free_threaded
            .unwrap_or_else(|| self.abiflags.contains('t'))
    }

    /// The target's `sys.abiflags`: `t` for the free-threaded ABI, else empty (crosswheel
    /// builds no debug ABI).
    pub fn target_abiflags(&self) -> &'static str {
        if self.targets_free_threaded() {
            "t"
        } else {
            ""
        }
    }

    /// The CPython the wheels built are for: this interpreter's version, with the ABI of
    /// [`Self::targeting`] (`cp313t` from a GIL 3.13 interpreter building free-threaded).
    pub fn target_python(&self) -> PythonTag {
        let python = PythonTag::cpython3(self.version.1);
        match python.free_threaded() {
            Some(free) if self.targets_free_threaded() => free,
            _ => python,
        }
    }

    /// `cp311`, `cp313t`: the wheel's python/abi tag.
    pub fn abi_tag(&self) -> String {
        self.target_python().to_string()
    }

    /// A string variable of the build python's own sysconfig (`MULTIARCH`, `INCLUDEDIR`).
    pub fn config_str(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)?
            .as_str()
            .filter(|value| !value.is_empty())
    }

    /// `3.11`.
    pub fn version_text(&self) -> String {
        format!("{}.{}", self.version.0, self.version.1)
    }
}

/// Where a host CPython the machine lacks comes from, in the order they are tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Provider {
    /// The one crosswheel built from Debian's source on an earlier run.
    BuiltBefore,
    UvInstall,
    DebianSource,
}

/// The providers to try: uv downloads, so never `offline`; a build only for a version
/// config/host-cpython.toml has (`buildable`), and offline only from a source the cache
/// holds (the source fetch refuses otherwise). The cache's build comes before uv, so a
/// machine uv cannot download on tries it once, not on every run.
fn providers(offline: bool, buildable: bool) -> Vec<Provider> {
    let mut providers = Vec::new();
    if buildable {
        providers.push(Provider::BuiltBefore);
    }
    if !offline {
        providers.push(Provider::UvInstall);
    }
    if buildable {
        providers.push(Provider::DebianSource);
    }
    providers
}

/// `uv python install version`'s interpreter, or why there is none (one line).
fn install_with_uv(cache: &super::Cache, version: &str) -> Result<PathBuf, String> {
    let host_python = super::find_on_path("python3")
        .ok_or_else(|| "no python3 on PATH to install uv with".to_string())?;
    let uv = super::ensure_uv(cache, &host_python, false)?;
    tracing::info!(
        "installing CPython {version} for the build with `uv python install {version}` (~40 MB, once)"
    );
    let output = duct::cmd(&uv, ["python", "install", version])
        .stderr_to_stdout()
        .stdout_capture()
        .unchecked()
        .run()
        .map_err(|err| format!("cannot run {}: {err}", uv.display()))?;
    if !output.status.success() {
        let text = String::from_utf8_lossy(&output.stdout);
        let last = text.lines().rev().find(|line| !line.trim().is_empty());
        return Err(last.unwrap_or("no output").trim().to_string());
    }
    find_with_uv_at(&uv, version).ok_or_else(|| "uv installed it but cannot find it".to_string())
}

/// `$PYENV_ROOT`, else `~/.pyenv`.
fn pyenv_root() -> Option<PathBuf> {
    std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".pyenv")))
}

/// `<root>/versions/3.13.2/bin/python3.13` for `3.13`: the highest patch release
/// pyenv has installed (free-threaded `3.13.1t` and other variants are not CPython
/// `3.13` as the wheel tag means it).
fn find_in_pyenv(root: &Path, version: &str) -> Option<PathBuf> {
    let prefix = format!("{version}.");
    std::fs::read_dir(root.join("versions"))
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let patch: u32 = name.strip_prefix(&prefix)?.parse().ok()?;
            let exe = entry.path().join("bin").join(format!("python{version}"));
            exe.is_file().then_some((patch, exe))
        })
        .max_by_key(|(patch, _)| *patch)
        .map(|(_, exe)| exe)
}

/// The interpreter uv manages for `version`, when uv is on PATH and has one
/// (`uv python find` never downloads).
fn find_with_uv(version: &str) -> Option<PathBuf> {
    find_with_uv_at(&super::find_on_path("uv")?, version)
}

fn find_with_uv_at(uv: &Path, version: &str) -> Option<PathBuf> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_pyenv(versions: &[&str]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for version in versions {
            let minor = version
                .rsplit_once('.')
                .map_or(*version, |(minor, _)| minor);
            let minor = minor.trim_end_matches('t');
            let bin = root.path().join("versions").join(version).join("bin");
            std::fs::create_dir_all(&bin).unwrap();
            std::fs::write(bin.join(format!("python{minor}")), "").unwrap();
        }
        root
    }

    #[test]
    fn pyenv_gives_the_newest_patch_release_of_the_minor_version() {
        let root = fake_pyenv(&["3.12.1", "3.13.0", "3.13.10", "3.13.2", "3.13.11t"]);
        let found = find_in_pyenv(root.path(), "3.13").unwrap();
        assert_eq!(found, root.path().join("versions/3.13.10/bin/python3.13"));
        assert_eq!(
            find_in_pyenv(root.path(), "3.12").unwrap(),
            root.path().join("versions/3.12.1/bin/python3.12")
        );
    }

    #[test]
    fn a_missing_cpython_comes_from_the_cache_then_uv_then_debian_source() {
        use Provider::*;
        assert_eq!(
            providers(false, true),
            [BuiltBefore, UvInstall, DebianSource]
        );
        assert_eq!(providers(false, false), [UvInstall]);
        // Offline: no uv; a build only from a source the cache holds, which the fetch checks.
        assert_eq!(providers(true, true), [BuiltBefore, DebianSource]);
        assert!(providers(true, false).is_empty());
    }

    #[test]
    fn a_failed_build_names_each_cause_once_in_one_line() {
        let error = PythonError::NotBuilt {
            version: "3.14".into(),
            uv_failed: Some(", `uv python install 3.14` failed (dns error)".into()),
            build: Box::new(HostBuildError::MissingPackages {
                packages: "libssl-dev".into(),
            }),
        };
        let text = error.to_string();
        assert_eq!(
            text,
            "no CPython 3.14 on this machine, `uv python install 3.14` failed (dns error), and crosswheel cannot build one from Debian's source: it needs the build machine's development packages libssl-dev (`apt-get install libssl-dev`); or install CPython 3.14 (`uv python install 3.14`, `pyenv install 3.14` or your distribution's package) and run again"
        );
        assert!(!text.contains('\n'));
        let offline = PythonError::NotBuilt {
            version: "3.14".into(),
            uv_failed: None,
            build: Box::new(HostBuildError::NoCompiler),
        };
        assert!(
            offline
                .to_string()
                .starts_with("no CPython 3.14 on this machine, and crosswheel cannot build one"),
            "{offline}"
        );
    }

    #[test]
    fn pyenv_without_the_version_gives_nothing() {
        let root = fake_pyenv(&["3.12.1", "3.1.5"]);
        assert_eq!(find_in_pyenv(root.path(), "3.13"), None);
        assert_eq!(
            find_in_pyenv(root.path(), "3.1"),
            Some(root.path().join("versions/3.1.5/bin/python3.1"))
        );
        assert_eq!(find_in_pyenv(&root.path().join("absent"), "3.12"), None);
    }
}
