//! Killing crosswheel at any moment never leaves a partial wheel behind.
//!
//! `repair` of a large real wheel and a whole `build` are SIGKILLed at several
//! moments. After every kill the output folder may hold only complete wheels
//! (each passes `python3 -m zipfile -t` and `crosswheel inspect`), no leftover
//! anywhere below it may carry a `.whl` name, and the next run into the same
//! folder succeeds.
//!
//! SIGINT (to the whole process group, as a terminal's Ctrl-C sends it), SIGTERM and SIGHUP
//! (to crosswheel alone, as a CI runner's cancel or `timeout` sends them) end a build at
//! once, with the shell's exit status for the signal, no process of it left running and
//! nothing left in its temporary folder.
//!
//! The build tests need what `crosswheel build examples/blasdot` needs (python3.11,
//! network access on the first run; later runs use crosswheel's cache).

use crate::common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const NUMPY_LINUX: &str =
    "numpy-2.2.6-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl";

/// `build PROJECT --only cp311-manylinux_aarch64 -w OUTPUT`.
fn aarch64_build<'a>(project: &'a Path, output: &'a Path) -> [&'a std::ffi::OsStr; 6] {
    [
        "build".as_ref(),
        project.as_os_str(),
        "--only".as_ref(),
        "cp311-manylinux_aarch64".as_ref(),
        "-w".as_ref(),
        output.as_os_str(),
    ]
}

/// Starts crosswheel in its own process group, so that the helpers it spawns
/// (build backends, compilers, emulators) can be cleaned up after the kill.
fn spawn(args: &[&std::ffi::OsStr], env: &[(&str, &str)]) -> Child {
    let mut command = Command::new(common::crosswheel_bin());
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    for (name, value) in env {
        command.env(name, value);
    }
    command.spawn().expect("start crosswheel")
}

/// When to kill.
#[derive(Clone, Copy)]
enum Moment {
    /// This long after the start.
    Elapsed(Duration),
    /// This long after a new file of the given kind appears in the given place:
    /// the moments when intermediate or final output is being written.
    AfterNewFile(Place, FileKind, Duration),
}

#[derive(Clone, Copy, Debug)]
enum Place {
    /// The output folder.
    Output,
    /// crosswheel's own temporary folder (its `TMPDIR`).
    Temporary,
}

#[derive(Clone, Copy, Debug)]
enum FileKind {
    Any,
    Wheel,
}

impl FileKind {
    fn matches(self, file: &Path) -> bool {
        match self {
            FileKind::Any => true,
            FileKind::Wheel => file.extension().is_some_and(|extension| extension == "whl"),
        }
    }
}

impl std::fmt::Display for Moment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Moment::Elapsed(delay) => write!(f, "{} ms after the start", delay.as_millis()),
            Moment::AfterNewFile(place, kind, delay) => {
                write!(
                    f,
                    "{} ms after a new {kind:?} file appeared in the {place:?} folder",
                    delay.as_millis()
                )
            }
        }
    }
}

/// The folders a run writes to.
struct Folders {
    output: PathBuf,
    temporary: PathBuf,
}

impl Folders {
    fn get(&self, place: Place) -> &Path {
        match place {
            Place::Output => &self.output,
            Place::Temporary => &self.temporary,
        }
    }
}

/// Sends SIGKILL to crosswheel alone (not to its children: a real crash leaves
/// them running) at `moment`. Returns whether it was still running then.
fn kill_at(child: &mut Child, started: Instant, moment: Moment, folders: &Folders) -> bool {
    wait_for(child, started, moment, folders);
    let running = child.try_wait().expect("poll crosswheel").is_none();
    if running {
        child.kill().expect("SIGKILL crosswheel");
    }
    child.wait().expect("reap crosswheel");
    running
}

/// Waits until `moment` (or until crosswheel has ended).
fn wait_for(child: &mut Child, started: Instant, moment: Moment, folders: &Folders) {
    match moment {
        Moment::Elapsed(delay) => std::thread::sleep(delay.saturating_sub(started.elapsed())),
        Moment::AfterNewFile(place, kind, delay) => {
            let watched = folders.get(place);
            let existing = files_below(watched);
            loop {
                if child.try_wait().expect("poll crosswheel").is_some() {
                    break;
                }
                let appeared = files_below(watched)
                    .into_iter()
                    .any(|file| kind.matches(&file) && !existing.contains(&file));
                if appeared {
                    std::thread::sleep(delay);
                    break;
                }
                std::thread::sleep(Duration::from_micros(500));
            }
        }
    }
}

/// Kills whatever crosswheel left running in its process group.
fn kill_orphans(child: &Child) {
    // The group may be empty already; only a missing `kill` binary is an error.
    let status = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stderr(Stdio::null())
        .status()
        .expect("run kill");
    if status.success() {
        // Let the kernel tear the processes down before the folder is inspected.
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn files_below(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_file())
        .map(|entry| entry.into_path())
        .collect()
}

/// The wheels of `dir` are complete and nothing else below it is named `*.whl`.
/// Returns the wheels.
fn assert_only_complete_wheels(dir: &Path, moment: &str) -> Vec<PathBuf> {
    let mut wheels = Vec::new();
    for file in files_below(dir) {
        if file.extension().is_none_or(|extension| extension != "whl") {
            continue;
        }
        assert_eq!(
            file.parent(),
            Some(dir),
            "{moment}: a leftover below the output folder has a wheel name: {}",
            file.display()
        );
        assert_wheel_is_complete(&file, moment);
        wheels.push(file);
    }
    wheels
}

fn assert_wheel_is_complete(wheel: &Path, moment: &str) {
    let python = common::require_tool("python3", "apt-get install python3");
    let zip_test = Command::new(python)
        .args(["-m", "zipfile", "-t"])
        .arg(wheel)
        .output()
        .expect("run python3 -m zipfile");
    let report = String::from_utf8_lossy(&zip_test.stdout);
    assert!(
        zip_test.status.success() && !report.contains("corrupted"),
        "{moment}: {} fails `python3 -m zipfile -t`: {report}{}",
        wheel.display(),
        String::from_utf8_lossy(&zip_test.stderr)
    );
    let inspect = Command::new(common::crosswheel_bin())
        .arg("inspect")
        .arg(wheel)
        .output()
        .expect("run crosswheel inspect");
    assert!(
        inspect.status.success(),
        "{moment}: crosswheel inspect refuses {}: {}",
        wheel.display(),
        String::from_utf8_lossy(&inspect.stderr)
    );
}

/// Runs `args` to completion, checks it succeeds, and returns how long it took.
fn run_to_completion(args: &[&std::ffi::OsStr], env: &[(&str, &str)], what: &str) -> Duration {
    let started = Instant::now();
    let mut command = Command::new(common::crosswheel_bin());
    command.args(args).stdin(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().expect("run crosswheel");
    assert!(
        output.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    started.elapsed()
}

fn elapsed_ms(milliseconds: &[u64]) -> impl Iterator<Item = Moment> + '_ {
    milliseconds
        .iter()
        .map(|&ms| Moment::Elapsed(Duration::from_millis(ms)))
}

/// Kills `args` at each moment, checks the output folder after each kill, then
/// checks that an uninterrupted run into the same folder succeeds and yields
/// exactly one complete wheel. Returns how many kills landed while crosswheel
/// still ran.
fn survive_kills(args: &[&std::ffi::OsStr], folders: &Folders, moments: &[Moment]) -> usize {
    let env = [(
        "TMPDIR",
        folders.temporary.to_str().expect("UTF-8 temp path"),
    )];
    std::fs::create_dir_all(&folders.temporary).expect("create crosswheel's temp folder");
    let mut interrupted = 0;
    for &moment in moments {
        let started = Instant::now();
        let mut child = spawn(args, &env);
        let was_running = kill_at(&mut child, started, moment, folders);
        interrupted += usize::from(was_running);
        let label = format!(
            "after SIGKILL {moment} ({} ms after the start)",
            started.elapsed().as_millis()
        );
        eprintln!(
            "{label}: {}",
            if was_running {
                "killed"
            } else {
                "had already finished"
            }
        );
        assert_only_complete_wheels(&folders.output, &label);
        kill_orphans(&child);
        assert_only_complete_wheels(
            &folders.output,
            &format!("{label}, once its children were gone"),
        );
    }
    run_to_completion(args, &env, "the run after the kills");
    let wheels = assert_only_complete_wheels(&folders.output, "after the final run");
    assert_eq!(
        wheels.len(),
        1,
        "one wheel expected in {}: {wheels:?}",
        folders.output.display()
    );
    interrupted
}

#[test]
#[ignore = "slow: kills many repairs of a large wheel; Debian's system libraries for the symbol check"]
fn repair_killed_at_any_moment_leaves_no_partial_wheel() {
    let numpy = common::fixture(NUMPY_LINUX);
    let dir = tempfile::tempdir().expect("temp dir");
    let folders = Folders {
        output: dir.path().join("wheelhouse"),
        temporary: dir.path().join("tmp"),
    };
    let args = [
        "repair".as_ref(),
        numpy.as_os_str(),
        "-w".as_ref(),
        folders.output.as_os_str(),
    ];
    let mut moments: Vec<Moment> = elapsed_ms(&[5, 20, 50, 100, 200]).collect();
    // The repair writes its wheel at the very end, into a temporary file beside the output.
    moments.extend(
        [0, 1, 5, 20, 50].map(|ms| {
            Moment::AfterNewFile(Place::Output, FileKind::Any, Duration::from_millis(ms))
        }),
    );
    let interrupted = survive_kills(&args, &folders, &moments);
    // A release repair of numpy takes a few hundred milliseconds, so a late
    // moment can miss it; what matters is that enough kills land mid-run and
    // that none of them left a partial wheel (checked in survive_kills).
    assert!(
        interrupted >= moments.len() / 2,
        "only {interrupted} of {} kills hit a running repair",
        moments.len()
    );
}

#[test]
#[ignore = "slow: real builds of blasdot with zig"]
fn build_killed_at_any_moment_leaves_no_partial_wheel() {
    let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/blasdot");
    let dir = tempfile::tempdir().expect("temp dir");
    // The build's temporary folder on another file system (a tmpfs) when there is
    // one, so that the final move into the output folder is a copy, not a rename.
    let temporary_root = Path::new("/dev/shm");
    let temporary = if temporary_root.is_dir() {
        tempfile::tempdir_in(temporary_root)
    } else {
        tempfile::tempdir()
    }
    .expect("temp dir");
    let folders = Folders {
        output: dir.path().join("wheelhouse"),
        temporary: temporary.path().join("tmp"),
    };
    let args = aarch64_build(&project, &folders.output);
    // The first run also warms the caches, so that the kills below hit the
    // build, repair and test stages rather than downloads.
    std::fs::create_dir_all(&folders.temporary).expect("create crosswheel's temp folder");
    let full_run = run_to_completion(
        &args,
        &[("TMPDIR", folders.temporary.to_str().expect("UTF-8"))],
        "an uninterrupted build",
    );
    let first = assert_only_complete_wheels(&folders.output, "after the first build");
    assert_eq!(first.len(), 1);
    std::fs::remove_dir_all(&folders.output).expect("empty the output folder");

    let mut moments: Vec<Moment> = elapsed_ms(&[50, 500]).collect();
    moments.extend([0.3, 0.6].map(|fraction| Moment::Elapsed(full_run.mul_f64(fraction))));
    // The backend's wheel, then the repaired one, appear in the temporary folder;
    // the final copy goes through a temporary file in the output folder.
    moments.extend([0, 100, 1000].map(|ms| {
        Moment::AfterNewFile(Place::Temporary, FileKind::Wheel, Duration::from_millis(ms))
    }));
    moments.extend(
        [0, 2].map(|ms| {
            Moment::AfterNewFile(Place::Output, FileKind::Any, Duration::from_millis(ms))
        }),
    );
    let interrupted = survive_kills(&args, &folders, &moments);
    // The final copy takes microseconds: the last two kills may come too late.
    assert!(
        interrupted >= moments.len() - 2,
        "only {interrupted} of {} kills hit a running build (an uninterrupted run took {full_run:?})",
        moments.len()
    );
}

/// How a signal reaches crosswheel.
#[derive(Clone, Copy, Debug)]
enum Sent {
    /// To its whole process group: a terminal's Ctrl-C.
    ToGroup,
    /// To crosswheel alone: `timeout`, a CI runner's cancel, `kill`.
    ToCrosswheel,
}

/// Sends SIG`name` to `whom` (a pid, or `-<group>`), waits at most 10 s for crosswheel to
/// end, and returns its status and the processes of its group still running then.
fn signal_and_wait(
    child: &mut Child,
    name: &str,
    whom: &str,
    label: &str,
) -> (std::process::ExitStatus, Vec<String>) {
    let kill = Command::new("kill")
        .args([&format!("-{name}"), "--", whom])
        .status()
        .expect("run kill");
    assert!(kill.success(), "{label}: kill failed");
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll crosswheel") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "{label}: crosswheel still runs 10 s later"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    // SIGKILL reaches a frozen process at once, but a loaded machine may take a while to
    // run it to its end (one in uninterruptible I/O waits for the I/O); a process that
    // escaped the freeze still runs when the wait is over.
    let left = members_after_they_end(child.id(), Duration::from_secs(10));
    kill_orphans(child);
    (status, left)
}

/// The processes of process group `group` that have not ended, from `/proc/<pid>/stat`.
/// The group's live members once none is left, or those still alive after `patience`.
fn members_after_they_end(group: u32, patience: Duration) -> Vec<String> {
    let deadline = Instant::now() + patience;
    loop {
        let left = live_members_of(group);
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn live_members_of(group: u32) -> Vec<String> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("read /proc").flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((command, fields)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = fields.split_whitespace().collect();
        // state, parent, group: a zombie has ended and waits only for its reaper.
        if fields.len() > 2 && fields[0] != "Z" && fields[2] == group.to_string() {
            members.push(format!(
                "{} {command})",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    members
}

#[test]
#[ignore = "slow: real builds of blasdot with zig"]
fn build_stopped_by_a_signal_ends_its_processes_and_leaves_no_temporary_folder() {
    let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/blasdot");
    let dir = tempfile::tempdir().expect("temp dir");
    let folders = Folders {
        output: dir.path().join("wheelhouse"),
        temporary: dir.path().join("tmp"),
    };
    std::fs::create_dir_all(&folders.temporary).expect("create crosswheel's temp folder");
    let temporary = folders.temporary.to_str().expect("UTF-8 temp path");
    let args = aarch64_build(&project, &folders.output);
    // Warms the caches, so that the signals below land in the build, repair and test stages.
    let full_run = run_to_completion(&args, &[("TMPDIR", temporary)], "an uninterrupted build");
    assert_eq!(
        std::fs::read_dir(&folders.temporary)
            .expect("read the temporary folder")
            .count(),
        0,
        "a run that ended normally left something in its temporary folder"
    );

    // The last moment lands as the run ends, or just after: a signal that arrives while it
    // finishes must still end it with the signal's status.
    let moments: Vec<Moment> = [0.2, 0.5, 0.8, 0.97, 1.0]
        .map(|fraction| Moment::Elapsed(full_run.mul_f64(fraction)))
        .into_iter()
        .chain([Moment::AfterNewFile(
            Place::Temporary,
            FileKind::Wheel,
            Duration::ZERO,
        )])
        .collect();
    let signals = [
        ("INT", 2, Sent::ToGroup),
        ("TERM", 15, Sent::ToCrosswheel),
        ("HUP", 1, Sent::ToCrosswheel),
    ];
    let mut landed = 0;
    for (name, number, sent) in signals {
        for &moment in &moments {
            let started = Instant::now();
            let mut child = spawn(&args, &[("TMPDIR", temporary)]);
            wait_for(&mut child, started, moment, &folders);
            let label = format!("SIG{name} {sent:?} {moment}");
            if child.try_wait().expect("poll crosswheel").is_some() {
                eprintln!("{label}: the build had already finished");
                continue;
            }
            let whom = match sent {
                Sent::ToGroup => format!("-{}", child.id()),
                Sent::ToCrosswheel => child.id().to_string(),
            };
            let (status, left) = signal_and_wait(&mut child, name, &whom, &label);
            // A signal that comes once the run has claimed its end (its work done, its
            // folder being removed) is too late: the run ends with its own status, 0.
            let too_late = status.code() == Some(0);
            if !too_late {
                landed += 1;
                assert_eq!(
                    status.code(),
                    Some(128 + number),
                    "{label}: exit status {status}"
                );
            }
            assert!(left.is_empty(), "{label}: still running: {left:?}");
            let leftovers: Vec<_> = std::fs::read_dir(&folders.temporary)
                .expect("read the temporary folder")
                .map(|entry| entry.expect("entry").path())
                .collect();
            assert!(leftovers.is_empty(), "{label}: left {leftovers:?}");
            assert_only_complete_wheels(&folders.output, &label);
            if too_late {
                eprintln!("{label}: came as the run ended, which finished; nothing left");
            } else {
                eprintln!("{label}: stopped, nothing left");
            }
        }
    }
    assert!(
        landed >= signals.len() * 2,
        "only {landed} signals reached a running build (an uninterrupted run took {full_run:?})"
    );
}

/// crosswheel's cache as crosswheel finds it: `CROSSWHEEL_CACHE`, `XDG_CACHE_HOME` or HOME's.
fn crosswheel_cache() -> PathBuf {
    let set = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    match (set("CROSSWHEEL_CACHE"), set("XDG_CACHE_HOME")) {
        (Some(cache), _) => PathBuf::from(cache),
        (None, Some(xdg)) => Path::new(&xdg).join("crosswheel"),
        (None, None) => {
            Path::new(&std::env::var_os("HOME").expect("HOME")).join(".cache/crosswheel")
        }
    }
}

/// The entries of `folder` whose names start with `prefix`.
fn entries_starting(folder: &Path, prefix: &str) -> Vec<PathBuf> {
    std::fs::read_dir(folder)
        .map(|entries| {
            entries
                .flatten()
                .filter(|entry| entry.file_name().to_string_lossy().starts_with(prefix))
                .map(|entry| entry.path())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
#[ignore = "slow: builds zlib for aarch64 with zig, and stops it half-way"]
fn a_build_stopped_while_it_builds_a_library_leaves_no_staging_folder_in_the_cache() {
    // A library is built in a staging folder beside its place in the cache and renamed
    // there once complete. A stop removes that folder as it removes the run's own: the
    // cache holds finished libraries only. A CFLAGS of this run alone gives zlib a key
    // no earlier run built, so the build starts from nothing.
    let dir = tempfile::tempdir().expect("temp dir");
    let unique = format!(
        "-DCROSSWHEEL_STOP_TEST_{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("a clock after 1970")
            .as_nanos()
    );
    let project = common::setuptools_project(
        &dir.path().join("project"),
        "stopped",
        "from setuptools import setup\nsetup()\n",
        &[],
    );
    let pyproject = project.join("pyproject.toml");
    let mut text = std::fs::read_to_string(&pyproject).expect("read pyproject.toml");
    text.push_str(&format!(
        "\n[tool.crosswheel]\ntarget-libraries = [\"zlib\"]\nenvironment = {{ CFLAGS = \"{unique}\" }}\n"
    ));
    std::fs::write(&pyproject, text).expect("write pyproject.toml");
    let temporary = dir.path().join("tmp");
    std::fs::create_dir_all(&temporary).expect("create crosswheel's temp folder");
    let libraries = crosswheel_cache().join("target-libraries");
    let before = entries_starting(&libraries, ".build-zlib-");
    let output = dir.path().join("wheelhouse");
    let args = aarch64_build(&project, &output);
    let mut child = spawn(&args, &[("TMPDIR", temporary.to_str().expect("UTF-8"))]);
    let deadline = Instant::now() + Duration::from_secs(600);
    let staging = loop {
        let new: Vec<PathBuf> = entries_starting(&libraries, ".build-zlib-")
            .into_iter()
            .filter(|path| !before.contains(path))
            .collect();
        if let Some(staging) = new.into_iter().next() {
            break staging;
        }
        assert!(
            child.try_wait().expect("poll crosswheel").is_none(),
            "crosswheel ended before it built zlib"
        );
        assert!(Instant::now() < deadline, "no zlib build started in 600 s");
        std::thread::sleep(Duration::from_millis(20));
    };
    // Into the build: configure has written files in the staging folder by then.
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        child.try_wait().expect("poll crosswheel").is_none(),
        "zlib's build ended within 2 s"
    );
    let group = format!("-{}", child.id());
    let (status, left) = signal_and_wait(&mut child, "INT", &group, "SIGINT");
    assert_eq!(status.code(), Some(130), "exit status {status}");
    assert!(left.is_empty(), "still running: {left:?}");
    assert!(
        !staging.exists(),
        "{} is left in the cache",
        staging.display()
    );
    assert_eq!(
        std::fs::read_dir(&temporary)
            .expect("read the temporary folder")
            .count(),
        0
    );
}
