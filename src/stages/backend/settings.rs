//! The PEP 517 config settings the backend gets: what points it at the cross files, then
//! the user's, in the JSON form the hooks take.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::project::{Backend, BuildSystem};
use super::{BuildError, BuildRequest, io_error};
use crate::stages::crossenv::{CrossEnv, meson_prefix_options};
use crate::stages::toolchain::UserFlags;

/// The config settings of the cross `build_wheel`: the backend's pointers at the cross
/// files first, then the user's, so a user's key adds to ours (a repeated key is a list).
/// meson-python also gets a second cross file naming the build environment's python,
/// written into `scratch`.
pub(super) fn cross_settings(
    request: &BuildRequest<'_>,
    system: &BuildSystem,
    scratch: &Path,
    host_env_python: &Path,
) -> Result<BTreeMap<String, Value>, BuildError> {
    let mut user_settings = request.config_settings.to_vec();
    if request.verbosity >= 2 && system.backend == Backend::ScikitBuildCore {
        user_settings.push(("build.verbose".to_string(), "true".to_string()));
    }
    let mut settings_pairs = backend_settings(system.backend, request.cross_env);
    if system.backend == Backend::MesonPython {
        let python_file = scratch.join("meson-python.ini");
        std::fs::write(&python_file, meson_python_file(host_env_python))
            .map_err(|source| io_error("write", &python_file, source))?;
        settings_pairs.push((
            "setup-args".into(),
            format!("--cross-file={}", python_file.display()),
        ));
        if !request.target_prefixes.is_empty() {
            let prefix_file = scratch.join("meson-prefixes.ini");
            let text = meson_prefix_options(
                &UserFlags::from_env(request.cross_env.toolchain().compilers.languages()),
                request.target_prefixes,
            );
            std::fs::write(&prefix_file, text)
                .map_err(|source| io_error("write", &prefix_file, source))?;
            settings_pairs.push((
                "setup-args".into(),
                format!("--cross-file={}", prefix_file.display()),
            ));
        }
    }
    settings_pairs.extend(cmake_requirement(system.backend, &user_settings));
    settings_pairs.extend(user_settings);
    Ok(settings_map(&settings_pairs))
}

/// The config settings of the hooks that run on the host (`get_requires_for_build_wheel`):
/// the user's, and the CMake version the cross build will need, so the backend asks for it
/// among its build requirements.
pub(super) fn host_settings(
    backend: Backend,
    user_settings: &[(String, String)],
) -> BTreeMap<String, Value> {
    let mut pairs = cmake_requirement(backend, user_settings);
    pairs.extend(user_settings.iter().cloned());
    settings_map(&pairs)
}

/// The CMake that crosswheel's toolchain file works with: policy CMP0190 first exists in
/// CMake 4.1. An older CMake on PATH (Debian bookworm's 3.25) never asks the build python
/// for the target's suffix, and names `python_add_library(... WITH_SOABI)` modules plain
/// `_x.so`; with this setting scikit-build-core installs a new enough CMake into the build
/// environment instead. A `cmake.version` the user set is theirs to keep.
const MINIMUM_CROSS_CMAKE: &str = ">=4.1";

fn cmake_requirement(
    backend: Backend,
    user_settings: &[(String, String)],
) -> Vec<(String, String)> {
    if backend == Backend::ScikitBuildCore
        && !user_settings.iter().any(|(key, _)| key == "cmake.version")
    {
        vec![("cmake.version".into(), MINIMUM_CROSS_CMAKE.into())]
    } else {
        Vec::new()
    }
}

/// What points each backend at the cross files (user settings are added after it).
fn backend_settings(backend: Backend, cross_env: &CrossEnv) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    match backend {
        Backend::Setuptools | Backend::Other => {}
        Backend::MesonPython => {
            pairs.push((
                "setup-args".into(),
                format!("--cross-file={}", cross_env.meson_cross_file.display()),
            ));
        }
        Backend::ScikitBuildCore => {
            pairs.push((
                "cmake.define.CMAKE_TOOLCHAIN_FILE".into(),
                cross_env
                    .cmake_toolchain_file
                    .to_string_lossy()
                    .into_owned(),
            ));
            // Lets FindPython ask the build python (through the toolchain's emulator) for
            // the target's extension suffix. Must be a -D: a policy default set in the
            // toolchain file comes after cmake_minimum_required has read the defaults.
            pairs.push((
                "cmake.define.CMAKE_POLICY_DEFAULT_CMP0190".into(),
                "NEW".into(),
            ));
        }
    }
    pairs
}

/// A second meson cross file, read after the environment's: the interpreter meson runs for
/// `python` is the build environment's, which has the build requirements installed
/// (meson.build files ask it for their versions), not the bare build python.
fn meson_python_file(host_env_python: &Path) -> String {
    let quoted = format!(
        "'{}'",
        host_env_python
            .to_string_lossy()
            .replace('\\', "\\\\")
            .replace('\'', "\\'")
    );
    format!(
        "# Generated by crosswheel: the build environment's interpreter.\n[binaries]\npython = {quoted}\npython3 = {quoted}\n"
    )
}

pub(super) fn settings_map(pairs: &[(String, String)]) -> BTreeMap<String, Value> {
    let mut map: BTreeMap<String, Value> = BTreeMap::new();
    for (key, value) in pairs {
        match map.get_mut(key) {
            None => {
                map.insert(key.clone(), Value::String(value.clone()));
            }
            Some(Value::Array(items)) => items.push(Value::String(value.clone())),
            Some(existing) => {
                let first = existing.take();
                *existing = Value::Array(vec![first, Value::String(value.clone())]);
            }
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scikit_build_core_is_asked_for_a_cmake_with_cmp0190_unless_the_user_chose_one() {
        let ours = host_settings(Backend::ScikitBuildCore, &[]);
        assert_eq!(ours["cmake.version"], Value::String(">=4.1".into()));
        let users = vec![("cmake.version".to_string(), ">=3.26".to_string())];
        let theirs = host_settings(Backend::ScikitBuildCore, &users);
        assert_eq!(theirs["cmake.version"], Value::String(">=3.26".into()));
        assert!(!host_settings(Backend::MesonPython, &[]).contains_key("cmake.version"));
    }

    #[test]
    fn repeated_config_setting_becomes_a_list() {
        let pairs = [
            ("setup-args".to_string(), "-Da=1".to_string()),
            ("setup-args".to_string(), "-Db=2".to_string()),
            ("k".to_string(), "v".to_string()),
        ];
        let map = settings_map(&pairs);
        assert_eq!(map["setup-args"], serde_json::json!(["-Da=1", "-Db=2"]));
        assert_eq!(map["k"], serde_json::json!("v"));
    }
}
