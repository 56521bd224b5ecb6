//! The environment a build, its hooks and its tests see: the user's `environment` option
//! evaluated as cibuildwheel evaluates it, and the macOS SDK a build compiles against.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;

use crate::input::options::BuildSpec;
use crate::stages::toolchain::find_macos_sdk;

/// The process environment, which `environment` is evaluated against as cibuildwheel
/// evaluates it (for a build, with the build's own environment put first on PATH).
pub(super) fn process_environment() -> BTreeMap<String, String> {
    std::env::vars().collect()
}

/// The user's `environment` (and `environment-pass`) values, expanded against `base`, the
/// environment they are evaluated in; command substitutions (`$(...)`) run in the project
/// folder. Only the variables it set or changed.
pub(super) fn user_environment(
    spec: &BuildSpec,
    project_dir: &Path,
    base: BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>> {
    let mut vars = base;
    let before = vars.clone();
    spec.options
        .environment
        .apply(&mut vars, project_dir)
        .map_err(|message| anyhow::anyhow!("environment: {message}"))?;
    Ok(vars
        .into_iter()
        .filter(|(name, value)| before.get(name) != Some(value))
        .collect())
}

/// The user's environment for one identifier's build, test and hooks, evaluated against
/// `base` in the build's package folder: for macOS targets with a macOS SDK (`macos-sdk`, else `SDKROOT`), `SDKROOT`
/// names it, checked and absolute, for the compiler wrappers.
pub(super) fn build_environment(
    spec: &BuildSpec,
    base: BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>> {
    let mut environment = user_environment(spec, &spec.paths.package, base)?;
    if spec.target.is_macos() {
        let sdkroot = environment
            .get("SDKROOT")
            .cloned()
            .or_else(|| std::env::var("SDKROOT").ok());
        if let Some(sdk) = find_macos_sdk(spec.options.macos_sdk.as_deref(), sdkroot.as_deref())? {
            environment.insert(
                "SDKROOT".to_string(),
                sdk.root.to_string_lossy().into_owned(),
            );
        }
    }
    Ok(environment)
}
