//! Test requirements that neither the index nor the target's Debian release has a target
//! wheel of (numpy>=1.25 for CPython 3.11 on ppc64le: no wheel on the index, Debian
//! bookworm's python3-numpy is 1.24.2) are cross-built here from their sdists, by
//! crosswheel's own build and repair: never under emulation with the host's compiler.
//!
//! The test stage only asks; the build is the pipeline's ([`RequirementBuilder`] is
//! implemented there), since building is a stage of its own that testing does not call.

use std::sync::Arc;

pub use crate::support::host::{BuiltRequirement, RequirementBuildFailure, RequirementBuilder};

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
