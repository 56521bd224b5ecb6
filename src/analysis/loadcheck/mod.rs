//! Static load checks: what the target's dynamic loader would do with a
//! wheel's binaries, decided on this host without running them.

mod macos;

use std::fmt;

use serde::Serialize;

pub use macos::check_macos_wheel;

/// The outcome of a load check: every file looked at and every problem found.
#[derive(Debug, Clone, Serialize)]
pub struct LoadCheckReport {
    pub wheel: String,
    /// Install paths of the binaries checked.
    pub checked: Vec<String>,
    pub failures: Vec<LoadFailure>,
}

impl LoadCheckReport {
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

impl fmt::Display for LoadCheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.passed() {
            return writeln!(f, "{}: {} binaries load", self.wheel, self.checked.len());
        }
        writeln!(f, "{}: {} load failures", self.wheel, self.failures.len())?;
        for failure in &self.failures {
            writeln!(f, "  {failure}")?;
        }
        Ok(())
    }
}

/// One reason a file would not load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoadFailure {
    /// Install path inside the wheel (or the wheel file name for wheel-wide problems).
    pub file: String,
    /// The slice the problem is in (`arm64`, `x86_64`); `None` for wheel-wide problems.
    pub arch: Option<String>,
    pub problem: LoadProblem,
}

impl fmt::Display for LoadFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.arch {
            Some(arch) => write!(f, "{} ({arch}): {}", self.file, self.problem),
            None => write!(f, "{}: {}", self.file, self.problem),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LoadProblem {
    #[error("the wheel's platform tags ({tags}) name no arm64 or x86_64 macOS platform")]
    NotMacosWheel { tags: String },
    #[error("has no slice of this architecture, which the wheel's tags promise (only {arches})")]
    NoSlice { arches: String },
    #[error("has no code signature; arm64 macOS refuses to map it")]
    MissingSignature,
    #[error("the signature does not verify: {reason}")]
    InvalidSignature { reason: String },
    #[error("requires macOS {minos} but the wheel tag promises {tag_version}")]
    MinosTooNew { minos: String, tag_version: String },
    #[error(
        "depends on `{install_name}`, which resolves neither inside the wheel nor to a macOS system library"
    )]
    UnresolvedDependency { install_name: String },
    #[error("imports `{symbol}` from {library}, which does not export it")]
    MissingSymbol { symbol: String, library: String },
    #[error(
        "imports `{symbol}` by flat lookup, but no image it loads exports it and it is not a Python C-API name"
    )]
    MissingFlatSymbol { symbol: String },
    #[error(
        "imports `{symbol}` from library ordinal {ordinal}, but the image has only {dependencies} dependencies"
    )]
    BadOrdinal {
        symbol: String,
        ordinal: u8,
        dependencies: usize,
    },
}
