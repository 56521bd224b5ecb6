//! The peers' command lines a configuration calls — `auditwheel repair --strip -w
//! {dest_dir} {wheel}` in a `repair-wheel-command`, `delocate-wheel --require-archs
//! {delocate_archs} ...` — with every flag their own parsers define (auditwheel 6,
//! delocate 0.13), so crosswheel's repair can answer them. A flag crosswheel cannot
//! honour is still parsed, so the error names it instead of calling it unknown.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// The target of the build whose hooks call the peers (a crosswheel target id), set by
/// the pipeline for its hooks.
pub const TARGET_VARIABLE: &str = "CROSSWHEEL_PEER_TARGET";
/// Folders (`:`-separated) holding the libraries crosswheel built or fetched for that
/// target, set for `repair-wheel-command`.
pub const LIBRARY_PATH_VARIABLE: &str = "CROSSWHEEL_PEER_LIBRARY_PATH";

/// The peer a program name stands for: crosswheel answers to these names from a folder
/// it puts first on the hooks' PATH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    Auditwheel,
    DelocateWheel,
    DelocateListdeps,
    DelocateMerge,
    /// The real abi3audit, pinned: it reads a wheel's binaries without loading them, so
    /// it judges a foreign architecture's wheel as well as the build machine's.
    Abi3audit,
    /// `pipx run <peer> ...`, as cibuildwheel's documentation writes abi3audit's line
    /// (`pipx run abi3audit --strict --report {wheel}`): the peer answers; anything else
    /// goes to the machine's own pipx.
    Pipx,
}

impl Peer {
    pub const ALL: [Peer; 6] = [
        Peer::Auditwheel,
        Peer::DelocateWheel,
        Peer::DelocateListdeps,
        Peer::DelocateMerge,
        Peer::Abi3audit,
        Peer::Pipx,
    ];

    /// The program name the peer is installed as.
    pub fn program(self) -> &'static str {
        match self {
            Peer::Auditwheel => "auditwheel",
            Peer::DelocateWheel => "delocate-wheel",
            Peer::DelocateListdeps => "delocate-listdeps",
            Peer::DelocateMerge => "delocate-merge",
            Peer::Abi3audit => "abi3audit",
            Peer::Pipx => "pipx",
        }
    }

    /// The distribution on the package index that installs the peer's program
    /// (`pipx run --spec delocate delocate-wheel`).
    pub fn distribution(self) -> &'static str {
        match self {
            Peer::Auditwheel => "auditwheel",
            Peer::DelocateWheel | Peer::DelocateListdeps | Peer::DelocateMerge => "delocate",
            Peer::Abi3audit => "abi3audit",
            Peer::Pipx => "pipx",
        }
    }

    /// The peer `argv0` (a path or a name) names, if any.
    pub fn invoked_as(argv0: &std::ffi::OsStr) -> Option<Peer> {
        let name = std::path::Path::new(argv0).file_name()?;
        Peer::ALL.into_iter().find(|peer| name == peer.program())
    }
}

impl PipxRun {
    /// The options given that say how pipx would install the app (`--spec`, `--index-url`,
    /// ...), as written: crosswheel's peer installs nothing, so they have no effect.
    pub fn install_options(&self) -> Vec<String> {
        let valued = [
            ("--spec", &self.spec),
            ("--index-url", &self.index_url),
            ("--pip-args", &self.pip_args),
            ("--python", &self.python),
        ];
        let flags = [
            ("--no-cache", self.no_cache),
            ("--pypackages", self.pypackages),
            ("--fetch-missing-python", self.fetch_missing_python),
            ("--system-site-packages", self.system_site_packages),
        ];
        valued
            .into_iter()
            .filter_map(|(name, value)| Some(format!("{name} {}", value.as_ref()?)))
            .chain(
                flags
                    .into_iter()
                    .filter(|(_, given)| *given)
                    .map(|(name, _)| name.to_string()),
            )
            .collect()
    }
}

/// `auditwheel [-v] {repair,show} ...`
#[derive(Debug, Parser)]
#[command(
    name = "auditwheel",
    about = "crosswheel's repair, answering auditwheel's command line"
)]
pub struct Auditwheel {
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: AuditwheelCommand,
}

#[derive(Debug, Subcommand)]
pub enum AuditwheelCommand {
    /// Vendor external shared libraries into the wheel and retag it.
    Repair(AuditwheelRepair),
    /// Audit a wheel for external shared library dependencies.
    Show(AuditwheelShow),
}

/// The options `repair` and `show` share (auditwheel's `options.py`).
#[derive(Debug, Args)]
pub struct AuditwheelShared {
    /// Do not check for extended ISA compatibility.
    #[arg(long = "disable-isa-ext-check")]
    pub disable_isa_ext_check: bool,
    /// Allow pure Python wheels without error.
    #[arg(long = "allow-pure-python-wheel")]
    pub allow_pure_python_wheel: bool,
    /// Colon-delimited folders to search for external libraries, replacing the default
    /// list (`AUDITWHEEL_LD_LIBRARY_PATH` adds to it).
    #[arg(long = "ldpaths", value_name = "LDPATHS")]
    pub ldpaths: Option<String>,
}

#[derive(Debug, Args)]
pub struct AuditwheelRepair {
    #[arg(value_name = "WHEEL_FILE", required = true)]
    pub wheels: Vec<PathBuf>,
    /// Compression level of the written wheel (`AUDITWHEEL_ZIP_COMPRESSION_LEVEL`).
    #[arg(short = 'z', long = "zip-compression-level", value_name = "LEVEL")]
    pub zip_compression_level: Option<i64>,
    /// The platform tag to repair for (`AUDITWHEEL_PLAT`; default `auto`).
    #[arg(long, value_name = "PLATFORM")]
    pub plat: Option<String>,
    /// The suffix of the distribution's folder that receives the libraries.
    #[arg(short = 'L', long = "lib-sdir", default_value = ".libs")]
    pub lib_sdir: String,
    /// Folder for the repaired wheels.
    #[arg(short = 'w', long = "wheel-dir", default_value = "wheelhouse/")]
    pub wheel_dir: PathBuf,
    /// Keep the wheel's file name tags and WHEEL file.
    #[arg(long = "no-update-tags")]
    pub no_update_tags: bool,
    /// Strip symbols in the resulting wheel.
    #[arg(long)]
    pub strip: bool,
    /// Never graft a library whose SONAME matches (a glob; may repeat).
    #[arg(long, value_name = "EXCLUDE")]
    pub exclude: Vec<String>,
    /// Do not add the tags of a more compatible policy the wheel satisfies.
    #[arg(long = "only-plat")]
    pub only_plat: bool,
    #[command(flatten)]
    pub shared: AuditwheelShared,
    /// The ELF patcher (`AUDITWHEEL_PATCHER`): crosswheel edits ELF files itself.
    #[arg(long, value_name = "PATCHER")]
    pub patcher: Option<String>,
}

#[derive(Debug, Args)]
pub struct AuditwheelShow {
    #[arg(value_name = "WHEEL_FILE")]
    pub wheel: PathBuf,
    /// auditwheel's JSON report.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub shared: AuditwheelShared,
}

/// The options of delocate's commands that analyse dependencies (`delocate_parser`).
#[derive(Debug, Args)]
pub struct DelocateShared {
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Only analyse files with known dynamic library extensions.
    #[arg(short = 'd', long = "dylibs-only")]
    pub dylibs_only: bool,
    /// Exclude libraries whose path includes this string (may repeat).
    #[arg(short = 'e', long, value_name = "EXCLUDE")]
    pub exclude: Vec<String>,
    /// The folder standing in for `@executable_path`.
    #[arg(long = "executable-path", value_name = "PATH")]
    pub executable_path: Option<PathBuf>,
    /// Skip dependencies that cannot be found.
    #[arg(long = "ignore-missing-dependencies")]
    pub ignore_missing_dependencies: bool,
    /// Remove absolute and relative rpaths (the default).
    #[arg(long = "sanitize-rpaths", overrides_with = "no_sanitize_rpaths")]
    pub sanitize_rpaths: bool,
    /// Keep absolute and relative rpaths.
    #[arg(long = "no-sanitize-rpaths", overrides_with = "sanitize_rpaths")]
    pub no_sanitize_rpaths: bool,
}

/// `delocate-wheel WHEEL...`
#[derive(Debug, Parser)]
#[command(
    name = "delocate-wheel",
    about = "crosswheel's repair, answering delocate-wheel's command line"
)]
pub struct DelocateWheel {
    #[arg(value_name = "WHEEL", required = true)]
    pub wheels: Vec<PathBuf>,
    /// The folder in the package that receives the libraries.
    #[arg(short = 'L', long = "lib-sdir", default_value = ".dylibs")]
    pub lib_sdir: String,
    /// Folder for the delocated wheels (default: overwrite the input).
    #[arg(short = 'w', long = "wheel-dir")]
    pub wheel_dir: Option<PathBuf>,
    /// Check the architectures of the libraries depended on.
    #[arg(short = 'k', long = "check-archs")]
    pub check_archs: bool,
    /// Architectures every library must have (`arm64`, `x86_64`, `x86_64,arm64`,
    /// `universal2`, `intel`).
    #[arg(long = "require-archs", value_name = "ARCHITECTURES")]
    pub require_archs: Option<String>,
    /// The macOS version the wheel's tag must allow.
    #[arg(long = "require-target-macos-version", value_name = "X.Y")]
    pub require_target_macos_version: Option<String>,
    #[command(flatten)]
    pub shared: DelocateShared,
}

/// `delocate-listdeps WHEEL_OR_PATH...`
#[derive(Debug, Parser)]
#[command(
    name = "delocate-listdeps",
    about = "crosswheel's analysis, answering delocate-listdeps's command line"
)]
pub struct DelocateListdeps {
    #[arg(value_name = "WHEEL_OR_PATH_TO_ANALYZE", required = true)]
    pub paths: Vec<PathBuf>,
    /// Show all dependencies, system libraries included.
    #[arg(short = 'a', long)]
    pub all: bool,
    /// Show the libraries depending on each dependency.
    #[arg(short = 'd', long)]
    pub depending: bool,
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// `delocate-merge WHEEL WHEEL [-w WHEEL_DIR]`
#[derive(Debug, Parser)]
#[command(
    name = "delocate-merge",
    about = "crosswheel's fuse, answering delocate-merge's command line"
)]
pub struct DelocateMerge {
    /// The two thin macOS wheels (an x86_64 and an arm64 one) to merge.
    #[arg(value_name = "WHEEL", num_args = 2, required = true)]
    pub wheels: Vec<PathBuf>,
    /// Folder for the merged wheel (default: the first wheel's folder, as delocate-merge).
    #[arg(short = 'w', long = "wheel-dir")]
    pub wheel_dir: Option<PathBuf>,
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// `pipx run [OPTIONS] APP [ARGS...]`, with the options of pipx 1.7's `run`; any other
/// command line of pipx is the machine's pipx's to answer.
#[derive(Debug, Parser)]
#[command(
    name = "pipx",
    about = "pipx run, answered by the peers crosswheel has"
)]
pub struct Pipx {
    #[command(subcommand)]
    pub command: PipxCommand,
}

#[derive(Debug, Subcommand)]
pub enum PipxCommand {
    /// Run an app from a temporary virtual environment.
    Run(PipxRun),
}

#[derive(Debug, Args)]
pub struct PipxRun {
    /// The package to install the app from, when it is not the app's name.
    #[arg(long, value_name = "SPEC")]
    pub spec: Option<String>,
    /// Do not reuse a cached virtual environment.
    #[arg(long = "no-cache")]
    pub no_cache: bool,
    /// Run the app from `__pypackages__` if there is one.
    #[arg(long)]
    pub pypackages: bool,
    /// The index to install from.
    #[arg(short = 'i', long = "index-url", value_name = "INDEX_URL")]
    pub index_url: Option<String>,
    /// Arguments for pip.
    #[arg(long = "pip-args", value_name = "PIP_ARGS", allow_hyphen_values = true)]
    pub pip_args: Option<String>,
    /// The Python the virtual environment is made with.
    #[arg(long, value_name = "PYTHON")]
    pub python: Option<String>,
    #[arg(long = "fetch-missing-python")]
    pub fetch_missing_python: bool,
    #[arg(long = "system-site-packages")]
    pub system_site_packages: bool,
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub quiet: u8,
    /// The app, then its own arguments.
    #[arg(
        value_name = "APP",
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub app: Vec<std::ffi::OsString>,
}
