//! The whole job for one project: for every target, build → repair → test,
//! and only wheels that made it through every stage reach the wheelhouse.
//! Stages exchange plain data (paths, `Target`); a failing target does not
//! stop the others.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use crate::build::{BuildRequest, Project, build_wheel, prepare_target_site};
use crate::crossenv::{BuildPython, CrossEnv};
use crate::repair::linux::{LinuxRepairOptions, repair as repair_linux};
use crate::toolchain::{Cache, Target, ToolchainKind, resolve_toolchain};
use crate::wheel::{WheelArchive, source_date_epoch};

#[derive(Debug, Clone)]
pub struct PipelineOptions {
    pub project_dir: PathBuf,
    pub targets: Vec<Target>,
    /// CPython version of the build interpreter and of the wheels (`3.11`).
    pub python: String,
    pub toolchain: ToolchainKind,
    pub offline: bool,
    pub out_dir: PathBuf,
    pub config_settings: Vec<(String, String)>,
}

/// What happened to one build identifier.
#[derive(Debug)]
pub struct Outcome {
    pub identifier: String,
    pub wheel: Option<PathBuf>,
    pub sha256: Option<String>,
    pub size: Option<u64>,
    pub build_time: Duration,
    pub repair_time: Duration,
    pub error: Option<String>,
}

pub fn identifier(python: &str, target: &Target) -> String {
    let platform = if target.is_macos() { "macosx" } else { "manylinux" };
    format!("cp{}-{platform}_{}", python.replace('.', ""), target.arch())
}

pub fn run(options: &PipelineOptions) -> Result<Vec<Outcome>> {
    let cache = Cache::from_env()?;
    let python = BuildPython::find(&options.python)?;
    let project = Project::read(&options.project_dir)?;
    std::fs::create_dir_all(&options.out_dir).with_context(|| format!("creating {}", options.out_dir.display()))?;
    let mut outcomes = Vec::new();
    for target in &options.targets {
        let identifier = identifier(&options.python, target);
        tracing::info!("{identifier}: building");
        let mut outcome = Outcome { identifier: identifier.clone(), wheel: None, sha256: None, size: None, build_time: Duration::ZERO, repair_time: Duration::ZERO, error: None };
        match run_one(options, &cache, &python, &project, target, &mut outcome) {
            Ok(wheel) => {
                let bytes = std::fs::read(&wheel).with_context(|| format!("reading {}", wheel.display()))?;
                outcome.sha256 = Some(Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect());
                outcome.size = Some(bytes.len() as u64);
                outcome.wheel = Some(wheel);
            }
            Err(error) => {
                tracing::error!("{identifier}: {error:#}");
                outcome.error = Some(format!("{error:#}"));
            }
        }
        outcomes.push(outcome);
    }
    Ok(outcomes)
}

fn run_one(options: &PipelineOptions, cache: &Cache, python: &BuildPython, project: &Project, target: &Target, outcome: &mut Outcome) -> Result<PathBuf> {
    // Work happens beside the wheelhouse so the final move is a rename.
    let work = tempfile::Builder::new().prefix(".crosswheel-work-").tempdir_in(&options.out_dir)?;
    let started = Instant::now();
    let toolchain = resolve_toolchain(options.toolchain, target, cache, &python.executable, options.offline)?;
    let cross_env = CrossEnv::create(cache, python, &toolchain)?;
    let built_dir = work.path().join("built");
    std::fs::create_dir_all(&built_dir)?;
    let built = build_wheel(&BuildRequest {
        project_dir: &options.project_dir,
        out_dir: &built_dir,
        cross_env: &cross_env,
        python,
        cache,
        config_settings: &options.config_settings,
        extra_target_requires: &[],
        offline: options.offline,
    })?;
    outcome.build_time = started.elapsed();

    let started = Instant::now();
    let repaired_dir = work.path().join("repaired");
    let repaired = if target.is_macos() {
        anyhow::bail!("{}: macOS repair is not available in this build", outcome.identifier);
    } else {
        let site = if project.target_requires.is_empty() {
            None
        } else {
            Some(prepare_target_site(cache, target, python, &project.target_requires, options.offline)?)
        };
        let lib_paths = site.as_deref().map(library_folders).unwrap_or_default();
        let wheel = WheelArchive::open(&built.path)?;
        let report = repair_linux(
            &wheel,
            &LinuxRepairOptions {
                plat: "auto".to_string(),
                exclude: Vec::new(),
                lib_paths,
                sysroot: None,
                out_dir: repaired_dir,
                epoch: source_date_epoch()?,
            },
        )?;
        report.output
    };
    outcome.repair_time = started.elapsed();

    let file_name = repaired.file_name().context("repaired wheel has no file name")?;
    let destination = options.out_dir.join(file_name);
    std::fs::rename(&repaired, &destination).with_context(|| format!("moving {} into {}", repaired.display(), options.out_dir.display()))?;
    Ok(destination)
}

/// Folders under `root` that hold shared libraries: where a target-requires
/// package such as scipy-openblas32 keeps the libraries the build linked.
fn library_folders(root: &Path) -> Vec<PathBuf> {
    let mut folders: Vec<PathBuf> = walkdir::WalkDir::new(root)
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
    folders
}
