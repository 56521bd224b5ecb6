//! How the pipeline talks to people: the end-of-run summary table, and on
//! GitHub Actions `::group::` folding plus a Markdown job summary.

use std::io::Write;

use super::first_error::first_error;
use super::{Ending, Outcome, TestResult};
use crate::stages::testing::TestMode;

fn on_github_actions() -> bool {
    std::env::var_os("GITHUB_ACTIONS").is_some_and(|v| v == "true")
}

/// Folds everything logged for one identifier on GitHub Actions.
pub struct Group(bool);

impl Group {
    pub fn start(identifier: &str) -> Group {
        let enabled = on_github_actions();
        if enabled {
            println!("::group::{identifier}");
        }
        Group(enabled)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if self.0 {
            println!("::endgroup::");
        }
    }
}

pub fn mode_name(mode: TestMode) -> &'static str {
    match mode {
        TestMode::Emulated => "emulated",
        TestMode::Native => "native",
    }
}

pub fn test_cell(test: &TestResult) -> String {
    match test {
        TestResult::NotRun => "not run".into(),
        TestResult::Passed { mode } => format!("passed ({})", mode_name(*mode)),
        TestResult::StaticCheckPassed => "static check (not executed)".into(),
        TestResult::NotTested { .. } => "NOT TESTED".into(),
        TestResult::ServedByEarlierWheel {
            built_as,
            kind,
            tested,
        } => match tested.as_ref() {
            TestResult::NotRun => format!("{kind} wheel of {built_as}"),
            tested => format!("{}; {kind} wheel of {built_as}", test_cell(tested)),
        },
        TestResult::Failed { .. } => "FAILED".into(),
        TestResult::TimedOut { after, .. } => {
            format!(
                "timed out after {}",
                crate::stages::testing::format_duration(*after)
            )
        }
    }
}

struct Row {
    identifier: String,
    result: &'static str,
    wheel: String,
    size: String,
    test: String,
    build: String,
    repair: String,
    test_time: String,
    sha256: String,
    problem: Option<String>,
    /// Said of a build that succeeded but was not tested.
    note: Option<String>,
    /// What the build went without although the project asked for it.
    warnings: Vec<String>,
}

fn rows(outcomes: &[Outcome]) -> Vec<Row> {
    outcomes
        .iter()
        .map(|o| Row {
            identifier: o.identifier.clone(),
            result: match (&o.test, o.succeeded()) {
                (_, true) => "ok",
                (TestResult::TimedOut { .. }, false) => "TIMEOUT",
                (_, false) => "FAILED",
            },
            wheel: o
                .wheel()
                .and_then(|w| w.path.file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "-".into()),
            size: o
                .wheel()
                .map(|w| format!("{:.1} MB", w.size as f64 / 1e6))
                .unwrap_or_else(|| "-".into()),
            test: test_cell(&o.test),
            build: format!("{:.1}s", o.times.build.as_secs_f64()),
            repair: format!("{:.2}s", o.times.repair.as_secs_f64()),
            test_time: format!("{:.1}s", o.times.test.as_secs_f64()),
            sha256: o.wheel().map_or_else(|| "-".into(), |w| w.sha256.clone()),
            problem: match &o.ending {
                // Said as a timeout, not as a failure of the code.
                Ending::Failed { error, .. } if matches!(o.test, TestResult::TimedOut { .. }) => {
                    Some(crate::logging::one_line(error))
                }
                Ending::Failed { stage, error, .. } => Some(format!(
                    "{} failed: {}",
                    stage.name(),
                    crate::logging::one_line(error)
                )),
                Ending::Finished(_) => None,
            },
            note: match &o.test {
                TestResult::NotTested { reason } => Some(format!("not tested: {reason}")),
                TestResult::ServedByEarlierWheel { tested, .. } => match tested.as_ref() {
                    TestResult::NotTested { reason } => Some(format!("not tested: {reason}")),
                    _ => None,
                },
                _ => None,
            },
            warnings: o.warnings.clone(),
        })
        .collect()
}

/// What the summary says of a failure: the error's first line, the first error of a build
/// log excerpt below it (the line that says why: see [`first_error`]) with a hint where
/// crosswheel knows the cause, and where the full log is. The whole error was logged when
/// it happened; the summary does not print it twice.
fn problem_lines(problem: &str) -> Vec<String> {
    let mut lines = problem.lines();
    let mut out = vec![format!(
        "error: {}",
        lines.next().unwrap_or_default().trim_end_matches(':')
    )];
    let rest: Vec<&str> = lines.collect();
    if let Some(found) = first_error(&rest) {
        out.push(format!("{FIRST_ERROR}{}", found.line));
        if let Some(hint) = found.hint {
            out.push(format!("{HINT}{hint}"));
        }
    }
    for kept in ["full log: ", "meson's log: "] {
        if let Some(log) = rest.iter().find_map(|line| line.trim().strip_prefix(kept)) {
            out.push(format!("{kept}{log}"));
        }
    }
    out
}

/// What is said the moment an identifier fails, before the summary. Where the summary
/// gives a first compiler or meson error, the cause is the summary's alone: it is printed
/// once, at the end of the run, beside every other identifier's result, where CI's log
/// tail and GitHub's folded groups leave it in view. The moment of failure then says what
/// failed and where its logs are (the excerpt around the error is in the full log).
/// Other failures have no such line in the summary and are said whole, on stderr, where
/// cibuildwheel says them (its own tests look for them there).
pub(super) fn failure_notice(problem: &str) -> String {
    let lines = problem_lines(problem);
    if !lines.iter().any(|line| line.starts_with(FIRST_ERROR)) {
        return problem.to_string();
    }
    let mut notice = lines[0].trim_start_matches("error: ").to_string();
    notice.push_str("; its first error is in the summary");
    for line in lines
        .iter()
        .skip(1)
        .filter(|line| !line.starts_with(FIRST_ERROR) && !line.starts_with(HINT))
    {
        notice.push_str("\n  ");
        notice.push_str(line);
    }
    notice
}

const FIRST_ERROR: &str = "first error: ";
const HINT: &str = "hint: ";

/// The exit code of a run with failed builds: the first failure's own code where
/// cibuildwheel gives it one (a wheel built twice: 6), else 1.
pub fn exit_code_of(outcomes: &[Outcome]) -> u8 {
    super::exit::first_code(outcomes.iter().filter_map(|outcome| match &outcome.ending {
        Ending::Failed { error, .. } => Some(error),
        Ending::Finished(_) => None,
    }))
}

/// The plain-text table printed at the end of every run.
pub fn summary(outcomes: &[Outcome]) -> String {
    use std::fmt::Write as _;
    let rows = rows(outcomes);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{:<26} {:<6} {:>7} {:>7} {:>7}  {:<28} {:<9} wheel",
        "identifier", "result", "build", "repair", "test", "test result", "size"
    );
    for row in &rows {
        let _ = writeln!(
            out,
            "{:<26} {:<6} {:>7} {:>7} {:>7}  {:<28} {:<9} {}",
            row.identifier,
            row.result,
            row.build,
            row.repair,
            row.test_time,
            row.test,
            row.size,
            row.wheel
        );
        if row.sha256 != "-" {
            let _ = writeln!(out, "{:<26} sha256 {}", "", row.sha256);
        }
        if let Some(note) = &row.note {
            let _ = writeln!(out, "{:<26} {note}", "");
        }
        for warning in &row.warnings {
            let _ = writeln!(out, "{:<26} warning: {warning}", "");
        }
        if let Some(problem) = &row.problem {
            for line in problem_lines(problem) {
                let _ = writeln!(out, "{:<26} {line}", "");
            }
        }
    }
    out
}

/// Appends a Markdown table to `$GITHUB_STEP_SUMMARY` when running there.
pub fn write_github_summary(outcomes: &[Outcome]) -> std::io::Result<()> {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|_| on_github_actions()) else {
        return Ok(());
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    writeln!(
        file,
        "### crosswheel\n\n| identifier | result | wheel | size | test | build | repair | sha256 |\n|---|---|---|---|---|---|---|---|"
    )?;
    for row in rows(outcomes) {
        let result = match (&row.problem, &row.note) {
            (None, Some(note)) => format!("{}: {note}", row.result),
            (Some(problem), _) => format!(
                "{}: {}",
                row.result,
                problem_lines(problem).join("<br>").replace('|', "\\|")
            ),
            (None, None) => row.result.to_string(),
        };
        writeln!(
            file,
            "| {} | {} | {} | {} | {} | {} | {} | `{}` |",
            row.identifier,
            result,
            row.wheel,
            row.size,
            row.test,
            row.build,
            row.repair,
            row.sha256
        )?;
    }
    Ok(())
}

/// The folders the finished wheels of a run went to, each once.
pub fn wheel_folders(outcomes: &[Outcome]) -> Vec<std::path::PathBuf> {
    let mut folders: Vec<std::path::PathBuf> = outcomes
        .iter()
        .filter_map(|outcome| Some(outcome.wheel()?.path.parent()?.to_path_buf()))
        .collect();
    folders.dedup();
    folders
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordination::pipeline::outcome::FinishedWheel;
    use crate::coordination::pipeline::{Stage, StageTimes};

    #[test]
    fn a_meson_failure_is_summarised_by_its_first_error_line_and_both_logs() {
        let problem = "building numpy for linux-aarch64 with zig failed (meson-python exited with exit status: 1):\n\
            Run-time dependency openblas found: NO\n\
            ../numpy/meson.build:212:4: ERROR: Problem encountered: No BLAS library detected!\n\
            meson's log: /c/logs/numpy-linux-aarch64-cp311.meson-log.txt\n  full log: /c/logs/numpy-linux-aarch64-cp311.log";
        assert_eq!(
            problem_lines(problem),
            [
                "error: building numpy for linux-aarch64 with zig failed (meson-python exited with exit status: 1)",
                "first error: ../numpy/meson.build:212:4: ERROR: Problem encountered: No BLAS library detected!",
                "full log: /c/logs/numpy-linux-aarch64-cp311.log",
                "meson's log: /c/logs/numpy-linux-aarch64-cp311.meson-log.txt",
            ]
        );
    }

    #[test]
    fn a_build_failures_first_error_is_printed_once_in_the_summary_not_at_the_failure() {
        let cause =
            "../numpy/meson.build:212:4: ERROR: Problem encountered: No BLAS library detected!";
        let problem = format!(
            "building numpy for linux-aarch64 with zig failed (meson-python exited with exit status: 1):\n\
             Run-time dependency openblas found: NO\n{cause}\n\
             meson's log: /c/logs/m.txt\n  full log: /c/logs/b.log"
        );
        let outcome = build_failure("cp311-manylinux_aarch64", &problem);
        let printed = format!("{}\n{}", failure_notice(&problem), summary(&[outcome]));
        assert_eq!(printed.matches(cause).count(), 1, "{printed}");
        let notice = failure_notice(&problem);
        assert!(notice.contains("full log: /c/logs/b.log"), "{notice}");
        assert!(notice.contains("meson's log: /c/logs/m.txt"), "{notice}");
        assert!(notice.starts_with("building numpy"), "{notice}");
    }

    #[test]
    fn a_configure_failure_is_summarised_by_its_reason_and_a_hint() {
        // uvloop's setup.py running libuv's configure without --host.
        let problem = "building uvloop for linux-aarch64 with zig failed (setuptools exited with exit status: 1):\n\
            checking whether we are cross compiling... configure: error: in `/c/p/build/libuv-aarch64':\n\
            configure: error: cannot run C compiled programs.\n\
            If you meant to cross compile, use `--host'.\n\
            See `config.log' for more details\n  full log: /c/logs/uvloop-linux-aarch64-cp311.log";
        let lines = problem_lines(problem);
        assert_eq!(
            lines[1],
            "first error: configure: error: cannot run C compiled programs."
        );
        assert!(
            lines[2].starts_with("hint: configure took this for a native build"),
            "{lines:?}"
        );
        assert_eq!(lines[3], "full log: /c/logs/uvloop-linux-aarch64-cp311.log");
        let notice = failure_notice(problem);
        assert!(!notice.contains("hint:"), "{notice}");
        assert!(
            notice.ends_with("full log: /c/logs/uvloop-linux-aarch64-cp311.log"),
            "{notice}"
        );
    }

    fn build_failure(identifier: &str, problem: &str) -> Outcome {
        Outcome {
            identifier: identifier.into(),
            times: StageTimes::default(),
            warnings: Vec::new(),
            test: TestResult::NotRun,
            ending: Ending::Failed {
                stage: Stage::Build,
                error: anyhow::anyhow!("{problem}"),
                kept_apart: None,
            },
        }
    }

    #[test]
    fn a_feature_the_build_went_without_is_a_warning_beside_its_wheel() {
        let outcome = Outcome {
            identifier: "cp311-manylinux_aarch64".into(),
            times: StageTimes::default(),
            warnings: vec!["the build asked for OpenMP and built without it (the build log says `Run-time dependency OpenMP for c found: NO`)".into()],
            test: TestResult::NotRun,
            ending: Ending::Finished(FinishedWheel {
                path: "/w/x-1.0-cp311-cp311-manylinux_2_17_aarch64.whl".into(),
                sha256: "ab".into(),
                size: 1,
            }),
        };
        let printed = summary(&[outcome]);
        assert!(
            printed.contains("warning: the build asked for OpenMP and built without it"),
            "{printed}"
        );
    }

    #[test]
    fn a_failure_without_a_first_error_is_said_whole_at_the_failure() {
        let problem = "repair failed:\n  libfoo.so needs GLIBC_2.34 (manylinux_2_17 allows 2.17)";
        assert_eq!(failure_notice(problem), problem);
    }

    #[test]
    fn a_timed_out_suite_is_summarised_as_a_timeout_not_a_failure() {
        let reason = "tests timed out after 30s; the last test that printed: `test_one PASSED` (emulated); log: /w/x.test.log";
        let outcome = Outcome {
            identifier: "cp311-linux_ppc64le".into(),
            times: StageTimes::default(),
            warnings: Vec::new(),
            test: TestResult::TimedOut {
                after: std::time::Duration::from_secs(30),
                reason: reason.into(),
            },
            ending: Ending::Failed {
                stage: Stage::Test,
                error: anyhow::anyhow!(
                    "{reason}; the wheel, its logs and the reason are kept in /cache/logs/runs/1-1/failed/cp311-linux_ppc64le"
                ),
                kept_apart: None,
            },
        };
        let text = summary(&[outcome]);
        let row = text
            .lines()
            .find(|line| line.starts_with("cp311-linux_ppc64le"))
            .unwrap();
        assert!(row.contains("TIMEOUT"), "{text}");
        assert!(row.contains("timed out after 30s"), "{text}");
        assert!(
            !text.contains("FAILED") && !text.contains("test failed"),
            "{text}"
        );
        assert!(text.contains("test_one PASSED"), "{text}");
    }
}
