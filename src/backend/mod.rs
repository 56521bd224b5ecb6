//! The build stage, `backend`: a PEP 517 frontend that runs a project's backend inside a cross
//! environment and returns the wheel it built. Knows nothing of repair.
//!
//! Per build: build requirements go into a cached host venv (no cross variables reach
//! pip), target-form requirements are unpacked for the target, the source tree is copied
//! into a scratch folder (per-target isolation; setuptools' `build/` and `*.egg-info`
//! never land in the user's tree), `get_requires_for_build_wheel` runs as a host process,
//! then `build_wheel` runs with the cross variables. The wheel is built into a temp
//! folder inside `out_dir` and renamed into place only on success.

mod driver;
mod frontend;
mod host_env;
mod project;
mod target_wheels;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

pub use frontend::{Frontend, InstallerKind};
pub use host_env::HostEnv;
pub use project::{Backend, BuildSystem, Project};
pub use target_wheels::prepare_target_site;

use crate::crossenv::CrossEnv;
use crate::host::{BuildPython, CROSS_ONLY_VARS, Cache};
use crate::toolchain::{DEBUG_INFO_MARKER, WRAPPER_NOTES_VAR, wrapper_notices};

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("{path} is not valid TOML: {message}")]
    BadPyproject { path: PathBuf, message: String },
    #[error("installing the build requirements {requires} failed:\n{output}")]
    InstallRequires { requires: String, output: String },
    #[error("build-frontend {frontend} needs uv: {reason}")]
    NoUv { frontend: String, reason: String },
    #[error(
        "without build isolation the build python {} must have the build requirements, and it lacks {missing}: install them into it, or pass -x (--skip-dependency-check) in the build-frontend args",
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
    #[error("{backend} built {wheel} for {target}, a wheel without its extensions: {}; full log: {}", .cause, .log.display())]
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
}

#[derive(Debug, Clone)]
pub struct BuiltWheel {
    pub path: PathBuf,
    pub backend: Backend,
    pub log: PathBuf,
    pub duration: Duration,
}

/// Runs the project's PEP 517 backend for the cross environment's target: the build
/// requirements in a host venv, `get_requires_for_build_wheel` on the host, then
/// `build_wheel` with every variable of the cross environment set.
pub fn build_wheel(request: &BuildRequest<'_>) -> Result<BuiltWheel, BuildError> {
    let started = Instant::now();
    let project = Project::read(request.project_dir)?;
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
    let env_request = host_env::EnvRequest {
        cache: request.cache,
        python: request.python,
        frontend: request.frontend,
        constraints: request.constraints,
        environment: request.environment,
        project_dir: &project.dir,
        offline: request.offline,
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

    let path_var = prepend_path(&host_env.bin);
    let host_vars = BTreeMap::from([("PATH".to_string(), path_var.clone())]);
    let user_settings = settings_map(request.config_settings);
    let host_run = driver::HookRun {
        python: &host_env.python,
        source_dir: &source_dir,
        scratch_dir: scratch.path(),
        backend: &system.build_backend,
        backend_path: &system.backend_path,
        config_settings: &user_settings,
        env: &host_vars,
        remove: CROSS_ONLY_VARS,
    };
    let extra = requires_for_build_wheel(&host_run, &project, &mut log)?;
    host_env.install(&extra, request.offline)?;

    let build_requires: Vec<String> = system.requires.iter().chain(&extra).cloned().collect();
    let header_requires =
        target_wheels::header_requirements(&build_requires, request.target_requires);
    let mut cross_vars =
        cross_variables(request, &project, &source_dir, path_var, &header_requires)?;
    let wrapper_notes = scratch.path().join("wrapper-notes");
    std::fs::create_dir_all(&wrapper_notes)
        .map_err(|source| io_error("create", &wrapper_notes, source))?;
    // A very verbose build (build-verbosity 2 and up) is one to debug: its links keep
    // debug info, as with -g in the project's flags.
    if request.verbosity >= 2 {
        let marker = wrapper_notes.join(DEBUG_INFO_MARKER);
        std::fs::write(&marker, "").map_err(|source| io_error("write", &marker, source))?;
    }
    cross_vars.insert(
        WRAPPER_NOTES_VAR.to_string(),
        wrapper_notes.to_string_lossy().into_owned(),
    );
    let mut user_settings = request.config_settings.to_vec();
    if request.verbosity >= 2 && system.backend == Backend::ScikitBuildCore {
        user_settings.push(("build.verbose".to_string(), "true".to_string()));
    }
    let mut settings_pairs = backend_settings(system.backend, request.cross_env);
    if system.backend == Backend::MesonPython {
        let python_file = scratch.path().join("meson-python.ini");
        std::fs::write(&python_file, meson_python_file(&host_env.python))
            .map_err(|source| io_error("write", &python_file, source))?;
        settings_pairs.push((
            "setup-args".into(),
            format!("--cross-file={}", python_file.display()),
        ));
    }
    settings_pairs.extend(user_settings);
    let settings = settings_map(&settings_pairs);
    let cross_run = driver::HookRun {
        config_settings: &settings,
        env: &cross_vars,
        remove: &[],
        ..host_run
    };
    let built = run_build_wheel(&cross_run, request, &project, log);
    for notice in wrapper_notices(&wrapper_notes) {
        tracing::warn!("{notice}");
    }
    let path = built?;
    Ok(BuiltWheel {
        path,
        backend: system.backend,
        log: log_path_of(request, &project),
        duration: started.elapsed(),
    })
}

fn io_error(action: &'static str, path: &Path, source: std::io::Error) -> BuildError {
    BuildError::Io(crate::io_error::IoError::new(action, path, source))
}

/// The backend's output of one build, written to `<cache>/logs/` whatever happens.
struct BuildLog {
    path: PathBuf,
    text: String,
    /// `build-verbosity` 1 or more: the output is shown too.
    shown: bool,
}

fn log_path_of(request: &BuildRequest<'_>, project: &Project) -> PathBuf {
    request.cache.root().join("logs").join(format!(
        "{}-{}-{}.log",
        project.name,
        request.cross_env.target.id(),
        request.python.abi_tag()
    ))
}

impl BuildLog {
    fn create(request: &BuildRequest<'_>, project: &Project) -> Result<Self, BuildError> {
        let path = log_path_of(request, project);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| io_error("create", dir, source))?;
        }
        Ok(BuildLog {
            path,
            text: String::new(),
            shown: request.verbosity >= 1,
        })
    }

    /// Shows a hook's output when `build-verbosity` asks for it (as `pip -v` shows the
    /// backend's), through the identifier's output so concurrent builds stay apart.
    fn show(&self, output: &str) {
        if self.shown && !output.is_empty() {
            crate::logging::echo(output.as_bytes());
            if !output.ends_with('\n') {
                crate::logging::echo(b"\n");
            }
        }
    }

    fn append(&mut self, output: &str) -> Result<(), BuildError> {
        self.text.push_str(output);
        write_log(&self.path, &self.text)
    }

    fn failure(&self, status: String, output: &str) -> Box<Failure> {
        Box::new(Failure {
            status,
            excerpt: driver::error_excerpt(output),
            log: self.path.clone(),
        })
    }
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

/// The cross environment's variables for the backend, with the target-form requirements'
/// site (`target-requires`) on PKG_CONFIG_LIBDIR and the user's `environment` last.
fn cross_variables(
    request: &BuildRequest<'_>,
    project: &Project,
    source_dir: &Path,
    path_var: String,
    header_requires: &[String],
) -> Result<BTreeMap<String, String>, BuildError> {
    let mut vars = request.cross_env.env_vars();
    if project.build_system.backend == Backend::MesonPython {
        // meson-python turns ARCHFLAGS on a non-mac host into its own cross file with the
        // host `cc -arch arm64`, which overrides ours.
        vars.remove("ARCHFLAGS");
    }
    vars.insert("PATH".to_string(), path_var);
    // As cibuildwheel sets it: projects use it to make a failed extension build fatal
    // instead of falling back to a pure wheel.
    vars.insert("CIBUILDWHEEL".to_string(), "1".to_string());
    vars.insert("CROSSWHEEL".to_string(), "1".to_string());
    // Read by the compiler wrappers, which map these away in debug info.
    vars.insert(
        "CROSSWHEEL_SOURCE_DIR".to_string(),
        source_dir.to_string_lossy().into_owned(),
    );
    vars.insert(
        "CROSSWHEEL_CROSSENV_DIR".to_string(),
        request.cross_env.root.to_string_lossy().into_owned(),
    );
    if let Some(site) = target_site(request, header_requires)? {
        let mut pkgconfig_dirs = pkgconfig_dirs_under(&site);
        pkgconfig_dirs.push(request.cross_env.pkgconfig_dir.clone());
        let joined = std::env::join_paths(&pkgconfig_dirs).map_err(|err| {
            io_error(
                "put on PKG_CONFIG_LIBDIR the pkg-config folders of",
                &site,
                std::io::Error::other(err.to_string()),
            )
        })?;
        vars.insert(
            "PKG_CONFIG_LIBDIR".to_string(),
            joined.to_string_lossy().into_owned(),
        );
        vars.insert(
            "CROSSWHEEL_TARGET_SITE".to_string(),
            site.to_string_lossy().into_owned(),
        );
    }
    vars.extend(
        request
            .environment
            .iter()
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    keep_cross_path_first(&mut vars, &request.cross_env.sysconfig_dir);
    Ok(vars)
}

/// The target's wheels of `target-requires` and of the build requirements whose headers
/// are per platform (numpy), unpacked; `None` when there are none. A header package
/// without a wheel for the target (numpy on ppc64le) leaves the build machine's copy in
/// place, said in one line.
fn target_site(
    request: &BuildRequest<'_>,
    header_requires: &[String],
) -> Result<Option<PathBuf>, BuildError> {
    let target = &request.cross_env.target;
    let prepare = |requires: &[String]| {
        let mut requires = requires.to_vec();
        // The same set, however it was spelt, must map to the same cached site.
        requires.sort();
        requires.dedup();
        if requires.is_empty() {
            return Ok(None);
        }
        prepare_target_site(
            request.cache,
            target,
            request.python,
            &requires,
            request.offline,
        )
        .map(Some)
    };
    if header_requires.is_empty() {
        return prepare(request.target_requires);
    }
    let all: Vec<String> = request
        .target_requires
        .iter()
        .chain(header_requires)
        .cloned()
        .collect();
    match prepare(&all) {
        Ok(site) => {
            tracing::info!(
                "{} is a build requirement with per-platform headers: the build compiles against its {target} wheel",
                header_requires.join(", ")
            );
            Ok(site)
        }
        Err(BuildError::TargetRequires { .. }) => {
            tracing::warn!(
                "no {target} wheel of {} to take headers from: the build uses the build machine's (list it in `target-requires` to make this an error)",
                header_requires.join(", ")
            );
            prepare(request.target_requires)
        }
        Err(error) => Err(error),
    }
}

/// A user's `PYTHONPATH=...` in `environment` replaces the variable; the cross
/// environment's folder (the target's sysconfig) must stay first on it, or the build sees
/// the host again.
fn keep_cross_path_first(vars: &mut BTreeMap<String, String>, sysconfig_dir: &Path) {
    let ours = sysconfig_dir.to_string_lossy().into_owned();
    let current = vars.get("PYTHONPATH").cloned().unwrap_or_default();
    if current.split(':').next() != Some(ours.as_str()) {
        let rest: Vec<&str> = current
            .split(':')
            .filter(|entry| !entry.is_empty() && *entry != ours)
            .collect();
        let mut value = ours;
        for entry in rest {
            value.push(':');
            value.push_str(entry);
        }
        vars.insert("PYTHONPATH".to_string(), value);
    }
}

/// Runs `build_wheel` into a staging folder inside `out_dir`, checks the wheel is for the
/// target, and moves it into `out_dir`.
fn run_build_wheel(
    cross_run: &driver::HookRun<'_>,
    request: &BuildRequest<'_>,
    project: &Project,
    mut log: BuildLog,
) -> Result<PathBuf, BuildError> {
    let target = &request.cross_env.target;
    let backend = project.build_system.backend.name();
    std::fs::create_dir_all(request.out_dir)
        .map_err(|source| io_error("create", request.out_dir, source))?;
    let staging = tempfile::Builder::new()
        .prefix(".crosswheel-")
        .tempdir_in(request.out_dir)
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
            let mut failure = log.failure(outcome.status, &outcome.output);
            if let Some(hint) = exec_format_hint(&outcome.output, request.cross_env) {
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

/// As cibuildwheel: a platform build whose wheel comes out pure lost its extensions (a
/// failed optional build the project fell back from) or needs no platform build at all;
/// either way it must not pass as a target wheel. A platform-tagged wheel without any
/// compiled module is the same fallback when the log shows a failed compiler or linker.
fn check_compiled(
    wheel: &Path,
    output: &str,
    context: impl FnOnce() -> (&'static str, String, PathBuf),
) -> Result<(), BuildError> {
    let name = wheel
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let first_error = driver::first_diagnostic(output);
    let pure = is_pure_wheel(&name);
    if !pure && (first_error.is_none() || has_compiled_module(wheel)?) {
        return Ok(());
    }
    let cause = match (first_error, pure) {
        (Some(line), true) => format!("the extension build failed first: `{line}`"),
        (Some(line), false) => format!("it holds no compiled module; the extension build failed first: `{line}`"),
        (None, _) => "the log shows no failed compiler or linker; a project without extensions needs no cross build (`python -m build --wheel` makes its one wheel)".to_string(),
    };
    let (backend, target, log) = context();
    Err(BuildError::NoExtension {
        backend,
        wheel: name,
        target,
        cause,
        log: Box::new(log),
    })
}

fn has_compiled_module(wheel: &Path) -> Result<bool, BuildError> {
    let archive =
        crate::wheel::WheelArchive::open(wheel).map_err(|error| BuildError::BadBuiltWheel {
            wheel: wheel.to_path_buf(),
            message: error.to_string(),
        })?;
    Ok(archive.entries().iter().any(|entry| {
        let file = entry.name.rsplit('/').next().unwrap_or_default();
        file.ends_with(".so") || file.ends_with(".dylib") || file.contains(".so.")
    }))
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

fn settings_map(pairs: &[(String, String)]) -> BTreeMap<String, Value> {
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

/// `name-1.0-cp311-cp311-linux_aarch64.whl` matches `linux_aarch64`; a pure wheel matches
/// any target.
/// `py3-none-any` and the like: no ABI, no platform.
fn is_pure_wheel(wheel_name: &str) -> bool {
    let stem = wheel_name.strip_suffix(".whl").unwrap_or(wheel_name);
    let mut tags = stem.rsplit('-');
    let platform = tags.next().unwrap_or_default();
    let abi = tags.next().unwrap_or_default();
    platform == "any" && abi == "none"
}

/// A hint for a build that started a target program directly (a code generator compiled
/// for the target, a configure-style test program): the kernel only runs it through
/// binfmt_misc, and a macOS program not at all.
fn exec_format_hint(output: &str, cross_env: &CrossEnv) -> Option<String> {
    let line = output
        .lines()
        .find(|line| line.contains("Exec format error"))?;
    let program = line
        .split_once("Exec format error")
        .map(|(_, rest)| {
            rest.trim_start_matches([':', ' '])
                .trim_matches(['\'', '"', ' '])
        })
        .filter(|program| !program.is_empty())
        .unwrap_or("a program");
    let target = &cross_env.target;
    Some(match target.linux_arch() {
        Some(arch) => format!(
            "crosswheel: the build started {program}, a {target} program, directly; the kernel runs such programs only with qemu-user registered in binfmt_misc (as root: `apt-get install qemu-user-static binfmt-support && update-binfmts --enable qemu-{}`), or the build can start it through $CROSSWHEEL_RUN_PROGRAM",
            arch.machine()
        ),
        None => format!(
            "crosswheel: the build started {program}, a {target} program, which cannot run on this Linux build machine: build it for the build machine, or give the build the answer it computes"
        ),
    })
}

fn wheel_platform_matches(wheel_name: &str, expected: &str) -> bool {
    let stem = wheel_name.strip_suffix(".whl").unwrap_or(wheel_name);
    let platforms = stem.rsplit('-').next().unwrap_or_default();
    platforms
        .split('.')
        .any(|platform| platform == expected || platform == "any")
}

fn prepend_path(dir: &Path) -> String {
    match std::env::var("PATH") {
        Ok(existing) if !existing.is_empty() => format!("{}:{existing}", dir.display()),
        _ => dir.to_string_lossy().into_owned(),
    }
}

fn pkgconfig_dirs_under(site: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = walkdir::WalkDir::new(site)
        .max_depth(4)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_dir() && entry.file_name() == "pkgconfig")
        .map(|entry| entry.into_path())
        .collect();
    dirs.sort();
    dirs
}

fn write_log(path: &Path, text: &str) -> Result<(), BuildError> {
    std::fs::write(path, text).map_err(|source| {
        BuildError::Io(crate::io_error::IoError::new(
            "write",
            path.to_path_buf(),
            source,
        ))
    })
}

/// Folders a build must not see: VCS data, caches, previous build outputs.
fn skip_in_copy(relative: &Path, is_dir: bool) -> bool {
    let Some(name) = relative.file_name().and_then(|name| name.to_str()) else {
        return false;
    };
    let top_level = relative.components().count() == 1;
    is_dir
        && (matches!(
            name,
            ".git" | ".hg" | "__pycache__" | ".tox" | ".nox" | ".venv" | ".pytest_cache"
        ) || name.ends_with(".egg-info")
            || name.starts_with(".mesonpy-")
            || (top_level && matches!(name, "build" | "dist" | "wheelhouse" | "target")))
}

fn copy_source_tree(from: &Path, to: &Path) -> Result<(), BuildError> {
    let walker = walkdir::WalkDir::new(from)
        .into_iter()
        .filter_entry(|entry| {
            let relative = entry.path().strip_prefix(from).unwrap_or(entry.path());
            !skip_in_copy(relative, entry.file_type().is_dir())
        });
    for entry in walker {
        let entry = entry.map_err(|err| {
            BuildError::Io(crate::io_error::IoError::new(
                "copy",
                from.to_path_buf(),
                std::io::Error::other(err.to_string()),
            ))
        })?;
        let relative = entry.path().strip_prefix(from).unwrap_or(entry.path());
        let dest = to.join(relative);
        let io = |source| {
            BuildError::Io(crate::io_error::IoError::new(
                "copy",
                entry.path().to_path_buf(),
                source,
            ))
        };
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).map_err(io)?;
        } else if entry.file_type().is_symlink() {
            let link = std::fs::read_link(entry.path()).map_err(io)?;
            std::os::unix::fs::symlink(link, &dest).map_err(io)?;
        } else {
            std::fs::copy(entry.path(), &dest).map_err(io)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_users_pythonpath_keeps_the_cross_environment_first() {
        let ours = Path::new("/cache/crossenv/x/sysconfig");
        let mut vars = BTreeMap::from([(
            "PYTHONPATH".to_string(),
            "/src:/cache/crossenv/x/sysconfig:/lib".to_string(),
        )]);
        keep_cross_path_first(&mut vars, ours);
        assert_eq!(vars["PYTHONPATH"], "/cache/crossenv/x/sysconfig:/src:/lib");
        let mut unset = BTreeMap::new();
        keep_cross_path_first(&mut unset, ours);
        assert_eq!(unset["PYTHONPATH"], "/cache/crossenv/x/sysconfig");
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

    #[test]
    fn wheel_platform_check_reads_compressed_tag_sets() {
        assert!(wheel_platform_matches(
            "a-1-cp311-cp311-linux_aarch64.whl",
            "linux_aarch64"
        ));
        assert!(wheel_platform_matches(
            "a-1-py3-none-any.whl",
            "linux_ppc64le"
        ));
        assert!(wheel_platform_matches(
            "a-1-cp311-cp311-macosx_11_0_arm64.macosx_11_0_universal2.whl",
            "macosx_11_0_arm64"
        ));
        assert!(!wheel_platform_matches(
            "a-1-cp311-cp311-linux_x86_64.whl",
            "linux_aarch64"
        ));
    }

    #[test]
    fn a_wheel_without_abi_and_platform_is_pure() {
        assert!(is_pure_wheel("a-1-py3-none-any.whl"));
        assert!(is_pure_wheel("a-1-py2.py3-none-any.whl"));
        assert!(!is_pure_wheel("a-1-cp311-abi3-linux_aarch64.whl"));
        assert!(!is_pure_wheel("a-1-cp311-cp311-macosx_11_0_arm64.whl"));
    }

    #[test]
    fn source_copy_skips_vcs_and_previous_outputs_but_not_nested_build_dirs() {
        assert!(skip_in_copy(Path::new(".git"), true));
        assert!(skip_in_copy(Path::new("build"), true));
        assert!(skip_in_copy(Path::new("src/pkg.egg-info"), true));
        assert!(!skip_in_copy(Path::new("src/build"), true));
        assert!(!skip_in_copy(Path::new("build"), false));
    }
}
