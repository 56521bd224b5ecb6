//! Running commands with their output teed into the test log.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use super::TestError;

use crate::support::host::shell_quote;

/// How many trailing output lines are kept to explain a failure.
const KEPT_LINES: usize = 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Echo {
    /// Stream to our stdout as well (the test command and before-test: the user watches
    /// them, and cibuildwheel prints them there).
    Yes,
    /// Log only (installation chatter; its gist is in the error if it fails).
    No,
}

pub(crate) struct Finished {
    pub status: ExitStatus,
    tail: VecDeque<String>,
    /// The limit the command was killed at.
    pub timed_out: Option<Duration>,
}

impl Finished {
    /// The last non-empty line of output: under `pytest -v`, the last test that ran.
    pub fn last_line(&self) -> Option<&str> {
        self.tail
            .iter()
            .rev()
            .map(|line| line.trim())
            .find(|line| !line.is_empty())
    }

    /// The last lines of output, oldest first.
    pub fn tail(&self) -> Vec<String> {
        self.tail.iter().cloned().collect()
    }

    /// The line that best explains a failure (see [`super::pip_output::reason`]).
    pub fn reason(&self) -> String {
        super::pip_output::reason(&self.tail())
            .unwrap_or_else(|| format!("{} without output", self.status))
    }
}

pub(crate) struct Log {
    file: File,
    path: PathBuf,
}

impl Log {
    pub fn create(path: &Path) -> Result<Self, TestError> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(TestError::io("create", parent))?;
        }
        let file = File::create(path).map_err(TestError::io("create", path))?;
        Ok(Log {
            file,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Everything logged so far.
    pub fn text(&self) -> String {
        std::fs::read(&self.path)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default()
    }

    /// A line of our own, marked so it stands out from the commands' output.
    pub fn note(&mut self, text: &str) -> Result<(), TestError> {
        writeln!(self.file, "[crosswheel] {text}").map_err(TestError::io("write", &self.path))
    }

    /// Runs `command` with stdout and stderr merged in order into the log.
    pub fn run(&mut self, command: Command, echo: Echo) -> Result<Finished, TestError> {
        self.run_limited(command, echo, None)
    }

    /// [`Log::run`], ending the command after `limit`: it runs in a process group of its
    /// own, and the whole group (qemu and everything the suite started) is killed.
    pub fn run_limited(
        &mut self,
        mut command: Command,
        echo: Echo,
        limit: Option<Duration>,
    ) -> Result<Finished, TestError> {
        use std::os::unix::process::CommandExt;
        self.note(&format!("$ {}", describe(&command)))?;
        let program = PathBuf::from(command.get_program());
        let (reader, writer) =
            std::io::pipe().map_err(TestError::io("create a pipe for", &program))?;
        let writer_for_stderr = writer
            .try_clone()
            .map_err(TestError::io("create a pipe for", &program))?;
        command
            .stdout(writer)
            .stderr(writer_for_stderr)
            .process_group(0);
        let mut child = command.spawn().map_err(TestError::io("run", &program))?;
        // The command keeps copies of the pipe's write end; the reads only end once
        // every copy is closed.
        drop(command);
        let lines = read_lines_in_background(reader);

        let deadline = limit.map(|limit| Instant::now() + limit);
        let mut tail = VecDeque::with_capacity(KEPT_LINES);
        let mut timed_out = None;
        loop {
            let next = match deadline {
                Some(deadline) => {
                    lines.recv_timeout(deadline.saturating_duration_since(Instant::now()))
                }
                None => lines.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            let line = match next {
                Ok(line) => line,
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    kill_group(&mut child);
                    timed_out = limit;
                    break;
                }
            };
            self.file
                .write_all(&line)
                .map_err(TestError::io("write", &self.path))?;
            let text = String::from_utf8_lossy(&line);
            if echo == Echo::Yes {
                crate::logging::echo_stdout(text.as_bytes());
            }
            if tail.len() == KEPT_LINES {
                tail.pop_front();
            }
            tail.push_back(text.trim_end().to_string());
        }
        let status = child.wait().map_err(TestError::io("wait for", &program))?;
        match timed_out {
            Some(limit) => self.note(&format!(
                "killed after {} s (test-timeout)",
                limit.as_secs()
            ))?,
            None => self.note(&format!("exit: {status}"))?,
        }
        Ok(Finished {
            status,
            tail,
            timed_out,
        })
    }
}

/// The lines `reader` yields, through a channel that closes at end of output. A process
/// that escaped a killed group may hold the pipe open: the thread is then left behind,
/// blocked, and the caller goes on without it.
fn read_lines_in_background(reader: std::io::PipeReader) -> mpsc::Receiver<Vec<u8>> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(reader);
        loop {
            let mut line = Vec::new();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if sender.send(line).is_err() {
                        break;
                    }
                }
            }
        }
    });
    receiver
}

/// Kills `child`'s process group (the child leads it), else the child alone.
fn kill_group(child: &mut Child) {
    let group = format!("-{}", child.id());
    let killed = Command::new("kill")
        .args(["-KILL", "--", &group])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !killed {
        let _ = child.kill();
    }
}

fn describe(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|part| shell_quote(&part.to_string_lossy()).into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_past_its_limit_is_killed_with_its_children() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = Log::create(&dir.path().join("run.log")).unwrap();
        let mut command = Command::new("sh");
        // A child that would outlive a kill of the shell alone.
        command.args([
            "-c",
            "echo 'test_one PASSED'; echo; sleep 600 & sleep 600; wait",
        ]);
        let started = Instant::now();
        let finished = log
            .run_limited(command, Echo::No, Some(Duration::from_secs(1)))
            .unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(finished.timed_out, Some(Duration::from_secs(1)));
        assert_eq!(finished.last_line(), Some("test_one PASSED"));
        assert!(!finished.status.success());
        let text = std::fs::read_to_string(log.path()).unwrap();
        assert!(text.contains("killed after 1 s (test-timeout)"), "{text}");
    }

    #[test]
    fn merged_output_is_logged_in_order_and_failure_reason_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = Log::create(&dir.path().join("logs/run.log")).unwrap();
        let mut command = Command::new("sh");
        command.args(["-c", "echo one; echo 'ERROR: two' >&2; echo three; exit 3"]);
        let finished = log.run(command, Echo::No).unwrap();
        assert_eq!(finished.status.code(), Some(3));
        assert_eq!(finished.reason(), "ERROR: two");
        let text = std::fs::read_to_string(log.path()).unwrap();
        let body: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with("[crosswheel]"))
            .collect();
        assert_eq!(body, ["one", "ERROR: two", "three"]);
    }
}
