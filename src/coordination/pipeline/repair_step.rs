//! The repair step: crosswheel's own repair of a built wheel, with the folders of the
//! libraries the build linked against, as the pipeline asks for it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::FatalError;
use crate::formats::wheel::source_date_epoch;
use crate::input::options::BuildSpec;
use crate::io_error::IoError;
use crate::stages::backend::{BuiltWheel, prepare_target_site};
use crate::stages::repair::{RepairRequest, repair};
use crate::support::host::{BuildPython, Cache, Network};
use crate::target::{Libc, Target};

pub(super) fn builtin_repair(
    cache: &Cache,
    built: &BuiltWheel,
    target: &Target,
    lib_paths: Vec<PathBuf>,
    out_dir: &Path,
    network: &Network,
) -> Result<PathBuf> {
    let wheel = crate::formats::wheel::open_within_env_limits(&built.path)?;
    // What the toolchain's languages say the target machine provides (CUDA's driver).
    let exclude = built
        .never_vendored
        .iter()
        .map(|glob| glob::Pattern::new(glob))
        .collect::<Result<Vec<_>, _>>()
        .context("a toolchain's never-vendored library glob")?;
    let request = RepairRequest {
        out_dir: out_dir.to_path_buf(),
        lib_paths,
        exclude,
        epoch: source_date_epoch()?,
        // glibc: the most compatible policy the symbols allow; musl: the musl zig linked,
        // which no binary says.
        plat: crate::formats::wheel::PlatformTag::repair_policy_of(target),
        sysroot: None,
        // Debian's glibc libraries; Debian's trees hold no musl libraries to read.
        system_libraries: match target
            .linux_arch()
            .filter(|_| target.libc() == Some(Libc::Glibc))
        {
            Some(arch) => Some(crate::support::sysroot::system_libraries(
                cache.root(),
                arch,
                network,
            )?),
            None => None,
        },
        macos_version: target.is_macos().then(|| target.os_version()),
        retag: false,
        built_with: built.built_with.clone(),
        ..RepairRequest::new(out_dir.to_path_buf())
    };
    Ok(repair(&wheel, &request)?.output)
}

/// Folders of the target-form build requirements (e.g. scipy-openblas32)
/// that hold shared libraries: the libraries the build linked against.
pub(super) fn target_library_folders(
    cache: &Cache,
    target: &Target,
    python: &BuildPython,
    spec: &BuildSpec,
    offline: bool,
) -> Result<Vec<PathBuf>> {
    let mut requires = spec.options.target_requires.clone();
    requires.sort();
    requires.dedup();
    if requires.is_empty() {
        return Ok(Vec::new());
    }
    let site = prepare_target_site(cache, target, python, &requires, &[], offline)?;
    let mut folders: Vec<PathBuf> = walkdir::WalkDir::new(&site)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| {
            let name = entry.file_name().to_string_lossy();
            entry.file_type().is_file() && (name.contains(".so") || name.ends_with(".dylib"))
        })
        .filter_map(|entry| entry.path().parent().map(Path::to_path_buf))
        .collect();
    folders.sort();
    folders.dedup();
    Ok(folders)
}

pub(super) fn single_wheel_in(dir: &Path) -> Result<PathBuf> {
    let wheels: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(IoError::at("list", dir))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "whl"))
        .collect();
    match wheels.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(FatalError::RepairLeftNoWheel.into()),
        _ => Err(FatalError::RepairLeftWheels {
            count: wheels.len(),
        }
        .into()),
    }
}
