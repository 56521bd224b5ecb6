//! `--offline` for the whole run. Most downloads take the flag as an argument; Debian's
//! archive is reached through APT far below the callers that know the options (target
//! trees, source packages, qemu, for the build, the test stage and `crosswheel test`), and
//! the policy is the same for all of them, so the command that parsed `--offline` sets it
//! here once and [`crate::support::sysroot`] asks before it starts APT.

use std::sync::atomic::{AtomicBool, Ordering};

static OFFLINE: AtomicBool = AtomicBool::new(false);

/// Forbids every later download of this process (`--offline`).
pub fn forbid_downloads() {
    OFFLINE.store(true, Ordering::SeqCst);
}

/// Whether `--offline` forbids downloading.
pub fn downloads_forbidden() -> bool {
    OFFLINE.load(Ordering::SeqCst)
}
