//! The build log: every hook's output of one build, kept under the cache whatever happens,
//! so a failure message can point at the full text.

use std::path::{Path, PathBuf};

use super::project::Project;
use super::{BuildError, BuildRequest, Failure, driver, io_error};

/// The backend's output of one build, written to `<cache>/logs/` whatever happens.
pub(super) struct BuildLog {
    pub(super) path: PathBuf,
    text: String,
    /// `build-verbosity` 1 or more: the output is shown too.
    shown: bool,
}

pub(super) fn log_path_of(request: &BuildRequest<'_>, project: &Project) -> PathBuf {
    request.cache.root().join("logs").join(format!(
        "{}-{}-{}.log",
        project.name,
        request.cross_env.target.id(),
        request.python.abi_tag()
    ))
}

impl BuildLog {
    pub(super) fn create(
        request: &BuildRequest<'_>,
        project: &Project,
    ) -> Result<Self, BuildError> {
        let path = log_path_of(request, project);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| io_error("create", dir, source))?;
        }
        Ok(BuildLog {
            path,
            text: String::new(),
            shown: request.verbosity >= 1,
        })
    }

    /// Shows a hook's output when `build-verbosity` asks for it (as `pip -v` shows the
    /// backend's), through the identifier's output so concurrent builds stay apart.
    pub(super) fn show(&self, output: &str) {
        if self.shown && !output.is_empty() {
            crate::logging::echo(output.as_bytes());
            if !output.ends_with('\n') {
                crate::logging::echo(b"\n");
            }
        }
    }

    pub(super) fn append(&mut self, output: &str) -> Result<(), BuildError> {
        self.text.push_str(output);
        write_log(&self.path, &self.text)
    }

    pub(super) fn failure(&self, status: String, output: &str) -> Box<Failure> {
        Box::new(Failure {
            status,
            excerpt: driver::error_excerpt(output),
            log: self.path.clone(),
        })
    }
}

fn write_log(path: &Path, text: &str) -> Result<(), BuildError> {
    std::fs::write(path, text).map_err(|source| {
        BuildError::Io(crate::io_error::IoError::new(
            "write",
            path.to_path_buf(),
            source,
        ))
    })
}
