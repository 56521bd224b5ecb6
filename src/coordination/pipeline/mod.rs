//! The whole job for one project: for every build identifier of the plan,
//! build → repair → test, and only wheels that made it through every stage
//! reach the wheelhouse. Stages exchange plain data (paths, `Target`); a
//! failing identifier does not stop the others.

mod audit;
mod exit;
mod extensions;
pub mod hints;
mod hooks;
mod identifier;
mod outcome;
mod path_check;
mod progress;
mod project_copies;
pub mod report;
mod requirement_build;
mod run_logs;
mod schedule;
mod target_cpython;
mod targets;

pub use exit::{FatalError, WheelsThisRun, exit_code};
pub use outcome::{Ending, FinishedWheel, Outcome, Stage, StageTimes, TestResult};
pub use project_copies::{ProjectCopies, copy_for_linux_targets};
pub use run_logs::RunLogs;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::formats::wheel::source_date_epoch;
use crate::io_error::IoError;
use crate::python_tag::PythonTag;
use crate::stages::backend::prepare_target_site;
use crate::stages::repair::{RepairRequest, repair};
use crate::stages::testing::{self, TestError, TestOutcome, TestSpec, Verdict};
use crate::stages::toolchain::find_macos_sdk;
use crate::support::host::BuildPython;
use crate::support::host::Cache;
use crate::support::options::{BuildSpec, Plan};
use crate::support::sysroot::SysrootError;
use crate::target::{Libc, Target};

pub struct PipelineOptions {
    pub offline: bool,
    /// How many identifiers build at once.
    pub jobs: usize,
    /// The wheel names this run made, so a second wheel of one name is an error.
    pub wheels: WheelsThisRun,
    /// Where this run's logs go; `None`: a new folder under the cache ([`RunLogs::create`]).
    pub logs: Option<RunLogs>,
}

/// Runs every identifier of `plan`, `options.jobs` at a time. A failing identifier never
/// stops the others; a failed `before-all` stops the run before any build, as
/// cibuildwheel's does (every build after it would run on a machine the project did not
/// prepare). Outcomes come back in plan order, whatever order the builds finished in.
pub fn run(plan: &Plan, options: &PipelineOptions) -> Result<Vec<Outcome>> {
    let cache = Cache::from_env()?;
    let logs = match &options.logs {
        Some(logs) => logs.clone(),
        None => RunLogs::create(cache.root())?,
    };
    tracing::info!("logs of this run: {}", logs.dir().display());
    // The output folders exist from the start, as cibuildwheel makes them, so a run whose
    // every build failed still leaves the (empty) folder a CI step looks into.
    for spec in &plan.builds {
        let dir = output_dir(plan, spec);
        std::fs::create_dir_all(&dir).map_err(IoError::at("create", &dir))?;
    }
    let targets = targets::prepare(plan, &cache, options.offline, options.jobs.max(1))?;
    let mut outcomes = schedule::run_all(plan, &cache, options, &targets, &logs);
    extensions::fail_wheels_missing_extensions(plan, &mut outcomes, &logs);
    Ok(outcomes)
}

/// Where the finished wheels of `spec` go: its `output-dir`, relative to the project root
/// as cibuildwheel's is to where it runs.
fn output_dir(plan: &Plan, spec: &BuildSpec) -> PathBuf {
    let configured = &spec.options.output_dir;
    if configured.is_absolute() {
        configured.clone()
    } else {
        plan.project_root.join(configured)
    }
}

fn run_and_report(
    plan: &Plan,
    spec: &BuildSpec,
    cache: &Cache,
    options: &PipelineOptions,
    targets: &targets::Targets,
    logs: &RunLogs,
) -> Outcome {
    let outcome = identifier::run_one(plan, spec, cache, options, &targets.of(spec), logs);
    if let Ending::Failed { error, .. } = &outcome.ending {
        let problem = crate::logging::one_line(error);
        tracing::error!("{}: {}", spec.identifier, report::failure_notice(&problem));
    }
    outcome
}

/// The process environment, which `environment` is evaluated against as cibuildwheel
/// evaluates it (for a build, with the build's own environment put first on PATH).
fn process_environment() -> BTreeMap<String, String> {
    std::env::vars().collect()
}

/// The user's `environment` (and `environment-pass`) values, expanded against `base`, the
/// environment they are evaluated in; command substitutions (`$(...)`) run in the project
/// folder. Only the variables it set or changed.
fn user_environment(
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
fn build_environment(
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
        other => return Ok(other.map_err(IoError::at("move", file))?),
    }
    let folder = destination
        .parent()
        .context("the destination has no folder")?;
    let temporary = tempfile::Builder::new()
        .prefix(".crosswheel-")
        .suffix(".partial")
        .tempfile_in(folder)
        .map_err(IoError::at("create a temporary file in", folder))?;
    std::fs::copy(file, temporary.path()).map_err(IoError::at("copy", file))?;
    temporary
        .persist(destination)
        .map_err(|error| IoError::new("write", destination, error.error))?;
    std::fs::remove_file(file).map_err(IoError::at("remove", file))?;
    Ok(())
}

fn builtin_repair(
    cache: &Cache,
    wheel_path: &Path,
    target: &Target,
    lib_paths: Vec<PathBuf>,
    out_dir: &Path,
    debian_mirror: Option<&str>,
) -> Result<PathBuf> {
    let wheel = crate::formats::wheel::open_within_env_limits(wheel_path)?;
    let request = RepairRequest {
        out_dir: out_dir.to_path_buf(),
        lib_paths,
        exclude: Vec::new(),
        epoch: source_date_epoch()?,
        // glibc: the most compatible policy the symbols allow; musl: the musl zig linked,
        // which no binary says.
        plat: target
            .repair_policy()
            .map(|tag| crate::formats::wheel::PlatformTag::parse(&tag)),
        sysroot: None,
        // Debian's glibc libraries; Debian's trees hold no musl libraries to read.
        system_libraries: match target
            .linux_arch()
            .filter(|_| target.libc() == Some(Libc::Glibc))
        {
            Some(arch) => Some(crate::support::sysroot::system_libraries(
                cache.root(),
                arch,
                debian_mirror,
            )?),
            None => None,
        },
        macos_version: target.is_macos().then(|| target.os_version()),
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

fn test(
    plan: &Plan,
    spec: &BuildSpec,
    wheel: &Path,
    cache: &Cache,
    logs: &RunLogs,
    offline: bool,
    environment: &BTreeMap<String, String>,
) -> Result<TestResult> {
    if !spec.options.runs_tests() {
        return Ok(TestResult::NotRun);
    }
    if let Some(problem) = &spec.options.test_groups_problem {
        bail!("{problem}");
    }
    let opened = crate::formats::wheel::open_within_env_limits(wheel)?;
    let python_version = test_version(plan, spec, opened.name());
    let musl = spec.target.libc() == Some(Libc::Musl);
    let mut target_python = spec.options.target_python.clone();
    if target_python.is_none() && needs_built_cpython(spec, python_version) {
        let built = if python_version.is_free_threaded() {
            None
        } else {
            target_cpython::built_target_cpython(spec, python_version, cache, offline)?
        };
        match built {
            Some(root) => target_python = Some(root),
            None if musl => {
                return Ok(TestResult::NotTested {
                    reason: no_musl_python(&spec.target, python_version),
                });
            }
            // Debian's answer (which versions it ships) is the one the test gives.
            None => {}
        }
    }
    let test_spec = TestSpec {
        test_command: spec.options.test_command.clone().unwrap_or_default(),
        test_requires: spec.options.test_requires.clone(),
        test_extras: spec.options.test_extras.clone(),
        python_version,
        test_sources: spec
            .options
            .test_sources
            .iter()
            .map(PathBuf::from)
            .collect(),
        project_dir: spec.paths.root.clone(),
        package_dir: Some(spec.paths.package.clone()),
        qemu_cpu: spec.options.qemu_cpu.clone(),
        cache_dir: cache.root().to_path_buf(),
        log_dir: logs.dir().to_path_buf(),
        log_file: Some(logs.file(&spec.identifier, "test")),
        // The pipeline builds manylinux wheels of requirements, which a musl CPython
        // cannot load.
        requirement_builder: spec.target.linux_arch().filter(|_| !musl).map(|_| {
            testing::Builder(std::sync::Arc::new(requirement_build::PipelineBuilder {
                cache: cache.clone(),
                logs: logs.clone(),
                offline,
                debian_mirror: spec.options.debian_mirror.clone(),
            }))
        }),
        before_test: spec.options.before_test.clone(),
        environment: environment.clone(),
        test_environment: spec.options.test_environment.clone(),
        target_python,
        debian_mirror: spec.options.debian_mirror.clone(),
        timeout: spec.options.test_timeout,
    };
    let verdict = match testing::test_or_check(wheel, &opened, &test_spec) {
        Err(TestError::Sysroot(SysrootError::UnsupportedPython { .. })) => {
            return Ok(TestResult::NotTested {
                reason: no_target_python(&spec.target, test_spec.python_version),
            });
        }
        other => other?,
    };
    Ok(match verdict {
        Verdict::StaticCheck(report) if report.passed() => TestResult::StaticCheckPassed,
        Verdict::StaticCheck(report) => {
            let log = logs.file(&spec.identifier, "static-load-check");
            std::fs::write(&log, report.to_string()).map_err(IoError::at("write", &log))?;
            let first = report
                .failures
                .first()
                .map(|f| f.to_string())
                .unwrap_or_default();
            TestResult::Failed {
                reason: format!("static load check failed: {first}; log: {}", log.display()),
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

/// Whether the test stage runs `python` on a CPython crosswheel builds for the target:
/// always for musl (Debian ships none), and for an emulated glibc target whose Debian
/// releases lack that version (riscv64's first CPython is trixie's 3.13).
fn needs_built_cpython(spec: &BuildSpec, python: PythonTag) -> bool {
    if spec.target.libc() == Some(Libc::Musl) {
        return true;
    }
    let Some(arch) = spec.target.linux_arch() else {
        return false;
    };
    !spec.target.runs_natively_here()
        && matches!(
            crate::support::sysroot::check_target_python(arch, python),
            Err(SysrootError::UnsupportedPython { .. })
        )
}

/// Why a musllinux wheel is not tested: crosswheel builds musl CPythons of the versions
/// config/target-cpython.toml names, with the GIL.
fn no_musl_python(target: &Target, python: PythonTag) -> String {
    format!(
        "no musl CPython {} for {}: crosswheel builds {} (config/target-cpython.toml); set target-python to a musl CPython's root",
        python.interpreter_version(),
        target.arch(),
        crate::support::target_libraries::target_cpythons()
            .versions()
            .join(", ")
    )
}

/// Why a wheel is not tested when Debian ships no target CPython of its version.
fn no_target_python(target: &Target, python: PythonTag) -> String {
    let arch = target.arch();
    let version = python.interpreter_version();
    if python.is_free_threaded() {
        return format!(
            "no {arch} free-threaded CPython {version} (Debian ships none; set target-python)"
        );
    }
    let shipped: Vec<String> = target
        .linux_arch()
        .map(crate::support::sysroot::archive::shipped_versions)
        .unwrap_or_default()
        .into_iter()
        .map(PythonTag::version)
        .collect();
    format!(
        "no {arch} CPython {version} (Debian ships {}; set target-python)",
        shipped.join(", ")
    )
}

/// The CPython a wheel is tested on: its build's, except for an abi3 wheel, which serves
/// every later version too and is tested on the newest version of its target in the plan
/// that Debian ships a target interpreter for.
fn test_version(
    plan: &Plan,
    spec: &BuildSpec,
    wheel: &crate::formats::wheel::WheelName,
) -> PythonTag {
    if !wheel.is_abi3() {
        return spec.python;
    }
    let shipped = spec
        .target
        .linux_arch()
        .map(crate::support::sysroot::archive::shipped_versions)
        .unwrap_or_default();
    plan.builds
        .iter()
        .map(|build| (build, build.python.with_gil()))
        .filter(|(build, python)| build.target.id() == spec.target.id() && shipped.contains(python))
        .map(|(_, python)| python)
        .max_by_key(|python| python.minor())
        .unwrap_or_else(|| spec.python.with_gil())
}

/// A wheel that built and repaired but failed its tests, or could not be tested, goes to
/// `failed/<id>/` in this run's log folder with a copy of its logs and `REASON.txt`: never
/// into the output folder, which holds only finished wheels (cibuildwheel leaves it empty
/// when a test fails, and CI upload steps take whatever is there).
fn keep_apart(
    run_logs: &RunLogs,
    identifier: &str,
    wheel: &Path,
    logs: &[PathBuf],
    reason: &str,
) -> Result<PathBuf> {
    let folder = run_logs.failed_folder(identifier);
    if folder.exists() {
        std::fs::remove_dir_all(&folder).map_err(IoError::at("remove", &folder))?;
    }
    std::fs::create_dir_all(&folder).map_err(IoError::at("create", &folder))?;
    if let Some(name) = wheel.file_name() {
        move_file(wheel, &folder.join(name))?;
    }
    for log in logs {
        if let Some(name) = log.file_name() {
            std::fs::copy(log, folder.join(name)).map_err(IoError::at("copy", log))?;
        }
    }
    let reason_file = folder.join("REASON.txt");
    std::fs::write(&reason_file, format!("{reason}\n"))
        .map_err(IoError::at("write", &reason_file))?;
    Ok(folder)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan of a project whose `build` selects among CPython 3.9 to 3.14t.
    pub(super) fn plan_of(build: &str) -> Plan {
        let project = tempfile::tempdir().unwrap();
        let python = r#"["cp39", "cp310", "cp311", "cp312", "cp313", "cp313t", "cp314", "cp314t"]"#;
        std::fs::write(
            project.path().join("pyproject.toml"),
            format!("[tool.crosswheel]\nbuild = \"{build}\"\npython = {python}\n"),
        )
        .unwrap();
        let env = std::collections::BTreeMap::<String, String>::new();
        crate::support::options::resolve(
            project.path(),
            &crate::support::options::CliOverrides::default(),
            &env,
        )
        .unwrap()
    }

    fn spec<'a>(plan: &'a Plan, identifier: &str) -> &'a BuildSpec {
        plan.builds
            .iter()
            .find(|spec| spec.identifier == identifier)
            .unwrap()
    }

    fn wheel(file_name: &str) -> crate::formats::wheel::WheelName {
        crate::formats::wheel::WheelName::parse(file_name).unwrap()
    }

    #[test]
    fn a_version_specific_wheel_is_tested_on_its_own_cpython() {
        let plan = plan_of("cp311-manylinux_aarch64 cp313t-manylinux_aarch64");
        let free_threaded = spec(&plan, "cp313t-manylinux_aarch64");
        let tested = test_version(
            &plan,
            free_threaded,
            &wheel("demo-1.0-cp313-cp313t-linux_aarch64.whl"),
        );
        assert_eq!(tested.to_string(), "cp313t");
    }

    /// config/debian/releases.toml ships 3.9, 3.11 and 3.13 for arm64, not 3.10 or 3.12.
    #[test]
    fn an_abi3_wheel_is_tested_on_the_newest_shipped_cpython_of_its_lane() {
        let plan = plan_of("cp39-* cp310-* cp311-* cp312-*");
        let oldest = spec(&plan, "cp39-manylinux_aarch64");
        let abi3 = wheel("demo-1.0-cp39-abi3-linux_aarch64.whl");
        assert_eq!(test_version(&plan, oldest, &abi3).to_string(), "cp311");
        let plan = plan_of("cp39-* cp310-* cp311-* cp312-* cp313t-*");
        let oldest = spec(&plan, "cp39-manylinux_aarch64");
        assert_eq!(
            test_version(&plan, oldest, &abi3).to_string(),
            "cp313",
            "an abi3 wheel runs on the GIL build of a free-threaded identifier's version"
        );
    }

    #[test]
    fn an_abi3_wheel_of_a_version_debian_lacks_falls_back_to_its_own() {
        let plan = plan_of("cp312-manylinux_aarch64");
        let only = &plan.builds[0];
        let shipped =
            crate::support::sysroot::archive::shipped_versions(crate::target::LinuxArch::Aarch64);
        assert!(
            !shipped.contains(&only.python),
            "Debian ships 3.12 now: pick another version"
        );
        let tested = test_version(&plan, only, &wheel("demo-1.0-cp312-abi3-linux_aarch64.whl"));
        assert_eq!(tested.version(), "3.12");
    }

    #[test]
    fn no_target_python_says_why_and_what_debian_has() {
        let target = crate::target::Target::parse("linux-aarch64").unwrap();
        let free_threaded = no_target_python(&target, PythonTag::parse("cp313t").unwrap());
        assert_eq!(
            free_threaded,
            "no aarch64 free-threaded CPython 3.13t (Debian ships none; set target-python)"
        );
        let gil = no_target_python(&target, PythonTag::parse("cp312").unwrap());
        assert!(
            gil.starts_with("no aarch64 CPython 3.12 (Debian ships 3."),
            "{gil}"
        );
        assert!(gil.ends_with("; set target-python)"), "{gil}");
    }
}
