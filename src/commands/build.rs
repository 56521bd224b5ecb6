//! `crosswheel build [PROJECT]`

use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cli::BuildArgs;
use crate::pipeline::{Outcome, PipelineOptions, run};
use crate::toolchain::{Target, ToolchainKind};

pub fn run_build(args: &BuildArgs) -> Result<ExitCode> {
    let targets = if args.targets.is_empty() {
        Target::all()
    } else {
        args.targets.iter().map(|t| Target::parse(t)).collect::<Result<Vec<_>, _>>()?
    };
    let config_settings = args
        .config_settings
        .iter()
        .map(|setting| {
            setting
                .split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .with_context(|| format!("-C {setting:?}: expected KEY=VALUE"))
        })
        .collect::<Result<Vec<_>>>()?;
    let toolchain: ToolchainKind = args.toolchain.parse().map_err(anyhow::Error::msg)?;
    let outcomes = run(&PipelineOptions {
        project_dir: args.project.clone(),
        targets,
        python: args.python.clone(),
        toolchain,
        offline: args.offline,
        out_dir: args.output_dir.clone(),
        config_settings,
    })?;
    print!("{}", summary(&outcomes));
    let failed = outcomes.iter().any(|o| o.error.is_some());
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// The end-of-run table: one line per identifier.
pub fn summary(outcomes: &[Outcome]) -> String {
    use std::fmt::Write;
    let mut out = String::from("\nidentifier               result  build   repair  size      wheel\n");
    for outcome in outcomes {
        let result = if outcome.error.is_some() { "FAILED" } else { "ok" };
        let size = outcome.size.map(|s| format!("{:.1} MB", s as f64 / 1e6)).unwrap_or_default();
        let wheel = match (&outcome.wheel, &outcome.error) {
            (Some(path), _) => path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            (None, Some(error)) => error.clone(),
            (None, None) => String::new(),
        };
        let _ = writeln!(
            out,
            "{:<24} {:<7} {:>5.1}s {:>6.2}s {:<9} {}",
            outcome.identifier,
            result,
            outcome.build_time.as_secs_f64(),
            outcome.repair_time.as_secs_f64(),
            size,
            wheel
        );
        if let Some(sha) = &outcome.sha256 {
            let _ = writeln!(out, "{:<24} sha256 {sha}", "");
        }
    }
    out
}
