//! An identifier that an earlier wheel of its lane serves (abi3, or `py3-none` with a
//! platform tag): not built again, but tested on its own CPython, as cibuildwheel tests a
//! compatible wheel on every identifier it serves (`find_compatible_wheel`, then the test
//! step). A wheel that fails there leaves the wheelhouse: it would fail the users of that
//! version too.

use std::time::Instant;

use anyhow::Result;

use super::context::RunContext;
use super::outcome::{Ending, FinishedWheel, Outcome, Stage, StageTimes, TestResult};
use crate::input::options::{BuildSpec, Plan};

/// Which later identifiers of its lane a finished wheel can serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reuse {
    /// `cp3X-abi3`: every later CPython with the GIL.
    Abi3,
    /// `py3-none-<platform>` (a ctypes library, a bundled program): every later CPython,
    /// free-threaded ones included, as it links no Python at all.
    PythonIndependent,
}

impl Reuse {
    pub(super) fn name(self) -> &'static str {
        match self {
            Reuse::Abi3 => "abi3",
            Reuse::PythonIndependent => "py3-none",
        }
    }
}

/// The wheel an earlier identifier of the lane built, and which later ones it serves.
#[derive(Debug, Clone)]
pub(super) struct Reusable {
    pub built_as: String,
    pub wheel: FinishedWheel,
    pub reuse: Reuse,
    /// The identifier whose tests the wheel failed, after which it serves none.
    pub failed_on: Option<String>,
}

/// Tests `reusable`'s wheel for `spec`, an identifier it serves.
pub(super) fn test_served(
    plan: &Plan,
    spec: &BuildSpec,
    context: &RunContext<'_>,
    reusable: &Reusable,
) -> Outcome {
    let identifier = spec.identifier.clone();
    let name = super::collect::file_name_of(&reusable.wheel.path);
    let served = |tested: TestResult| TestResult::ServedByEarlierWheel {
        built_as: reusable.built_as.clone(),
        kind: reusable.reuse.name(),
        tested: Box::new(tested),
    };
    if let Some(failed_on) = &reusable.failed_on {
        let reason = format!(
            "not tested: the {} wheel {name} of {} that serves it failed the tests of {failed_on}",
            reusable.reuse.name(),
            reusable.built_as
        );
        return failed_outcome(
            identifier,
            StageTimes::default(),
            served(TestResult::NotRun),
            reason,
        );
    }
    tracing::info!(
        "{identifier}: Found previously built wheel {name} (built as {}), that's compatible with {identifier}; not built again, tested on its own CPython",
        reusable.built_as
    );
    let step = super::progress::Step::start_streaming(&identifier, "test");
    let started = Instant::now();
    let tested = test(plan, spec, context, &reusable.wheel);
    let times = StageTimes {
        test: started.elapsed(),
        ..StageTimes::default()
    };
    let tested = match tested {
        Ok(tested) => tested,
        Err(error) => {
            step.finish("not tested");
            let reason = format!("not tested: {}", crate::logging::one_line(&error));
            return failed_outcome(identifier, times, served(TestResult::NotRun), reason);
        }
    };
    step.finish(&super::report::test_cell(&tested));
    match &tested {
        TestResult::Failed { reason } | TestResult::TimedOut { reason, .. } => {
            let reason = reason.clone();
            failed_outcome(identifier, times, served(tested), reason)
        }
        _ => {
            if let TestResult::NotTested { reason } = &tested {
                // Not a `--require-tests` failure: the wheel was tested when it was built,
                // on the CPython it was built for.
                tracing::warn!("{identifier}: not tested: {reason}");
            }
            Outcome {
                identifier,
                times,
                test: served(tested),
                ending: Ending::Finished(reusable.wheel.clone()),
                warnings: Vec::new(),
            }
        }
    }
}

/// A served identifier that failed, said the moment it fails as a built one is.
fn failed_outcome(
    identifier: String,
    times: StageTimes,
    test: TestResult,
    reason: String,
) -> Outcome {
    tracing::error!("{identifier}: {}", super::report::failure_notice(&reason));
    Outcome {
        identifier,
        times,
        test,
        ending: Ending::Failed {
            stage: Stage::Test,
            error: anyhow::anyhow!(reason),
            kept_apart: None,
        },
        warnings: Vec::new(),
    }
}

/// The test stage for `spec` on the served wheel, with the user's `environment` evaluated
/// for it. No build ran, so no build environment comes first on PATH while it is evaluated.
fn test(
    plan: &Plan,
    spec: &BuildSpec,
    context: &RunContext<'_>,
    wheel: &FinishedWheel,
) -> Result<TestResult> {
    let work = tempfile::Builder::new()
        .prefix("crosswheel-work-")
        .tempdir()
        .map_err(crate::io_error::IoError::at(
            "create a folder in",
            &std::env::temp_dir(),
        ))?;
    let environment =
        super::environment::build_environment(spec, super::environment::process_environment())?;
    let environment = super::hooks::with_peers(environment, work.path(), &spec.target)?;
    super::test_step::test(
        plan,
        spec,
        &wheel.path,
        super::test_step::Tested::Served,
        context,
        &environment,
    )
}
