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
