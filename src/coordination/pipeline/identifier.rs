//! One build identifier through build → repair → test → wheelhouse. Each stage is a
//! named step; the first that fails ends the identifier with a typed [`Ending::Failed`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use super::context::RunContext;
use super::outcome::{Ending, FinishedWheel, Outcome, Stage, StageTimes, TestResult};
use super::{hooks, progress, report};
use crate::io_error::IoError;
use crate::stages::backend::{BuildRequest, BuiltWheel, HookEnv, HookEnvRequest, build_wheel};
use crate::stages::crossenv::{PythonSource, SetupRequest, TargetRunner, TargetSetup};
use crate::stages::testing::Emulator;
use crate::support::host::BuildPython;
use crate::support::options::{BuildSpec, Plan, RepairCommand};
use crate::target::Target;

/// Everything the stages of one identifier share.
struct Identifier<'a> {
    plan: &'a Plan,
    spec: &'a BuildSpec,
    context: &'a RunContext<'a>,
    /// The user's `environment`, expanded for the last build (empty before it).
    environment: BTreeMap<String, String>,
    /// The target's libraries and `CROSSWHEEL_PREFIX`, prepared before any build.
    target: super::targets::Prepared,
    /// Work happens outside the wheelhouse: a crash must not leave the backend's or the
    /// repair's intermediate wheels where users and upload steps glob `*.whl`.
    work: tempfile::TempDir,
    times: StageTimes,
    test: TestResult,
    /// The host CPython of the last build, which makes the audit's venv.
    host_python: Option<PathBuf>,
}

/// Runs one identifier to its end; never fails itself, so one identifier cannot stop the
/// others.
pub(super) fn run_one(
    plan: &Plan,
    spec: &BuildSpec,
    context: &RunContext<'_>,
    target: &super::targets::Prepared,
) -> Outcome {
    let mut times = StageTimes::default();
    let work = tempfile::Builder::new()
        .prefix("crosswheel-work-")
        .tempdir()
        .map_err(IoError::at("create a folder in", &std::env::temp_dir()));
    let work = match work {
        Ok(work) => work,
        Err(error) => {
            return Outcome {
                identifier: spec.identifier.clone(),
                times,
                test: TestResult::NotRun,
                ending: failed(Stage::Build, error.into()),
            };
        }
    };
    let mut identifier = Identifier {
        plan,
        spec,
        context,
        environment: BTreeMap::new(),
        target: target.clone(),
        work,
        times,
        test: TestResult::NotRun,
        host_python: None,
    };
    let ending = identifier
        .run()
        .unwrap_or_else(|(stage, error)| failed(stage, error));
    times = identifier.times;
    Outcome {
        identifier: spec.identifier.clone(),
        times,
        test: identifier.test,
        ending,
    }
}

fn failed(stage: Stage, error: anyhow::Error) -> Ending {
    Ending::Failed {
        stage,
        error,
        kept_apart: None,
    }
}

type StageResult<T> = std::result::Result<T, (Stage, anyhow::Error)>;

/// Runs `step` as `stage`, records its duration and tags its error with the stage.
fn timed<T>(
    slot: &mut std::time::Duration,
    stage: Stage,
    step: impl FnOnce() -> Result<T>,
) -> StageResult<T> {
    let started = Instant::now();
    let result = step();
    *slot = started.elapsed();
    result.map_err(|error| (stage, error))
}

impl Identifier<'_> {
    fn run(&mut self) -> StageResult<Ending> {
        let id = self.spec.identifier.clone();

        let slices = self.spec.target.fused_slices();
        let repaired = if slices.is_empty() {
            self.build_and_repair(&self.spec.target.clone(), "")?
        } else {
            let mut thin = Vec::new();
            for slice in &slices {
                thin.push(self.build_and_repair(slice, slice.arch())?);
            }
            let step = progress::Step::start(&id, "fuse");
            // Fusing is part of the repair: its time adds to the slices' repairs.
            let mut fuse_time = std::time::Duration::ZERO;
            let fused = timed(&mut fuse_time, Stage::Repair, || self.fuse(&thin));
            self.times.repair += fuse_time;
            let fused = fused?;
            step.finish(&format!(
                "fused as {}",
                super::collect::file_name_of(&fused)
            ));
            fused
        };

        if !self.spec.options.audit_command.is_empty() {
            let step = progress::Step::start_streaming(&id, "audit");
            let mut audit_time = std::time::Duration::ZERO;
            timed(&mut audit_time, Stage::Audit, || self.audit(&repaired))?;
            // Counted with the repair: the summary's columns are build, repair and test.
            self.times.repair += audit_time;
            step.finish("audited");
        }

        let step = progress::Step::start_streaming(&id, "test");
        let mut test_time = self.times.test;
        let test = timed(&mut test_time, Stage::Test, || {
            super::test_step::test(
                self.plan,
                self.spec,
                &repaired,
                self.context,
                &self.environment,
            )
        });
        self.times.test = test_time;
        // A wheel that built and repaired but could not be tested is kept, with the reason.
        self.test = match test {
            Ok(test) => test,
            Err((_, error)) => {
                let reason = format!("not tested: {}", crate::logging::one_line(&error));
                return Ok(self.keep_failed_wheel_apart(&repaired, &reason));
            }
        };
        step.finish(&report::test_cell(&self.test));
        if let TestResult::Failed { reason } | TestResult::TimedOut { reason, .. } = &self.test {
            return Ok(self.keep_failed_wheel_apart(&repaired, reason));
        }
        if let TestResult::NotTested { reason } = &self.test {
            if self.spec.options.require_tests {
                let reason = format!("not tested: {reason}; --require-tests makes that a failure");
                return Ok(self.keep_failed_wheel_apart(&repaired, &reason));
            }
            tracing::warn!("{id}: not tested: {reason}");
        }

        let wheel = self
            .collect(&repaired)
            .map_err(|error| (Stage::Collect, error))?;
        Ok(Ending::Finished(wheel))
    }

    /// Build and repair for `target`: the identifier's own, or one slice of a fused one
    /// (`slice` names it in the work folders and the log; empty for the identifier's own).
    /// Stage times add up over the slices.
    fn build_and_repair(&mut self, target: &Target, slice: &str) -> StageResult<PathBuf> {
        let id = match slice {
            "" => self.spec.identifier.clone(),
            slice => format!("{} ({slice})", self.spec.identifier),
        };
        let step = progress::Step::start_build(&id);
        let mut build_time = std::time::Duration::ZERO;
        let built = timed(&mut build_time, Stage::Build, || {
            self.build(target, slice, &step)
        });
        self.times.build += build_time;
        let Built {
            python,
            wheel: built,
            hook_env,
            environment,
        } = built?;
        self.host_python = Some(python.executable.clone());
        self.environment = environment;
        step.finish(&format!(
            "built {}",
            super::collect::file_name_of(&built.path)
        ));

        let step = progress::Step::start(&id, "repair");
        let mut repair_time = std::time::Duration::ZERO;
        let repaired = timed(&mut repair_time, Stage::Repair, || {
            self.repair(&python, &built, &hook_env, target, slice)
        });
        self.times.repair += repair_time;
        let repaired = repaired?;
        step.finish(&format!(
            "repaired as {}",
            super::collect::file_name_of(&repaired)
        ));
        Ok(repaired)
    }

    /// `audit-command` on the repaired wheel, in the project root.
    fn audit(&self, repaired: &Path) -> Result<()> {
        let python = self
            .host_python
            .as_deref()
            .context("no host CPython was found for this build's audit")?;
        super::audit::audit(
            &self.spec.options,
            repaired,
            &self.spec.paths.root,
            self.work.path(),
            python,
            &self.environment,
        )
    }

    /// The thin wheels of a fused target (universal2) as one wheel.
    fn fuse(&self, thin: &[PathBuf]) -> Result<PathBuf> {
        let [first, second] = thin else {
            anyhow::bail!(
                "{} fuses {} wheels; a universal2 wheel is fused from two",
                self.spec.target.id(),
                thin.len()
            );
        };
        let first = crate::formats::wheel::open_within_env_limits(first)?;
        let second = crate::formats::wheel::open_within_env_limits(second)?;
        let out_dir = self.work.path().join("fused");
        let fused = crate::stages::repair::fuse::fuse_wheels(
            &first,
            &second,
            &out_dir,
            crate::formats::wheel::source_date_epoch()?,
        )?;
        Ok(fused.output)
    }

    fn out_dir(&self) -> PathBuf {
        super::output_dir(self.plan, self.spec)
    }

    /// The project's backend in the target's cross environment (and `before-build`).
    fn build(&self, target: &Target, slice: &str, step: &progress::Step) -> Result<Built> {
        let spec = self.spec;
        let TargetSetup {
            python, cross_env, ..
        } = TargetSetup::prepare(&SetupRequest {
            purpose: &spec.identifier,
            target,
            python: spec.python,
            python_source: PythonSource::FindOrInstall,
            toolchain: spec.options.toolchain,
            cache: &self.context.cache,
            network: &self.context.network(spec),
            runner: self.target_runner(),
            languages: &crate::stages::backend::languages_of_project(&spec.paths.package),
        })?;
        let frontend = frontend_of(&spec.options.build_frontend);
        let hook_env = self.hook_env(target, slice, &python)?;
        let environment = self.checked_environment(&hook_env, &frontend)?;
        if let Some(command) = &spec.options.before_build {
            hooks::run_shell(
                "before-build",
                command,
                &self.spec.paths.package,
                &self.hook_command_environment(&environment, &hook_env),
            )?;
            for line in hook_env.settle()? {
                tracing::info!("{line}");
            }
        }
        let constraints = spec
            .options
            .dependency_versions
            .constraint_lines()
            .context("reading the constraints file of `dependency-versions`")?;
        let built = build_wheel(&BuildRequest {
            project_dir: &self.spec.paths.package,
            out_dir: &self.work.path().join(work_folder("built", slice)),
            cross_env: &cross_env,
            python: &python,
            cache: &self.context.cache,
            config_settings: &spec.options.config_settings,
            target_requires: &spec.options.target_requires,
            target_prefixes: &self.target.prefix.roots(),
            log_file: Some(
                &self
                    .context
                    .logs
                    .file(&work_folder(&spec.identifier, slice), "build"),
            ),
            environment: &environment,
            offline: self.context.offline,
            verbosity: spec.options.build_verbosity,
            constraints: &constraints,
            frontend: &frontend,
            hook_env: Some(&hook_env),
            progress: Some(crate::stages::backend::LineSink(&|line: &str| {
                step.observe(line)
            })),
        })?;
        Ok(Built {
            python,
            wheel: built,
            hook_env,
            environment,
        })
    }

    /// The user's `environment` as cibuildwheel evaluates it for a build: with the build's
    /// own environment first on PATH, so `$PATH` and `$(python ...)` in it mean that
    /// environment; then `python` (and `pip`, unless uv installs) on the PATH it leaves
    /// must still be that environment's.
    fn checked_environment(
        &self,
        hook_env: &HookEnv,
        frontend: &crate::stages::backend::Frontend,
    ) -> Result<BTreeMap<String, String>> {
        let mut base = super::environment::process_environment();
        let path = base.get("PATH").cloned();
        base.extend(hook_env.variables(path.as_deref()));
        let base_path = base.get("PATH").cloned().unwrap_or_default();
        let environment = super::environment::build_environment(self.spec, base)?;
        let programs: &[&str] = match frontend.installer {
            crate::support::host::Installer::Uv => &["python"],
            crate::support::host::Installer::Pip => &["python", "pip"],
        };
        let path = environment.get("PATH").unwrap_or(&base_path);
        super::path_check::check_build_env_first(path, &hook_env.bin, programs)?;
        Ok(environment)
    }

    /// What `before-build` and `repair-wheel-command` run with: the target's variables, the
    /// user's `environment`, and the build's own environment first on PATH, so that `python`
    /// and `pip` there are the build's, as in cibuildwheel's build venv (a bare Debian or
    /// Ubuntu has no `python` command at all).
    fn hook_command_environment(
        &self,
        user: &BTreeMap<String, String>,
        hook_env: &HookEnv,
    ) -> BTreeMap<String, String> {
        let mut environment = self.target.hook_variables.clone();
        environment.extend(user.clone());
        let path = environment.get("PATH").cloned();
        environment.extend(hook_env.variables(path.as_deref()));
        environment
    }

    /// The build's own environment, in the work folder, as cibuildwheel makes a fresh venv
    /// for every build: first on PATH when `environment` is evaluated, where `before-build`
    /// and `repair-wheel-command` run, and the backend when the build has no isolation.
    fn hook_env(&self, target: &Target, slice: &str, python: &BuildPython) -> Result<HookEnv> {
        let dir = self.work.path().join(work_folder("env", slice));
        let env = HookEnv::create(&HookEnvRequest {
            dir: &dir,
            python,
            target,
            cache: &self.context.cache,
            offline: self.context.offline,
        })?;
        Ok(env)
    }

    /// qemu-user and a target root for the programs a Linux build runs (meson's `cc.run()`,
    /// CMake's `try_run`, generators built by the project): the tree the test stage uses.
    /// When it cannot be had (offline, no mirror), the build goes on and such a program
    /// fails naming itself.
    fn target_runner(&self) -> Option<TargetRunner> {
        if self.spec.target.runs_natively_here() {
            return None;
        }
        let arch = self.spec.target.linux_arch()?;
        let gil = self.spec.python.with_gil();
        let python = match crate::support::sysroot::check_target_python(arch, gil) {
            Ok(()) => gil,
            Err(_) => crate::support::sysroot::archive::default_python_for(arch),
        };
        let options = &self.spec.options;
        match Emulator::new(
            self.context.cache.root(),
            arch,
            python,
            None,
            &self.context.network(self.spec),
            options.qemu_cpu.clone(),
        ) {
            Ok(emulator) => Some(TargetRunner {
                qemu: emulator.qemu().to_path_buf(),
                root: emulator.sysroot().root().to_path_buf(),
                cpu: emulator.cpu().map(str::to_string),
            }),
            Err(error) => {
                tracing::warn!(
                    "{}: target programs cannot run during the build (no emulator: {})",
                    self.spec.identifier,
                    crate::logging::one_line(&anyhow::Error::from(error))
                );
                None
            }
        }
    }

    /// crosswheel's own repair, the user's `repair-wheel-command`, or none.
    fn repair(
        &self,
        python: &BuildPython,
        built: &BuiltWheel,
        hook_env: &HookEnv,
        target: &Target,
        slice: &str,
    ) -> Result<PathBuf> {
        let repaired_dir = self.work.path().join(work_folder("repaired", slice));
        std::fs::create_dir_all(&repaired_dir).map_err(IoError::at("create", &repaired_dir))?;
        match &self.spec.options.repair {
            RepairCommand::Skip => Ok(built.path.clone()),
            RepairCommand::Command(_) => {
                let command = self
                    .spec
                    .options
                    .repair
                    .command_for(
                        &built.path.to_string_lossy(),
                        &repaired_dir.to_string_lossy(),
                    )
                    .unwrap_or_default();
                hooks::run_shell(
                    "repair-wheel-command",
                    &command,
                    &self.spec.paths.package,
                    &self.hook_command_environment(&self.environment, hook_env),
                )?;
                super::repair_step::single_wheel_in(&repaired_dir)
            }
            RepairCommand::Builtin => {
                let mut lib_paths = super::repair_step::target_library_folders(
                    &self.context.cache,
                    target,
                    python,
                    self.spec,
                    self.context.offline,
                )?;
                lib_paths.extend(self.target.prefix.library_dirs());
                lib_paths.extend(built.library_dirs.iter().cloned());
                super::repair_step::builtin_repair(
                    &self.context.cache,
                    &built.path,
                    target,
                    lib_paths,
                    &repaired_dir,
                    &self.context.network(self.spec),
                )
            }
        }
    }

    /// A wheel whose tests failed goes to `failed/<identifier>/` of the run's log folder
    /// with its logs, never among the finished wheels.
    fn keep_failed_wheel_apart(&self, repaired: &Path, reason: &str) -> Ending {
        match super::collect::keep_apart(
            &self.context.logs,
            &self.spec.identifier,
            repaired,
            &self.context.logs.files_of(&self.spec.identifier),
            reason,
        ) {
            Ok(kept) => Ending::Failed {
                stage: Stage::Test,
                error: anyhow::anyhow!(
                    "{reason}; the wheel, its logs and the reason are kept in {}",
                    kept.display()
                ),
                kept_apart: Some(kept),
            },
            Err(error) => failed(
                Stage::Test,
                error.context(format!("{reason}; keeping the wheel apart failed too")),
            ),
        }
    }

    /// Moves the tested wheel into the wheelhouse and hashes it.
    fn collect(&self, repaired: &Path) -> Result<FinishedWheel> {
        let out_dir = self.out_dir();
        let file_name = repaired
            .file_name()
            .context("repaired wheel has no file name")?;
        self.context
            .wheels
            .claim(self.spec.target.id(), &file_name.to_string_lossy())?;
        std::fs::create_dir_all(&out_dir).map_err(IoError::at("create", &out_dir))?;
        let destination = out_dir.join(file_name);
        super::collect::move_file(repaired, &destination)
            .with_context(|| format!("moving {} into {}", repaired.display(), out_dir.display()))?;
        let bytes = std::fs::read(&destination).map_err(IoError::at("read", &destination))?;
        Ok(FinishedWheel {
            sha256: Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
            size: bytes.len() as u64,
            path: destination,
        })
    }
}

/// What one build (of the identifier, or of one slice) leaves for the repair.
struct Built {
    python: BuildPython,
    wheel: BuiltWheel,
    /// The build's own environment, where `repair-wheel-command` runs too.
    hook_env: HookEnv,
    /// The user's `environment`, as evaluated for this build.
    environment: BTreeMap<String, String>,
}

/// `built`, or `built-arm64` for one slice of a fused target.
fn work_folder(stage: &str, slice: &str) -> String {
    match slice {
        "" => stage.to_string(),
        slice => format!("{stage}-{slice}"),
    }
}

/// The backend's view of `build-frontend`: who installs the build requirements, with which
/// options, or no isolation at all.
fn frontend_of(
    option: &crate::support::options::BuildFrontend,
) -> crate::stages::backend::Frontend {
    let args = &option.parsed;
    crate::stages::backend::Frontend {
        description: option.to_string(),
        installer: args.installer,
        isolation: args.isolation,
        check_dependencies: args.check_dependencies,
        installer_args: args.installer_args.clone(),
    }
}
