//! The repair stage: make a wheel self-contained and honestly tagged for its
//! platform. `linux` is the auditwheel equivalent, `macos` the delocate one;
//! [`repair`] picks between them from the wheel's own tags.

pub mod fuse;
pub mod linux;
pub mod macos;
mod rewrite;
pub mod sbom;

pub(crate) use rewrite::rewrite_wheel;

use std::path::PathBuf;

use anyhow::{Result, bail};

use crate::analysis::facts::layout::{LINUX_LIB_SDIR, MACOS_LIB_SDIR};
use crate::formats::macho::Arch;
use crate::formats::wheel::{PlatformTag, WheelArchive, join_platform_tags};
use crate::target::{OsVersion, Platform};

/// Everything a repair may be told, whatever the wheel's platform; each platform's repair
/// reads its part. Built by `crosswheel repair` from flags and by the pipeline from the
/// target.
#[derive(Debug, Clone)]
pub struct RepairRequest {
    pub out_dir: PathBuf,
    /// Folders searched first, by file name, for libraries outside the wheel.
    pub lib_paths: Vec<PathBuf>,
    /// Libraries never vendored.
    pub exclude: Vec<glob::Pattern>,
    pub epoch: Option<u64>,
    /// Linux: the policy tag to repair for (`manylinux_2_28_x86_64`); `None`: `auto`, the
    /// most compatible policy the binaries satisfy.
    pub plat: Option<PlatformTag>,
    /// Linux: a target root whose libraries satisfy what the wheel needs.
    pub sysroot: Option<PathBuf>,
    /// Linux: the target's system libraries for the symbol check
    /// (`sysroot::system_libraries`).
    pub system_libraries: Option<PathBuf>,
    /// macOS: the deployment target (`crosswheel repair` takes `MACOSX_DEPLOYMENT_TARGET`
    /// where `--macos-version` is not given); `None`: the wheel's tag.
    pub macos_version: Option<OsVersion>,
    /// macOS: raise the tag to the newest minos instead of failing.
    pub retag: bool,
    /// The folder vendored libraries go to: auditwheel's `--lib-sdir` (a suffix of the
    /// distribution's name, `.libs`), delocate's (a folder in the package, `.dylibs`);
    /// `None`: that default.
    pub lib_sdir: Option<String>,
    /// Linux: strip the symbol tables of every ELF file the wheel ends with, as
    /// `auditwheel repair --strip` does.
    pub strip: bool,
    /// Linux: tag with the policy `plat` names only; without it a wheel eligible for a
    /// more compatible policy gets that one's tags too, first (auditwheel's `--only-plat`).
    pub only_plat: bool,
    /// Keep the wheel's own platform tags (auditwheel's `--no-update-tags`).
    pub keep_tags: bool,
    /// macOS: architectures every binary must hold (delocate's `--require-archs`).
    pub require_archs: Vec<Arch>,
    /// Linux: packages the binaries were compiled against without a file of theirs in
    /// the wheel (CUDA's runtime), which the SBOM names.
    pub built_with: Vec<crate::formats::sbom::Package>,
}

impl RepairRequest {
    /// A request with every choice at its default: auditwheel's and delocate's own.
    pub fn new(out_dir: PathBuf) -> RepairRequest {
        RepairRequest {
            out_dir,
            lib_paths: Vec::new(),
            exclude: Vec::new(),
            epoch: None,
            plat: None,
            sysroot: None,
            system_libraries: None,
            macos_version: None,
            retag: false,
            lib_sdir: None,
            strip: false,
            only_plat: true,
            keep_tags: false,
            require_archs: Vec::new(),
            built_with: Vec::new(),
        }
    }
}

/// What a repair produced.
#[derive(Debug)]
pub struct Repaired {
    pub output: PathBuf,
    /// Host path of each vendored library → its path inside the wheel.
    pub grafted: Vec<(PathBuf, String)>,
}

/// The repair stage's one entry: auditwheel's job for Linux wheels, delocate's for macOS
/// ones, chosen by the wheel's own platform tags.
pub fn repair(wheel: &WheelArchive, request: &RepairRequest) -> Result<Repaired> {
    let (output, grafted) = match PlatformTag::platform_of(&wheel.name().platform) {
        Some(Platform::Linux) => {
            let report = linux::repair(
                wheel,
                &linux::LinuxRepairOptions {
                    plat: request.plat.clone(),
                    exclude: request.exclude.clone(),
                    lib_paths: request.lib_paths.clone(),
                    sysroot: request.sysroot.clone(),
                    system_libraries: request.system_libraries.clone(),
                    out_dir: request.out_dir.clone(),
                    epoch: request.epoch,
                    lib_sdir: request
                        .lib_sdir
                        .clone()
                        .unwrap_or_else(|| LINUX_LIB_SDIR.to_string()),
                    strip: request.strip,
                    only_plat: request.only_plat,
                    keep_tags: request.keep_tags,
                    built_with: request.built_with.clone(),
                },
            )?;
            (report.output, report.grafted)
        }
        Some(Platform::Macos) => {
            let report = macos::repair(
                wheel,
                &macos::MacosRepairOptions {
                    lib_paths: request.lib_paths.clone(),
                    exclude: request.exclude.clone(),
                    macos_version: request.macos_version,
                    retag: request.retag,
                    out_dir: request.out_dir.clone(),
                    epoch: request.epoch,
                    executable_path: None,
                    lib_sdir: request
                        .lib_sdir
                        .clone()
                        .unwrap_or_else(|| MACOS_LIB_SDIR.to_string()),
                    require_archs: request.require_archs.clone(),
                    keep_tags: request.keep_tags,
                },
            )?;
            (report.output, report.grafted)
        }
        None if wheel
            .name()
            .platform
            .iter()
            .all(|tag| *tag == PlatformTag::Any) =>
        {
            bail!(
                "{}: is a pure wheel (platform `any`), and a pure wheel needs no repair",
                wheel.path().display()
            )
        }
        None => bail!(
            "{}: platform {} is neither Linux nor macOS; nothing crosswheel can repair",
            wheel.path().display(),
            join_platform_tags(&wheel.name().platform)
        ),
    };
    for (source, inside) in &grafted {
        tracing::info!("vendored {} as {inside}", source.display());
    }
    Ok(Repaired { output, grafted })
}
