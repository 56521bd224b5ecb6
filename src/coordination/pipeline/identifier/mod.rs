//! One build identifier through build → repair → test → wheelhouse. Each stage is a
//! named step; the first that fails ends the identifier with a typed [`Ending::Failed`].
//! This file sequences the steps; `build`, `repair` (with fuse and audit) and `finish`
//! (collect, or keep apart) hold them.

mod build;
mod finish;
mod repair;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;

use super::context::RunContext;
use super::outcome::{Ending, Outcome, Stage, StageTimes, TestResult};
use super::{progress, report};
use crate::input::options::{BuildSpec, Plan};
use crate::io_error::IoError;
use crate::target::Target;
use build::Built;

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
    /// What the builds went without although the project asked for it.
    warnings: Vec<String>,
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
                warnings: Vec::new(),
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
        warnings: Vec::new(),
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
        warnings: identifier.warnings,
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
            // A test command that calls `auditwheel show` or `abi3audit` gets the peers,
            // after the test venv, whose own installs of them come first.
            let environment = super::hooks::with_peers(
                self.environment.clone(),
                self.work.path(),
                &self.spec.target,
            )?;
            super::test_step::test(
                self.plan,
                self.spec,
                &repaired,
                super::test_step::Tested::Built,
                self.context,
                &environment,
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
        for lost in &built.lost {
            tracing::warn!("{id}: {lost}");
            self.warnings.push(lost.clone());
        }
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

    fn out_dir(&self) -> PathBuf {
        super::output_dir(self.plan, self.spec)
    }
}

/// `built`, or `built-arm64` for one slice of a fused target.
fn work_folder(stage: &str, slice: &str) -> String {
    match slice {
        "" => stage.to_string(),
        slice => format!("{stage}-{slice}"),
    }
}
