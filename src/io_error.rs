//! The crate's one I/O error: what was being done, to which path, and why. Every stage's
//! error enum carries it as its `Io` variant, so the message reads the same everywhere.

use std::io;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
#[error("cannot {action} {}: {source}", .path.display())]
pub struct IoError {
    pub action: &'static str,
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

impl IoError {
    pub fn new(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        IoError {
            action,
            path: path.into(),
            source,
        }
    }

    /// For `map_err`: `fs::write(&p, text).map_err(IoError::at("write", &p))?`.
    pub fn at<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> IoError + 'a {
        move |source| IoError::new(action, path, source)
    }
}
