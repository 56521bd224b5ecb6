//! crosswheel's configuration, as a cibuildwheel user expects it: `[tool.cibuildwheel]` and
//! `[tool.crosswheel]` in pyproject.toml (each with its `linux` and `macos` tables and its
//! `overrides`), `CROSSWHEEL_*` environment variables and command-line flags, merged into
//! one [`Plan`]: the build identifiers to build, each with its options.
//!
//! Precedence, lowest first: `config/defaults.toml`; the file's `[tool.cibuildwheel]`, its
//! platform table and matching overrides (in file order); the same of `[tool.crosswheel]`;
//! `CROSSWHEEL_X`, `CROSSWHEEL_X_<PLATFORM>`, then flags. Every value is parsed here, once: a [`BuildSpec`] carries the
//! [`Target`] (OS version applied), the [`PythonTag`] and typed options, and no stage reads
//! them back out of strings.

mod archs;
mod build_spec;
mod cibw;
mod container;
mod document;
mod error;
mod frontend;
mod help;
mod identifiers;
mod linux_image;
mod matrix;
mod notes;
mod project_tables;
mod requires_python;
mod resolve;
mod root;
mod schema;
mod selection;
mod selector;
mod shell;
mod sources;
mod types;
mod value;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::support::host::shell_quote;
use crate::target::{OsVersion, Target, ToolchainKind};

pub use error::{DOCS_URL, OptionsError, Origin};
pub use frontend::{FrontendArgs, Installer};
pub use help::{TABLE_BEGIN, TABLE_END, config_help, options_table};
pub use identifiers::{Platform, PythonTag, TargetData, parse_identifier, targets};
pub use matrix::{MatrixJobs, github_matrix, identifiers_json, identifiers_text};
pub use root::project_root_for;
pub use selector::Selector;
pub use shell::{EnvAssignment, EnvPart, Environment, fill_placeholders};
pub use types::{BuildFrontend, CudaOption, DependencyVersions, FrontendName, RepairCommand};

/// Where `CROSSWHEEL_*` (and `environment-pass`) variables are read; tests pass a map.
pub trait EnvSource {
    fn var(&self, name: &str) -> Option<String>;
}

/// The process environment. Variables that are not valid UTF-8 count as unset.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl EnvSource for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

impl EnvSource for BTreeMap<String, String> {
    fn var(&self, name: &str) -> Option<String> {
        self.get(name).cloned()
    }
}

impl EnvSource for HashMap<String, String> {
    fn var(&self, name: &str) -> Option<String> {
        self.get(name).cloned()
    }
}

/// An option given on the command line, in the string form its `CROSSWHEEL_*` variable
/// takes (`--archs "aarch64 arm64"`, `--test-command "pytest {project}"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliSetting {
    /// The flag as the user typed it, for messages (`--archs`).
    pub flag: String,
    /// The option name (`archs`).
    pub key: String,
    pub value: String,
}

/// What the command line decides; every field is optional.
#[derive(Debug, Clone, Default)]
pub struct CliOverrides {
    /// `--only IDENTIFIER`: build exactly this identifier, ignoring `build`, `skip`, `archs`
    /// and `python` (as cibuildwheel's `--only`).
    pub only: Option<String>,
    /// `--config-file PATH`: read `[tool.crosswheel]` from this file instead of the
    /// project's pyproject.toml.
    pub config_file: Option<PathBuf>,
    /// `--allow-empty`: an empty selection is not an error.
    pub allow_empty: bool,
    /// Option values from flags, highest precedence.
    pub settings: Vec<CliSetting>,
    /// cibuildwheel's project root (`{project}`), when it is not the package folder itself:
    /// the working directory the package folder lies in, or an unpacked sdist's tree.
    pub project_root: Option<PathBuf>,
}

impl CliOverrides {
    /// Records `--<key> <value>`; the key is checked when the plan is resolved.
    pub fn set(&mut self, key: &str, value: impl Into<String>) -> &mut Self {
        self.settings.push(CliSetting {
            flag: format!("--{key}"),
            key: key.to_string(),
            value: value.into(),
        });
        self
    }
}

/// Every option's value for one build.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildOptions {
    pub build_frontend: BuildFrontend,
    /// PEP 517 config settings in order; a key may repeat.
    pub config_settings: Vec<(String, String)>,
    /// `environment` with the `environment-pass` variables (values taken when the plan
    /// was resolved) placed first, as cibuildwheel does.
    pub environment: Environment,
    pub environment_pass: Vec<String>,
    /// `before-all`, `before-build` and `before-test` have `{project}` (the project root)
    /// and `{package}` (the package folder) filled, shell-quoted and absolute, as
    /// cibuildwheel fills them.
    pub before_all: Option<String>,
    /// Where `before-all` was set, for the messages about it: the configuration file's
    /// name (`pyproject.toml`), `environment variable CIBW_BEFORE_ALL` or
    /// `command-line option --before-all`.
    pub before_all_origin: Option<String>,
    pub before_build: Option<String>,
    pub before_test: Option<String>,
    pub repair: RepairCommand,
    /// `audit-command`, split at ` && ` as cibuildwheel splits it, `{project}` and
    /// `{package}` filled; each holds `{wheel}` or `{abi3_wheel}` (checked when read).
    pub audit_command: Vec<String>,
    /// `audit-requires`: installed into the audit's venv.
    pub audit_requires: Vec<String>,
    /// With `{project}` and `{package}` placeholders; see [`BuildOptions::test_command_for`].
    pub test_command: Option<String>,
    /// `test-requires`, then the requirements of the `test-groups` (PEP 735
    /// `[dependency-groups]` of the project's pyproject.toml, read when the plan is made).
    pub test_requires: Vec<String>,
    /// A `test-groups` entry the project's `[dependency-groups]` lacks: the tests of this
    /// build fail with it (planning and building go on, as in cibuildwheel).
    pub test_groups_problem: Option<String>,
    pub test_extras: Vec<String>,
    /// Paths (relative to the project) copied next to the tests.
    pub test_sources: Vec<String>,
    /// `test-skip` matches this build: build and repair it, but do not test it.
    pub test_skipped: bool,
    /// Relative paths from the config file are relative to the project; from a variable
    /// or flag, to the working directory.
    pub output_dir: PathBuf,
    pub toolchain: ToolchainKind,
    /// At least `11.0`; used by macOS builds only, whose [`BuildSpec::target`] carries it.
    pub macos_deployment_target: OsVersion,
    /// `QEMU_CPU` for emulated tests; `None` leaves qemu's default.
    pub qemu_cpu: Option<String>,
    /// `target-python`: a folder holding the user's own target CPython (`bin/python3.X`)
    /// for the emulated test stage, for versions Debian does not ship.
    pub target_python: Option<PathBuf>,
    /// `macos-sdk`: a macOS SDK folder for macOS builds (frameworks, `.tbd` stubs); `None`:
    /// the `SDKROOT` variable decides.
    pub macos_sdk: Option<PathBuf>,
    /// `require-tests`: a build whose tests cannot run here fails instead of being kept.
    pub require_tests: bool,
    /// `debian-mirror`: the Debian archive the test stage fetches target CPythons from.
    pub debian_mirror: Option<String>,
    /// `test-timeout`: the longest the test command may run; `None`: no limit.
    pub test_timeout: Option<std::time::Duration>,
    /// Requirements whose target-platform wheels must be present at build time
    /// (e.g. `scipy-openblas32`).
    pub target_requires: Vec<String>,
    /// `target-libraries`: catalogue libraries (config/target-libraries.toml) to build for
    /// the target, as `libffi` or `openssl>=3`.
    pub target_libraries: Vec<String>,
    /// `cuda` and `cuda-components`: the CUDA toolkit the build compiles with, when the
    /// options name one (the toolchain checks them against the releases it pins).
    pub cuda: CudaOption,
    /// `build-verbosity`, -3..=3: from 1 on, the backend's output is shown (and
    /// scikit-build-core is asked for a verbose build from 2 on).
    pub build_verbosity: i64,
    /// `test-environment`: assignments applied, after `environment`, for `before-test` and
    /// the test command only.
    pub test_environment: Environment,
    /// `dependency-versions`: constraints for installing the build requirements.
    pub dependency_versions: DependencyVersions,
}

impl BuildOptions {
    /// Whether a test runs for this build.
    pub fn runs_tests(&self) -> bool {
        self.test_command.is_some() && !self.test_skipped
    }

    /// The test command with `{project}` and `{package}` filled (shell-quoted).
    pub fn test_command_for(&self, paths: &ProjectPaths) -> Option<String> {
        self.test_command
            .as_deref()
            .map(|template| fill_project(template, paths))
    }
}

/// One build: a CPython version for a target, with its options.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildSpec {
    /// `cp311-manylinux_aarch64`.
    pub identifier: String,
    /// What the build is for: `linux-aarch64` at its glibc, `macos-arm64` at the
    /// deployment target.
    pub target: Target,
    /// `cp311`, `cp313t`: the CPython version (the build python's too) and its ABI.
    pub python: PythonTag,
    pub options: BuildOptions,
    /// Where the build runs: the project root and package folder its hooks run in and its
    /// commands name. The plan's own, or for a Linux target its copy of the project
    /// ([`BuildSpec::move_to`]).
    pub paths: ProjectPaths,
}

impl BuildSpec {
    /// Makes this build run in another copy of the project, given `copy`, its spec as
    /// resolved there: what cibuildwheel evaluates where the project is (the commands,
    /// `environment` and `config-settings`, with `{project}`, `{package}` and `/project`
    /// filled) becomes the copy's; everything else, the output folder above all, stays.
    pub fn move_to(&mut self, copy: BuildSpec) {
        let moved = copy.options;
        let options = &mut self.options;
        options.before_all = moved.before_all;
        options.before_build = moved.before_build;
        options.before_test = moved.before_test;
        options.repair = moved.repair;
        options.audit_command = moved.audit_command;
        options.config_settings = moved.config_settings;
        options.environment = moved.environment;
        self.paths = copy.paths;
    }
}

/// The builds to run, ordered by CPython version, then target.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The package folder: what is built, where pyproject.toml is read (cibuildwheel's
    /// `package_dir`, `{package}`).
    pub project_dir: PathBuf,
    /// The project root (`{project}`): the package folder itself, or the working directory
    /// it lies in, as cibuildwheel builds `package_dir` from the working directory.
    pub project_root: PathBuf,
    /// The file `[tool.crosswheel]` and `[tool.cibuildwheel]` were read from, when there was one.
    pub config_file: Option<PathBuf>,
    pub builds: Vec<BuildSpec>,
    /// What crosswheel says once per run about how it read the configuration: the table it
    /// read, the `CIBW_*` variables it used, what it ignores (options that do not apply to
    /// cross builds) and what it does not build (architectures, `enable` groups).
    pub notes: Vec<String>,
}

impl Plan {
    /// The two folders the placeholders name.
    pub fn paths(&self) -> ProjectPaths {
        ProjectPaths::new(&self.project_root, &self.project_dir)
    }

    pub fn identifiers(&self) -> impl Iterator<Item = &str> {
        self.builds.iter().map(|build| build.identifier.as_str())
    }
}

/// Reads the configuration of the project in `project_dir` and lists its builds.
pub fn resolve(
    project_dir: &Path,
    cli: &CliOverrides,
    env: &impl EnvSource,
) -> Result<Plan, OptionsError> {
    resolve::resolve(project_dir, cli, env)
}

/// The option names accepted in `[tool.crosswheel]`, for help texts and completion.
pub fn option_names() -> impl Iterator<Item = &'static str> {
    schema::all().iter().map(|option| option.key)
}

/// Warnings for `CROSSWHEEL_*` variables that look like misspelt option variables, given the
/// names of the environment's variables (`std::env::vars_os()` keys); a misspelt variable
/// is otherwise silently ignored.
pub fn env_var_warnings<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    names
        .into_iter()
        .filter_map(|name| {
            schema::misspelt_env_var(name).map(|meant| {
                format!(
                    "environment variable {name} names no option, so it has no effect: did you mean {meant}?"
                )
            })
        })
        .collect()
}

/// `CROSSWHEEL_TEST_COMMAND` for `test-command`.
pub fn env_var_name(option: &str) -> String {
    schema::env_var_name(option)
}

/// `CROSSWHEEL_JOBS`, how many identifiers `crosswheel build` runs at once where `--jobs`
/// does not say; `None` where it is unset or empty.
pub fn jobs_variable(env: &impl EnvSource) -> Result<Option<usize>, String> {
    match env.var("CROSSWHEEL_JOBS") {
        Some(text) if !text.trim().is_empty() => {
            text.trim().parse().map(Some).map_err(|_| {
                format!("CROSSWHEEL_JOBS={text:?}: expected a number of builds at once")
            })
        }
        _ => Ok(None),
    }
}

/// `debian-mirror` as its variable (`CROSSWHEEL_DEBIAN_MIRROR`) sets it, for the commands
/// that run a stage without a plan (`crosswheel test`); empty counts as unset.
pub fn debian_mirror_variable(env: &impl EnvSource) -> Option<String> {
    env.var(&env_var_name("debian-mirror"))
        .filter(|mirror| !mirror.trim().is_empty())
}

/// The deployment target `crosswheel repair` stamps on macOS wheels, which it repairs without
/// a plan: `--macos-version`, else `MACOSX_DEPLOYMENT_TARGET` (as delocate reads it), else
/// `None` (the wheel's own tag decides). A patch level (`10.15.4`) is accepted and dropped.
pub fn repair_macos_version(
    flag: Option<&str>,
    env: &impl EnvSource,
) -> Result<Option<OsVersion>, String> {
    let (text, source) = match flag {
        Some(text) => (text.to_string(), "--macos-version"),
        None => match env.var("MACOSX_DEPLOYMENT_TARGET") {
            Some(text) if !text.trim().is_empty() => (text, "MACOSX_DEPLOYMENT_TARGET"),
            _ => return Ok(None),
        },
    };
    OsVersion::parse_release(&text)
        .map(Some)
        .ok_or_else(|| format!("{source}={text} is not a macOS version; use e.g. 11.0"))
}

/// cibuildwheel's two folders: `{project}`, the project root (the working directory it
/// runs in, or an unpacked sdist's tree), and `{package}`, the package folder it builds,
/// the root itself or a folder inside it. Both absolute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectPaths {
    pub root: PathBuf,
    pub package: PathBuf,
}

impl ProjectPaths {
    pub fn new(root: &Path, package: &Path) -> ProjectPaths {
        let absolute =
            |path: &Path| std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        ProjectPaths {
            root: absolute(root),
            package: absolute(package),
        }
    }

    /// A project whose root is its package folder.
    pub fn single(folder: &Path) -> ProjectPaths {
        ProjectPaths::new(folder, folder)
    }

    /// The root as text, and shell-quoted.
    pub(crate) fn root_texts(&self) -> (String, String) {
        let root = self.root.to_string_lossy().into_owned();
        let quoted = shell_quote(&root).into_owned();
        (root, quoted)
    }

    /// The placeholder values, unquoted (for values that reach no shell).
    fn values(&self) -> [(&'static str, String); 2] {
        [
            ("project", self.root.to_string_lossy().into_owned()),
            ("package", self.package.to_string_lossy().into_owned()),
        ]
    }
}

/// Fills `{project}` with the shell-quoted project root and `{package}` with the
/// shell-quoted package folder, leaving other braces alone.
pub fn fill_project(command: &str, paths: &ProjectPaths) -> String {
    let [(project, root), (package, folder)] = paths.values();
    fill_placeholders(
        command,
        &[
            (project, &shell_quote(&root)),
            (package, &shell_quote(&folder)),
        ],
    )
}

/// The same for a value that reaches no shell (a config setting): unquoted.
pub fn fill_project_unquoted(value: &str, paths: &ProjectPaths) -> String {
    let [(project, root), (package, folder)] = paths.values();
    fill_placeholders(value, &[(project, &root), (package, &folder)])
}
