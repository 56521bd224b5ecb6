//! `crosswheel toolchain` (doctor) and `crosswheel env`.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{EnvArgs, ToolchainArgs};
use crate::python_tag::PythonTag;
use crate::stages::crossenv::{PythonSource, SetupRequest, TargetSetup};
use crate::stages::toolchain::doctor;
use crate::support::host::{Cache, Network};
use crate::target::{Target, ToolchainKind};

pub fn run_doctor(args: &ToolchainArgs) -> Result<ExitCode> {
    let named = if args.targets.is_empty() {
        Target::all()
    } else {
        args.targets
            .iter()
            .map(|t| Target::parse(t))
            .collect::<Result<Vec<_>, _>>()?
    };
    // A fused target (universal2) has no toolchain of its own: its slices' are shown.
    let mut targets: Vec<Target> = Vec::new();
    for target in named {
        let slices = target.fused_slices();
        for target in if slices.is_empty() {
            vec![target]
        } else {
            slices
        } {
            if !targets.contains(&target) {
                targets.push(target);
            }
        }
    }
    let cache = Cache::from_env()?;
    let python = crate::support::host::find_on_path("python3").unwrap_or_else(|| "python3".into());
    let report = doctor(&cache, &python, &targets)?;
    print!("{report}");
    Ok(
        if report
            .targets
            .iter()
            .all(|t| t.zig.is_ready() || t.gcc.is_ready())
        {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        },
    )
}

pub fn run_env(args: &EnvArgs) -> Result<ExitCode> {
    let target = Target::parse(&args.target)?;
    let cache = Cache::from_env()?;
    let tag = PythonTag::parse_version(&args.python)
        .map_err(|message| anyhow::anyhow!("--python: {message}"))?;
    let kind: ToolchainKind = args.toolchain.parse().map_err(anyhow::Error::msg)?;
    let mirror = crate::input::options::debian_mirror_variable(&crate::input::options::ProcessEnv);
    let setup = TargetSetup::prepare(&SetupRequest {
        purpose: "crosswheel env",
        target: &target,
        python: tag,
        python_source: PythonSource::Machine,
        toolchain: kind,
        cache: &cache,
        network: &Network::new(args.offline, mirror),
        runner: None,
        musl_root: None,
        languages: &[],
        cuda: None,
    })?;
    let env = setup.cross_env;
    print!("{}", env.shell_exports());
    Ok(ExitCode::SUCCESS)
}
