//! The compiler runtime pieces zig lacks for a target (`zig_runtime` in
//! config/targets.toml): members of the target's libgcc.a, from Debian's package, in an
//! archive of their own that the wrappers add to every link.

use std::path::{Path, PathBuf};

use super::{ToolchainError, Zig};
use crate::io_error::IoError;
use crate::support::host::run_folder::staging_in;
use crate::support::host::{Cache, Network};
use crate::support::sysroot::{self, TreeSpec};
use crate::target::{Target, ZigRuntime};

/// The archive for `target`, built on first use from Debian's package (from `mirror`, the
/// `debian-mirror` option, when given); `None` when zig needs nothing more.
pub fn runtime_archive(
    cache: &Cache,
    zig: &Zig,
    target: &Target,
    network: &Network,
) -> Result<Option<PathBuf>, ToolchainError> {
    let (Some(runtime), Some(arch)) = (&target.data().zig_runtime, target.linux_arch()) else {
        return Ok(None);
    };
    let key = crate::support::host::cache_key(&[
        runtime.package.as_bytes(),
        runtime.archive.as_bytes(),
        runtime.members.join(" ").as_bytes(),
    ]);
    let folder = cache.toolchains().join("runtime").join(format!(
        "{}-{}-{key}",
        runtime.package,
        arch.debian()
    ));
    let archive = folder.join("libcrosswheel-runtime.a");
    if archive.is_file() {
        return Ok(Some(archive));
    }
    let failed = |reason: String| ToolchainError::Runtime {
        target: target.id().to_string(),
        package: runtime.package.clone(),
        reason,
    };
    let spec = TreeSpec::target_package(
        arch,
        &runtime.package,
        std::slice::from_ref(&runtime.archive),
        network,
    );
    let tree = sysroot::provision(cache.root(), &spec).map_err(|err| failed(err.to_string()))?;
    let source = tree.root().join(&runtime.archive);
    if !source.is_file() {
        return Err(failed(format!("it has no {}", runtime.archive)));
    }
    extract_members(zig, &source, runtime, &folder, &archive).map_err(failed)?;
    Ok(Some(archive))
}

/// `zig ar x` the members into a scratch folder beside `archive`, `zig ar rcs` them into
/// a new archive, and rename it into place, so a concurrent build never sees half of it.
fn extract_members(
    zig: &Zig,
    source: &Path,
    runtime: &ZigRuntime,
    folder: &Path,
    archive: &Path,
) -> Result<(), String> {
    std::fs::create_dir_all(folder)
        .map_err(|err| IoError::new("create", folder.to_path_buf(), err).to_string())?;
    let scratch = staging_in(folder, ".extract-")
        .map_err(|err| IoError::new("create a folder in", folder.to_path_buf(), err).to_string())?;
    let run = |args: Vec<std::ffi::OsString>| -> Result<(), String> {
        let output = duct::cmd(&zig.exe, &args)
            .dir(scratch.path())
            .stderr_to_stdout()
            .stdout_capture()
            .unchecked()
            .run()
            .map_err(|err| format!("cannot run zig ar: {err}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "`zig ar` failed: {}",
                String::from_utf8_lossy(&output.stdout).trim()
            ))
        }
    };
    let mut extract: Vec<std::ffi::OsString> = vec!["ar".into(), "x".into(), source.into()];
    extract.extend(runtime.members.iter().map(Into::into));
    run(extract)?;
    let partial = scratch.path().join("runtime.a");
    let mut create: Vec<std::ffi::OsString> =
        vec!["ar".into(), "rcsD".into(), partial.clone().into()];
    create.extend(runtime.members.iter().map(Into::into));
    run(create)?;
    std::fs::rename(&partial, archive)
        .map_err(|err| IoError::new("move into place", archive.to_path_buf(), err).to_string())
}
