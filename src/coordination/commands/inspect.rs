//! `crosswheel inspect WHEEL [--json]`

use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;

use crate::analysis::inspect::{linux, macos, sbom};
use crate::cli::InspectArgs;
use crate::target::Platform;

/// A platform's report with the SBOM section beside its fields.
#[derive(Serialize)]
struct WithSboms<'a, R> {
    #[serde(flatten)]
    binaries: &'a R,
    sboms: &'a [sbom::SbomReport],
}

pub fn run(args: &InspectArgs) -> Result<ExitCode> {
    let wheel = crate::formats::wheel::open_within_env_limits(&args.wheel)?;
    let sboms = sbom::inspect(&wheel);
    if crate::formats::wheel::PlatformTag::platform_of(&wheel.name().platform)
        == Some(Platform::Macos)
    {
        let report = macos::inspect(&wheel)?;
        print_report(args, &report, &sboms, macos::render)?;
    } else {
        let cache = crate::support::host::Cache::from_env()?;
        let system_libraries = super::repair::system_libraries_for(&cache, &wheel)?;
        let report = linux::inspect(&wheel, system_libraries.as_deref())?;
        print_report(args, &report, &sboms, linux::render)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn print_report<R: Serialize>(
    args: &InspectArgs,
    report: &R,
    sboms: &[sbom::SbomReport],
    render: fn(&R) -> String,
) -> Result<()> {
    if args.json {
        let with_sboms = WithSboms {
            binaries: report,
            sboms,
        };
        println!("{}", serde_json::to_string_pretty(&with_sboms)?);
    } else {
        print!("{}{}", render(report), sbom::render(sboms));
    }
    Ok(())
}
