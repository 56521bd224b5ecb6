//! Logging set-up: `tracing` to stderr, `-v` for details, `RUST_LOG` wins.

use std::io::IsTerminal;

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
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .without_time()
        .try_init();
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
