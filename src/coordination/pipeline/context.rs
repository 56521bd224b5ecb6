//! What every step of one run shares, made once by [`super::run`]: the cache, whether the
//! run may download, this run's log folder, how many builds run at once, and the wheel
//! names the run has made.

use super::{RunLogs, WheelsThisRun};
use crate::input::options::BuildSpec;
use crate::support::host::{Cache, Network};

pub(super) struct RunContext<'a> {
    pub cache: Cache,
    /// `--offline`: nothing is downloaded; what the cache lacks stops that step in one line.
    pub offline: bool,
    /// This run's log folder: every log path a message prints is there after the run.
    pub logs: RunLogs,
    /// How many identifiers build at once (at least one).
    pub jobs: usize,
    pub wheels: &'a WheelsThisRun,
}

impl RunContext<'_> {
    /// What `spec`'s steps may download, and from which Debian mirror (its `debian-mirror`).
    pub fn network(&self, spec: &BuildSpec) -> Network {
        Network::new(self.offline, spec.options.debian_mirror.clone())
    }
}
