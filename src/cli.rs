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
    /// Build, repair and test wheels of a project for every target.
    Build(BuildArgs),
    /// Show the cross toolchains found for each target and how to install missing ones.
    Toolchain(ToolchainArgs),
    /// Create a cross environment and print the shell exports to use it (like crossenv).
    Env(EnvArgs),
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

#[derive(Debug, Args)]
pub struct BuildArgs {
    /// The project to build (a folder with pyproject.toml).
    #[arg(default_value = ".")]
    pub project: PathBuf,
    /// Targets to build: linux-aarch64, linux-ppc64le, macos-arm64 (default: all three).
    #[arg(long = "target", value_name = "TARGET")]
    pub targets: Vec<String>,
    /// CPython version of the wheels (the host's python3.X builds them).
    #[arg(long, default_value = "3.11")]
    pub python: String,
    /// Cross compiler: zig (installed on first use) or gcc (system cross gcc).
    #[arg(long, default_value = "zig")]
    pub toolchain: String,
    /// Never download: use only what the cache already holds.
    #[arg(long)]
    pub offline: bool,
    /// Where finished wheels go.
    #[arg(short = 'w', long = "output-dir", default_value = "wheelhouse")]
    pub output_dir: PathBuf,
    /// PEP 517 config setting KEY=VALUE (repeatable).
    #[arg(short = 'C', long = "config-setting", value_name = "KEY=VALUE")]
    pub config_settings: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ToolchainArgs {
    /// Targets to report on (default: all).
    #[arg(long = "target", value_name = "TARGET")]
    pub targets: Vec<String>,
}

#[derive(Debug, Args)]
pub struct EnvArgs {
    /// The target of the environment (linux-aarch64, linux-ppc64le, macos-arm64).
    #[arg(long)]
    pub target: String,
    #[arg(long, default_value = "3.11")]
    pub python: String,
    #[arg(long, default_value = "zig")]
    pub toolchain: String,
    #[arg(long)]
    pub offline: bool,
}
