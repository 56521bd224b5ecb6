//! A lock file that keeps two processes from fetching the same tree at once.
//!
//! Correctness does not rest on it — trees are built in private temporary folders and
//! renamed into place — it only saves the second process the download. That is why a
//! lock left by a dead process is simply broken: should two processes both break it,
//! each builds its own tree and the rename keeps one.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::SysrootError;

const POLL_INTERVAL: Duration = Duration::from_millis(250);

/// A lock whose holder has not written its pid yet is given this long before it counts
/// as abandoned.
const UNWRITTEN_LOCK_GRACE: Duration = Duration::from_secs(30);

/// Held while building; removes its file when dropped.
#[derive(Debug)]
pub(crate) struct BuildLock {
    path: PathBuf,
}

impl Drop for BuildLock {
    fn drop(&mut self) {
        // Nothing useful to do on failure: a leftover lock names a dead pid and is broken
        // by the next run.
        let _ = fs::remove_file(&self.path);
    }
}

pub(crate) enum Acquired {
    Lock(BuildLock),
    /// Another process finished the work while this one waited.
    FinishedElsewhere,
}

#[derive(Debug, PartialEq, Eq)]
enum Holder {
    Alive(u32),
    Gone,
}

pub(crate) fn acquire(
    path: &Path,
    finished: &dyn Fn() -> bool,
    timeout: Duration,
) -> Result<Acquired, SysrootError> {
    let started = Instant::now();
    loop {
        match OpenOptions::new().write(true).create_new(true).open(path) {
            Ok(mut file) => {
                writeln!(file, "{}", std::process::id())
                    .map_err(SysrootError::io("write", path))?;
                return Ok(Acquired::Lock(BuildLock {
                    path: path.to_path_buf(),
                }));
            }
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
            Err(err) => return Err(SysrootError::io("create the lock file", path)(err)),
        }
        if finished() {
            return Ok(Acquired::FinishedElsewhere);
        }
        match holder(path, Path::new("/proc")) {
            Holder::Gone => {
                tracing::debug!("breaking abandoned lock {}", path.display());
                match fs::remove_file(path) {
                    Ok(()) => {}
                    Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                    Err(err) => {
                        return Err(SysrootError::io("remove the abandoned lock", path)(err));
                    }
                }
            }
            Holder::Alive(pid) => {
                if started.elapsed() > timeout {
                    return Err(SysrootError::LockTimeout {
                        path: path.to_path_buf(),
                        pid,
                        waited_secs: started.elapsed().as_secs(),
                    });
                }
                if started.elapsed() < POLL_INTERVAL {
                    tracing::info!(
                        "waiting for process {pid}, which is preparing the same files ({})",
                        path.display()
                    );
                }
                std::thread::sleep(POLL_INTERVAL);
            }
        }
    }
}

/// Who holds the lock at `path`, judged by the pid inside and `proc` (the procfs root).
fn holder(path: &Path, proc: &Path) -> Holder {
    let Ok(text) = fs::read_to_string(path) else {
        // Released between our attempt and this read: try again at once.
        return Holder::Gone;
    };
    match text.trim().parse::<u32>() {
        Ok(pid) if proc.join(pid.to_string()).exists() => Holder::Alive(pid),
        Ok(_) => Holder::Gone,
        Err(_) => {
            let age = fs::metadata(path)
                .and_then(|meta| meta.modified())
                .ok()
                .and_then(|modified| SystemTime::now().duration_since(modified).ok());
            match age {
                Some(age) if age < UNWRITTEN_LOCK_GRACE => Holder::Alive(0),
                _ => Holder::Gone,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_naming_a_dead_pid_is_broken_and_taken() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".tree.lock");
        // Pid numbers are capped far below u32::MAX (pid_max ≤ 2^22), so none is alive.
        fs::write(&path, "4294967295\n").unwrap();
        let acquired = acquire(&path, &|| false, Duration::from_secs(5)).unwrap();
        assert!(matches!(acquired, Acquired::Lock(_)));
        assert_eq!(
            fs::read_to_string(&path).unwrap().trim(),
            std::process::id().to_string()
        );
        drop(acquired);
        assert!(
            !path.exists(),
            "the lock file must go when the lock is dropped"
        );
    }

    #[test]
    fn live_holder_makes_the_caller_wait_then_time_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".tree.lock");
        fs::write(&path, format!("{}\n", std::process::id())).unwrap();
        let err = match acquire(&path, &|| false, Duration::from_millis(300)) {
            Err(err) => err,
            Ok(_) => panic!("a lock held by a live process must not be taken"),
        };
        assert!(matches!(err, SysrootError::LockTimeout { .. }), "{err}");
        assert!(err.to_string().contains("delete that lock file"));
    }

    #[test]
    fn waiter_returns_when_the_holder_finished_the_work() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".tree.lock");
        fs::write(&path, format!("{}\n", std::process::id())).unwrap();
        let acquired = acquire(&path, &|| true, Duration::from_secs(5)).unwrap();
        assert!(matches!(acquired, Acquired::FinishedElsewhere));
    }

    #[test]
    fn holder_is_judged_by_its_pid_in_procfs() {
        let dir = tempfile::tempdir().unwrap();
        let fake_proc = dir.path().join("proc");
        fs::create_dir_all(fake_proc.join("1234")).unwrap();
        let lock = dir.path().join("lock");
        fs::write(&lock, "1234\n").unwrap();
        assert_eq!(holder(&lock, &fake_proc), Holder::Alive(1234));
        fs::write(&lock, "1235\n").unwrap();
        assert_eq!(holder(&lock, &fake_proc), Holder::Gone);
        fs::write(&lock, "").unwrap();
        assert_eq!(
            holder(&lock, &fake_proc),
            Holder::Alive(0),
            "a fresh unwritten lock is still being created"
        );
    }
}
