//! `crosswheel inspect WHEEL [--json]`

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::InspectArgs;
use crate::inspect::linux;

pub fn run(args: &InspectArgs) -> Result<ExitCode> {
    let wheel = super::open_wheel(&args.wheel)?;
    let report = linux::inspect(&wheel)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", linux::render(&report));
    }
    Ok(ExitCode::SUCCESS)
}
