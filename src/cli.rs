//! Command-line interface definitions (clap). Option names follow
//! auditwheel / delocate / cibuildwheel where those tools have one.

pub mod peers;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "crosswheel",
    version,
    about = "Build, repair and test Python wheels for macOS (arm64, x86_64, universal2) and manylinux aarch64/ppc64le from a Linux x86_64 host",
    disable_help_subcommand = true
)]
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
    /// Fuse an x86_64 and an arm64 macOS wheel of one build into a universal2 wheel.
    Fuse(FuseArgs),
    /// Build, repair and test wheels of a project for every target.
    Build(BuildArgs),
    /// Show the cross toolchains found for each target and how to install missing ones.
    Toolchain(ToolchainArgs),
    /// Create a cross environment and print the shell exports to use it (like crossenv).
    Env(EnvArgs),
    /// Run a test command against wheels: under qemu, natively, or as a static macOS check.
    Test(TestArgs),
    /// Print a GitHub Actions strategy.matrix (JSON) fanning the build identifiers out.
    Matrix(MatrixArgs),
    /// Validate wheels and sdists before upload.
    Check(CheckArgs),
    /// Upload wheels and sdists to a package index.
    Upload(UploadArgs),
    /// Help on a command, or `help config`: every option of [tool.crosswheel] / [tool.cibuildwheel].
    Help(HelpArgs),
}

#[derive(Debug, Args)]
pub struct HelpArgs {
    /// `config` for the options table, or a command name.
    pub topic: Vec<String>,
    /// With `config`: print the table as Markdown (as in docs/configuration.md).
    #[arg(long)]
    pub markdown: bool,
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
pub struct FuseArgs {
    /// The two thin macOS wheels (never modified); the first's files win where the two
    /// are identical, and its SBOM entries where both describe one file.
    #[arg(required = true, num_args = 2)]
    pub wheels: Vec<PathBuf>,
    /// Folder for the fused wheel.
    #[arg(short = 'w', long = "wheel-dir", default_value = "wheelhouse")]
    pub wheel_dir: PathBuf,
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
    /// The package folder to build (with pyproject.toml or setup.py), or an sdist (.tar.gz).
    #[arg(default_value = ".")]
    pub project: PathBuf,
    /// Build only this identifier (e.g. cp311-manylinux_aarch64), ignoring build/skip.
    #[arg(long)]
    pub only: Option<String>,
    /// Architectures or targets to build (option `archs`): aarch64 (manylinux and musllinux), manylinux_aarch64, arm64, or target ids.
    #[arg(long)]
    pub archs: Option<String>,
    /// Where finished wheels go (option `output-dir`).
    #[arg(short = 'w', long = "output-dir")]
    pub output_dir: Option<PathBuf>,
    /// Cross compiler: zig (installed on first use) or gcc (option `toolchain`).
    #[arg(long)]
    pub toolchain: Option<String>,
    /// Read options from this TOML file instead of pyproject.toml's [tool.crosswheel].
    #[arg(long = "config-file")]
    pub config_file: Option<PathBuf>,
    /// Print the selected build identifiers and stop.
    #[arg(long = "print-build-identifiers")]
    pub print_build_identifiers: bool,
    /// With --print-build-identifiers: print JSON.
    #[arg(long, requires = "print_build_identifiers")]
    pub json: bool,
    /// Succeed when the selection is empty.
    #[arg(long = "allow-empty")]
    pub allow_empty: bool,
    /// Never download: use only what the cache already holds.
    #[arg(long)]
    pub offline: bool,
    /// Fail a build whose tests cannot run here (no target CPython of its version) instead
    /// of keeping it untested (option `require-tests`, CROSSWHEEL_REQUIRE_TESTS=1).
    #[arg(long)]
    pub require_tests: bool,
    /// Build this many identifiers at once (default: the number of CPU cores; also
    /// CROSSWHEEL_JOBS). Each identifier's output is printed together when it is done.
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
}

#[derive(Debug, Args)]
pub struct MatrixArgs {
    /// The project whose build identifiers fan out (a folder with pyproject.toml).
    #[arg(default_value = ".")]
    pub project: PathBuf,
    /// Which jobs: all, build, or test (the native macOS test jobs).
    #[arg(long, default_value = "all")]
    pub jobs: String,
    #[arg(long = "config-file")]
    pub config_file: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct TestArgs {
    /// Wheels to test (built elsewhere or by crosswheel).
    #[arg(required = true)]
    pub wheels: Vec<PathBuf>,
    /// The test command; `{project}` and `{package}` expand to the project folder.
    #[arg(long = "test-command")]
    pub test_command: String,
    /// Requirements installed beside the wheel (repeatable).
    #[arg(long = "test-requires")]
    pub test_requires: Vec<String>,
    /// The project folder the placeholders and test sources refer to.
    #[arg(long, default_value = ".")]
    pub project: PathBuf,
    /// qemu CPU model for emulated runs.
    #[arg(long = "qemu-cpu")]
    pub qemu_cpu: Option<String>,
    /// A folder holding the target CPython to run the tests on (`bin/python3.X` for the
    /// wheel's architecture), for versions Debian does not ship.
    #[arg(long = "target-python")]
    pub target_python: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Wheels and sdists to validate before upload.
    #[arg(required = true)]
    pub dists: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct UploadArgs {
    /// Wheels and sdists to upload (each is checked first).
    #[arg(required = true)]
    pub dists: Vec<PathBuf>,
    /// The index's legacy upload URL (or TWINE_REPOSITORY_URL).
    #[arg(long = "repository-url")]
    pub repository_url: Option<String>,
    /// Treat files the index already has as done.
    #[arg(long = "skip-existing")]
    pub skip_existing: bool,
    /// Authenticate through Trusted Publishing: trade the CI job's OIDC identity
    /// (GitHub Actions with `id-token: write`) for a short-lived upload token. Used
    /// without this flag too when the job can get an OIDC token and TWINE_PASSWORD is unset.
    #[arg(long = "trusted-publishing")]
    pub trusted_publishing: bool,
    /// Send each file's PEP 740 attestations: `<file>.publish.attestation` must be beside
    /// it (actions/attest writes it), and every `<file>.*.attestation` there is sent.
    #[arg(long = "attestations")]
    pub attestations: bool,
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
    /// The CPython version (`3.13`); `3.13t` for its free-threaded ABI.
    #[arg(long, default_value = "3.11")]
    pub python: String,
    #[arg(long, default_value = "zig")]
    pub toolchain: String,
    #[arg(long)]
    pub offline: bool,
}
