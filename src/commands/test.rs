//! `crosswheel test WHEEL...`: the test stage alone, for wheels built elsewhere.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use crate::cli::TestArgs;
use crate::loadcheck::check_macos_wheel;
use crate::pipeline::report::mode_name;
use crate::sysroot::LinuxArch;
use crate::testing::{TestSpec, test_wheel};
use crate::toolchain::Cache;

pub fn run(args: &TestArgs) -> Result<ExitCode> {
    let cache = Cache::from_env()?;
    let logs = std::env::current_dir()?.join("crosswheel-test-logs");
    let mut failed = Vec::new();
    for path in &args.wheels {
        let wheel = super::open_wheel(path)?;
        let platform = wheel.name().platform.first().cloned().unwrap_or_default();
        if platform.starts_with("macosx") && !cfg!(all(target_os = "macos", target_arch = "aarch64")) {
            // No arm64 macOS to run on: verify what dyld would do, and say so.
            let report = check_macos_wheel(&wheel)?;
            if report.passed() {
                println!("static check (not executed) {}: {} binaries would load", path.display(), report.checked.len());
            } else {
                print!("{report}");
                failed.push(path.display().to_string());
            }
            continue;
        }
        let arch = ["aarch64", "ppc64le", "x86_64"]
            .into_iter()
            .find(|arch| platform.ends_with(arch))
            .and_then(LinuxArch::parse)
            .with_context(|| format!("{}: no test runner for platform {platform}", path.display()))?;
        let outcome = test_wheel(
            path,
            arch,
            &TestSpec {
                test_command: args.test_command.clone(),
                test_requires: args.test_requires.clone(),
                test_sources: Vec::new(),
                project_dir: args.project.clone(),
                qemu_cpu: args.qemu_cpu.clone(),
                cache_dir: cache.root().to_path_buf(),
                log_dir: logs.clone(),
            },
        )?;
        let verdict = if outcome.passed { "passed" } else { "FAILED" };
        println!("{verdict} ({}, {:.1}s) {} — log: {}", mode_name(outcome.mode), outcome.duration.as_secs_f64(), path.display(), outcome.log_path.display());
        if !outcome.passed {
            failed.push(path.display().to_string());
        }
    }
    if !failed.is_empty() {
        bail!("tests failed for {}", failed.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}
