//! Logging set-up: `tracing` to stderr, `-v` for details, `RUST_LOG` wins.
//!
//! When identifiers build concurrently, each worker thread [`capture`]s what it logs and
//! echoes, so one identifier's output is printed together once it is done instead of
//! interleaved with the others'.

use std::cell::RefCell;
use std::io::{IsTerminal, Write};

use tracing_subscriber::EnvFilter;

pub fn init(verbosity: u8) {
    let default = match verbosity {
        0 => "crosswheel=info",
        1 => "crosswheel=debug",
        _ => "crosswheel=trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| Sink)
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .without_time()
        .try_init();
}

thread_local! {
    static CAPTURED: RefCell<Option<Captured>> = const { RefCell::new(None) };
}

/// Which stream a captured piece of output was bound for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// What one thread wrote while captured, in order, each piece with its stream.
#[derive(Debug, Default)]
pub struct Captured(Vec<(Stream, Vec<u8>)>);

impl Captured {
    fn push(&mut self, stream: Stream, bytes: &[u8]) {
        match self.0.last_mut() {
            Some((last, buffer)) if *last == stream => buffer.extend_from_slice(bytes),
            _ => self.0.push((stream, bytes.to_vec())),
        }
    }

    /// Writes every piece to the stream it was bound for, in the order it was written.
    pub fn replay(&self) {
        for (stream, bytes) in &self.0 {
            let _ = match stream {
                Stream::Stdout => {
                    let mut out = std::io::stdout().lock();
                    out.write_all(bytes).and_then(|()| out.flush())
                }
                Stream::Stderr => {
                    let mut err = std::io::stderr().lock();
                    err.write_all(bytes).and_then(|()| err.flush())
                }
            };
        }
    }
}

/// Runs `work` with everything this thread logs or [`echo`]es kept in memory; returns
/// its result and that output.
pub fn capture<T>(work: impl FnOnce() -> T) -> (T, Captured) {
    CAPTURED.with(|cell| *cell.borrow_mut() = Some(Captured::default()));
    let result = work();
    let output = CAPTURED
        .with(|cell| cell.borrow_mut().take())
        .unwrap_or_default();
    (result, output)
}

/// Whether this thread's output is being captured (no live spinners, no inherited stdio).
pub fn capturing() -> bool {
    CAPTURED.with(|cell| cell.borrow().is_some())
}

/// Writes output a user watches (a test suite's, a hook's) to stderr, or to this thread's
/// capture.
pub fn echo(bytes: &[u8]) {
    let _ = Sink.write_all(bytes);
}

/// Writes a command's own output to stdout, where a hook's inherited output goes and where
/// cibuildwheel users (and its tests) find a test command's, or to this thread's capture.
pub fn echo_stdout(bytes: &[u8]) {
    if !capture_into_buffer(Stream::Stdout, bytes) {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(bytes);
        let _ = stdout.flush();
    }
}

/// Appends `bytes` to this thread's capture; `false` when nothing is being captured.
fn capture_into_buffer(stream: Stream, bytes: &[u8]) -> bool {
    CAPTURED.with(|cell| match cell.borrow_mut().as_mut() {
        Some(captured) => {
            captured.push(stream, bytes);
            true
        }
        None => false,
    })
}

/// stderr, or this thread's capture buffer when there is one.
struct Sink;

impl Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if capture_into_buffer(Stream::Stderr, bytes) {
            Ok(bytes.len())
        } else {
            std::io::stderr().write(bytes)
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// An error and its causes on one line (`what: which file: why`), each cause once: a
/// message that already quotes its source (`cannot read x: No such file`) is not followed
/// by that source again.
pub fn one_line(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let part = cause.to_string();
        if part.is_empty() || text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_output_keeps_each_pieces_stream_and_order() {
        let ((), captured) = capture(|| {
            echo(b"log ");
            echo_stdout(b"test ");
            echo_stdout(b"output");
            echo(b"log again");
        });
        assert_eq!(
            captured.0,
            [
                (Stream::Stderr, b"log ".to_vec()),
                (Stream::Stdout, b"test output".to_vec()),
                (Stream::Stderr, b"log again".to_vec()),
            ]
        );
        assert!(!capturing(), "the capture ends with its work");
    }

    #[test]
    fn a_cause_the_message_already_quotes_is_not_repeated() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let quoted = format!("x/pyproject.toml: {io}");
        let error = anyhow::Error::new(io).context(quoted.clone());
        assert_eq!(one_line(&error), quoted);
        let error = anyhow::anyhow!("disk full").context("cannot write y");
        assert_eq!(one_line(&error), "cannot write y: disk full");
    }
}
