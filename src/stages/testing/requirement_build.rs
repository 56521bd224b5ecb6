//! Test requirements that neither the index nor the target's Debian release has a target
//! wheel of (numpy>=1.25 for CPython 3.11 on ppc64le: no wheel on the index, Debian
//! bookworm's python3-numpy is 1.24.2) are cross-built here from their sdists, by
//! crosswheel's own build and repair: never under emulation with the host's compiler.
//!
//! The test stage only asks; the build is the pipeline's ([`RequirementBuilder`] is
//! implemented there), since building is a stage of its own that testing does not call.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::python_tag::PythonTag;
use crate::support::sysroot::LinuxArch;

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

/// Builds `requirement` (`numpy>=1.25`) for CPython `python` on Linux `arch`: fetches its
/// sdist, builds and repairs it as crosswheel builds any project (no tests), checks that
/// every ELF file is for `arch`, and caches the wheel.
pub trait RequirementBuilder: Send + Sync {
    fn build(
        &self,
        requirement: &str,
        arch: LinuxArch,
        python: PythonTag,
    ) -> Result<BuiltRequirement, RequirementBuildFailure>;
}

/// A [`RequirementBuilder`] a [`super::TestSpec`] can carry (and compare, by identity).
#[derive(Clone)]
pub struct Builder(pub Arc<dyn RequirementBuilder>);

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequirementBuilder")
    }
}

impl PartialEq for Builder {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Builder {}
