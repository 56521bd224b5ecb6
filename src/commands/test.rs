//! `crosswheel test WHEEL...`: the test stage alone, for wheels built elsewhere.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use crate::cli::TestArgs;
use crate::loadcheck::check_macos_wheel;
use crate::pipeline::report::mode_name;
use crate::testing::{
    Host, TestPlan, TestPlatform, TestSpec, plan, python_version_of_wheel, test_wheel,
};
use crate::toolchain::Cache;

pub fn run(args: &TestArgs) -> Result<ExitCode> {
    let cache = Cache::from_env()?;
    let logs = std::env::current_dir()?.join("crosswheel-test-logs");
    let mut failed = Vec::new();
    for path in &args.wheels {
        let wheel = super::open_wheel(path)?;
        // A multi-tag wheel (`macosx_10_15_x86_64.macosx_11_0_arm64`) is tested for the
        // first of its platforms crosswheel can test.
        let tags = &wheel.name().platform;
        let platform = tags
            .iter()
            .find_map(|tag| TestPlatform::of_platform_tag(tag))
            .with_context(|| {
                format!(
                    "{}: no test runner for platform {}",
                    path.display(),
                    tags.join(".")
                )
            })?;
        if plan(platform, Host::current())? == TestPlan::StaticLoadCheck {
            // No arm64 macOS to run on: verify what dyld would do, and say so.
            let report = check_macos_wheel(&wheel)?;
            if report.passed() {
                println!(
                    "static check (not executed) {}: {} binaries would load",
                    path.display(),
                    report.checked.len()
                );
            } else {
                print!("{report}");
                failed.push(path.display().to_string());
            }
            continue;
        }
        let outcome = test_wheel(
            path,
            platform,
            &TestSpec {
                test_command: args.test_command.clone(),
                test_requires: args.test_requires.clone(),
                python_version: python_version_of_wheel(&wheel.name().python, &wheel.name().abi),
                test_sources: Vec::new(),
                project_dir: args.project.clone(),
                qemu_cpu: args.qemu_cpu.clone(),
                cache_dir: cache.root().to_path_buf(),
                log_dir: logs.clone(),
            },
        )?;
        let verdict = if outcome.passed { "passed" } else { "FAILED" };
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
    if !failed.is_empty() {
        bail!("tests failed for {}", failed.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}
