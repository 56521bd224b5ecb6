//! Where one run's logs go: a folder of its own under the cache, `logs/runs/<started>-<pid>/`
//! (`<started>` in seconds since the epoch, so names sort by age), with one naming scheme
//! for every file, `<identifier>-<stage>.log`. A run never overwrites another's logs, and
//! every path a message prints stays there after the run: the work folder, which is deleted,
//! holds none. `logs/runs/latest` points at the newest run; the oldest runs beyond
//! [`KEPT_RUNS`] are removed when a run starts, except those of runs still going and the
//! newest [`KEPT_FAILED_RUNS`] that kept a failed wheel (`failed/`): the summary told the
//! user that wheel is kept, and a busy machine starts 20 runs in minutes.

use std::path::{Path, PathBuf};

use crate::io_error::IoError;

/// How many runs' logs are kept, this one included.
pub(super) const KEPT_RUNS: usize = 20;

/// How many runs that kept a failed wheel are kept beyond [`KEPT_RUNS`].
pub(super) const KEPT_FAILED_RUNS: usize = 10;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunLogs {
    dir: PathBuf,
}

impl RunLogs {
    /// A new folder under `<cache>/logs/runs/`, after removing the oldest runs' folders.
    pub fn create(cache_root: &Path) -> Result<Self, IoError> {
        let runs = cache_root.join("logs").join("runs");
        std::fs::create_dir_all(&runs).map_err(IoError::at("create", &runs))?;
        prune(&runs, KEPT_RUNS - 1)?;
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs());
        let dir = new_folder(&runs, &format!("{started}-{}", std::process::id()))?;
        // Best effort: a missing `latest` link loses nothing; the messages name the folder.
        let latest = runs.join("latest");
        let _ = std::fs::remove_file(&latest);
        if let Some(name) = dir.file_name() {
            let _ = std::os::unix::fs::symlink(name, &latest);
        }
        Ok(RunLogs { dir })
    }

    /// The logs of a run that keeps them in a folder of its choosing (`crosswheel test`'s
    /// `crosswheel-test-logs/`), made if missing.
    pub fn in_folder(dir: &Path) -> Result<Self, IoError> {
        std::fs::create_dir_all(dir).map_err(IoError::at("create", dir))?;
        Ok(RunLogs {
            dir: dir.to_path_buf(),
        })
    }

    /// The logs of a nested run (a test requirement built here) in a folder of this run's.
    pub fn nested(&self, name: &str) -> Result<Self, IoError> {
        let dir = self.dir.join(name);
        std::fs::create_dir_all(&dir).map_err(IoError::at("create", &dir))?;
        Ok(RunLogs { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `<identifier>-<stage>.log`: `cp311-manylinux_aarch64-build.log`.
    pub fn file(&self, identifier: &str, stage: &str) -> PathBuf {
        self.dir
            .join(format!("{}-{stage}.log", file_safe(identifier)))
    }

    /// Where a wheel of `identifier` that failed after it was built is kept, with its
    /// reason: `failed/<identifier>/` of this run's folder.
    pub fn failed_folder(&self, identifier: &str) -> PathBuf {
        self.dir.join("failed").join(file_safe(identifier))
    }

    /// This run's log files of `identifier`.
    pub fn files_of(&self, identifier: &str) -> Vec<PathBuf> {
        let prefix = format!("{}-", file_safe(identifier));
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|entry| entry.file_name().to_string_lossy().starts_with(&prefix))
            .map(|entry| entry.path())
            .filter(|path| path.is_file())
            .collect();
        files.sort();
        files
    }
}

/// `runs/<name>`, or `<name>-2`, `-3`, ... when a run of this process started in the same
/// second: `create_dir` fails on a folder that exists, so no two runs share one.
fn new_folder(runs: &Path, name: &str) -> Result<PathBuf, IoError> {
    for attempt in 1.. {
        let dir = match attempt {
            1 => runs.join(name),
            n => runs.join(format!("{name}-{n}")),
        };
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(IoError::new("create", dir, error)),
        }
    }
    unreachable!("the attempts never end")
}

/// An identifier as part of a file name (`cp313t-macosx_universal2 (arm64)` has a space).
fn file_safe(identifier: &str) -> String {
    identifier
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' | '-' => c,
            _ => '_',
        })
        .collect::<String>()
        .trim_matches('_')
        .to_string()
}

/// Removes the oldest run folders of `runs` so that at most `keep` remain.
fn prune(runs: &Path, keep: usize) -> Result<(), IoError> {
    let mut folders: Vec<(u64, PathBuf)> = std::fs::read_dir(runs)
        .map_err(IoError::at("list", runs))?
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let (started, pid) = name.split_once('-')?;
            // A run still going keeps its folder however many runs started since: its build
            // writes there until it ends (numpy's 12-minute macOS build failed when 20
            // short runs started meanwhile and the oldest folder, its own, was removed).
            if is_running(pid) {
                return None;
            }
            Some((started.parse().ok()?, entry.path()))
        })
        .collect();
    folders.sort();
    let failed_kept: Vec<PathBuf> = folders
        .iter()
        .rev()
        .filter(|(_, folder)| folder.join("failed").is_dir())
        .take(KEPT_FAILED_RUNS)
        .map(|(_, folder)| folder.clone())
        .collect();
    folders.retain(|(_, folder)| !failed_kept.contains(folder));
    let excess = folders.len().saturating_sub(keep);
    for (_, folder) in folders.into_iter().take(excess) {
        // Another run may be pruning the same folder: what is gone is gone.
        match std::fs::remove_dir_all(&folder) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                return Err(IoError::new("remove", folder, error));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Whether the process a run folder is named after is alive (Linux's `/proc`; a reused
/// pid only keeps a folder a little longer).
fn is_running(pid: &str) -> bool {
    pid.parse::<u32>()
        .is_ok_and(|pid| Path::new("/proc").join(pid.to_string()).exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_runs_keep_their_logs_apart_under_one_naming_scheme() {
        let cache = tempfile::tempdir().unwrap();
        let first = RunLogs::create(cache.path()).unwrap();
        std::fs::write(first.file("cp311-manylinux_aarch64", "build"), "first").unwrap();
        // The same process in the same second: still a folder of its own.
        let second = RunLogs::create(cache.path()).unwrap();
        assert_ne!(first.dir(), second.dir());
        std::fs::write(second.file("cp311-manylinux_aarch64", "build"), "second").unwrap();
        assert_eq!(
            std::fs::read_to_string(first.file("cp311-manylinux_aarch64", "build")).unwrap(),
            "first"
        );
        assert_eq!(
            second.file("cp311-manylinux_aarch64", "test"),
            second.dir().join("cp311-manylinux_aarch64-test.log")
        );
        assert_eq!(
            second.file("cp311-macosx_universal2 (arm64)", "build"),
            second
                .dir()
                .join("cp311-macosx_universal2__arm64-build.log")
        );
        let latest = cache.path().join("logs/runs/latest");
        assert_eq!(
            std::fs::canonicalize(latest).unwrap(),
            std::fs::canonicalize(second.dir()).unwrap()
        );
        std::fs::write(second.file("cp311-manylinux_aarch64", "test"), "").unwrap();
        assert_eq!(second.files_of("cp311-manylinux_aarch64").len(), 2);
        assert!(second.files_of("cp311-manylinux_ppc64le").is_empty());
    }

    #[test]
    fn runs_that_kept_a_failed_wheel_outlive_twenty_later_runs() {
        let cache = tempfile::tempdir().unwrap();
        let runs = cache.path().join("logs/runs");
        let failed_at = [2, 3];
        for started in 1..=KEPT_RUNS + 5 {
            let folder = runs.join(format!("{started}-999999999"));
            std::fs::create_dir_all(&folder).unwrap();
            if failed_at.contains(&started) {
                std::fs::create_dir_all(folder.join("failed/cp311-manylinux_aarch64")).unwrap();
            }
        }
        RunLogs::create(cache.path()).unwrap();
        for started in failed_at {
            assert!(runs.join(format!("{started}-999999999/failed")).is_dir());
        }
        assert!(!runs.join("1-999999999").exists());
        let left = std::fs::read_dir(&runs)
            .unwrap()
            .filter(|entry| entry.as_ref().unwrap().file_type().unwrap().is_dir())
            .count();
        assert_eq!(left, KEPT_RUNS + failed_at.len());
    }

    #[test]
    fn the_oldest_runs_are_pruned_when_a_run_starts() {
        let cache = tempfile::tempdir().unwrap();
        let runs = cache.path().join("logs/runs");
        for started in 1..=KEPT_RUNS + 5 {
            // No process has pid 999999999 (above Linux's pid_max): these runs are over.
            std::fs::create_dir_all(runs.join(format!("{started}-999999999"))).unwrap();
        }
        // The oldest folder of all belongs to a run still going: this process.
        let running = runs.join(format!("0-{}", std::process::id()));
        std::fs::create_dir_all(&running).unwrap();
        std::fs::create_dir_all(runs.join("not-a-run")).unwrap();
        let this = RunLogs::create(cache.path()).unwrap();
        let mut left: Vec<String> = std::fs::read_dir(&runs)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name != "latest" && name != "not-a-run")
            .collect();
        left.sort_by_key(|name| name.split_once('-').unwrap().0.parse::<u64>().unwrap());
        assert_eq!(left.len(), KEPT_RUNS + 1, "{left:?}");
        assert!(running.is_dir(), "a running run's folder stays: {left:?}");
        assert_eq!(
            left[1], "7-999999999",
            "the six oldest ended runs are gone: {left:?}"
        );
        assert!(this.dir().is_dir());
        assert!(
            runs.join("not-a-run").is_dir(),
            "only run folders are pruned"
        );
    }
}
