//! The build stage, `backend`: a PEP 517 frontend that runs a project's backend inside a cross
//! environment and returns the wheel it built. Knows nothing of repair.
//!
//! Per build: build requirements go into a cached host venv (no cross variables reach
//! pip), target-form requirements are unpacked for the target, the source tree is copied
//! into a scratch folder (per-target isolation; setuptools' `build/` and `*.egg-info`
//! never land in the user's tree), `get_requires_for_build_wheel` runs as a host process,
//! then `build_wheel` runs with the cross variables. The wheel is built into a temp
//! folder inside `out_dir` and renamed into place only on success.
//!
//! This file holds the order of those steps; each step's substance is a submodule: the
//! host venv (`host_env`), the hook runner (`driver`), the source copy (`source_copy`),
//! the log (`build_log`), the backend's variables (`cross_vars`) and config settings
//! (`settings`), and the checks of the wheel it built (`wheel_checks`).

mod build_files;
mod build_log;
mod cross_vars;
mod driver;
mod frontend;
mod hook_env;
mod host_env;
mod log_checks;
mod project;
mod settings;
mod source_copy;
mod target_installs;
mod target_wheels;
mod wheel_checks;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

pub use build_files::{requires_fortran, requires_openmp};
pub use frontend::Frontend;
pub use hook_env::{HookEnv, HookEnvRequest};
pub use host_env::HostEnv;
pub use project::{Backend, BuildSystem, Project, languages_of_project};
pub use target_wheels::prepare_target_site;

use build_log::{BuildLog, log_path_of};
use cross_vars::{cross_variables, prepend_path};
pub use source_copy::copy_source_tree;
use wheel_checks::{
    check_compiled, exec_format_hint, foreign_library_line, sdk_header_hint, wheel_platform_matches,
};

use crate::stages::crossenv::CrossEnv;
use crate::stages::toolchain::{
    DEBUG_INFO_MARKER, WRAPPER_NOTES_VAR, wrapper_errors, wrapper_notices,
};
use crate::support::host::run_folder::staging_in;
use crate::support::host::{BuildPython, CROSS_ONLY_VARS, Cache};

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("{path} is not valid TOML: {message}")]
    BadPyproject { path: PathBuf, message: String },
    #[error("installing the build requirements {requires} failed:\n{output}")]
    InstallRequires { requires: String, output: String },
    #[error("build-frontend {frontend} needs uv: {reason}")]
    NoUv { frontend: String, reason: String },
    #[error(
        "without build isolation the build's environment {} (a fresh venv holding pip only, as cibuildwheel's) must have the build requirements, and it lacks {missing}: install them with `before-build = \"pip install ...\"`, or pass -x (--skip-dependency-check) in the build-frontend args",
        .python.display()
    )]
    MissingWithoutIsolation { python: PathBuf, missing: String },
    #[error(
        "build requirements {requires} are not in crosswheel's cache and --offline forbids installing them: run once without --offline"
    )]
    OfflineRequires { requires: String },
    #[error(
        "the {target} wheels of {requires} are not in crosswheel's cache and --offline forbids downloading them: run once without --offline"
    )]
    OfflineTargetRequires { target: String, requires: String },
    #[error(
        "downloading the {target} wheels of {requires} failed (is there a wheel for that platform?):\n{output}"
    )]
    TargetRequires {
        target: String,
        requires: String,
        output: String,
    },
    #[error(
        "the index has no {target} wheel of {requirement}, whose headers the build compiles against, and building it here from its sdist failed: {reason}"
    )]
    HeaderBuild {
        target: String,
        requirement: String,
        reason: String,
    },
    #[error("installing a hook's packages for the target failed: {output}")]
    HookInstall { output: String },
    #[error("{line}; full log: {}", .log.display())]
    ForeignLibrary { line: String, log: Box<PathBuf> },
    #[error("{refusal}; full log: {}", .log.display())]
    WrapperRefused { refusal: String, log: Box<PathBuf> },
    #[error("the backend's wheel {wheel} is not a readable wheel: {message}")]
    BadBuiltWheel { wheel: PathBuf, message: String },
    #[error("cannot unpack target wheel {wheel}: {message}")]
    BadTargetWheel { wheel: PathBuf, message: String },
    #[error("{backend} `{hook}` failed for {project} on the host ({}):\n{}\n  full log: {}", .failure.status, .failure.excerpt, .failure.log.display())]
    HostHookFailed {
        project: String,
        backend: &'static str,
        hook: &'static str,
        failure: Box<Failure>,
    },
    #[error("building {project} for {target} with {toolchain} failed ({backend} exited with {}):\n{}\n  full log: {}", .failure.status, .failure.excerpt, .failure.log.display())]
    BackendFailed {
        project: String,
        target: String,
        toolchain: String,
        backend: &'static str,
        failure: Box<Failure>,
    },
    #[error("{backend} built {wheel}, which is not a {target} wheel (platform tag {expected} expected): the cross environment did not reach the backend; full log: {}", .log.display())]
    WrongPlatform {
        backend: &'static str,
        wheel: String,
        target: String,
        expected: String,
        log: Box<PathBuf>,
    },
    #[error("{}{backend} built {wheel} for {target}, a wheel without its extensions: {}; full log: {}", pure_wheel_words(.wheel), .cause, .log.display())]
    NoExtension {
        backend: &'static str,
        wheel: String,
        target: String,
        cause: String,
        log: Box<PathBuf>,
    },
    #[error(transparent)]
    Io(#[from] crate::io_error::IoError),
}

/// What a failed backend run left: its exit status, the lines that matter, the full log.
#[derive(Debug)]
pub struct Failure {
    pub status: String,
    pub excerpt: String,
    pub log: PathBuf,
}

/// One wheel to build: a project for the target of `cross_env`.
#[derive(Debug, Clone)]
pub struct BuildRequest<'a> {
    pub project_dir: &'a Path,
    /// Where the finished wheel goes; nothing else is left there.
    pub out_dir: &'a Path,
    pub cross_env: &'a CrossEnv,
    pub python: &'a BuildPython,
    pub cache: &'a Cache,
    /// PEP 517 config settings; a repeated key becomes a list, as with pip.
    pub config_settings: &'a [(String, String)],
    /// `target-requires`: requirements whose target-platform wheels the build links against.
    pub target_requires: &'a [String],
    /// Prefixes of libraries built for the target (`target-libraries`, `CROSSWHEEL_PREFIX`):
    /// their headers, libraries and pkg-config files come before everything else.
    pub target_prefixes: &'a [PathBuf],
    /// The user's `environment` option: set for the backend, over the cross variables.
    pub environment: &'a BTreeMap<String, String>,
    pub offline: bool,
    /// `build-verbosity`: from 1 on the backend's output is shown (it is always logged);
    /// from 2 on scikit-build-core is asked for a verbose build.
    pub verbosity: i64,
    /// pip constraints for the build requirements (`dependency-versions`).
    pub constraints: &'a [String],
    /// `build-frontend`: the installer of the build environment, or no isolation.
    pub frontend: &'a Frontend,
    /// The build's own environment (where `before-build` ran): without isolation the
    /// backend runs in it (pip and what `before-build` installed, as cibuildwheel's build venv).
    pub hook_env: Option<&'a HookEnv>,
    /// The build log; `None`: `<cache>/logs/<project>-<target>-<abi>.log`. The pipeline
    /// gives each run's builds a file in that run's log folder.
    pub log_file: Option<&'a Path>,
    /// Told each line the backend prints, as it prints it (for progress).
    pub progress: Option<LineSink<'a>>,
    /// Builds a header package for the target where the index has no wheel of it (Linux
    /// targets); `None`: the build machine's copy stands in, said in one line. The
    /// pipeline's, which builds projects (the backend builds only the one it is asked for).
    pub header_builder: Option<&'a dyn crate::support::host::RequirementBuilder>,
}

/// Where a running build's output lines go as they come.
#[derive(Clone, Copy)]
pub struct LineSink<'a>(pub &'a (dyn Fn(&str) + Sync));

impl std::fmt::Debug for LineSink<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LineSink")
    }
}

#[derive(Debug, Clone)]
pub struct BuiltWheel {
    pub path: PathBuf,
    pub backend: Backend,
    pub log: PathBuf,
    pub duration: Duration,
    /// Folders of the target's shared libraries the build could link (target wheels of
    /// library requirements, a hook's target installs, the compilers' runtimes): where
    /// the repair finds them.
    pub library_dirs: Vec<PathBuf>,
    /// Globs of libraries the repair never vendors because the toolchain's languages say
    /// the target machine provides them (CUDA's driver and index-installed libraries).
    pub never_vendored: Vec<String>,
    /// Packages the toolchain compiled the binaries against (CUDA's runtime), for the SBOM.
    pub built_with: Vec<crate::formats::sbom::Package>,
    /// What the project asked for and the build went without, as its log says (OpenMP
    /// not found): one line each, for the run's summary.
    pub lost: Vec<String>,
}

/// Runs the project's PEP 517 backend for the cross environment's target: the build
/// requirements in a host venv, `get_requires_for_build_wheel` on the host, then
/// `build_wheel` with every variable of the cross environment set.
pub fn build_wheel(request: &BuildRequest<'_>) -> Result<BuiltWheel, BuildError> {
    let started = Instant::now();
    let project = Project::read(request.project_dir)?;
    let system = &project.build_system;
    announce(request, &project);
    let env_request = host_env::EnvRequest {
        cache: request.cache,
        python: request.python,
        frontend: request.frontend,
        constraints: request.constraints,
        environment: request.environment,
        project_dir: &project.dir,
        offline: request.offline,
        own_env: request.hook_env,
    };
    let host_env = HostEnv::prepare(&env_request, &system.requires)?;
    let scratch = tempfile::Builder::new()
        .prefix("crosswheel-build-")
        .tempdir()
        .map_err(|source| io_error("create a folder in", &std::env::temp_dir(), source))?;
    let source_dir = scratch.path().join("src");
    copy_source_tree(&project.dir, &source_dir)?;
    let mut log = BuildLog::create(request, &project)?;
    let environment_line = format!(
        "build-frontend {}: {}",
        request.frontend.description,
        host_env.describe()
    );
    tracing::info!("{environment_line}");
    log.append(&format!("[crosswheel] {environment_line}\n"))?;

    // The host venv's programs, then the toolchain's (cargo for maturin, whose
    // `get_requires_for_build_wheel` already looks for it).
    let path_var = prepend_path(
        std::iter::once(host_env.bin.as_path())
            .chain(request.cross_env.toolchain().compilers.programs_dirs()),
    );
    let host_vars = cross_vars::host_variables(request, path_var.clone());
    let user_settings = settings::host_settings(system.backend, request.config_settings);
    let log_path = log.path.clone();
    let host_run = driver::HookRun {
        python: &host_env.python,
        source_dir: &source_dir,
        scratch_dir: scratch.path(),
        backend: &system.build_backend,
        backend_path: &system.backend_path,
        config_settings: &user_settings,
        env: &host_vars,
        remove: CROSS_ONLY_VARS,
        log_file: Some(&log_path),
        on_line: request.progress,
    };
    let extra = requires_for_build_wheel(&host_run, &project, &mut log)?;
    host_env.install(&extra, request.offline)?;

    let build_requires: Vec<String> = system.requires.iter().chain(&extra).cloned().collect();
    let header_requires = target_wheels::with_library_requirements(
        target_wheels::pinned_to_build_environment(
            target_wheels::header_requirements(&build_requires, request.target_requires),
            &host_env.root,
        ),
        &if host_env.isolated() {
            target_installs::library_requirements(&host_env.root)
        } else {
            Vec::new()
        },
        &build_requires,
        request.target_requires,
    );
    let mut cross_vars = cross_variables(
        request,
        &project,
        &source_dir,
        path_var,
        &header_requires,
        &host_env.root,
    )?;
    let mut library_dirs = library_dirs(&cross_vars, request.hook_env);
    // The runtimes the toolchain's compilers link (libgfortran): the repair vendors them.
    library_dirs.extend(
        request
            .cross_env
            .toolchain()
            .compilers
            .runtime_dirs()
            .map(Path::to_path_buf),
    );
    let wrapper_notes = wrapper_notes_dir(scratch.path(), request.verbosity)?;
    cross_vars.insert(
        WRAPPER_NOTES_VAR.to_string(),
        wrapper_notes.to_string_lossy().into_owned(),
    );
    let settings = settings::cross_settings(request, system, scratch.path(), &host_env.python)?;
    let cross_run = driver::HookRun {
        config_settings: &settings,
        env: &cross_vars,
        remove: &[],
        ..host_run
    };
    // The build's own environment first: without isolation it is also `host_env`.
    let origins = [
        (
            request
                .hook_env
                .map_or(Path::new("/nonexistent"), |env| env.root.as_path()),
            "installed by before-build",
        ),
        (host_env.root.as_path(), "a build requirement"),
    ];
    let built = run_build_wheel(&cross_run, request, &project, log, &origins);
    for notice in wrapper_notices(&wrapper_notes) {
        tracing::warn!("{notice}");
    }
    // A compile the wrappers broke may have been a probe the build took for a missing CPU
    // feature: its wheel would be slower than upstream's without a word.
    if let Some(refusal) = wrapper_errors(&wrapper_notes).into_iter().next() {
        return Err(BuildError::WrapperRefused {
            refusal,
            log: Box::new(log_path_of(request, &project)),
        });
    }
    let path = built?;
    let log = log_path_of(request, &project);
    // A log that cannot be read has already been said to be missing where it is written.
    let lost = std::fs::read_to_string(&log)
        .map(|text| log_checks::lost_features(&text))
        .unwrap_or_default();
    Ok(BuiltWheel {
        path,
        backend: system.backend,
        log,
        duration: started.elapsed(),
        library_dirs,
        never_vendored: request
            .cross_env
            .toolchain()
            .compilers
            .never_vendored()
            .map(str::to_string)
            .collect(),
        built_with: request
            .cross_env
            .toolchain()
            .compilers
            .built_with()
            .cloned()
            .collect(),
        lost,
    })
}

/// Folders of target shared libraries: the target site's (`CROSSWHEEL_TARGET_SITE`) and
/// what the build's own environment installed for the target.
fn library_dirs(cross_vars: &BTreeMap<String, String>, hook_env: Option<&HookEnv>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(site) = cross_vars.get("CROSSWHEEL_TARGET_SITE") {
        dirs.extend(target_installs::shared_library_dirs(Path::new(site)));
    }
    if let Some(env) = hook_env {
        dirs.extend(env.target_library_dirs());
    }
    dirs.sort();
    dirs.dedup();
    dirs
}

/// Says what is built, for which target, with which toolchain and backend.
fn announce(request: &BuildRequest<'_>, project: &Project) {
    let system = &project.build_system;
    tracing::info!(
        "building {} for {} with {} ({})",
        project.name,
        request.cross_env.target,
        request.cross_env.toolchain().description,
        match system.backend {
            Backend::Other => format!(
                "{}, which sees the target through sysconfig and the environment only",
                system.build_backend
            ),
            known => known.name().to_string(),
        }
    );
}

/// The folder where the compiler wrappers leave notices for the build's end.
fn wrapper_notes_dir(scratch: &Path, verbosity: i64) -> Result<PathBuf, BuildError> {
    let wrapper_notes = scratch.join("wrapper-notes");
    std::fs::create_dir_all(&wrapper_notes)
        .map_err(|source| io_error("create", &wrapper_notes, source))?;
    // A very verbose build (build-verbosity 2 and up) is one to debug: its links keep
    // debug info, as with -g in the project's flags.
    if verbosity >= 2 {
        let marker = wrapper_notes.join(DEBUG_INFO_MARKER);
        std::fs::write(&marker, "").map_err(|source| io_error("write", &marker, source))?;
    }
    Ok(wrapper_notes)
}

fn io_error(action: &'static str, path: &Path, source: std::io::Error) -> BuildError {
    BuildError::Io(crate::io_error::IoError::new(action, path, source))
}

/// Runs `get_requires_for_build_wheel` on the host: the requirements the backend wants
/// on top of `[build-system] requires`.
fn requires_for_build_wheel(
    host_run: &driver::HookRun<'_>,
    project: &Project,
    log: &mut BuildLog,
) -> Result<Vec<String>, BuildError> {
    let hook = "get_requires_for_build_wheel";
    let outcome = host_run.run(hook, None)?;
    log.append(&outcome.output)?;
    log.show(&outcome.output);
    if !outcome.success {
        return Err(BuildError::HostHookFailed {
            project: project.name.clone(),
            backend: project.build_system.backend.name(),
            hook,
            failure: log.failure(outcome.status, &outcome.output),
        });
    }
    Ok(outcome
        .result
        .as_ref()
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default())
}

/// Runs `build_wheel` into a staging folder inside `out_dir`, checks the wheel is for the
/// target, and moves it into `out_dir`.
fn run_build_wheel(
    cross_run: &driver::HookRun<'_>,
    request: &BuildRequest<'_>,
    project: &Project,
    mut log: BuildLog,
    origins: &[(&Path, &str)],
) -> Result<PathBuf, BuildError> {
    let target = &request.cross_env.target;
    let backend = project.build_system.backend.name();
    std::fs::create_dir_all(request.out_dir)
        .map_err(|source| io_error("create", request.out_dir, source))?;
    let staging = staging_in(request.out_dir, ".crosswheel-")
        .map_err(|source| io_error("create a folder in", request.out_dir, source))?;
    let outcome = cross_run.run("build_wheel", Some(staging.path()))?;
    log.append(&outcome.output)?;
    log.show(&outcome.output);
    let wheel_name = match (
        outcome.success,
        outcome.result.as_ref().and_then(Value::as_str),
    ) {
        (true, Some(name)) => name.to_string(),
        _ => {
            if let Some(line) = foreign_library_line(&outcome.output, target, origins) {
                return Err(BuildError::ForeignLibrary {
                    line,
                    log: Box::new(log.path),
                });
            }
            let mut failure = log.failure(outcome.status, &outcome.output);
            let has_sdk = request.environment.contains_key("SDKROOT");
            let hints = [
                exec_format_hint(&outcome.output, request.cross_env),
                sdk_header_hint(&outcome.output, target, has_sdk),
            ];
            for hint in hints.into_iter().flatten() {
                failure.excerpt.push('\n');
                failure.excerpt.push_str(&hint);
            }
            return Err(BuildError::BackendFailed {
                project: project.name.clone(),
                target: target.to_string(),
                toolchain: request.cross_env.toolchain().description.clone(),
                backend,
                failure,
            });
        }
    };
    let expected = target.platform_tag();
    if !wheel_platform_matches(&wheel_name, &expected) {
        return Err(BuildError::WrongPlatform {
            backend,
            wheel: wheel_name,
            target: target.id().to_string(),
            expected,
            log: Box::new(log.path),
        });
    }
    check_compiled(&staging.path().join(&wheel_name), &outcome.output, || {
        (backend, target.id().to_string(), log.path.clone())
    })?;
    let path = request.out_dir.join(&wheel_name);
    std::fs::rename(staging.path().join(&wheel_name), &path)
        .map_err(|source| io_error("move the wheel to", &path, source))?;
    Ok(path)
}

/// cibuildwheel's words for a pure wheel where a platform wheel was expected (exit code 5),
/// which CI logs and cibuildwheel's own test_pure_wheel look for.
fn pure_wheel_words(wheel: &str) -> &'static str {
    if wheel.ends_with("-none-any.whl") {
        "Build failed because a pure Python wheel was generated. "
    } else {
        ""
    }
}
