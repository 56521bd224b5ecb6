//! The end of one identifier: a tested wheel moves into the wheelhouse, hashed; one whose
//! tests failed, or that could not be tested, goes apart into the run's log folder.

use std::path::Path;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use super::{Identifier, failed};
use crate::coordination::pipeline::outcome::{Ending, FinishedWheel, Stage};
use crate::io_error::IoError;

impl Identifier<'_> {
    /// A wheel whose tests failed goes to `failed/<identifier>/` of the run's log folder
    /// with its logs, never among the finished wheels.
    pub(super) fn keep_failed_wheel_apart(&self, repaired: &Path, reason: &str) -> Ending {
        match crate::coordination::pipeline::collect::keep_apart(
            &self.context.logs,
            &self.spec.identifier,
            repaired,
            &self.context.logs.files_of(&self.spec.identifier),
            reason,
        ) {
            Ok(kept) => Ending::Failed {
                stage: Stage::Test,
                error: anyhow::anyhow!(
                    "{reason}; the wheel, its logs and the reason are kept in {}",
                    kept.display()
                ),
                kept_apart: Some(kept),
            },
            Err(error) => failed(
                Stage::Test,
                error.context(format!("{reason}; keeping the wheel apart failed too")),
            ),
        }
    }

    /// Moves the tested wheel into the wheelhouse and hashes it.
    pub(super) fn collect(&self, repaired: &Path) -> Result<FinishedWheel> {
        let out_dir = self.out_dir();
        let file_name = repaired
            .file_name()
            .context("repaired wheel has no file name")?;
        self.context
            .wheels
            .claim(self.spec.target.id(), &file_name.to_string_lossy())?;
        std::fs::create_dir_all(&out_dir).map_err(IoError::at("create", &out_dir))?;
        let destination = out_dir.join(file_name);
        crate::coordination::pipeline::collect::move_file(repaired, &destination)
            .with_context(|| format!("moving {} into {}", repaired.display(), out_dir.display()))?;
        let bytes = std::fs::read(&destination).map_err(IoError::at("read", &destination))?;
        Ok(FinishedWheel {
            sha256: Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
            size: bytes.len() as u64,
            path: destination,
        })
    }
}
