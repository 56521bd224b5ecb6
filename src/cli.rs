//! Command-line interface definitions (clap). Option names follow
//! auditwheel / delocate / cibuildwheel where those tools have one.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "crosswheel", version, about = "Build, repair and test Python wheels for macOS arm64 and manylinux aarch64/ppc64le from a Linux x86_64 host")]
pub struct Cli {
    /// More output (-v details, -vv trace).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the binaries of a wheel: architecture, dependencies, symbol versions, policy.
    Inspect(InspectArgs),
    /// Vendor external libraries into wheels, fix their references and retag them.
    Repair(RepairArgs),
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The wheel to inspect.
    pub wheel: PathBuf,
    /// Print a stable JSON document instead of text (see docs/inspect-json.md).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RepairArgs {
    /// Wheels to repair (never modified).
    #[arg(required = true)]
    pub wheels: Vec<PathBuf>,
    /// Folder for the repaired wheels.
    #[arg(short = 'w', long = "wheel-dir", default_value = "wheelhouse")]
    pub wheel_dir: PathBuf,
    /// Linux: `auto` (the most compatible policy the binaries allow) or a tag
    /// such as `manylinux_2_28_aarch64`; fails when the wheel cannot satisfy it.
    #[arg(long, default_value = "auto")]
    pub plat: String,
    /// Never vendor libraries whose SONAME or install name matches this glob.
    #[arg(long = "exclude", value_name = "PATTERN")]
    pub exclude: Vec<String>,
    /// Extra folders to search for external libraries (searched first).
    #[arg(long = "lib-path", value_name = "DIR")]
    pub lib_path: Vec<PathBuf>,
    /// A root filesystem of the target architecture whose library folders are searched last.
    #[arg(long, value_name = "DIR")]
    pub sysroot: Option<PathBuf>,
    /// macOS: minimum macOS version for the wheel (default: MACOSX_DEPLOYMENT_TARGET or the wheel's tag; never below 11.0 on arm64).
    #[arg(long = "macos-version", value_name = "X.Y")]
    pub macos_version: Option<String>,
    /// macOS: raise the wheel tag to the highest minos found instead of failing.
    #[arg(long)]
    pub retag: bool,
}
