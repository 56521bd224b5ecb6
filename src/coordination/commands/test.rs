//! `crosswheel test WHEEL...`: the test stage alone, for wheels built elsewhere.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};

use crate::cli::TestArgs;
use crate::coordination::pipeline::report::mode_name;
use crate::coordination::pipeline::{TargetReach, built_target_cpython, requirement_builder};
use crate::formats::wheel::PlatformTag;
use crate::python_tag::PythonTag;
use crate::stages::testing::{TestSpec, Verdict, python_version_of_wheel, test_or_check};
use crate::support::host::Cache;
use crate::target::{Target, ToolchainKind};

pub fn run(args: &TestArgs) -> Result<ExitCode> {
    let cache = Cache::from_env()?;
    let logs = std::env::current_dir()?.join("crosswheel-test-logs");
    let mirror = crate::input::options::debian_mirror_variable(&crate::input::options::ProcessEnv);
    let mut failed = Vec::new();
    for path in &args.wheels {
        let wheel = crate::formats::wheel::open_within_env_limits(path)?;
        let python_version = python_version_of_wheel(&wheel.name().python, &wheel.name().abi);
        let target_python = match &args.target_python {
            Some(root) => Some(root.clone()),
            None => musl_cpython(&wheel.name().platform, python_version, &cache, &mirror)?,
        };
        // What neither the index nor Debian has is cross-built from its sdist, as in a
        // build's test stage: for glibc wheels, whose route goes through Debian's trees.
        let glibc = wheel
            .name()
            .platform
            .iter()
            .any(|tag| tag.linux_arch().is_some());
        let network = crate::support::host::Network::new(false, mirror.clone());
        let requirement_builder = glibc
            .then(|| requirement_builder(&cache, &logs, network.clone()))
            .transpose()?;
        let spec = TestSpec {
            test_command: args.test_command.clone(),
            test_requires: args.test_requires.clone(),
            python_version,
            test_sources: Vec::new(),
            project_dir: args.project.clone(),
            qemu_cpu: args.qemu_cpu.clone(),
            cache_dir: cache.root().to_path_buf(),
            log_dir: logs.clone(),
            target_python,
            network,
            requirement_builder,
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

/// For a musllinux wheel, the musl CPython `crosswheel build` tests on: built once per
/// target and version from Debian's source (config/target-cpython.toml), smoke-tested under
/// qemu, and kept in the cache, where a build made it already. `None` for other wheels,
/// and for versions crosswheel builds no CPython of (free-threaded ones among them): the
/// test then says to give one with `--target-python`.
fn musl_cpython(
    platforms: &[PlatformTag],
    python: PythonTag,
    cache: &Cache,
    mirror: &Option<String>,
) -> Result<Option<PathBuf>> {
    let Some(arch) = platforms.iter().find_map(PlatformTag::musllinux_arch) else {
        return Ok(None);
    };
    if python.is_free_threaded() {
        return Ok(None);
    }
    let target = Target::parse(&format!("musllinux-{arch}"))?;
    let reach = TargetReach {
        target: &target,
        toolchain: ToolchainKind::default(),
        debian_mirror: mirror.clone(),
    };
    built_target_cpython(&reach, python, cache, false)
}
