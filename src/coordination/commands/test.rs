//! `crosswheel test WHEEL...`: the test stage alone, for wheels built elsewhere.

use std::process::ExitCode;

use anyhow::{Result, bail};

use crate::cli::TestArgs;
use crate::coordination::pipeline::report::mode_name;
use crate::stages::testing::{TestSpec, Verdict, python_version_of_wheel, test_or_check};
use crate::support::host::Cache;

pub fn run(args: &TestArgs) -> Result<ExitCode> {
    let cache = Cache::from_env()?;
    let logs = std::env::current_dir()?.join("crosswheel-test-logs");
    let mut failed = Vec::new();
    for path in &args.wheels {
        let wheel = crate::formats::wheel::open_within_env_limits(path)?;
        let spec = TestSpec {
            test_command: args.test_command.clone(),
            test_requires: args.test_requires.clone(),
            python_version: python_version_of_wheel(&wheel.name().python, &wheel.name().abi),
            test_sources: Vec::new(),
            project_dir: args.project.clone(),
            qemu_cpu: args.qemu_cpu.clone(),
            cache_dir: cache.root().to_path_buf(),
            log_dir: logs.clone(),
            target_python: args.target_python.clone(),
            network: crate::support::host::Network::new(
                false,
                crate::input::options::debian_mirror_variable(&crate::input::options::ProcessEnv),
            ),
            ..TestSpec::default()
        };
        match test_or_check(path, &wheel, &spec)? {
            Verdict::StaticCheck(report) if report.passed() => println!(
                "static check (not executed) {}: {} binaries would load",
                path.display(),
                report.checked.len()
            ),
            Verdict::StaticCheck(report) => {
                print!("{report}");
                failed.push(path.display().to_string());
            }
            Verdict::Ran(outcome) => {
                let verdict = match (&outcome.timed_out, outcome.passed) {
                    (Some(timed_out), _) => timed_out.to_string(),
                    (None, true) => "passed".to_string(),
                    (None, false) => "FAILED".to_string(),
                };
                println!(
                    "{verdict} ({}, {:.1}s) {} — log: {}",
                    mode_name(outcome.mode),
                    outcome.duration.as_secs_f64(),
                    path.display(),
                    outcome.log_path.display()
                );
                if !outcome.passed {
                    failed.push(path.display().to_string());
                }
            }
        }
    }
    if !failed.is_empty() {
        bail!("tests failed for {}", failed.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}
