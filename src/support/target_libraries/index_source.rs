//! Source a catalogue library needs besides its Debian orig tarball, from the package
//! index: an sdist pinned by file name and SHA-256 (OpenBLAS's C LAPACK, which Debian's
//! repacked tarball leaves out, comes from the upstream tree in an sdist there).
//!
//! The index is the one pip uses (`PIP_INDEX_URL`, else pip's default), read through its
//! JSON simple API (PEP 691) by the build machine's python3, so its proxy and certificate
//! settings are pip's own. Only verified bytes are kept, under `index-sources/` in the
//! cache; a cached file whose bytes changed is refused, never replaced silently.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use super::TargetLibraryError;
use crate::io_error::IoError;

/// A folder of an sdist from the package index, added to a library's unpacked source.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct IndexSource {
    /// The project on the index (`cmeel-openblas`).
    pub project: String,
    /// The sdist's file name, which pins the version.
    pub file: String,
    pub sha256: String,
    pub licence: String,
    /// The folder inside the sdist to take (`cmeel_openblas-0.3.29/OpenBLAS/lapack-netlib`).
    pub take: String,
    /// Where it goes, relative to the library's source (`lapack-netlib`).
    pub into: String,
}

impl IndexSource {
    /// The error of this sdist that `problem` (one line) describes.
    fn problem(&self, problem: impl Into<String>) -> TargetLibraryError {
        TargetLibraryError::IndexSource {
            file: self.file.clone(),
            problem: problem.into(),
        }
    }

    /// The version the sdist's file name carries (`0.3.29` of `cmeel_openblas-0.3.29.tar.gz`).
    pub fn version(&self) -> &str {
        let stem = self
            .file
            .strip_suffix(".tar.gz")
            .or_else(|| self.file.strip_suffix(".zip"))
            .unwrap_or(&self.file);
        stem.rsplit_once('-').map_or(stem, |(_, version)| version)
    }
}

/// Asks python3 for the file's URL on pip's index and downloads it to the path given.
const DOWNLOAD: &str = r#"
import json, os, sys, urllib.parse, urllib.request
project, file_name, destination, index = sys.argv[1:5]
index = index or os.environ.get("PIP_INDEX_URL")
if not index:
    from pip._internal.models.index import PyPI
    index = PyPI.simple_url
page = index.rstrip("/") + "/" + project + "/"
request = urllib.request.Request(page, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
with urllib.request.urlopen(request, timeout=120) as answer:
    files = json.load(answer)["files"]
match = [entry for entry in files if entry["filename"] == file_name]
if not match:
    sys.exit(f"the index lists no {file_name} for {project}")
url = urllib.parse.urljoin(page, match[0]["url"])
with urllib.request.urlopen(url, timeout=600) as answer, open(destination, "wb") as out:
    while chunk := answer.read(1 << 20):
        out.write(chunk)
"#;

/// The sdist of `source`, verified, from the cache or downloaded into it from `index` (a
/// simple-API URL; `None`: the index pip uses), unless `network` is offline.
pub fn index_sdist(
    cache: &Path,
    source: &IndexSource,
    index: Option<&str>,
    network: &crate::support::host::Network,
) -> Result<PathBuf, TargetLibraryError> {
    let dir = cache.join("index-sources");
    let path = dir.join(&source.file);
    if path.is_file() {
        let actual = crate::support::host::sha256_of_file(&path)?;
        if actual != source.sha256 {
            return Err(source.problem(format!(
                "the cached {} has SHA-256 {actual}, not the {} config/target-libraries.toml pins: remove it to download it again",
                path.display(),
                source.sha256
            )));
        }
        return Ok(path);
    }
    if network.offline {
        return Err(source.problem("offline, and the cache does not have it"));
    }
    std::fs::create_dir_all(&dir).map_err(IoError::at("create", &dir))?;
    let partial = tempfile::Builder::new()
        .prefix(".download-")
        .tempfile_in(&dir)
        .map_err(IoError::at("create a temporary file in", &dir))?;
    tracing::info!(
        "fetching {} from the package index ({})",
        source.file,
        source.project
    );
    let output = Command::new("python3")
        .args(["-c", DOWNLOAD, &source.project, &source.file])
        .arg(partial.path())
        .arg(index.unwrap_or_default())
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|error| source.problem(format!("cannot run python3: {error}")))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(source.problem(
            stderr
                .lines()
                .last()
                .unwrap_or("python3 failed")
                .to_string(),
        ));
    }
    let actual = crate::support::host::sha256_of_file(partial.path())?;
    if actual != source.sha256 {
        return Err(source.problem(format!(
            "the index served bytes with SHA-256 {actual}, not the {} config/target-libraries.toml pins",
            source.sha256
        )));
    }
    partial
        .persist(&path)
        .map_err(|error| IoError::new("move into place", path.clone(), error.error))?;
    Ok(path)
}

/// Unpacks `source.take` of the sdist into `into` under the library's source.
pub fn add_to_source(
    sdist: &Path,
    source: &IndexSource,
    library_source: &Path,
    scratch: &Path,
) -> Result<(), TargetLibraryError> {
    std::fs::create_dir_all(scratch).map_err(IoError::at("create", scratch))?;
    let output = Command::new("tar")
        .arg("-xzf")
        .arg(sdist)
        .arg("-C")
        .arg(scratch)
        .arg(&source.take)
        .output()
        .map_err(|error| source.problem(format!("cannot run tar: {error}")))?;
    if !output.status.success() {
        return Err(source.problem(format!(
            "has no {}: {}",
            source.take,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    let destination = library_source.join(&source.into);
    if destination.exists() {
        return Err(source.problem(format!(
            "the library's source already has {}: the entry does not match its source",
            source.into
        )));
    }
    let taken = scratch.join(&source.take);
    std::fs::rename(&taken, &destination).map_err(IoError::at("move into the source", &taken))?;
    Ok(())
}
