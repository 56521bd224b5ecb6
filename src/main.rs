//! The `crosswheel` command: parses the command line and dispatches to one
//! function per subcommand. Everything else lives in the library.

use std::process::ExitCode;

use clap::Parser;
use crosswheel::cli::peers::Peer;
use crosswheel::cli::{Cli, Command};
use crosswheel::coordination::commands;

fn main() -> ExitCode {
    // First: it sets TMPDIR before any thread starts, and removes the folder on SIGINT.
    let _run_folder = match commands::enter_run_folder() {
        Ok(folder) => folder,
        Err(error) => return finish(Err(error.into())),
    };
    // Under a peer's name (auditwheel, delocate-wheel, ...), from the folder a build puts
    // first on its hooks' PATH: that peer's command line.
    let mut args = std::env::args_os();
    if let Some(peer) = args.next().as_deref().and_then(Peer::invoked_as) {
        crosswheel::logging::init(0);
        let mut argv = vec![peer.program().into()];
        argv.extend(args);
        return finish(commands::peers::run(peer, argv));
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // --help, --version and usage errors: clap's output and exit status, returned
        // rather than exited, so the run folder is removed on the way out.
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2));
        }
    };
    crosswheel::logging::init(cli.verbose);
    let outcome = match cli.command {
        Command::Inspect(args) => commands::inspect::run(&args),
        Command::Repair(args) => commands::repair::run(&args),
        Command::Fuse(args) => commands::repair::run_fuse(&args),
        Command::Build(args) => commands::build::run_build(&args),
        Command::Toolchain(args) => commands::toolchain::run_doctor(&args),
        Command::Env(args) => commands::toolchain::run_env(&args),
        Command::Test(args) => commands::test::run(&args),
        Command::Matrix(args) => commands::build::run_matrix(&args),
        Command::Check(args) => commands::publish::run_check(&args),
        Command::Upload(args) => commands::publish::run_upload(&args),
        Command::Help(args) => commands::help::run(&args),
    };
    finish(outcome)
}

fn finish(outcome: anyhow::Result<ExitCode>) -> ExitCode {
    match outcome {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", crosswheel::logging::one_line(&error));
            ExitCode::from(commands::exit_code(&error))
        }
    }
}
