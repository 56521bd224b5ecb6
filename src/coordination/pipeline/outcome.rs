//! What happened to one build identifier, as typed data: the summary, the GitHub step
//! summary and the exit status are all read from it.

use std::path::PathBuf;
use std::time::Duration;

use crate::stages::testing::TestMode;

/// How a wheel was tested.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestResult {
    /// No test command, or `test-skip` selected the identifier.
    NotRun,
    Passed {
        mode: TestMode,
    },
    /// macOS from Linux: dyld's checks done statically; nothing was executed.
    StaticCheckPassed,
    /// The build has a test command, but nothing here can run it (no target CPython of
    /// its version); `reason` says what is missing and how to provide it.
    NotTested {
        reason: String,
    },
    /// The abi3 or `py3-none` wheel built for an older CPython of the same target serves
    /// this one too; `tested` is how it was tested on this identifier's CPython.
    ServedByEarlierWheel {
        built_as: String,
        /// `abi3` or `py3-none`, as the report names the wheel.
        kind: &'static str,
        tested: Box<TestResult>,
    },
    Failed {
        reason: String,
    },
    /// The test command ran past `test-timeout` and was killed: the code was not shown
    /// wrong, the suite did not finish.
    TimedOut {
        after: std::time::Duration,
        reason: String,
    },
}

/// The stages of one identifier, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The target's catalogue libraries and `before-all`, before its first build.
    Prepare,
    Build,
    Repair,
    /// `audit-command` on the repaired wheel (abi3audit by default).
    Audit,
    Test,
    /// Moving the tested wheel into the wheelhouse and hashing it.
    Collect,
}

impl Stage {
    pub fn name(self) -> &'static str {
        match self {
            Stage::Prepare => "prepare",
            Stage::Build => "build",
            Stage::Repair => "repair",
            Stage::Audit => "audit",
            Stage::Test => "test",
            Stage::Collect => "collect",
        }
    }
}

/// How long each stage ran, whether it succeeded or not.
#[derive(Debug, Clone, Copy, Default)]
pub struct StageTimes {
    pub build: Duration,
    pub repair: Duration,
    pub test: Duration,
}

/// A wheel that passed every stage, in the wheelhouse.
#[derive(Debug, Clone)]
pub struct FinishedWheel {
    pub path: PathBuf,
    pub sha256: String,
    pub size: u64,
}

#[derive(Debug)]
pub enum Ending {
    Finished(FinishedWheel),
    Failed {
        stage: Stage,
        error: anyhow::Error,
        /// Where a wheel that failed its tests was kept, with its log.
        kept_apart: Option<PathBuf>,
    },
}

/// What happened to one build identifier.
#[derive(Debug)]
pub struct Outcome {
    pub identifier: String,
    pub times: StageTimes,
    pub test: TestResult,
    pub ending: Ending,
    /// What the build went without although the project asked for it (OpenMP), said in
    /// the summary beside the result.
    pub warnings: Vec<String>,
}

impl Outcome {
    pub fn succeeded(&self) -> bool {
        matches!(self.ending, Ending::Finished(_))
    }

    pub fn wheel(&self) -> Option<&FinishedWheel> {
        match &self.ending {
            Ending::Finished(wheel) => Some(wheel),
            Ending::Failed { .. } => None,
        }
    }
}
