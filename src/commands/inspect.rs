//! `crosswheel inspect WHEEL [--json]`

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::InspectArgs;
use crate::inspect::{linux, macos};
use crate::target::Platform;

pub fn run(args: &InspectArgs) -> Result<ExitCode> {
    let wheel = crate::wheel::open_within_env_limits(&args.wheel)?;
    if Platform::of_platform_tags(&wheel.name().platform) == Some(Platform::Macos) {
        let report = macos::inspect(&wheel)?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            print!("{}", macos::render(&report));
        }
    } else {
        let cache = crate::host::Cache::from_env()?;
        let system_libraries = super::repair::system_libraries_for(&cache, &wheel)?;
        let report = linux::inspect(&wheel, system_libraries.as_deref())?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            print!("{}", linux::render(&report));
        }
    }
    Ok(ExitCode::SUCCESS)
}
