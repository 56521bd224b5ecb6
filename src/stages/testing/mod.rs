//! The test stage: install a wheel into a fresh environment on a real target CPython —
//! under qemu-user, or natively when the host runs the target (Linux on its own
//! architecture, macOS arm64 on an arm64 Mac) — and run the project's test command there.
//! Where nothing can execute the wheel, [`plan`] says so and the caller runs the static
//! load check instead.
//!
//! The command runs from a temporary folder holding only the `test-sources`, so the
//! project's source tree cannot shadow the installed wheel.

mod debian;
pub mod emulator;
mod host_python;
mod pip_output;
mod pip_shim;
mod platform;
pub mod requirement_build;
mod run;
mod smoke;
mod source_build;
mod stage;
mod venv;

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::formats::wheel::{AbiTag, LanguageTag};
use crate::input::options::{Environment, ProjectPaths};
use crate::python_tag::PythonTag;
use crate::support::host::Network;
use crate::support::sysroot::{LinuxArch, SysrootError};

pub use emulator::{BINFMT_MISC_DIR, BinfmtStatus, Emulator, binfmt_status, find_qemu};

pub use platform::{Host, TestPlan, TestPlatform, plan};
pub use requirement_build::{
    Builder, BuiltRequirement, RequirementBuildFailure, RequirementBuilder,
};
pub use smoke::SmokeTest;
pub use source_build::foreign_binary as foreign_elf;
pub use stage::{Verdict, test_or_check};

use run::{Echo, Log};
use venv::TargetEnv;

#[derive(Debug, thiserror::Error)]
pub enum TestError {
    #[error(transparent)]
    Sysroot(#[from] SysrootError),
    #[error(transparent)]
    Io(#[from] crate::io_error::IoError),
    #[error(
        "no qemu-user for {arch}: {looked_in} is missing; install the host's qemu-user-static package"
    )]
    QemuMissing { arch: LinuxArch, looked_in: PathBuf },
    #[error(
        "crosswheel cannot emulate targets on a {arch} host: it runs on x86_64, aarch64 and ppc64le"
    )]
    UnsupportedHost { arch: &'static str },
    #[error(
        "a Linux {arch} wheel cannot be tested on this host: its tests run on a Linux host (natively or under qemu-user)"
    )]
    LinuxWheelOnForeignHost { arch: LinuxArch },
    #[error(
        "a musllinux {arch} wheel is tested on a musl CPython, which Debian does not ship, and crosswheel builds none of this wheel's version (config/target-cpython.toml): give one's root with --target-python"
    )]
    NoMuslPython { arch: LinuxArch },
    #[error("{platform} wheels cannot be executed here; use the static load check")]
    NotExecutableHere { platform: TestPlatform },
    #[error("the sysroot {path} is unusable ({detail}): delete it and run again")]
    BrokenSysroot { path: PathBuf, detail: String },
    #[error("native tests need `{name}` on PATH ({detail})")]
    NoHostPython { name: String, detail: String },
    #[error("cannot install {what} for {platform}: {reason} (full output in {log})")]
    Install {
        what: String,
        platform: TestPlatform,
        reason: String,
        log: PathBuf,
    },
    #[error("test-sources entry `{entry}` must be a path inside the project {project}")]
    TestSourceOutsideProject { entry: PathBuf, project: PathBuf },
    #[error("test-sources entry {path} does not exist")]
    TestSourceMissing { path: PathBuf },
    #[error("{}: no test runner for platform {platforms}", .wheel.display())]
    NoTestRunner { wheel: PathBuf, platforms: String },
    #[error(
        "{}: its platform tags ({platforms}) are not the build target's {wanted}: the wheel is not what the build made",
        .wheel.display()
    )]
    NotTheTargetsWheel {
        wheel: PathBuf,
        platforms: String,
        wanted: TestPlatform,
    },
    #[error(transparent)]
    LoadCheck(anyhow::Error),
    #[error("test-environment: {0}")]
    TestEnvironment(String),
    #[error(
        "{asked}; Debian {release} has {version} for {arch} ({package}) and the index has no {arch} wheel: {advice}"
    )]
    DebianVersion {
        /// Who asked for what: `contourpy 1.3.3 requires numpy>=1.25`.
        asked: String,
        package: String,
        version: String,
        release: String,
        arch: LinuxArch,
        /// What to do, which depends on who asked.
        advice: String,
    },
    #[error(
        "{asked}; the index has no {arch} wheel, {debian}, and building it here from its sdist failed: {failure}"
    )]
    RequirementBuild {
        asked: String,
        arch: LinuxArch,
        /// What Debian has: `Debian bookworm has 1.24.2`, or `Debian has none`.
        debian: String,
        failure: RequirementBuildFailure,
    },
    #[error("cannot write a placeholder wheel for a Debian package: {0}")]
    Placeholder(String),
    #[error(
        "cannot install {requirements} for {arch}: the index has no {arch} wheel ({host_reason}), Debian provides none, and building it under emulation needs a compiler, which crosswheel does not give it (the host's would build x86-64 code): map it to a Debian package in config/debian/python-packages.toml or provide a {arch} wheel (PIP_FIND_LINKS); log: {}",
        .log.display()
    )]
    NeedsCompiler {
        requirements: String,
        arch: LinuxArch,
        host_reason: String,
        log: PathBuf,
    },
    #[error(
        "pip under emulation built {} with {file} for {found}, not {expected}: refused, and the wheel deleted",
        .wheel.display()
    )]
    WrongArchitecture {
        wheel: PathBuf,
        file: String,
        found: String,
        expected: &'static str,
    },
    #[error("cannot read a wheel pip built under emulation: {0}")]
    UnreadableBuild(String),
    #[error("before-test failed ({status}): {reason}; log: {}", .log.display())]
    BeforeTest {
        status: String,
        reason: String,
        log: PathBuf,
    },
}

impl TestError {
    pub(crate) fn io<'a>(
        action: &'static str,
        path: &'a Path,
    ) -> impl FnOnce(io::Error) -> Self + 'a {
        move |source| TestError::Io(crate::io_error::IoError::new(action, path, source))
    }
}

/// What to run against a wheel; mirrors the `test-*` options of `[tool.crosswheel]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestSpec {
    /// A shell command; `{project}` expands to the (shell-quoted) project root,
    /// `{package}` to the package folder.
    pub test_command: String,
    /// Requirements installed beside the wheel (`pytest`, `numpy>=2`, ...).
    pub test_requires: Vec<String>,
    /// `test-extras`: extras of the wheel installed with it (`wheel.whl[test]`), from the
    /// wheel's own metadata, as cibuildwheel installs them.
    pub test_extras: Vec<String>,
    /// The CPython the tests run on; see [`python_version_of_wheel`].
    pub python_version: PythonTag,
    /// The platform the wheel is tested as, from the build's target (the pipeline);
    /// `None`: the first of the wheel's platform tags this host can test (`crosswheel
    /// test` on a wheel of unknown origin).
    pub platform: Option<TestPlatform>,
    /// Files or folders, relative to the project, copied into the folder the command
    /// runs from.
    pub test_sources: Vec<PathBuf>,
    /// The project root: `before-test` runs here, test sources are relative to it.
    pub project_dir: PathBuf,
    /// The package folder (`{package}`), the root itself or a folder in it; `None`: the root.
    pub package_dir: Option<PathBuf>,
    /// qemu's `-cpu`; `None` picks the architecture's `qemu_cpu` (`LinuxArch::qemu_cpu`). Ignored when running natively.
    pub qemu_cpu: Option<String>,
    /// crosswheel's cache (sysroots, qemu); normally [`crate::support::host::Cache::from_env`].
    pub cache_dir: PathBuf,
    /// Where `<wheel name>.test.log` is written, unless `log_file` names the file.
    pub log_dir: PathBuf,
    /// The test log; `None`: `<log_dir>/<wheel name>.test.log`.
    pub log_file: Option<PathBuf>,
    /// Builds test requirements that neither the index nor Debian has a target wheel of
    /// (see [`requirement_build`]); `None`: such a requirement is an error.
    pub requirement_builder: Option<Builder>,
    /// `before-test`: run in the test environment (its venv first on PATH), in the project
    /// folder, before the wheel and the requirements are installed.
    pub before_test: Option<String>,
    /// The build's `environment`, evaluated: set for the installs, `before-test` and the
    /// test command (its `PATH` under the test venv's own `bin`).
    pub environment: BTreeMap<String, String>,
    /// `test-environment`: applied last, for the installs, `before-test` and the test
    /// command only.
    pub test_environment: Environment,
    /// `target-python`: the user's own target CPython for an emulated run (a version
    /// Debian does not ship); see [`crate::support::sysroot::Sysroot::user_supplied`].
    pub target_python: Option<PathBuf>,
    /// Whether target CPythons (and qemu-user, when it is not on PATH) may be downloaded,
    /// and from which Debian mirror (`debian-mirror`; Debian's own when unset).
    pub network: Network,
    /// `test-timeout`: the test command is killed (with its process group) after this.
    pub timeout: Option<Duration>,
}

impl Default for TestSpec {
    /// Nothing to run, on the default target CPython.
    fn default() -> Self {
        TestSpec {
            test_command: String::new(),
            test_requires: Vec::new(),
            test_extras: Vec::new(),
            python_version: crate::support::sysroot::default_target_python(),
            platform: None,
            test_sources: Vec::new(),
            project_dir: PathBuf::new(),
            package_dir: None,
            qemu_cpu: None,
            cache_dir: PathBuf::new(),
            log_dir: PathBuf::new(),
            log_file: None,
            requirement_builder: None,
            before_test: None,
            environment: BTreeMap::new(),
            test_environment: Environment::default(),
            target_python: None,
            network: Network::default(),
            timeout: None,
        }
    }
}

/// A test command killed at its `test-timeout`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimedOut {
    pub after: Duration,
    /// The last non-empty line it printed: with `pytest -v`, the last test that ran.
    pub last_output: Option<String>,
}

impl std::fmt::Display for TimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "timed out after {}", format_duration(self.after))?;
        match &self.last_output {
            Some(line) => write!(f, "; the last test that printed: `{line}`"),
            None => write!(f, "; it printed nothing"),
        }
    }
}

/// `30s`, `30m`, `1h30m`: as `test-timeout` accepts it.
pub fn format_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    let (hours, minutes, rest) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    let mut text = String::new();
    if hours > 0 {
        text.push_str(&format!("{hours}h"));
    }
    if minutes > 0 {
        text.push_str(&format!("{minutes}m"));
    }
    if rest > 0 || text.is_empty() {
        text.push_str(&format!("{rest}s"));
    }
    text
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestMode {
    Emulated,
    Native,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestOutcome {
    pub mode: TestMode,
    /// Whether the test command exited with status 0.
    pub passed: bool,
    /// Set when the command ran past `test-timeout` and was killed (`passed` is false).
    pub timed_out: Option<TimedOut>,
    /// The whole stage: environment, installation and test command.
    pub duration: Duration,
    /// Installation and test output, in order.
    pub log_path: PathBuf,
}

/// Installs `wheel` and the test requirements into a fresh environment on a CPython for
/// `platform` and runs the test command there, streaming its output to stderr and the log.
///
/// A failing test command is an outcome (`passed: false`); anything that prevents
/// running it (no sysroot, an uninstallable requirement, a platform this host can only
/// check statically) is an error.
pub fn test_wheel(
    wheel: &Path,
    platform: TestPlatform,
    spec: &TestSpec,
) -> Result<TestOutcome, TestError> {
    let test_plan = plan(platform, Host::current())?;
    let started = Instant::now();
    let wheel = std::path::absolute(wheel).map_err(TestError::io("resolve", wheel))?;
    let project = std::path::absolute(&spec.project_dir)
        .map_err(TestError::io("resolve", &spec.project_dir))?;
    let wheel_stem = wheel
        .file_stem()
        .map_or_else(|| "wheel".into(), |s| s.to_string_lossy().into_owned());
    let log_file = spec
        .log_file
        .clone()
        .unwrap_or_else(|| spec.log_dir.join(format!("{wheel_stem}.test.log")));
    let mut log = Log::create(&log_file)?;
    let (mode, emulated_arch) = match test_plan {
        TestPlan::Native => (TestMode::Native, None),
        TestPlan::Emulated(arch) => (TestMode::Emulated, Some(arch)),
        TestPlan::StaticLoadCheck => return Err(TestError::NotExecutableHere { platform }),
    };
    log.note(&format!(
        "testing {} on {platform} ({mode:?})",
        wheel.display()
    ))?;

    let scratch = tempfile::Builder::new()
        .prefix("crosswheel-test-")
        .tempdir()
        .map_err(TestError::io(
            "create a temporary folder in",
            &std::env::temp_dir(),
        ))?;
    let env_root = scratch.path().join("venv");
    let mut requirements = vec![with_extras(&wheel, &spec.test_extras)];
    requirements.extend(spec.test_requires.iter().cloned());
    let env = match emulated_arch {
        None => TargetEnv::native(&env_root, platform, spec.python_version)?,
        Some(target) => emulated_env(&env_root, target, spec, &project, &requirements, &mut log)?,
    };

    let (vars, install_vars) = test_variables(&env, spec, &project)?;
    if let Some(before_test) = &spec.before_test {
        run_before_test(before_test, &project, &vars, &mut log)?;
    }

    let install_started = Instant::now();
    let installed_by = env.install(&requirements, &install_vars, &mut log)?;
    log.note(&format!(
        "installed in {:.1} s",
        install_started.elapsed().as_secs_f64()
    ))?;
    for line in debian::requirement_sources(&spec.test_requires, &env, &installed_by) {
        tracing::info!("{line}");
        log.note(&line)?;
    }

    let workdir = scratch.path().join("work");
    fs::create_dir_all(&workdir).map_err(TestError::io("create", &workdir))?;
    copy_test_sources(&project, &spec.test_sources, &workdir)?;
    if spec.test_sources.is_empty() {
        let test_fail = workdir.join("test_fail.py");
        fs::write(&test_fail, TEST_FAIL_PY).map_err(TestError::io("write", &test_fail))?;
    }

    let paths = ProjectPaths::new(&project, spec.package_dir.as_deref().unwrap_or(&project));
    let command_line = crate::input::options::fill_project(&spec.test_command, &paths);
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(&command_line)
        .current_dir(&workdir)
        .env_clear()
        .envs(&vars);
    let command_started = Instant::now();
    let finished = log.run_limited(command, Echo::Yes, spec.timeout)?;
    log.note(&format!(
        "test command took {:.1} s",
        command_started.elapsed().as_secs_f64()
    ))?;
    let timed_out = finished.timed_out.map(|after| TimedOut {
        after,
        last_output: finished.last_line().map(str::to_string),
    });
    if let Some(timed_out) = &timed_out {
        tracing::error!("test command {timed_out}; killed with its process group");
        log.note(&format!("{timed_out}"))?;
    }

    Ok(TestOutcome {
        mode,
        passed: finished.status.success() && timed_out.is_none(),
        timed_out,
        duration: started.elapsed(),
        log_path: log.path().to_path_buf(),
    })
}

/// Whether this run has not yet warned about `arch`'s binfmt_misc handler.
fn first_binfmt_warning(arch: LinuxArch) -> bool {
    static WARNED: std::sync::Mutex<Vec<LinuxArch>> = std::sync::Mutex::new(Vec::new());
    let mut warned = WARNED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if warned.contains(&arch) {
        return false;
    }
    warned.push(arch);
    true
}

/// The venv on a target CPython under qemu, on a tree with Debian's Python packages when
/// the index lacks target wheels of some requirements (see [`debian::emulated_env`]).
fn emulated_env(
    env_root: &Path,
    target: LinuxArch,
    spec: &TestSpec,
    project: &Path,
    requirements: &[String],
    log: &mut Log,
) -> Result<TargetEnv, TestError> {
    let emulator = Emulator::new(
        &spec.cache_dir,
        target,
        spec.python_version,
        spec.target_python.as_deref(),
        &spec.network,
        spec.qemu_cpu.clone(),
    )?;
    // A musl CPython of the host's own architecture runs under qemu only for its loader:
    // the kernel runs the programs it starts natively, binfmt_misc or not.
    let native_programs =
        LinuxArch::from_rust_arch(std::env::consts::ARCH, cfg!(target_endian = "little"))
            == Some(target);
    let binfmt_problem = binfmt_status(target, Path::new(BINFMT_MISC_DIR)).problem(target);
    if let Some(problem) = binfmt_problem.filter(|_| !native_programs) {
        // Not fatal: the venv's python launches itself through qemu, so Python
        // subprocesses work; only other target programs need the kernel's help. Every
        // test log says so; the terminal once per run and architecture.
        if first_binfmt_warning(target) {
            tracing::warn!("{problem}");
        }
        log.note(&format!("warning: {problem}"))?;
    }
    log.note(&format!(
        "emulator: {} (cpu {}), sysroot {}",
        emulator.qemu().display(),
        emulator.cpu().unwrap_or("qemu's default"),
        emulator.sysroot().root().display()
    ))?;
    let env = TargetEnv::emulated(env_root, &emulator)?;
    let (_, install_vars) = test_variables(&env, spec, project)?;
    let sources = debian::Sources {
        cache: &spec.cache_dir,
        network: &spec.network,
        builder: spec.requirement_builder.as_ref().map(|builder| &*builder.0),
    };
    debian::emulated_env(env, &emulator, requirements, &install_vars, &sources, log)
}

/// `before-test` in the project folder with the test variables; failing is an error.
fn run_before_test(
    before_test: &str,
    project: &Path,
    vars: &Vars,
    log: &mut Log,
) -> Result<(), TestError> {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(before_test)
        .current_dir(project)
        .env_clear()
        .envs(vars);
    log.note("before-test")?;
    let finished = log.run(command, Echo::Yes)?;
    if !finished.status.success() {
        return Err(TestError::BeforeTest {
            status: finished.status.to_string(),
            reason: finished.reason(),
            log: log.path().to_path_buf(),
        });
    }
    Ok(())
}

/// `/path/x.whl[test,docs]`: the wheel with its extras, for pip.
fn with_extras(wheel: &Path, extras: &[String]) -> String {
    let path = wheel.to_string_lossy().into_owned();
    if extras.is_empty() {
        path
    } else {
        format!("{path}[{}]", extras.join(","))
    }
}

/// Environment variables by name.
type Vars = BTreeMap<String, String>;

/// Variables crosswheel's own process may carry from a build that must not reach a test.
const NOT_FOR_TESTS: &[&str] = &[
    "PYTHONPATH",
    "PYTHONHOME",
    "_PYTHON_HOST_PLATFORM",
    "_PYTHON_SYSCONFIGDATA_NAME",
];

/// Variables that name the build machine's CPU. An emulated target's libraries would read
/// them as a choice for the emulated CPU: OpenBLAS given `OPENBLAS_CORETYPE=Haswell` on an
/// aarch64, ppc64le or s390x finds no such core and falls back to its generic C kernels,
/// which no user's machine of that architecture runs. cibuildwheel's containers never see
/// the host's variables; a test asks for a core with `test-environment`.
const BUILD_MACHINE_CPU: &[&str] = &["OPENBLAS_CORETYPE"];

/// What a test inherits of crosswheel's own environment: all but a build's variables, and
/// on an emulated target all but those naming the build machine's CPU.
fn inherited(vars: impl IntoIterator<Item = (String, String)>, emulated: bool) -> Vars {
    vars.into_iter()
        .filter(|(name, _)| !NOT_FOR_TESTS.contains(&name.as_str()))
        .filter(|(name, _)| !(emulated && BUILD_MACHINE_CPU.contains(&name.as_str())))
        .collect()
}

/// The environment of `before-test` and the test command, as cibuildwheel builds it:
/// crosswheel's own, the build's `environment`, the test venv first on PATH (and the
/// emulator's variables), then `test-environment` evaluated against all that. Second, the
/// user's variables alone, for pip's installs (PIP_ONLY_BINARY, an index URL, ...), without
/// `PATH`: the host pip must stay the host's.
fn test_variables(
    env: &TargetEnv,
    spec: &TestSpec,
    project: &Path,
) -> Result<(Vars, Vars), TestError> {
    let mut vars = inherited(std::env::vars(), env.emulated_arch().is_some());
    vars.extend(
        spec.environment
            .iter()
            .map(|(name, value)| (name.clone(), value.clone())),
    );
    let path = vars.get("PATH").map(std::ffi::OsString::from);
    for (name, value) in env.command_env_over(path) {
        vars.insert(
            name.to_string_lossy().into_owned(),
            value.to_string_lossy().into_owned(),
        );
    }
    spec.test_environment
        .apply(&mut vars, project)
        .map_err(TestError::TestEnvironment)?;
    let user_names = spec.environment.keys().chain(
        spec.test_environment
            .assignments
            .iter()
            .map(|assignment| &assignment.name),
    );
    let for_installs = user_names
        .filter(|name| !matches!(name.as_str(), "PATH" | "VIRTUAL_ENV"))
        .filter_map(|name| {
            let value = vars.get(name)?;
            Some((
                name.clone(),
                project_relative_pip_paths(name, value, project),
            ))
        })
        .collect();
    Ok((vars, for_installs))
}

/// pip's file settings given as relative paths (`PIP_CONSTRAINT=requirements/ci.txt`, as
/// cibuildwheel users write them) name files of the project, where cibuildwheel runs pip;
/// the installs here run elsewhere, so those paths are made absolute.
fn project_relative_pip_paths(name: &str, value: &str, project: &Path) -> String {
    const PATH_SETTINGS: [&str; 3] = ["PIP_CONSTRAINT", "PIP_BUILD_CONSTRAINT", "PIP_FIND_LINKS"];
    if !PATH_SETTINGS.contains(&name) {
        return value.to_string();
    }
    value
        .split_whitespace()
        .map(|entry| {
            let relative = !entry.contains("://") && Path::new(entry).is_relative();
            if relative && project.join(entry).exists() {
                project.join(entry).to_string_lossy().into_owned()
            } else {
                entry.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The CPython a wheel needs, from its tags: 3.13 for `cp313-cp313`, the free-threaded
/// 3.13t (`python3.13t`) for `cp313-cp313t`; for wheels that run on many versions
/// (`py3-none`, `cp39-abi3`) the default target CPython.
pub fn python_version_of_wheel(python_tags: &[LanguageTag], abi_tags: &[AbiTag]) -> PythonTag {
    let version_specific = abi_tags
        .iter()
        .all(|abi| !matches!(abi, AbiTag::Abi3 | AbiTag::None));
    let free_threaded = abi_tags
        .iter()
        .filter_map(AbiTag::cpython)
        .any(PythonTag::is_free_threaded);
    python_tags
        .iter()
        .filter(|_| version_specific)
        .find_map(LanguageTag::cpython)
        .map(|tag| match tag.free_threaded() {
            Some(free) if free_threaded => free,
            _ => tag,
        })
        .unwrap_or_else(crate::support::sysroot::default_target_python)
}

/// cibuildwheel's hint for a bare `pytest` run from the test folder (its
/// `resources/testing_temp_dir_file.py`): put there when no test sources are copied.
const TEST_FAIL_PY: &str = include_str!("test_fail.py");

/// Copies each entry to the same relative place under `workdir`.
fn copy_test_sources(project: &Path, entries: &[PathBuf], workdir: &Path) -> Result<(), TestError> {
    for entry in entries {
        let relative = entry.strip_prefix(project).unwrap_or(entry);
        let escapes = relative.is_absolute()
            || relative
                .components()
                .any(|c| matches!(c, Component::ParentDir));
        if escapes {
            return Err(TestError::TestSourceOutsideProject {
                entry: entry.clone(),
                project: project.to_path_buf(),
            });
        }
        let from = project.join(relative);
        if !from.exists() {
            return Err(TestError::TestSourceMissing { path: from });
        }
        for item in walkdir::WalkDir::new(&from) {
            let item = item.map_err(|err| {
                TestError::Io(crate::io_error::IoError::new(
                    "walk",
                    err.path().unwrap_or(&from).to_path_buf(),
                    err.into(),
                ))
            })?;
            let Ok(inside) = item.path().strip_prefix(project) else {
                continue;
            };
            let to = workdir.join(inside);
            if item.file_type().is_dir() {
                fs::create_dir_all(&to).map_err(TestError::io("create", &to))?;
            } else {
                if let Some(parent) = to.parent() {
                    fs::create_dir_all(parent).map_err(TestError::io("create", parent))?;
                }
                fs::copy(item.path(), &to).map_err(TestError::io("copy", item.path()))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_emulated_test_does_not_inherit_the_build_machines_cpu_or_a_builds_python_variables() {
        let outside = || {
            [
                ("OPENBLAS_CORETYPE", "Haswell"),
                ("PYTHONPATH", "/build/site"),
                ("OMP_NUM_THREADS", "2"),
            ]
            .map(|(name, value)| (name.to_string(), value.to_string()))
        };
        let emulated = super::inherited(outside(), true);
        assert_eq!(
            emulated.keys().collect::<Vec<_>>(),
            ["OMP_NUM_THREADS"],
            "{emulated:?}"
        );
        let native = super::inherited(outside(), false);
        assert_eq!(
            native.keys().collect::<Vec<_>>(),
            ["OMP_NUM_THREADS", "OPENBLAS_CORETYPE"],
            "{native:?}"
        );
    }

    #[test]
    fn relative_pip_files_are_the_projects() {
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(project.path().join("requirements")).unwrap();
        std::fs::write(project.path().join("requirements/cython.txt"), "").unwrap();
        let absolute = project.path().join("requirements/cython.txt");
        assert_eq!(
            project_relative_pip_paths("PIP_CONSTRAINT", "requirements/cython.txt", project.path()),
            absolute.to_string_lossy()
        );
        assert_eq!(
            project_relative_pip_paths("PIP_INDEX_URL", "requirements/cython.txt", project.path()),
            "requirements/cython.txt"
        );
        assert_eq!(
            project_relative_pip_paths(
                "PIP_FIND_LINKS",
                "https://example.invalid/w",
                project.path()
            ),
            "https://example.invalid/w"
        );
    }

    use super::*;

    #[test]
    fn the_binfmt_warning_reaches_the_terminal_once_per_run_and_architecture() {
        // No other unit test starts an emulated environment, so ppc64le is this test's own.
        let arch = LinuxArch::Ppc64le;
        let first = first_binfmt_warning(arch);
        assert!(!first_binfmt_warning(arch), "a second warning for {arch:?}");
        assert!(first, "the first warning for {arch:?} was swallowed");
    }

    #[test]
    fn a_wheel_names_the_cpython_its_tests_need() {
        let of = |python: &str, abi: &str| {
            python_version_of_wheel(&[LanguageTag::parse(python)], &[AbiTag::parse(abi)])
        };
        assert_eq!(of("cp313", "cp313").interpreter_version(), "3.13");
        assert_eq!(of("cp310", "cp310").interpreter_version(), "3.10");
        assert_eq!(of("cp314", "cp314t").interpreter_version(), "3.14t");
        let default = crate::support::sysroot::default_target_python();
        assert_eq!(of("cp39", "abi3"), default);
        assert_eq!(of("py3", "none"), default);
    }

    #[test]
    fn timeouts_are_said_in_the_units_users_write() {
        assert_eq!(format_duration(Duration::from_secs(30)), "30s");
        assert_eq!(format_duration(Duration::from_secs(1800)), "30m");
        assert_eq!(format_duration(Duration::from_secs(5430)), "1h30m30s");
        let timed_out = TimedOut {
            after: Duration::from_secs(5),
            last_output: Some("tests/test_a.py::test_one PASSED".into()),
        };
        assert_eq!(
            timed_out.to_string(),
            "timed out after 5s; the last test that printed: `tests/test_a.py::test_one PASSED`"
        );
    }

    #[test]
    fn placeholders_expand_to_the_quoted_project_root_and_package_folder() {
        assert_eq!(
            crate::input::options::fill_project(
                "pytest {project}/tests && ls {package}",
                &ProjectPaths::new(Path::new("/src/my proj"), Path::new("/src/my proj/pkg"))
            ),
            "pytest '/src/my proj'/tests && ls '/src/my proj/pkg'"
        );
    }

    #[test]
    fn extras_are_asked_of_the_wheel_itself() {
        let wheel = Path::new("/w/a-1-cp311-cp311-linux_aarch64.whl");
        assert_eq!(
            with_extras(wheel, &[]),
            "/w/a-1-cp311-cp311-linux_aarch64.whl"
        );
        assert_eq!(
            with_extras(wheel, &["test".into(), "docs".into()]),
            "/w/a-1-cp311-cp311-linux_aarch64.whl[test,docs]"
        );
    }

    #[test]
    fn test_sources_keep_their_relative_place() {
        let project = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        fs::create_dir_all(project.path().join("tests/data")).unwrap();
        fs::write(project.path().join("tests/data/x.txt"), "x").unwrap();
        fs::write(project.path().join("conftest.py"), "").unwrap();
        let entries = [PathBuf::from("tests"), project.path().join("conftest.py")];
        copy_test_sources(project.path(), &entries, work.path()).unwrap();
        assert_eq!(
            fs::read_to_string(work.path().join("tests/data/x.txt")).unwrap(),
            "x"
        );
        assert!(work.path().join("conftest.py").is_file());
    }

    #[test]
    fn test_sources_outside_the_project_are_refused() {
        let project = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let err = copy_test_sources(project.path(), &[PathBuf::from("../secrets")], work.path())
            .unwrap_err();
        assert!(
            matches!(err, TestError::TestSourceOutsideProject { .. }),
            "{err}"
        );
        let err =
            copy_test_sources(project.path(), &[PathBuf::from("absent")], work.path()).unwrap_err();
        assert!(matches!(err, TestError::TestSourceMissing { .. }), "{err}");
    }
}
