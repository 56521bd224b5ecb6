//! The macOS repair (the delocate equivalent): vendor non-system dylibs into
//! `<package>/.dylibs/`, point every reference at them with `@loader_path`,
//! drop rpaths that are not `@loader_path`/`@executable_path` relative, enforce
//! the minimum macOS version, ad-hoc sign what changed, and tag the wheel
//! accordingly.

pub mod plan;

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use rayon::prelude::*;

use crate::analysis::facts::layout::macos_libs_dir;
use crate::analysis::facts::macos::{
    MachOBinary, Origin, Rules, final_tags, resolve, wheel_binaries,
};
use crate::formats::macho::{Arch, Version, edit_load_commands, sign_adhoc};
use crate::formats::wheel::{Contents, PlatformTag, WheelArchive};
use crate::stages::repair::rewrite_wheel;
use crate::stages::repair::sbom::Vendored;
use crate::target::OsVersion;

#[derive(Debug, Clone)]
pub struct MacosRepairOptions {
    /// Folders searched first, by file name, for libraries outside the wheel.
    pub lib_paths: Vec<PathBuf>,
    /// Install names (or their file names) never vendored.
    pub exclude: Vec<glob::Pattern>,
    /// Target macOS version (`--macos-version`, else `MACOSX_DEPLOYMENT_TARGET`, read by
    /// the caller); else the wheel's own tag. Never below 11.0 for arm64.
    pub macos_version: Option<OsVersion>,
    /// Raise the tag to the newest minos instead of failing.
    pub retag: bool,
    pub out_dir: PathBuf,
    pub epoch: Option<u64>,
    /// Host folder standing in for `@executable_path` (the interpreter's
    /// folder on the build machine); without it such names must resolve
    /// through an executable inside the wheel.
    pub executable_path: Option<PathBuf>,
    /// The folder in the package vendored libraries go to (`.dylibs`).
    pub lib_sdir: String,
    /// Architectures every binary must hold, wheel's and vendored (`--require-archs`).
    pub require_archs: Vec<Arch>,
    /// Keep the wheel's own platform tags.
    pub keep_tags: bool,
}

impl Default for MacosRepairOptions {
    /// delocate's defaults: `.dylibs`, no required architectures, the wheel's own tag.
    fn default() -> MacosRepairOptions {
        MacosRepairOptions {
            lib_paths: Vec::new(),
            exclude: Vec::new(),
            macos_version: None,
            retag: false,
            out_dir: PathBuf::new(),
            epoch: None,
            executable_path: None,
            lib_sdir: crate::analysis::facts::layout::MACOS_LIB_SDIR.to_string(),
            require_archs: Vec::new(),
            keep_tags: false,
        }
    }
}

/// What one repair did.
#[derive(Debug)]
pub struct MacosRepairReport {
    pub output: PathBuf,
    pub platform_tags: Vec<PlatformTag>,
    /// Host path of each vendored library → its path inside the wheel.
    pub grafted: Vec<(PathBuf, String)>,
    /// Wheel entries whose bytes changed.
    pub edited: Vec<String>,
    /// Files (wheel paths, vendored ones included) given a new ad-hoc signature.
    pub signed: Vec<String>,
}

/// The deployment target as Mach-O load commands write it (no patch level: none is asked).
fn macho_version(version: OsVersion) -> Version {
    Version::new(
        u16::try_from(version.major).unwrap_or(u16::MAX),
        u8::try_from(version.minor).unwrap_or(u8::MAX),
        0,
    )
}

pub fn repair(wheel: &WheelArchive, options: &MacosRepairOptions) -> Result<MacosRepairReport> {
    let wheel_path = wheel.path().display().to_string();
    let requested = options.macos_version.map(macho_version);
    let binaries = wheel_binaries(wheel)?;
    if binaries.is_empty() {
        bail!(
            "{wheel_path}: has no Mach-O files, so there is nothing to repair (a pure wheel needs no repair)"
        );
    }
    let rules = Rules {
        exclude: &options.exclude,
        lib_paths: &options.lib_paths,
        executable_path: options.executable_path.as_deref(),
        search_host: true,
    };
    let graph = resolve(binaries, &rules);
    require_archs(&graph.binaries, &options.require_archs).with_context(|| wheel_path.clone())?;
    let plan = plan::plan(graph, &macos_libs_dir(wheel, &options.lib_sdir))
        .with_context(|| wheel_path.clone())?;
    let decision = final_tags(
        &wheel.name().platform,
        requested,
        &plan.final_minos(),
        options.retag,
    )
    .with_context(|| wheel_path.clone())?;
    for warning in &decision.warnings {
        tracing::warn!("{wheel_path}: {warning}");
    }
    let platform_tags = if options.keep_tags {
        wheel.name().platform.clone()
    } else {
        decision.tags
    };

    let rewritten = rewrite_binaries(&plan, &wheel_path)?;

    let signed: Vec<String> = (0..plan.paths.len())
        .filter(|&index| plan.needs_signing[index])
        .map(|index| plan.paths[index].clone())
        .collect();
    let mut replaced = BTreeMap::new();
    let mut entries = Vec::new();
    let mut edited = Vec::new();
    for (index, bytes) in rewritten {
        match &plan.graph.binaries[index].origin {
            Origin::Wheel { entry } => {
                edited.push(entry.clone());
                replaced.insert(entry.clone(), bytes);
            }
            Origin::Host { .. } => entries.push((
                plan.paths[index].clone(),
                Contents::Bytes {
                    data: bytes,
                    mode: 0o755,
                },
            )),
        }
    }
    edited.sort();

    let output = rewrite_wheel(
        wheel,
        platform_tags.clone(),
        replaced,
        entries,
        &Vendored::of_macos(&plan.graph, &plan.paths),
        &options.out_dir,
        options.epoch,
    )?;
    Ok(MacosRepairReport {
        output,
        platform_tags,
        grafted: plan.grafted(),
        edited,
        signed,
    })
}

/// delocate's `--require-archs`: every binary of the wheel and every library it would
/// vendor holds each of `required`.
fn require_archs(binaries: &[MachOBinary], required: &[Arch]) -> Result<()> {
    for binary in binaries {
        let has: Vec<Arch> = binary.slices.iter().map(|slice| slice.arch).collect();
        let missing: Vec<String> = required
            .iter()
            .filter(|arch| !has.contains(arch))
            .map(ToString::to_string)
            .collect();
        if !missing.is_empty() {
            let has: Vec<String> = has.iter().map(ToString::to_string).collect();
            bail!(
                "{} lacks the architectures {} that --require-archs asks for (it has {})",
                binary.path,
                missing.join(", "),
                has.join(", ")
            );
        }
    }
    Ok(())
}

/// The new bytes of each binary the repair writes, by index into `plan.graph.binaries`:
/// every one that needs signing (edited first where the plan says so) and every grafted
/// library; untouched wheel files are copied raw later.
fn rewrite_binaries(plan: &plan::RepairPlan, wheel_path: &str) -> Result<Vec<(usize, Vec<u8>)>> {
    let rewritten = (0..plan.graph.binaries.len())
        .into_par_iter()
        .map(|index| -> Result<Option<(usize, Vec<u8>)>> {
            let binary = &plan.graph.binaries[index];
            let path = &plan.paths[index];
            if !plan.needs_signing[index] {
                return Ok(binary.is_grafted().then(|| (index, binary.data.to_vec())));
            }
            let edited = if plan.edits[index].is_empty() {
                binary.data.to_vec()
            } else {
                edit_load_commands(&binary.data, &plan.edits[index]).with_context(|| {
                    format!("{wheel_path}: cannot rewrite the load commands of {path}")
                })?
            };
            let signed = sign_adhoc(&edited, binary.file_name())
                .with_context(|| format!("{wheel_path}: cannot sign {path}"))?;
            Ok(Some((index, signed)))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(rewritten.into_iter().flatten().collect())
}
