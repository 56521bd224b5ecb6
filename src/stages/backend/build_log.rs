//! The build log: every hook's output of one build, kept under the cache whatever happens,
//! so a failure message can point at the full text.

use std::path::{Path, PathBuf};

use super::project::Project;
use super::{BuildError, BuildRequest, Failure, driver, io_error};

/// The backend's output of one build, written to its log file whatever happens.
pub(super) struct BuildLog {
    pub(super) path: PathBuf,
    text: String,
    /// `build-verbosity` 1 or more: the output is shown too.
    shown: bool,
}

pub(super) fn log_path_of(request: &BuildRequest<'_>, project: &Project) -> PathBuf {
    if let Some(file) = request.log_file {
        return file.to_path_buf();
    }
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
        let mut excerpt = driver::error_excerpt(output);
        if let Some(kept) = self.keep_meson_log(output) {
            excerpt.push_str(&format!("\nmeson's log: {}", kept.display()));
        }
        Box::new(Failure {
            status,
            excerpt,
            log: self.path.clone(),
        })
    }

    /// meson's own log of a failed configure, which meson names (`A full log can be found
    /// at .../meson-logs/meson-log.txt`) in a build folder that is gone after the run: a
    /// copy beside crosswheel's log, so the path a message gives still exists.
    fn keep_meson_log(&self, output: &str) -> Option<PathBuf> {
        let meson_log = output.lines().rev().find_map(|line| {
            let path = line.trim().strip_prefix("A full log can be found at ")?;
            Some(PathBuf::from(path.trim_end_matches('.')))
        })?;
        let kept = self.path.with_extension("meson-log.txt");
        // Copied then renamed, so a half-written copy never carries the name.
        let partial = self.path.with_extension("meson-log.txt.partial");
        std::fs::copy(&meson_log, &partial).ok()?;
        std::fs::rename(&partial, &kept).ok()?;
        Some(kept)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_meson_configure_keeps_mesons_log_beside_crosswheels() {
        let dir = tempfile::tempdir().unwrap();
        let build = dir.path().join("build/cp311/meson-logs");
        std::fs::create_dir_all(&build).unwrap();
        std::fs::write(build.join("meson-log.txt"), "Build started\nERROR: x\n").unwrap();
        let log = BuildLog {
            path: dir.path().join("logs/numpy-linux-aarch64-cp311.log"),
            text: String::new(),
            shown: false,
        };
        std::fs::create_dir_all(dir.path().join("logs")).unwrap();
        let output = format!(
            "ERROR: Problem encountered\n\nA full log can be found at {}\n",
            build.join("meson-log.txt").display()
        );
        let failure = log.failure("exit status: 1".into(), &output);
        let kept = dir
            .path()
            .join("logs/numpy-linux-aarch64-cp311.meson-log.txt");
        assert!(
            failure
                .excerpt
                .ends_with(&format!("meson's log: {}", kept.display())),
            "{}",
            failure.excerpt
        );
        std::fs::remove_dir_all(dir.path().join("build")).unwrap();
        assert_eq!(
            std::fs::read_to_string(&kept).unwrap(),
            "Build started\nERROR: x\n"
        );
    }

    #[test]
    fn without_a_meson_log_the_excerpt_is_the_logs_own() {
        let dir = tempfile::tempdir().unwrap();
        let log = BuildLog {
            path: dir.path().join("x.log"),
            text: String::new(),
            shown: false,
        };
        let failure = log.failure("exit status: 1".into(), "x.c:1:1: error: boom\n");
        assert!(!failure.excerpt.contains("meson"), "{}", failure.excerpt);
    }
}
