//! Each build's own environment: a venv in the identifier's work folder in which
//! `before-build` runs, and the backend too when the build has no isolation, so nothing a
//! hook installs outlives the build or reaches the user's interpreters (cibuildwheel gives
//! every build a fresh virtual environment the same way). Its `pip` installs library wheels
//! for the target (`python_files/hook_env.py`, docs/hooks.md).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::BuildError;
use super::host_env::run_host;
use super::target_installs::rule;
use crate::io_error::IoError;
use crate::support::host::{BuildPython, Cache};
use crate::target::Target;

const MODULE: &str = "_crosswheel_hook_env";

/// A per-build venv: `bin/python`, `bin/pip` and the target-install module.
#[derive(Debug, Clone)]
pub struct HookEnv {
    pub root: PathBuf,
    pub python: PathBuf,
    pub bin: PathBuf,
}

/// What a build's own environment is made from.
pub struct HookEnvRequest<'a> {
    /// The folder to create (inside the identifier's work folder).
    pub dir: &'a Path,
    pub python: &'a BuildPython,
    pub target: &'a Target,
    pub cache: &'a Cache,
    pub offline: bool,
}

fn io(action: &'static str, path: &Path, source: std::io::Error) -> BuildError {
    BuildError::Io(IoError::new(action, path.to_path_buf(), source))
}

impl HookEnv {
    pub fn create(request: &HookEnvRequest<'_>) -> Result<HookEnv, BuildError> {
        let root = request.dir.to_path_buf();
        let python = request.python;
        run_host(
            &python.executable,
            &["-m", "venv", "--without-pip"],
            &[root.as_os_str()],
        )
        .map_err(|output| BuildError::InstallRequires {
            requires: "a venv for the build's hooks".into(),
            output,
        })?;
        let env = HookEnv {
            python: root.join("bin").join("python"),
            bin: root.join("bin"),
            root,
        };
        let site = super::target_installs::site_packages_of(&env.root).ok_or_else(|| {
            io(
                "find site-packages in",
                &env.root,
                std::io::Error::other("python -m venv made none"),
            )
        })?;
        // pip and nothing else, as cibuildwheel's build venv: a build without isolation sees
        // what `before-build` installed, never what the user's interpreter happens to hold.
        let paths: Vec<PathBuf> = pip_folder(&env, &python.executable)?.into_iter().collect();
        let mut layer = paths
            .iter()
            .map(|path| path.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("\n");
        layer.push('\n');
        write(&site.join("_crosswheel_layer.pth"), &layer)?;
        write(
            &site.join(format!("{MODULE}.py")),
            include_str!("python_files/hook_env.py"),
        )?;
        write(
            &site.join(format!("{MODULE}.pth")),
            &format!("import {MODULE}\n"),
        )?;
        env.write_config(request)?;
        env.write_pip_scripts(python)?;
        Ok(env)
    }

    fn write_config(&self, request: &HookEnvRequest<'_>) -> Result<(), BuildError> {
        let target = request.target;
        let python = request.python;
        let state = self.root.join("crosswheel-target");
        std::fs::create_dir_all(&state).map_err(|source| io("create", &state, source))?;
        let rule = rule();
        let config = serde_json::json!({
            "target": target.id(),
            "python_version": python.version_text(),
            "abi": python.abi_tag(),
            "platforms": if target.is_macos() {
                vec![target.platform_tag()]
            } else {
                target.compatible_linux_platforms()
            },
            "wheel_cache": request.cache.target_wheels().join(format!(
                "hook-{}-{}-{}",
                target.id(),
                target.os_version(),
                python.abi_tag()
            )),
            "offline": request.offline,
            "build_tools": rule.build_tools.iter().map(|tool| crate::package_name::normalize(tool)).collect::<Vec<_>>(),
            "rule": rule.link_time_files,
        });
        write(
            &state.join("config.json"),
            &serde_json::to_string_pretty(&config).unwrap_or_default(),
        )
    }

    /// `pip`, `pip3`, `pip3.X`: this environment's `python -m pip`, so the target-install
    /// step runs whichever way a hook calls pip.
    fn write_pip_scripts(&self, python: &BuildPython) -> Result<(), BuildError> {
        let script = format!(
            "#!/bin/sh\nexec {} -m pip \"$@\"\n",
            crate::support::host::shell_quote(&self.python.to_string_lossy())
        );
        for name in [
            "pip".to_string(),
            "pip3".into(),
            format!("pip{}", python.version_text()),
        ] {
            let path = self.bin.join(name);
            write(&path, &script)?;
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .map_err(|source| io("make executable", &path, source))?;
        }
        Ok(())
    }

    /// PATH and VIRTUAL_ENV for a command that runs in this environment.
    pub fn variables(&self, path: Option<&str>) -> BTreeMap<String, String> {
        let rest = path
            .map(str::to_string)
            .or_else(|| std::env::var("PATH").ok())
            .unwrap_or_default();
        BTreeMap::from([
            ("PATH".to_string(), format!("{}:{rest}", self.bin.display())),
            (
                "VIRTUAL_ENV".to_string(),
                self.root.to_string_lossy().into_owned(),
            ),
        ])
    }

    /// Folders of the target's shared libraries this environment's pip installed.
    pub fn target_library_dirs(&self) -> Vec<PathBuf> {
        let path = self
            .root
            .join("crosswheel-target")
            .join("target-files.json");
        let files: Vec<PathBuf> = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        let mut dirs: Vec<PathBuf> = files
            .iter()
            .filter(|file| {
                let name = file.file_name().unwrap_or_default().to_string_lossy();
                name.contains(".so") || name.ends_with(".dylib")
            })
            .filter_map(|file| file.parent().map(Path::to_path_buf))
            .collect();
        dirs.sort();
        dirs.dedup();
        dirs
    }

    /// Installs for the target what a hook's installer put here without this
    /// environment's pip (uv, a pip of another interpreter given `--python`).
    pub fn settle(&self) -> Result<Vec<String>, BuildError> {
        run_host(&self.python, &["-m", MODULE], &[])
            .map(|output| output.lines().map(str::to_string).collect())
            .map_err(|output| BuildError::HookInstall { output })
    }
}

fn write(path: &Path, text: &str) -> Result<(), BuildError> {
    std::fs::write(path, text).map_err(|source| io("write", path, source))
}

/// What the build python's pip is: its package folder, its version, and its `METADATA`
/// where the installed distribution it came from has one of the same version.
const BUILD_PIP_QUERY: &str = "import json, os, pip\n\
from importlib import metadata\n\
try:\n    dist = metadata.distribution('pip')\n    meta = dist.read_text('METADATA') if dist.version == pip.__version__ else None\n\
except Exception:\n    meta = None\n\
print(json.dumps({'dir': os.path.dirname(pip.__file__), 'version': pip.__version__, 'metadata': meta}))";

#[derive(Debug, serde::Deserialize)]
struct BuildPip {
    dir: PathBuf,
    version: String,
    metadata: Option<String>,
}

/// A folder holding only the build python's pip, so the environment has a pip without
/// installing one (ensurepip takes seconds per build); ensurepip when the build python has
/// none.
fn pip_folder(env: &HookEnv, python: &Path) -> Result<Option<PathBuf>, BuildError> {
    let found = run_host(python, &["-c", BUILD_PIP_QUERY], &[])
        .ok()
        .and_then(|output| serde_json::from_str::<BuildPip>(output.lines().last()?).ok());
    match found {
        Some(pip) => {
            let folder = env.root.join("crosswheel-pip");
            std::fs::create_dir_all(&folder).map_err(|source| io("create", &folder, source))?;
            let link = folder.join("pip");
            std::os::unix::fs::symlink(&pip.dir, &link)
                .map_err(|source| io("link", &link, source))?;
            if let Some(metadata) = &pip.metadata {
                write_pip_dist_info(&folder, &pip.version, metadata)?;
            }
            Ok(Some(folder))
        }
        None => {
            run_host(&env.python, &["-m", "ensurepip", "--default-pip"], &[]).map_err(
                |output| BuildError::InstallRequires {
                    requires: "pip (ensurepip)".into(),
                    output,
                },
            )?;
            Ok(None)
        }
    }
}

/// pip's `pip-X.dist-info` beside the linked package, as an installed pip has in
/// cibuildwheel's build venv: `importlib.metadata.version("pip")`, `pip show pip` and
/// `pip list` find it (cibuildwheel's test_build_isolated_env_pip_version reads the version
/// in `before-build`). Its `RECORD` names its own two files and nothing of the package: the
/// package is the build python's, through a link, so a hook's `pip install --upgrade pip`
/// or `pip uninstall pip` removes this copy (the new pip goes into site-packages, ahead of
/// this folder on `sys.path`) and never a file of the build python.
fn write_pip_dist_info(folder: &Path, version: &str, metadata: &str) -> Result<(), BuildError> {
    let name = format!("pip-{version}.dist-info");
    let dist_info = folder.join(&name);
    std::fs::create_dir_all(&dist_info).map_err(|source| io("create", &dist_info, source))?;
    write(&dist_info.join("METADATA"), metadata)?;
    write(
        &dist_info.join("RECORD"),
        &format!("{name}/METADATA,,\n{name}/RECORD,,\n"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pips_dist_info_records_only_its_own_files() {
        let folder = tempfile::tempdir().unwrap();
        let metadata = "Metadata-Version: 2.1\nName: pip\nVersion: 23.2.1\n";
        write_pip_dist_info(folder.path(), "23.2.1", metadata).unwrap();
        let dist_info = folder.path().join("pip-23.2.1.dist-info");
        assert_eq!(
            std::fs::read_to_string(dist_info.join("METADATA")).unwrap(),
            metadata
        );
        let record = std::fs::read_to_string(dist_info.join("RECORD")).unwrap();
        assert_eq!(
            record,
            "pip-23.2.1.dist-info/METADATA,,\npip-23.2.1.dist-info/RECORD,,\n"
        );
        // Every file RECORD names is in the dist-info folder: an uninstall through it never
        // reaches the linked package, which is the build python's.
        for line in record.lines() {
            assert!(line.starts_with("pip-23.2.1.dist-info/"), "{line}");
        }
    }

    #[test]
    fn the_build_pip_query_is_read_from_its_last_line() {
        let output =
            "some warning\n{\"dir\": \"/x/pip\", \"version\": \"25.3\", \"metadata\": null}\n";
        let pip: BuildPip = serde_json::from_str(output.lines().last().unwrap()).unwrap();
        assert_eq!(pip.dir, PathBuf::from("/x/pip"));
        assert_eq!(pip.version, "25.3");
        assert!(pip.metadata.is_none());
    }
}
