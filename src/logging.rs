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
    static CAPTURED: RefCell<Option<Vec<u8>>> = const { RefCell::new(None) };
}

/// Runs `work` with everything this thread logs or [`echo`]es kept in memory; returns
/// its result and that output.
pub fn capture<T>(work: impl FnOnce() -> T) -> (T, Vec<u8>) {
    CAPTURED.with(|cell| *cell.borrow_mut() = Some(Vec::new()));
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

/// stderr, or this thread's capture buffer when there is one.
struct Sink;

impl Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let captured = CAPTURED.with(|cell| match cell.borrow_mut().as_mut() {
            Some(buffer) => {
                buffer.extend_from_slice(bytes);
                true
            }
            None => false,
        });
        if captured {
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
    fn a_cause_the_message_already_quotes_is_not_repeated() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let quoted = format!("x/pyproject.toml: {io}");
        let error = anyhow::Error::new(io).context(quoted.clone());
        assert_eq!(one_line(&error), quoted);
        let error = anyhow::anyhow!("disk full").context("cannot write y");
        assert_eq!(one_line(&error), "cannot write y: disk full");
    }
}
