//! Building a package for a target from its sdist, as a service one stage asks of another:
//! the test stage for a test requirement the index has no target wheel of, the build stage
//! for a build requirement whose headers are the target's (numpy on ppc64le). The builder
//! is the pipeline's, which builds projects; the stages only ask, through this trait.

use std::path::PathBuf;
use std::time::Duration;

use crate::python_tag::PythonTag;
use crate::target::Target;

/// A requirement's target wheel, built here or found in the cache of such builds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltRequirement {
    /// The repaired wheel, in the cache.
    pub wheel: PathBuf,
    /// The distribution, as its sdist names it (`numpy`).
    pub name: String,
    pub version: String,
    /// How long the build and repair took; for a cached wheel, the first build's time.
    pub took: Duration,
    /// Whether the wheel came from the cache rather than a build of this run.
    pub cached: bool,
}

/// Why a requirement could not be built, with the log that says more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequirementBuildFailure {
    pub reason: String,
    pub log: Option<PathBuf>,
}

impl std::fmt::Display for RequirementBuildFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.reason)?;
        if let Some(log) = &self.log {
            write!(f, "; log: {}", log.display())?;
        }
        Ok(())
    }
}

/// What a requirement is built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildPurpose<'a> {
    /// To be installed and run (a test requirement, or headers from the same build): the
    /// project's own configuration.
    Install,
    /// For its headers alone: the project's configuration with these options replaced
    /// (numpy without its BLAS). Cached apart, so such a wheel is never installed to run.
    HeadersOnly(&'a std::collections::BTreeMap<String, String>),
}

/// Builds `requirement` (`numpy>=1.25`) for CPython `python` on a Linux `target`
/// (manylinux or musllinux): fetches its sdist, builds and repairs it as crosswheel builds
/// any project (no tests), checks that every ELF file is for the target's architecture, and
/// caches the wheel.
pub trait RequirementBuilder: Send + Sync {
    fn build(
        &self,
        requirement: &str,
        target: &Target,
        python: PythonTag,
        purpose: BuildPurpose<'_>,
    ) -> Result<BuiltRequirement, RequirementBuildFailure>;
}

impl std::fmt::Debug for dyn RequirementBuilder + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequirementBuilder")
    }
}
