//! The build step of one identifier: the target's tools (`TargetSetup`), the build's own
//! environment, `before-build`, and the project's PEP 517 backend in the cross
//! environment.

use std::collections::BTreeMap;

use anyhow::{Context, Result};

use super::{Identifier, work_folder};
use crate::coordination::pipeline::{hooks, progress};
use crate::stages::backend::{BuildRequest, BuiltWheel, HookEnv, HookEnvRequest, build_wheel};
use crate::stages::crossenv::{PythonSource, SetupRequest, TargetRunner, TargetSetup};
use crate::stages::testing::Emulator;
use crate::support::host::BuildPython;
use crate::target::Target;

impl Identifier<'_> {
    /// The project's backend in the target's cross environment (and `before-build`).
    pub(super) fn build(
        &self,
        target: &Target,
        slice: &str,
        step: &progress::Step,
    ) -> Result<Built> {
        let spec = self.spec;
        let TargetSetup {
            python, cross_env, ..
        } = TargetSetup::prepare(&SetupRequest {
            purpose: &spec.identifier,
            target,
            python: spec.python,
            python_source: PythonSource::FindOrInstall,
            toolchain: spec.options.toolchain,
            cache: &self.context.cache,
            network: &self.context.network(spec),
            runner: self.target_runner(),
            musl_root: self.musl_root(),
            languages: &crate::stages::backend::languages_of_project(&spec.paths.package),
            cuda: crate::coordination::pipeline::cuda_request(spec)?.as_ref(),
        })?;
        let frontend = frontend_of(&spec.options.build_frontend);
        let hook_env = self.hook_env(target, slice, &python)?;
        let environment = self.checked_environment(&hook_env, &frontend)?;
        if let Some(command) = &spec.options.before_build {
            hooks::run_shell(
                "before-build",
                command,
                &self.spec.paths.package,
                &self.hook_command_environment(&environment, &hook_env, target)?,
            )?;
            for line in hook_env.settle()? {
                tracing::info!("{line}");
            }
        }
        let constraints = spec
            .options
            .dependency_versions
            .constraint_lines()
            .context("reading the constraints file of `dependency-versions`")?;
        // A header package the index has no wheel of for the target (numpy on ppc64le, or
        // on musllinux ppc64le) is built for it: its headers are the target's.
        let builder = spec.target.linux_arch().is_some().then(|| {
            super::super::requirement_build::PipelineBuilder {
                cache: self.context.cache.clone(),
                logs: self.context.logs.clone(),
                network: self.context.network(spec),
            }
        });
        let built = build_wheel(&BuildRequest {
            project_dir: &self.spec.paths.package,
            out_dir: &self.work.path().join(work_folder("built", slice)),
            cross_env: &cross_env,
            python: &python,
            cache: &self.context.cache,
            config_settings: &spec.options.config_settings,
            target_requires: &spec.options.target_requires,
            target_prefixes: &self.target.prefix.roots(),
            log_file: Some(
                &self
                    .context
                    .logs
                    .file(&work_folder(&spec.identifier, slice), "build"),
            ),
            environment: &environment,
            offline: self.context.offline,
            verbosity: spec.options.build_verbosity,
            constraints: &constraints,
            frontend: &frontend,
            hook_env: Some(&hook_env),
            progress: Some(crate::stages::backend::LineSink(&|line: &str| {
                step.observe(line)
            })),
            header_builder: builder
                .as_ref()
                .map(|builder| builder as &dyn crate::support::host::RequirementBuilder),
        })?;
        Ok(Built {
            python,
            wheel: built,
            hook_env,
            environment,
        })
    }

    /// The user's `environment` as cibuildwheel evaluates it for a build: with the build's
    /// own environment first on PATH, so `$PATH` and `$(python ...)` in it mean that
    /// environment; then `python` (and `pip`, unless uv installs) on the PATH it leaves
    /// must still be that environment's.
    fn checked_environment(
        &self,
        hook_env: &HookEnv,
        frontend: &crate::stages::backend::Frontend,
    ) -> Result<BTreeMap<String, String>> {
        let mut base = crate::coordination::pipeline::environment::process_environment();
        let path = base.get("PATH").cloned();
        base.extend(hook_env.variables(path.as_deref()));
        let base_path = base.get("PATH").cloned().unwrap_or_default();
        let mut environment =
            crate::coordination::pipeline::environment::build_environment(self.spec, base)?;
        // Build tools `before-all` asked for that crosswheel provided: after the rest.
        if !self.target.tool_folders.is_empty() {
            let path = environment.get("PATH").unwrap_or(&base_path);
            let joined = crate::support::build_tools::path_with_folders_after(
                path.as_ref(),
                &self.target.tool_folders,
            );
            environment.insert("PATH".into(), joined.to_string_lossy().into_owned());
        }
        let programs: &[&str] = match frontend.installer {
            crate::support::host::Installer::Uv => &["python"],
            crate::support::host::Installer::Pip => &["python", "pip"],
        };
        let path = environment.get("PATH").unwrap_or(&base_path);
        crate::coordination::pipeline::path_check::check_build_env_first(
            path,
            &hook_env.bin,
            programs,
        )?;
        Ok(environment)
    }

    /// What `before-build` and `repair-wheel-command` run with: the target's variables, the
    /// user's `environment`, and the build's own environment first on PATH, so that `python`
    /// and `pip` there are the build's, as in cibuildwheel's build venv (a bare Debian or
    /// Ubuntu has no `python` command at all).
    ///
    /// The peers a configuration calls (`auditwheel`, `delocate-wheel`, ...) come before
    /// all of it: crosswheel answers to their names for `target`
    /// (see `commands::peers`), as the real tools do in a container of the target.
    pub(super) fn hook_command_environment(
        &self,
        user: &BTreeMap<String, String>,
        hook_env: &HookEnv,
        target: &Target,
    ) -> Result<BTreeMap<String, String>> {
        let mut environment = self.target.hook_variables.clone();
        environment.extend(user.clone());
        let path = environment.get("PATH").cloned();
        environment.extend(hook_env.variables(path.as_deref()));
        crate::coordination::pipeline::hooks::with_peers(environment, self.work.path(), target)
    }

    /// The build's own environment, in the work folder, as cibuildwheel makes a fresh venv
    /// for every build: first on PATH when `environment` is evaluated, where `before-build`
    /// and `repair-wheel-command` run, and the backend when the build has no isolation.
    fn hook_env(&self, target: &Target, slice: &str, python: &BuildPython) -> Result<HookEnv> {
        let dir = self.work.path().join(work_folder("env", slice));
        let env = HookEnv::create(&HookEnvRequest {
            dir: &dir,
            python,
            target,
            cache: &self.context.cache,
            offline: self.context.offline,
        })?;
        Ok(env)
    }

    /// qemu-user and a target root for the programs a Linux build runs (meson's `cc.run()`,
    /// CMake's `try_run`, generators built by the project): the tree the test stage uses.
    /// When it cannot be had (offline, no mirror), the build goes on and such a program
    /// fails naming itself.
    fn target_runner(&self) -> Option<TargetRunner> {
        if self.spec.target.runs_natively_here() {
            return None;
        }
        let arch = self.spec.target.linux_arch()?;
        let gil = self.spec.python.with_gil();
        let python = match crate::support::sysroot::check_target_python(arch, gil) {
            Ok(()) => gil,
            Err(_) => crate::support::sysroot::archive::default_python_for(arch),
        };
        let options = &self.spec.options;
        match Emulator::new(
            self.context.cache.root(),
            arch,
            python,
            None,
            &self.context.network(self.spec),
            options.qemu_cpu.clone(),
        ) {
            Ok(emulator) => Some(TargetRunner {
                qemu: emulator.qemu().to_path_buf(),
                root: emulator.sysroot().root().to_path_buf(),
                python: emulator.sysroot().python(),
                python_tag: python,
                cpu: emulator.cpu().map(str::to_string),
            }),
            Err(error) => {
                tracing::warn!(
                    "{}: target programs cannot run during the build (no emulator: {})",
                    self.spec.identifier,
                    crate::logging::one_line(&anyhow::Error::from(error))
                );
                None
            }
        }
    }

    /// For a musllinux target, the root of Debian's musl loader, on which the build's
    /// dynamic musl programs run (under qemu, or natively on a machine of the target's
    /// architecture); without it (offline, no mirror) they fail naming the loader, as
    /// static ones never do.
    fn musl_root(&self) -> Option<std::path::PathBuf> {
        if self.spec.target.libc() != Some(crate::target::Libc::Musl) {
            return None;
        }
        let arch = self.spec.target.linux_arch()?;
        crate::support::sysroot::musl_loader_root(
            self.context.cache.root(),
            arch,
            &self.context.network(self.spec),
        )
        .inspect_err(|error| {
            tracing::warn!(
                "{}: dynamic musl programs cannot run during the build (no musl loader: {error})",
                self.spec.identifier
            )
        })
        .ok()
    }
}

/// What one build (of the identifier, or of one slice) leaves for the repair.
pub(super) struct Built {
    pub(super) python: BuildPython,
    pub(super) wheel: BuiltWheel,
    /// The build's own environment, where `repair-wheel-command` runs too.
    pub(super) hook_env: HookEnv,
    /// The user's `environment`, as evaluated for this build.
    pub(super) environment: BTreeMap<String, String>,
}

/// The backend's view of `build-frontend`: who installs the build requirements, with which
/// options, or no isolation at all.
fn frontend_of(option: &crate::input::options::BuildFrontend) -> crate::stages::backend::Frontend {
    let args = &option.parsed;
    crate::stages::backend::Frontend {
        description: option.to_string(),
        installer: args.installer,
        isolation: args.isolation,
        check_dependencies: args.check_dependencies,
        installer_args: args.installer_args.clone(),
    }
}
