//! Progress for the long steps (toolchain and sysroot downloads, builds,
//! tests): a spinner with the elapsed time on a terminal, plain log lines
//! otherwise (CI logs must stay readable).

use std::io::IsTerminal;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// How often a long step says it is still running where no spinner can show it (CI logs):
/// numpy's builds ran 385-555 s with nothing printed.
const HEARTBEAT: Duration = Duration::from_secs(60);

pub struct Step {
    label: String,
    started: Instant,
    spinner: Option<ProgressBar>,
    /// The step's last output line, where it streams one (a build's backend).
    last_line: Arc<Mutex<String>>,
    /// Dropped to stop the heartbeat thread.
    heartbeat: Option<Sender<()>>,
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

    /// A build: on a terminal the spinner shows its elapsed time and last output line;
    /// elsewhere (CI) a line says so at least every minute.
    pub fn start_build(identifier: &str) -> Step {
        let mut step = Step::start(identifier, "build");
        if step.spinner.is_none() {
            let say = |line: &str| tracing::info!("{line}");
            step.heartbeat = Some(heartbeat(&step, HEARTBEAT, Box::new(say)));
        }
        step
    }

    /// Records the step's latest output line and shows it beside the spinner.
    pub fn observe(&self, line: &str) {
        if let Ok(mut last) = self.last_line.lock() {
            line.clone_into(&mut last);
        }
        if let Some(bar) = &self.spinner {
            bar.set_message(format!("{}: {}", self.label, shortened(line, 72)));
        }
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
            last_line: Arc::default(),
            heartbeat: None,
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

/// A thread that tells `say` every `interval` that `step` still runs, with its elapsed
/// time and last output line, until the returned sender is dropped.
fn heartbeat(step: &Step, interval: Duration, say: Box<dyn Fn(&str) + Send>) -> Sender<()> {
    let (stop, stopped) = mpsc::channel::<()>();
    let (label, started, last_line) = (step.label.clone(), step.started, step.last_line.clone());
    std::thread::spawn(move || {
        while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(interval) {
            let last = last_line.lock().map(|l| l.clone()).unwrap_or_default();
            say(&heartbeat_line(&label, started.elapsed(), &last));
        }
    });
    stop
}

fn heartbeat_line(label: &str, elapsed: Duration, last: &str) -> String {
    let mut line = format!("{label}: still running after {} s", elapsed.as_secs());
    if !last.is_empty() {
        line.push_str(&format!("; last output: {}", shortened(last, 120)));
    }
    line
}

/// `text` cut to `max` characters, with an ellipsis where it was cut.
fn shortened(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_without_a_spinner_says_it_still_runs_with_its_last_output_line() {
        let step = Step::begin("cp311-manylinux_aarch64", "build", false);
        let said = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = said.clone();
        let stop = heartbeat(
            &step,
            Duration::from_millis(20),
            Box::new(move |line| sink.lock().unwrap().push(line.to_string())),
        );
        step.observe("[12/140] Compiling C object numpy/_core/foo.c.o");
        std::thread::sleep(Duration::from_millis(150));
        drop(stop);
        let said = said.lock().unwrap().clone();
        assert!(said.len() >= 2, "{said:?}");
        assert!(
            said.last().unwrap().starts_with("cp311-manylinux_aarch64: build: still running after 0 s; last output: [12/140] Compiling C object"),
            "{said:?}"
        );
        let count = said.len();
        std::thread::sleep(Duration::from_millis(80));
        assert!(count + 1 >= said.len(), "the heartbeat stops with its step");
    }

    #[test]
    fn long_lines_are_cut_with_an_ellipsis() {
        assert_eq!(shortened("abcdef", 3), "abc…");
        assert_eq!(shortened("abc", 3), "abc");
        assert_eq!(
            heartbeat_line("x: build", Duration::from_secs(61), ""),
            "x: build: still running after 61 s"
        );
    }
}
