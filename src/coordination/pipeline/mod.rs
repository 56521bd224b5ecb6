//! The whole job for one project: for every build identifier of the plan,
//! build → repair → test, and only wheels that made it through every stage
//! reach the wheelhouse. Stages exchange plain data (paths, `Target`); a
//! failing identifier does not stop the others.

mod audit;
mod collect;
mod context;
mod environment;
mod exit;
mod extensions;
mod first_error;
pub mod hints;
mod hooks;
mod identifier;
mod outcome;
mod path_check;
mod progress;
mod project_copies;
mod repair_step;
pub mod report;
mod requirement_build;
mod run_logs;
mod schedule;
mod served;
mod target_cpython;
mod targets;
mod test_step;
mod usr_local;

pub use audit::pinned_abi3audit;
pub use exit::{FatalError, WheelsThisRun, exit_code};
pub use outcome::{Ending, FinishedWheel, Outcome, Stage, StageTimes, TestResult};
pub use project_copies::{ProjectCopies, copy_for_linux_targets};
pub use requirement_build::requirement_builder;
pub use run_logs::RunLogs;
pub(crate) use target_cpython::built_target_cpython;
pub(crate) use targets::TargetReach;

use std::path::PathBuf;

use anyhow::Result;

use crate::input::options::{BuildSpec, Plan};
use crate::io_error::IoError;
use crate::stages::toolchain::CudaRequest;
use crate::support::host::Cache;
use context::RunContext;

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
/// stops the others; a target whose `before-all` or catalogue libraries failed has no
/// build (each would run on a machine the project did not prepare), and the other
/// targets build. Outcomes come back in plan order, whatever order the builds finished in.
pub fn run(plan: &Plan, options: &PipelineOptions) -> Result<Vec<Outcome>> {
    let cache = Cache::from_env()?;
    let logs = match &options.logs {
        Some(logs) => logs.clone(),
        None => RunLogs::create(cache.root())?,
    };
    tracing::info!("logs of this run: {}", logs.dir().display());
    let context = RunContext {
        cache,
        offline: options.offline,
        logs,
        jobs: options.jobs.max(1),
        wheels: &options.wheels,
    };
    // The output folders exist from the start, as cibuildwheel makes them, so a run whose
    // every build failed still leaves the (empty) folder a CI step looks into.
    for spec in &plan.builds {
        let dir = output_dir(plan, spec);
        std::fs::create_dir_all(&dir).map_err(IoError::at("create", &dir))?;
    }
    // A CUDA release or component crosswheel does not pin stops the run before any build.
    for spec in &plan.builds {
        cuda_request(spec)?;
    }
    let targets = targets::prepare(plan, &context)?;
    let mut outcomes = schedule::run_all(plan, &context, &targets);
    extensions::fail_wheels_missing_extensions(plan, &mut outcomes, &context.logs);
    Ok(outcomes)
}

/// The CUDA toolkit `spec`'s options ask for, checked against the releases the toolchain
/// pins; `None` when they name none.
pub(crate) fn cuda_request(spec: &BuildSpec) -> Result<Option<CudaRequest>> {
    let cuda = &spec.options.cuda;
    CudaRequest::parse(cuda.release.as_deref(), &cuda.components)
        .map_err(|reason| anyhow::anyhow!(reason))
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
    context: &RunContext<'_>,
    targets: &targets::Targets,
) -> Outcome {
    let outcome = match targets.of(spec) {
        Ok(prepared) => identifier::run_one(plan, spec, context, &prepared),
        Err(problem) => Outcome {
            identifier: spec.identifier.clone(),
            times: StageTimes::default(),
            test: TestResult::NotRun,
            ending: Ending::Failed {
                stage: Stage::Prepare,
                error: anyhow::anyhow!(problem),
                kept_apart: None,
            },
            warnings: Vec::new(),
        },
    };
    // A target that could not be prepared said so when it failed; its cause is the
    // summary's alone.
    if let Ending::Failed { error, stage, .. } = &outcome.ending
        && *stage != Stage::Prepare
    {
        let problem = crate::logging::one_line(error);
        tracing::error!("{}: {}", spec.identifier, report::failure_notice(&problem));
    }
    outcome
}
