//! Progress for the long steps (toolchain and sysroot downloads, builds,
//! tests): a spinner with the elapsed time on a terminal, plain log lines
//! otherwise (CI logs must stay readable).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

pub struct Step {
    label: String,
    started: Instant,
    spinner: Option<ProgressBar>,
}

impl Step {
    /// A step whose own output is captured gets a spinner on a terminal.
    pub fn start(identifier: &str, stage: &str) -> Step {
        let spin = std::io::stderr().is_terminal() && !crate::logging::capturing();
        Step::begin(identifier, stage, spin)
    }

    /// A step that streams its own output (a test suite) gets plain lines:
    /// a spinner redrawing between them would garble both.
    pub fn start_streaming(identifier: &str, stage: &str) -> Step {
        Step::begin(identifier, stage, false)
    }

    fn begin(identifier: &str, stage: &str, spin: bool) -> Step {
        let label = format!("{identifier}: {stage}");
        let spinner = spin.then(|| {
            let bar = ProgressBar::new_spinner();
            if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} [{elapsed}]") {
                bar.set_style(style);
            }
            bar.set_message(label.clone());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        if spinner.is_none() {
            tracing::info!("{label}");
        }
        Step {
            label,
            started: Instant::now(),
            spinner,
        }
    }

    /// Ends the step; returns how long it took.
    pub fn finish(self, outcome: &str) -> Duration {
        let elapsed = self.started.elapsed();
        let line = format!("{}: {outcome} ({:.1}s)", self.label, elapsed.as_secs_f64());
        match &self.spinner {
            Some(bar) => bar.finish_with_message(line),
            None => tracing::info!("{line}"),
        }
        elapsed
    }
}

impl Drop for Step {
    fn drop(&mut self) {
        // A step abandoned by an error must not leave a spinner running.
        if let Some(bar) = &self.spinner
            && !bar.is_finished()
        {
            bar.abandon();
        }
    }
}
