//! One build's options: every setting looked up for its identifier (so overrides apply),
//! checked, and turned into the values the stages read.

use std::path::{Path, PathBuf};

use crate::target::{OsVersion, Target, ToolchainKind};

use super::container;
use super::error::{OptionsError, Origin};
use super::identifiers::{self, Platform, PythonTag, TargetData};
use super::notes::Notes;
use super::project_tables::DependencyGroups;
use super::schema;
use super::shell::{EnvAssignment, Environment};
use super::sources::{DEFAULTS_PATH, Sources};
use super::types::{BuildFrontend, CudaOption, DependencyVersions, FrontendName, RepairCommand};
use super::value::{Located, Setting};
use super::{BuildOptions, BuildSpec, EnvSource, ProjectPaths};

/// `build-frontend` for a build crosswheel makes: its args read, pyodide-build refused.
fn read_frontend_args(
    frontend: BuildFrontend,
    origin: Origin,
) -> Result<BuildFrontend, OptionsError> {
    let invalid = |message: String| OptionsError::InvalidValue {
        origin: origin.clone(),
        key: "build-frontend".to_string(),
        message,
    };
    if frontend.name == FrontendName::PyodideBuild {
        return Err(invalid(
            "pyodide-build builds Pyodide wheels only: use build, build[uv], pip or uv".to_string(),
        ));
    }
    frontend.read_args().map_err(invalid)
}

/// The settings of one build: every lookup is for its platform and identifier, so the
/// overrides that select it apply.
struct BuildSettings<'a> {
    sources: &'a Sources,
    platform: Platform,
    identifier: &'a str,
    /// The package folder, which relative paths of the configuration start from.
    project_dir: &'a Path,
    paths: &'a ProjectPaths,
}

impl BuildSettings<'_> {
    fn get(&self, key: &'static str) -> Option<Located> {
        self.sources.get(key, self.platform, Some(self.identifier))
    }

    fn setting(&self, key: &'static str) -> Setting {
        self.sources
            .setting(key, self.platform, Some(self.identifier))
    }

    fn list(&self, key: &'static str) -> Vec<String> {
        self.setting(key).list()
    }

    /// The value as text; an empty one counts as unset.
    fn text(&self, key: &'static str) -> Option<String> {
        Some(self.setting(key).text()).filter(|text| !text.is_empty())
    }

    /// A command, with `{project}` and `{package}` filled as cibuildwheel fills them and,
    /// for Linux, `/project` paths naming the project.
    fn command(&self, key: &'static str) -> Option<String> {
        self.text(key).map(|command| {
            let command = self.container_paths(&command, true);
            super::fill_project(&command, self.paths)
        })
    }

    /// For a Linux build, `text` with the paths of cibuildwheel's container (`/project`,
    /// where cibuildwheel copies the project root) naming the project root, shell-quoted when `text` is shell code; macOS builds
    /// run on the host in cibuildwheel too, so their values stay as they are.
    fn container_paths(&self, text: &str, shell: bool) -> String {
        if self.platform != Platform::Linux {
            return text.to_string();
        }
        let (project, quoted) = self.paths.root_texts();
        container::project_paths(text, if shell { &quoted } else { &project }, true)
    }

    /// A path, relative to the project.
    fn project_path(&self, key: &'static str) -> Option<PathBuf> {
        self.text(key).map(|path| self.project_dir.join(path))
    }

    /// A duration option's whole seconds (checked when the value was read); `None` where
    /// it is unset or empty.
    /// Whether `test-skip` matches this build.
    fn test_skipped(&self) -> bool {
        self.sources
            .selector("test-skip", self.platform)
            .matches(self.identifier)
    }
}

/// How a message names where a value was set: a file by its name, a variable or a flag
/// as [`Origin`] says it.
fn origin_name(origin: &Origin) -> String {
    match origin {
        Origin::File { path, .. } => path.file_name().map_or_else(
            || path.display().to_string(),
            |name| name.to_string_lossy().into_owned(),
        ),
        other => other.to_string(),
    }
}

pub(super) fn build_spec(
    sources: &Sources,
    env: &impl EnvSource,
    paths: &ProjectPaths,
    groups: &DependencyGroups,
    python: PythonTag,
    target: &'static TargetData,
    notes: &mut Notes,
) -> Result<BuildSpec, OptionsError> {
    let identifier = identifiers::identifier(python, target);
    let platform = target.platform;
    let project_dir = paths.package.as_path();
    let build = BuildSettings {
        sources,
        platform,
        identifier: &identifier,
        project_dir,
        paths,
    };
    let environment_pass = build.list("environment-pass");
    let mut assignments = environment_assignments(&build, env, &environment_pass);
    let deployment_target = build.get("macos-deployment-target");
    let deployment_target_origin = deployment_target.as_ref().map(|found| found.origin.clone());
    let macos_deployment_target =
        macos_deployment_target(deployment_target, target, &mut assignments, notes);
    let build_frontend = build_frontend(build.get("build-frontend"))?;
    if !build_frontend.parsed.without_effect.is_empty() {
        notes.push(format!(
            "build-frontend args {} accepted: they change only the frontend's own output, which crosswheel does not show",
            build_frontend.parsed.without_effect.join(" ")
        ));
    }
    let config_settings = config_settings(build.setting("config-settings"), &build_frontend, paths)
        .into_iter()
        .map(|(key, value)| (key, build.container_paths(&value, false)))
        .collect();
    let repair = repair_command(build.get("repair-wheel-command"), paths);
    let audit_command = audit_commands(build.get("audit-command"), &build)?;
    let toolchain = toolchain(build.get("toolchain"), platform)?;
    let cuda = CudaOption {
        release: build.text("cuda").map(|text| text.trim().to_string()),
        components: build.list("cuda-components"),
    };
    let (test_requires, test_groups_problem) = test_requirements(
        build.list("test-requires"),
        build.get("test-groups"),
        groups,
        notes,
    );
    // cibuildwheel passes both build-verbosity's flags and the frontend's args on.
    let build_verbosity =
        build.setting("build-verbosity").verbosity() + build_frontend.parsed.verbosity;
    let dependency_versions = dependency_versions(build.get("dependency-versions"), project_dir)?;
    let options = BuildOptions {
        build_frontend,
        config_settings,
        environment: Environment { assignments },
        environment_pass,
        before_all: build.command("before-all"),
        before_all_origin: build
            .get("before-all")
            .map(|found| origin_name(&found.origin)),
        before_build: build.command("before-build"),
        before_test: build.command("before-test"),
        repair,
        audit_command,
        audit_requires: build.list("audit-requires"),
        test_command: build.text("test-command"),
        test_requires,
        test_groups_problem,
        test_extras: build.list("test-extras"),
        test_sources: build.list("test-sources"),
        test_skipped: build.test_skipped(),
        output_dir: output_dir(build.get("output-dir"), project_dir),
        toolchain,
        macos_deployment_target,
        qemu_cpu: build.text("qemu-cpu"),
        target_python: build.project_path("target-python"),
        macos_sdk: build.project_path("macos-sdk"),
        require_tests: build.setting("require-tests").flag(),
        debian_mirror: build.text("debian-mirror"),
        test_timeout: build.setting("test-timeout").duration(),
        target_requires: build.list("target-requires"),
        target_libraries: build.list("target-libraries"),
        cuda,
        build_verbosity,
        test_environment: build.setting("test-environment").environment(),
        dependency_versions,
    };
    let linux_image = linux_image(&build, target, notes);
    Ok(BuildSpec {
        target: build_target(
            target,
            options.macos_deployment_target,
            deployment_target_origin,
            linux_image,
        )?,
        python,
        options,
        identifier,
        paths: paths.clone(),
    })
}

/// The `environment-pass` variables that are set, with the values they have now, then the
/// `environment` assignments, as cibuildwheel orders them.
fn environment_assignments(
    build: &BuildSettings,
    env: &impl EnvSource,
    environment_pass: &[String],
) -> Vec<EnvAssignment> {
    let passed = environment_pass.iter().filter_map(|name| {
        env.var(name)
            .map(|value| EnvAssignment::literal(name, &value))
    });
    let mut assignments: Vec<EnvAssignment> = passed.collect();
    let configured = build.setting("environment").environment().assignments;
    if build.platform == Platform::Linux {
        let (project, quoted) = build.paths.root_texts();
        assignments.extend(container::environment(configured, &project, &quoted));
    } else {
        assignments.extend(configured);
    }
    assignments
}

/// `build-frontend`, or the default frontend where it is not a frontend table.
fn build_frontend(located: Option<Located>) -> Result<BuildFrontend, OptionsError> {
    match located {
        Some(Located {
            setting: Setting::Frontend(frontend),
            origin,
        }) => read_frontend_args(frontend, origin),
        _ => Ok(BuildFrontend::default()),
    }
}

/// `config-settings`, then those given in `build-frontend`'s args, with `{project}` and
/// `{package}` filled; not shell-quoted, as the backend gets them as values, not through a
/// shell.
fn config_settings(
    configured: Setting,
    build_frontend: &BuildFrontend,
    paths: &ProjectPaths,
) -> Vec<(String, String)> {
    let fill = |value: &str| super::fill_project_unquoted(value, paths);
    let frontend_settings = build_frontend.parsed.config_settings.clone();
    let mut config_settings: Vec<(String, String)> = configured.pairs();
    config_settings.extend(frontend_settings);
    config_settings
        .into_iter()
        .map(|(key, value)| (key, fill(&value)))
        .collect()
}

/// `repair-wheel-command`: unset, crosswheel's own repair; empty, no repair.
fn repair_command(located: Option<Located>, paths: &ProjectPaths) -> RepairCommand {
    match located {
        None => RepairCommand::Builtin,
        Some(located) => match located.setting.text() {
            command if command.is_empty() => RepairCommand::Skip,
            command => RepairCommand::Command(super::fill_project(&command, paths)),
        },
    }
}

/// `audit-command` as cibuildwheel reads it: commands joined with ` && ` are run one by
/// one, and each must name the wheel it audits (`{wheel}`, or `{abi3_wheel}` for a command
/// that runs on abi3 wheels only), not both.
fn audit_commands(
    located: Option<Located>,
    build: &BuildSettings,
) -> Result<Vec<String>, OptionsError> {
    let Some(located) = located else {
        return Ok(Vec::new());
    };
    let Some(text) = build.command("audit-command") else {
        return Ok(Vec::new());
    };
    let commands: Vec<String> = text.split(" && ").map(str::to_string).collect();
    for command in &commands {
        let (wheel, abi3) = (
            command.contains("{wheel}"),
            command.contains("{abi3_wheel}"),
        );
        if wheel == abi3 {
            let message = if wheel {
                format!(
                    "{command:?} names both {{wheel}} and {{abi3_wheel}}; a command audits one of them"
                )
            } else {
                format!(
                    "{command:?} must name the wheel it audits: {{wheel}}, or {{abi3_wheel}} for abi3 wheels only"
                )
            };
            return Err(OptionsError::InvalidValue {
                origin: located.origin.clone(),
                key: "audit-command".into(),
                message,
            });
        }
    }
    Ok(commands)
}

/// `test-requires` plus the requirements of the `test-groups`, each once; a group that
/// cannot be read is a problem for the tests only.
fn test_requirements(
    mut test_requires: Vec<String>,
    test_groups: Option<Located>,
    groups: &DependencyGroups,
    notes: &mut Notes,
) -> (Vec<String>, Option<String>) {
    let Some(located) = test_groups else {
        return (test_requires, None);
    };
    match groups.requirements(&located.setting.list()) {
        Ok(required) => {
            for requirement in required {
                if !test_requires.contains(&requirement) {
                    test_requires.push(requirement);
                }
            }
            (test_requires, None)
        }
        // As in cibuildwheel, the groups matter to the tests only: planning goes on,
        // the tests that need them fail, and the problem is said once now.
        Err(message) => {
            let problem = format!("{}: invalid `test-groups`: {message}", located.origin);
            notes.push(format!("warning: {problem}"));
            (test_requires, Some(problem))
        }
    }
}

/// `dependency-versions`; a constraints file named in the project's file is relative to
/// the project, one from a variable or flag to the working directory.
fn dependency_versions(
    located: Option<Located>,
    project_dir: &Path,
) -> Result<DependencyVersions, OptionsError> {
    let Some(located) = located else {
        return Ok(DependencyVersions::Unconstrained);
    };
    let base = match &located.origin {
        Origin::File { .. } => project_dir.to_path_buf(),
        _ => PathBuf::new(),
    };
    DependencyVersions::parse(&located.setting.text(), &base).map_err(|message| {
        OptionsError::InvalidValue {
            origin: located.origin.clone(),
            key: "dependency-versions".to_string(),
            message,
        }
    })
}

/// `macos-deployment-target`; where it is not set, a `MACOSX_DEPLOYMENT_TARGET` of the
/// `environment` (as cibuildwheel users set it) decides it. Either is raised to the
/// target's own floor (11.0, the first macOS on arm64, for arm64 and universal2's arm64
/// slice). The variable the backend sees then says the same.
fn macos_deployment_target(
    located: Option<Located>,
    target: &'static TargetData,
    assignments: &mut [EnvAssignment],
    notes: &mut Notes,
) -> OsVersion {
    let platform = target.platform;
    let configured = located
        .as_ref()
        .and_then(|found| found.setting.os_version())
        .unwrap_or_else(crate::target::macos_floor)
        .max(target.min_os());
    let from_defaults = located.as_ref().is_none_or(|found| {
        matches!(&found.origin, Origin::File { path, .. } if path == Path::new(DEFAULTS_PATH))
    });
    if platform != Platform::Macos {
        return configured;
    }
    let Some(assignment) = assignments
        .iter_mut()
        .rev()
        .find(|assignment| assignment.name == "MACOSX_DEPLOYMENT_TARGET")
    else {
        return configured;
    };
    let literal: Option<String> = assignment
        .value
        .iter()
        .map(|part| match part {
            super::EnvPart::Literal(text) => Some(text.clone()),
            _ => None,
        })
        .collect();
    let Some(literal) = literal else {
        return configured;
    };
    let chosen = if from_defaults {
        match super::types::parse_macos_version(&literal) {
            Ok(version) if version < target.min_os() => {
                notes.push(format!(
                    "MACOSX_DEPLOYMENT_TARGET={literal} in `environment`: {} starts at {}, so its wheels are built for {}",
                    target.id,
                    target.min_os(),
                    target.min_os()
                ));
                target.min_os()
            }
            Ok(version) => version,
            Err(_) => {
                notes.push(format!(
                    "MACOSX_DEPLOYMENT_TARGET={literal} in `environment`: crosswheel's oldest macOS is {} (x86_64; arm64 starts at {}), so macOS wheels are built for {}",
                    crate::target::macos_floor(),
                    crate::target::macos_arm64_floor(),
                    crate::target::macos_floor(),
                ));
                configured
            }
        }
    } else {
        configured
    };
    if chosen.to_string() != literal {
        *assignment = EnvAssignment::literal("MACOSX_DEPLOYMENT_TARGET", &chosen.to_string());
    }
    chosen
}

/// The glibc `manylinux-<arch>-image` asks a manylinux build to compile against; `None`
/// where it is unset, for other targets, and for an image that names no policy (said in
/// a note).
fn linux_image(
    build: &BuildSettings,
    data: &'static TargetData,
    notes: &mut Notes,
) -> Option<OsVersion> {
    let target = Target::with_default_version(data);
    if target.libc() != Some(crate::target::Libc::Glibc) {
        return None;
    }
    let key = schema::find(&format!("manylinux-{}-image", target.arch()))?.key;
    let image = build.text(key)?;
    let glibc = super::linux_image::policy_glibc(&image);
    if glibc.is_none() {
        notes.push(format!(
            "{key} = {image} names no manylinux policy (manylinux2014, manylinux_2_28, ...): {} is built against glibc {}, its lowest",
            target.id(),
            target.os_version()
        ));
    }
    glibc
}

/// The target of a build: for macOS at its deployment target (checked against the floor
/// when the option was read), for Linux at the glibc of the manylinux image the
/// configuration names, raised to the target's floor, else of `config/targets.toml`.
fn build_target(
    data: &'static TargetData,
    macos_deployment_target: OsVersion,
    origin: Option<Origin>,
    linux_image: Option<OsVersion>,
) -> Result<Target, OptionsError> {
    let target = Target::with_default_version(data);
    if !target.is_macos() {
        return Ok(linux_image.map_or(target, |glibc| Target::at_least(data, glibc)));
    }
    target
        .with_os_version(macos_deployment_target)
        .map_err(|error| OptionsError::InvalidValue {
            origin: origin.unwrap_or_else(|| Origin::File {
                path: PathBuf::from(DEFAULTS_PATH),
                line: 1,
            }),
            key: "macos-deployment-target".to_string(),
            message: error.to_string(),
        })
}

fn toolchain(located: Option<Located>, platform: Platform) -> Result<ToolchainKind, OptionsError> {
    let origin = located.as_ref().map_or_else(
        || Origin::File {
            path: PathBuf::from(DEFAULTS_PATH),
            line: 1,
        },
        |located| located.origin.clone(),
    );
    let invalid = |message| OptionsError::InvalidValue {
        origin,
        key: "toolchain".to_string(),
        message,
    };
    let name = located
        .map(|located| located.setting.text())
        .unwrap_or_default();
    match ToolchainKind::from_name(&name) {
        // Caught here rather than at build time, after the Linux builds have run.
        Some(ToolchainKind::Gcc) if platform == Platform::Macos => Err(invalid(
            "no cross gcc exists for macOS: use zig for macOS builds (set `toolchain = \"gcc\"` in [tool.crosswheel.linux] only)".to_string(),
        )),
        Some(toolchain) => Ok(toolchain),
        None => Err(invalid(format!("use one of {}", schema::TOOLCHAINS.join(", ")))),
    }
}

/// A relative `output-dir` from the project's file is relative to the project; from the
/// defaults, a variable or a flag, to the working directory (as cibuildwheel's).
fn output_dir(located: Option<Located>, project_dir: &Path) -> PathBuf {
    let Some(located) = located else {
        return PathBuf::new();
    };
    let dir = PathBuf::from(located.setting.text());
    match located.origin {
        Origin::File { path, .. } if path != Path::new(DEFAULTS_PATH) && dir.is_relative() => {
            project_dir.join(dir)
        }
        _ => dir,
    }
}
