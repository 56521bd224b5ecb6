//! `crosswheel inspect WHEEL`
use std::process::ExitCode;
use anyhow::Result;
use crate::cli::InspectArgs;
pub fn run(_args: &InspectArgs) -> Result<ExitCode> { anyhow::bail!("not yet") }
