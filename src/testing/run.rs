//! Running commands with their output teed into the test log.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

use super::TestError;

use crate::host::shell_quote;

/// How many trailing output lines are kept to explain a failure.
const KEPT_LINES: usize = 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Echo {
    /// Stream to our stderr as well (the test command: the user watches it).
    Yes,
    /// Log only (installation chatter; its gist is in the error if it fails).
    No,
}

pub(crate) struct Finished {
    pub status: ExitStatus,
    tail: VecDeque<String>,
}

impl Finished {
    /// The line that best explains a failure: pip's last `ERROR:` line, else the last one.
    pub fn reason(&self) -> String {
        self.tail
            .iter()
            .rev()
            .find(|line| line.starts_with("ERROR:"))
            .or_else(|| self.tail.iter().rev().find(|line| !line.trim().is_empty()))
            .cloned()
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

    /// A line of our own, marked so it stands out from the commands' output.
    pub fn note(&mut self, text: &str) -> Result<(), TestError> {
        writeln!(self.file, "[crosswheel] {text}").map_err(TestError::io("write", &self.path))
    }

    /// Runs `command` with stdout and stderr merged in order into the log.
    pub fn run(&mut self, mut command: Command, echo: Echo) -> Result<Finished, TestError> {
        self.note(&format!("$ {}", describe(&command)))?;
        let program = PathBuf::from(command.get_program());
        let (reader, writer) =
            std::io::pipe().map_err(TestError::io("create a pipe for", &program))?;
        let writer_for_stderr = writer
            .try_clone()
            .map_err(TestError::io("create a pipe for", &program))?;
        command.stdout(writer).stderr(writer_for_stderr);
        let mut child = command.spawn().map_err(TestError::io("run", &program))?;
        // The command keeps copies of the pipe's write end; the read below only ends
        // once every copy is closed.
        drop(command);

        let mut tail = VecDeque::with_capacity(KEPT_LINES);
        let mut reader = BufReader::new(reader);
        let mut line = Vec::new();
        loop {
            line.clear();
            let read = reader
                .read_until(b'\n', &mut line)
                .map_err(TestError::io("read the output of", &program))?;
            if read == 0 {
                break;
            }
            self.file
                .write_all(&line)
                .map_err(TestError::io("write", &self.path))?;
            let text = String::from_utf8_lossy(&line);
            if echo == Echo::Yes {
                crate::logging::echo(text.as_bytes());
            }
            if tail.len() == KEPT_LINES {
                tail.pop_front();
            }
            tail.push_back(text.trim_end().to_string());
        }
        let status = child.wait().map_err(TestError::io("wait for", &program))?;
        self.note(&format!("exit: {status}"))?;
        Ok(Finished { status, tail })
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
