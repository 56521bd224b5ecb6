//! The repair step of one identifier: crosswheel's own repair, the user's
//! `repair-wheel-command`, or none; the fusing of a universal2 target's thin wheels; and
//! the `audit-command` on the repaired wheel.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::{Identifier, work_folder};
use crate::coordination::pipeline::hooks;
use crate::input::options::RepairCommand;
use crate::io_error::IoError;
use crate::stages::backend::{BuiltWheel, HookEnv};
use crate::support::host::BuildPython;
use crate::target::Target;

impl Identifier<'_> {
    /// crosswheel's own repair, the user's `repair-wheel-command`, or none.
    pub(super) fn repair(
        &self,
        python: &BuildPython,
        built: &BuiltWheel,
        hook_env: &HookEnv,
        target: &Target,
        slice: &str,
    ) -> Result<PathBuf> {
        let repaired_dir = self.work.path().join(work_folder("repaired", slice));
        std::fs::create_dir_all(&repaired_dir).map_err(IoError::at("create", &repaired_dir))?;
        match &self.spec.options.repair {
            RepairCommand::Skip => Ok(built.path.clone()),
            RepairCommand::Command(_) => {
                let command = self
                    .spec
                    .options
                    .repair
                    .command_for(
                        &built.path.to_string_lossy(),
                        &repaired_dir.to_string_lossy(),
                        target.is_macos().then(|| target.arch()),
                    )
                    .unwrap_or_default();
                let mut environment =
                    self.hook_command_environment(&self.environment, hook_env, target)?;
                // What a container's /usr/local/lib gives the real auditwheel: the
                // libraries crosswheel built or fetched for the target.
                let folders = self.library_folders(python, built, target)?;
                environment.insert(
                    crate::cli::peers::LIBRARY_PATH_VARIABLE.into(),
                    std::env::join_paths(&folders)
                        .context("join the target's library folders")?
                        .to_string_lossy()
                        .into_owned(),
                );
                hooks::run_shell(
                    "repair-wheel-command",
                    &command,
                    &self.spec.paths.package,
                    &environment,
                )?;
                crate::coordination::pipeline::repair_step::single_wheel_in(&repaired_dir)
            }
            RepairCommand::Builtin => crate::coordination::pipeline::repair_step::builtin_repair(
                &self.context.cache,
                built,
                target,
                self.library_folders(python, built, target)?,
                &repaired_dir,
                &self.context.network(self.spec),
            ),
        }
    }

    /// Where the repair looks for the libraries the wheel needs, first: the target
    /// wheels of `target-requires`, the target's prepared libraries and those the build
    /// says it linked.
    fn library_folders(
        &self,
        python: &BuildPython,
        built: &BuiltWheel,
        target: &Target,
    ) -> Result<Vec<PathBuf>> {
        let mut folders = crate::coordination::pipeline::repair_step::target_library_folders(
            &self.context.cache,
            target,
            python,
            self.spec,
            self.context.offline,
        )?;
        folders.extend(self.target.prefix.library_dirs());
        folders.extend(built.library_dirs.iter().cloned());
        Ok(folders)
    }

    /// The thin wheels of a fused target (universal2) as one wheel.
    pub(super) fn fuse(&self, thin: &[PathBuf]) -> Result<PathBuf> {
        let [first, second] = thin else {
            anyhow::bail!(
                "{} fuses {} wheels; a universal2 wheel is fused from two",
                self.spec.target.id(),
                thin.len()
            );
        };
        let first = crate::formats::wheel::open_within_env_limits(first)?;
        let second = crate::formats::wheel::open_within_env_limits(second)?;
        let out_dir = self.work.path().join("fused");
        let fused = crate::stages::repair::fuse::fuse_wheels(
            &first,
            &second,
            &out_dir,
            crate::formats::wheel::source_date_epoch()?,
        )?;
        Ok(fused.output)
    }

    /// `audit-command` on the repaired wheel, in the project root.
    pub(super) fn audit(&self, repaired: &Path) -> Result<()> {
        let python = self
            .host_python
            .as_deref()
            .context("no host CPython was found for this build's audit")?;
        crate::coordination::pipeline::audit::audit(
            &self.spec.options,
            repaired,
            &self.spec.paths.root,
            self.work.path(),
            python,
            &self.environment,
        )
    }
}
