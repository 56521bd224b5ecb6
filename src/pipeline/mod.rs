//! The whole job for one project: for every build identifier of the plan,
//! build → repair → test, and only wheels that made it through every stage
//! reach the wheelhouse. Stages exchange plain data (paths, `Target`); a
//! failing identifier does not stop the others.

mod extensions;
mod hooks;
mod identifier;
mod outcome;
mod progress;
pub mod report;
mod schedule;

pub use outcome::{Ending, FinishedWheel, Outcome, Stage, StageTimes, TestResult};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::backend::prepare_target_site;
use crate::host::BuildPython;
use crate::host::Cache;
use crate::options::{BuildSpec, Plan};
use crate::repair::{RepairRequest, repair};
use crate::sysroot::{LinuxArch, SysrootError};
use crate::target::Target;
use crate::testing::{self, TestError, TestOutcome, TestSpec, Verdict};
use crate::toolchain::find_macos_sdk;
use crate::wheel::source_date_epoch;

pub struct PipelineOptions {
    pub offline: bool,
    /// How many identifiers build at once.
    pub jobs: usize,
}

/// Runs every identifier of `plan`, `options.jobs` at a time. A failing identifier never
/// stops the others; a failed `before-all` stops the run before any build, as
/// cibuildwheel's does (every build after it would run on a machine the project did not
/// prepare). Outcomes come back in plan order, whatever order the builds finished in.
pub fn run(plan: &Plan, options: &PipelineOptions) -> Result<Vec<Outcome>> {
    let cache = Cache::from_env()?;
    run_before_all(plan)?;
    let mut outcomes = schedule::run_all(plan, &cache, options);
    extensions::fail_wheels_missing_extensions(plan, &mut outcomes);
    Ok(outcomes)
}

/// `before-all` of each platform that has builds, once, in plan order.
fn run_before_all(plan: &Plan) -> Result<()> {
    let mut done = std::collections::BTreeSet::new();
    for spec in &plan.builds {
        if let Some(command) = &spec.options.before_all
            && done.insert(spec.platform.name())
        {
            hooks::run_shell(
                "before-all",
                command,
                &plan.project_dir,
                &user_environment(spec, &plan.project_dir)?,
            )
            .with_context(|| {
                format!(
                    "stopping before any {} build: `before-all` failed",
                    spec.platform
                )
            })?;
        }
    }
    Ok(())
}

fn run_and_report(
    plan: &Plan,
    spec: &BuildSpec,
    cache: &Cache,
    options: &PipelineOptions,
) -> Outcome {
    let outcome = identifier::run_one(plan, spec, cache, options);
    if let Ending::Failed { error, .. } = &outcome.ending {
        tracing::error!("{}: {}", spec.identifier, crate::logging::one_line(error));
    }
    outcome
}

/// The user's `environment` (and `environment-pass`) values, expanded against the
/// current environment; command substitutions (`$(...)`) run in the project folder.
fn user_environment(spec: &BuildSpec, project_dir: &Path) -> Result<BTreeMap<String, String>> {
    let mut vars: BTreeMap<String, String> = std::env::vars().collect();
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

/// The user's environment for one identifier's build, test and hooks: for macOS targets
/// with a macOS SDK (`macos-sdk`, else `SDKROOT`), `SDKROOT` names it, checked and
/// absolute, for the compiler wrappers.
fn build_environment(
    spec: &BuildSpec,
    project_dir: &Path,
    target: &Target,
) -> Result<BTreeMap<String, String>> {
    let mut environment = user_environment(spec, project_dir)?;
    if target.is_macos() {
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

fn target_of(spec: &BuildSpec) -> Result<Target> {
    let target = Target::parse(&spec.target_id)?;
    Ok(if target.is_macos() {
        target.with_os_version(&spec.options.macos_deployment_target)?
    } else {
        target
    })
}

fn file_name_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Moves `file` to `destination` so that no partial file ever carries the
/// destination's name: a rename, or across file systems a copy into a temporary
/// file beside `destination` that is then renamed over it.
fn move_file(file: &Path, destination: &Path) -> Result<()> {
    match std::fs::rename(file, destination) {
        Err(error) if error.kind() == std::io::ErrorKind::CrossesDevices => {}
        other => return Ok(other?),
    }
    let folder = destination
        .parent()
        .context("the destination has no folder")?;
    let temporary = tempfile::Builder::new()
        .prefix(".crosswheel-")
        .suffix(".partial")
        .tempfile_in(folder)?;
    std::fs::copy(file, temporary.path())?;
    temporary.persist(destination)?;
    std::fs::remove_file(file)?;
    Ok(())
}

fn builtin_repair(
    cache: &Cache,
    wheel_path: &Path,
    target: &Target,
    lib_paths: Vec<PathBuf>,
    out_dir: &Path,
) -> Result<PathBuf> {
    let wheel = crate::wheel::open_within_env_limits(wheel_path)?;
    let request = RepairRequest {
        out_dir: out_dir.to_path_buf(),
        lib_paths,
        exclude: Vec::new(),
        epoch: source_date_epoch()?,
        plat: "auto".to_string(),
        sysroot: None,
        system_libraries: match target.linux_arch() {
            Some(arch) => Some(crate::sysroot::system_libraries(cache.root(), arch)?),
            None => None,
        },
        macos_version: target.is_macos().then(|| target.os_version().to_string()),
        retag: false,
    };
    Ok(repair(&wheel, &request)?.output)
}

/// Folders of the target-form build requirements (e.g. scipy-openblas32)
/// that hold shared libraries: the libraries the build linked against.
fn target_library_folders(
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
    let site = prepare_target_site(cache, target, python, &requires, offline)?;
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

fn single_wheel_in(dir: &Path) -> Result<PathBuf> {
    let wheels: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "whl"))
        .collect();
    match wheels.as_slice() {
        [one] => Ok(one.clone()),
        [] => bail!("repair-wheel-command left no wheel in {{dest_dir}}"),
        _ => bail!(
            "repair-wheel-command left {} wheels in {{dest_dir}}; expected one",
            wheels.len()
        ),
    }
}

fn test(
    plan: &Plan,
    spec: &BuildSpec,
    wheel: &Path,
    cache: &Cache,
    work: &Path,
    environment: &BTreeMap<String, String>,
) -> Result<TestResult> {
    if !spec.options.runs_tests() {
        return Ok(TestResult::NotRun);
    }
    if let Some(problem) = &spec.options.test_groups_problem {
        bail!("{problem}");
    }
    let opened = crate::wheel::open_within_env_limits(wheel)?;
    let test_spec = TestSpec {
        test_command: spec.options.test_command.clone().unwrap_or_default(),
        test_requires: spec.options.test_requires.clone(),
        test_extras: spec.options.test_extras.clone(),
        python_version: test_version(plan, spec, &opened),
        test_sources: spec
            .options
            .test_sources
            .iter()
            .map(PathBuf::from)
            .collect(),
        project_dir: plan.project_dir.clone(),
        qemu_cpu: spec.options.qemu_cpu.clone(),
        cache_dir: cache.root().to_path_buf(),
        log_dir: work.join("logs"),
        before_test: spec.options.before_test.clone(),
        environment: environment.clone(),
        test_environment: spec.options.test_environment.clone(),
        target_python: spec.options.target_python.clone(),
        debian_mirror: spec.options.debian_mirror.clone(),
        timeout: spec.options.test_timeout,
    };
    let verdict = match testing::test_or_check(wheel, &opened, &test_spec) {
        Err(TestError::Sysroot(SysrootError::UnsupportedPython { version, arch, .. })) => {
            let shipped = LinuxArch::parse(arch)
                .map(crate::sysroot::archive::shipped_versions)
                .unwrap_or_default();
            let reason = if version.ends_with('t') {
                format!(
                    "no {arch} free-threaded CPython {version} (Debian ships none; set target-python)"
                )
            } else {
                format!(
                    "no {arch} CPython {version} (Debian ships {}; set target-python)",
                    shipped.join(", ")
                )
            };
            return Ok(TestResult::NotTested { reason });
        }
        other => other?,
    };
    Ok(match verdict {
        Verdict::StaticCheck(report) if report.passed() => TestResult::StaticCheckPassed,
        Verdict::StaticCheck(report) => {
            let logs = work.join("logs");
            std::fs::create_dir_all(&logs)?;
            std::fs::write(logs.join("static-load-check.log"), report.to_string())?;
            let first = report
                .failures
                .first()
                .map(|f| f.to_string())
                .unwrap_or_default();
            TestResult::Failed {
                reason: format!("static load check failed: {first}"),
            }
        }
        Verdict::Ran(outcome) if outcome.passed => TestResult::Passed { mode: outcome.mode },
        Verdict::Ran(TestOutcome {
            timed_out: Some(timed_out),
            mode,
            log_path,
            ..
        }) => TestResult::TimedOut {
            after: timed_out.after,
            reason: format!(
                "tests {timed_out} ({}); log: {}",
                report::mode_name(mode),
                log_path.display()
            ),
        },
        Verdict::Ran(outcome) => TestResult::Failed {
            reason: format!(
                "tests failed ({}); log: {}",
                report::mode_name(outcome.mode),
                outcome.log_path.display()
            ),
        },
    })
}

/// The CPython a wheel is tested on: its build's, except for an abi3 wheel, which serves
/// every later version too and is tested on the newest version of its target in the plan
/// that Debian ships a target interpreter for.
fn test_version(plan: &Plan, spec: &BuildSpec, wheel: &crate::wheel::WheelArchive) -> String {
    if !wheel.name().abi.iter().any(|abi| abi == "abi3") {
        return spec.python_tag.interpreter_version();
    }
    let shipped = Target::parse(&spec.target_id)
        .ok()
        .and_then(|target| target.linux_arch())
        .map(crate::sysroot::archive::shipped_versions)
        .unwrap_or_default();
    plan.builds
        .iter()
        .filter(|build| build.target_id == spec.target_id && shipped.contains(&build.python))
        .map(|build| &build.python)
        .max_by_key(|version| crate::sysroot::parse_major_minor(version))
        .unwrap_or(&spec.python)
        .clone()
}

/// A wheel that failed its tests goes to `<out>/.crosswheel-failed/<id>/`
/// with its logs, never into the wheelhouse.
fn keep_apart(
    out_dir: &Path,
    identifier: &str,
    wheel: &Path,
    work: Option<&Path>,
) -> Result<PathBuf> {
    let folder = out_dir.join(".crosswheel-failed").join(identifier);
    if folder.exists() {
        std::fs::remove_dir_all(&folder)?;
    }
    std::fs::create_dir_all(&folder)?;
    if let Some(name) = wheel.file_name() {
        move_file(wheel, &folder.join(name))?;
    }
    let logs = work.map(|work| work.join("logs"));
    if let Some(logs) = logs.filter(|logs| logs.is_dir()) {
        for entry in std::fs::read_dir(&logs)?.filter_map(Result::ok) {
            std::fs::copy(entry.path(), folder.join(entry.file_name()))?;
        }
    }
    Ok(folder)
}
