//! Where a run may download from: whether it may at all (`--offline`), and which Debian
//! archive serves its target trees, source packages and qemu-user (`debian-mirror`). A
//! value handed to whatever downloads — never a process-wide switch — so a library caller,
//! a test and a command each say their own policy, and a function's inputs say whether it
//! may reach the network.

/// The network policy of one build, test or command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Network {
    /// `--offline`: nothing is downloaded; what the cache lacks stops the step in one line.
    pub offline: bool,
    /// The `debian-mirror` option: Debian's own archive when `None` (or blank).
    pub debian_mirror: Option<String>,
}

impl Network {
    pub fn new(offline: bool, debian_mirror: Option<String>) -> Network {
        Network {
            offline,
            debian_mirror,
        }
    }

    /// The mirror to use instead of Debian's own archive, if one is set.
    pub fn mirror(&self) -> Option<&str> {
        self.debian_mirror
            .as_deref()
            .filter(|mirror| !mirror.trim().is_empty())
    }
}
