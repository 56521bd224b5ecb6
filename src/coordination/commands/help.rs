//! `crosswheel help [config | COMMAND]`

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::CommandFactory;

use crate::cli::{Cli, HelpArgs};
use crate::input::options::{config_help, options_table};

pub fn run(args: &HelpArgs) -> Result<ExitCode> {
    let mut command = Cli::command();
    match args.topic.first().map(String::as_str) {
        Some("config" | "configuration" | "options") => {
            if args.markdown {
                print!("{}", options_table());
            } else {
                print!("{}", config_help());
            }
        }
        None => command.print_long_help()?,
        Some(name) => {
            let Some(sub) = command.find_subcommand_mut(name) else {
                bail!(
                    "no command or help topic `{name}`: see `crosswheel help`, or `crosswheel help config` for the options"
                );
            };
            sub.print_long_help()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
