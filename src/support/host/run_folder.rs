//! One temporary folder per run, and what an interrupt does to it.
//!
//! Every temporary folder of a run, crosswheel's own (project copies, work folders, target
//! prefixes) and its children's (pip's, the compilers', the build backends'), lands in one
//! `crosswheel-run-*` folder: the process's `TMPDIR` names it, and both `tempfile` and every
//! program crosswheel starts follow `TMPDIR`. A normal end removes it as its guard drops.
//! SIGINT, SIGTERM and SIGHUP end the run as a container's stop would: the processes
//! crosswheel started are stopped, the folder is removed whole, and the exit status is the
//! shell's for that signal (130 for SIGINT). Only SIGKILL leaves it behind, as it leaves
//! every program's.
//!
//! Caches and logs live in crosswheel's cache, never here, so removing the folder loses no
//! path a run printed. A half-built entry of the cache (a library's staging folder, which
//! sits beside its final place for the rename) is registered with [`RemovedOnStop`] while
//! it exists, and a stop removes it too.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use crate::io_error::IoError;

/// The run's temporary folder; removed (with all it holds) when dropped. Held, never
/// read: its path is `TMPDIR`.
pub struct RunFolder {
    _folder: tempfile::TempDir,
}

/// Set by the signal handler itself, before the handler's thread wakes: a run whose last
/// step races a signal must still end as the signal says, not with the work's status.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// Who ends the run, decided once: the work (its guard dropped at the end of `main`) or a
/// signal ([`stop`]). Without the decision both would call `exit`, and a signal arriving
/// as `main` returns could end a finished run with either status.
static ENDED_BY: AtomicU8 = AtomicU8::new(RUNNING);
const RUNNING: u8 = 0;
const WORK: u8 = 1;
const SIGNAL: u8 = 2;

/// Claims the end of the run for `by`; false when the other side has it.
fn claim_end(by: u8) -> bool {
    ENDED_BY
        .compare_exchange(RUNNING, by, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
}

/// Waits for the other side's `exit`.
fn wait_for_exit() -> ! {
    loop {
        std::thread::park();
    }
}

/// The folders outside the run's folder that a stop removes too, while their guards live.
static ALSO_REMOVED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A folder of the cache that holds unfinished work (a library's staging folder): a stop
/// removes it, as it removes the run's temporary folder, while this guard lives. A normal
/// end, or the work's own failure, leaves its removal to the folder's owner.
pub struct RemovedOnStop {
    path: PathBuf,
}

impl RemovedOnStop {
    pub fn new(path: &Path) -> RemovedOnStop {
        registered().push(path.to_path_buf());
        RemovedOnStop {
            path: path.to_path_buf(),
        }
    }
}

impl Drop for RemovedOnStop {
    fn drop(&mut self) {
        registered().retain(|path| path != &self.path);
    }
}

/// A staging folder made in `dir` (a cache folder, or an output folder, beside where its
/// work is renamed once complete), named `<prefix><random>`: removed when dropped, as a
/// [`tempfile::TempDir`] is, and by a stop.
pub struct Staging {
    folder: tempfile::TempDir,
    _removed_on_stop: RemovedOnStop,
}

impl Staging {
    pub fn path(&self) -> &Path {
        self.folder.path()
    }

    /// The folder, no longer removed on drop nor by a stop: its owner renames it into
    /// place next (or removes it).
    pub fn keep(self) -> PathBuf {
        self.folder.keep()
    }
}

/// A [`Staging`] folder in `dir`.
pub fn staging_in(dir: &Path, prefix: &str) -> std::io::Result<Staging> {
    let folder = tempfile::Builder::new().prefix(prefix).tempdir_in(dir)?;
    let removed_on_stop = RemovedOnStop::new(folder.path());
    Ok(Staging {
        folder,
        _removed_on_stop: removed_on_stop,
    })
}

/// The registered folders; a thread that panicked holding the lock left a usable list.
fn registered() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    ALSO_REMOVED.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Drop for RunFolder {
    /// A run that finished its work as a signal arrived waits for [`stop`], which removes
    /// the folder and exits with the signal's status; returning from `main` instead would
    /// exit 0 while the handler's thread is still stopping the run.
    fn drop(&mut self) {
        // A signal that arrived before the work ended ends the run, even when its thread
        // has not claimed the end yet; after this claim, one that arrives is too late.
        if STOPPING.load(Ordering::SeqCst) || !claim_end(WORK) {
            wait_for_exit();
        }
    }
}

/// Makes the run's temporary folder, points `TMPDIR` at it, and installs the handler of
/// SIGINT, SIGTERM and SIGHUP. Call once, first thing in `main`, before any thread starts.
pub fn enter() -> Result<RunFolder, IoError> {
    let parent = std::env::temp_dir();
    let folder = tempfile::Builder::new()
        .prefix("crosswheel-run-")
        .tempdir_in(&parent)
        .map_err(IoError::at("create a folder in", &parent))?;
    // SAFETY: called from `main` before any other thread exists (the handler's thread is
    // started below), so nothing can read the environment concurrently.
    unsafe { std::env::set_var("TMPDIR", folder.path()) };
    // Processes whose parent ends before them (a SIGINT to the whole process group ends
    // pip before the compiler it started) are adopted by this process, not by init, so
    // they stay below it for the freeze in `stop`. Adopted ones that end are reaped when
    // this process exits.
    // SAFETY: prctl(2) with PR_SET_CHILD_SUBREAPER only sets a flag of this process.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    let to_remove = folder.path().to_path_buf();
    match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
        Ok(mut signals) => {
            for signal in [SIGINT, SIGTERM, SIGHUP] {
                // Registered after the iterator: a flag that is set always has a thread
                // that will stop the run.
                if let Err(error) = signal_hook::flag::register(signal, &STOPPING) {
                    tracing::warn!(
                        "cannot watch for signal {signal} ({error}): a run that ends as it arrives exits 0"
                    );
                }
            }
            std::thread::spawn(move || {
                if let Some(signal) = signals.forever().next() {
                    stop(signal, &to_remove);
                }
            });
        }
        // Without a handler the default action stays: the run ends, the folder remains.
        Err(error) => tracing::warn!(
            "cannot handle SIGINT/SIGTERM ({error}): an interrupted run leaves {} behind",
            to_remove.display()
        ),
    }
    Ok(RunFolder { _folder: folder })
}

/// Ends the run after `signal`: freezes the processes crosswheel started, removes the run's
/// temporary folder, kills them, and exits with the shell's status for the signal.
///
/// Freezing first (SIGSTOP) keeps them from writing while the folder goes, and keeps the
/// pipeline waiting on them instead of reporting their deaths as build failures; holding
/// stdout and stderr keeps it from printing anything after the line that says why.
fn stop(signal: i32, folder: &Path) -> ! {
    // The work ended first: its status stands, and its guard removes the folder.
    if !claim_end(SIGNAL) {
        wait_for_exit();
    }
    let name = match signal {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        _ => "SIGHUP",
    };
    let stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(
        stderr,
        "crosswheel: stopped by {name}: ended the processes it started and removed its temporary folder {}",
        folder.display()
    );
    let frozen = freeze_descendants(std::process::id());
    let first_try = remove(folder);
    // The guards stay registered: `main`'s threads may still run, but none drops a guard
    // before the exit below, for the frozen processes they wait on never end normally.
    let cache_work: Vec<PathBuf> = registered().clone();
    send(&frozen, libc::SIGKILL);
    for work in &cache_work {
        if let Err(error) = remove_within(work, Duration::from_secs(2)) {
            let _ = writeln!(
                stderr,
                "crosswheel: could not remove {}: {error}",
                work.display()
            );
        }
    }
    // A process the freeze missed (one that started as the folder went) may have written
    // into it; once the frozen ones are killed, nothing below this one writes.
    if let Err(error) = first_try.or_else(|_| remove_within(folder, Duration::from_secs(2))) {
        let _ = writeln!(
            stderr,
            "crosswheel: could not remove {}: {error}",
            folder.display()
        );
    }
    // crosswheel's own threads run until the exit, and one may have made a folder below
    // the run's again meanwhile (a project copy), or started a process the freeze never
    // saw: end those and remove the folder once more, last.
    send(&descendants(std::process::id(), &parents()), libc::SIGKILL);
    let _ = remove_within(folder, Duration::from_millis(500));
    // Still holding both: the pipeline, woken by the deaths, must not print now.
    let _held = (stdout, stderr);
    std::process::exit(128 + signal);
}

/// Removes `folder` whole; a folder already gone is removed.
fn remove(folder: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(folder) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// [`remove`], tried again every 50 ms until it succeeds or `limit` passes: killed
/// processes end a moment after the signal, and one may still add a file meanwhile.
fn remove_within(folder: &Path, limit: Duration) -> std::io::Result<()> {
    let started = std::time::Instant::now();
    loop {
        match remove(folder) {
            Err(_) if started.elapsed() < limit => {
                std::thread::sleep(Duration::from_millis(50));
            }
            result => return result,
        }
    }
}

/// Stops (SIGSTOP) every process below `root` and returns them. Repeats until a pass finds
/// none it had not stopped: a process can start a child between two reads of `/proc`.
fn freeze_descendants(root: u32) -> Vec<u32> {
    let mut frozen: Vec<u32> = Vec::new();
    for _ in 0..20 {
        let new: Vec<u32> = descendants(root, &parents())
            .into_iter()
            .filter(|pid| !frozen.contains(pid))
            .collect();
        if new.is_empty() {
            break;
        }
        send(&new, libc::SIGSTOP);
        frozen.extend(new);
    }
    frozen
}

fn send(pids: &[u32], signal: i32) {
    for &pid in pids {
        // SAFETY: kill(2) has no memory effects; a pid that has gone returns ESRCH.
        unsafe { libc::kill(pid as libc::pid_t, signal) };
    }
}

/// Every live process and its parent (pid to parent pid), from `/proc/<pid>/stat`.
fn parents() -> BTreeMap<u32, u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return BTreeMap::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            Some((pid, parent_in_stat(&stat)?))
        })
        .collect()
}

/// The parent pid in a `/proc/<pid>/stat` line: the second field after the command name,
/// which is in parentheses and may itself hold spaces and parentheses.
fn parent_in_stat(stat: &str) -> Option<u32> {
    let (_, after_name) = stat.rsplit_once(')')?;
    let mut fields = after_name.split_whitespace();
    let state = fields.next()?;
    // A zombie has ended already; signalling it does nothing.
    if state == "Z" {
        return None;
    }
    fields.next()?.parse().ok()
}

/// The processes below `root` in `parents` (pid to parent pid), children before their own.
fn descendants(root: u32, parents: &BTreeMap<u32, u32>) -> Vec<u32> {
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for (&pid, _) in parents.iter().filter(|&(_, &of)| of == parent) {
            if pid != root && !found.contains(&pid) {
                found.push(pid);
                frontier.push(pid);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_staging_folder_is_removed_by_a_stop_while_it_lives_and_kept_once_kept() {
        let cache = tempfile::tempdir().unwrap();
        let staging = staging_in(cache.path(), ".build-x-").unwrap();
        let path = staging.path().to_path_buf();
        assert!(registered().contains(&path));
        drop(staging);
        assert!(!path.exists() && !registered().contains(&path));
        let kept = staging_in(cache.path(), ".build-y-").unwrap().keep();
        assert!(kept.is_dir() && !registered().contains(&kept));
    }

    #[test]
    fn the_parent_is_read_after_a_command_name_with_spaces_and_parentheses() {
        let stat = "4242 (cc1 (x) y) S 4200 4242 4200 0 -1 4194304 0 0 0";
        assert_eq!(parent_in_stat(stat), Some(4200));
    }

    #[test]
    fn a_zombie_has_no_parent_to_stop_it_for() {
        assert_eq!(parent_in_stat("77 (sh) Z 1 77 77 0 -1"), None);
    }

    #[test]
    fn descendants_are_every_generation_below_the_root_and_nothing_beside_it() {
        // 10 ─ 11 ─ 13, 10 ─ 12; 20 is a sibling of 10 under 1.
        let parents = BTreeMap::from([(10, 1), (11, 10), (12, 10), (13, 11), (20, 1)]);
        let mut below = descendants(10, &parents);
        below.sort();
        assert_eq!(below, vec![11, 12, 13]);
        assert!(descendants(13, &parents).is_empty());
    }

    #[test]
    fn a_real_child_process_is_found_below_this_one() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("start sleep");
        let below = descendants(std::process::id(), &parents());
        child.kill().expect("kill sleep");
        child.wait().expect("reap sleep");
        assert!(
            below.contains(&child.id()),
            "{below:?} lacks {}",
            child.id()
        );
    }
}
