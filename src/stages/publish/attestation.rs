//! PEP 740 attestations beside distributions: `<file>.<kind>.attestation` (the publish
//! attestation is `<file>.publish.attestation`, what the standard attest action writes).
//!
//! crosswheel does not verify the Sigstore signature (the index does, against the Trusted
//! Publisher); it checks what a wrong file would get wrong: that the signed in-toto
//! statement's one subject is this distribution, by file name and SHA-256. A wheel rebuilt
//! or repaired after it was attested fails here rather than at the index.

use std::path::{Path, PathBuf};

use base64::Engine;

use crate::io_error::IoError;

/// The suffix of every attestation file.
const SUFFIX: &str = ".attestation";
/// The kind `upload --attestations` requires for every distribution.
pub const PUBLISH_KIND: &str = "publish";

/// Why an attestation cannot go with its distribution. One line, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum AttestationError {
    #[error(
        "{}: no attestation beside it: --attestations needs `{}` (actions/attest writes it; \
         drop --attestations to upload without)",
        dist.display(),
        expected.display()
    )]
    Missing { dist: PathBuf, expected: PathBuf },

    #[error(
        "{}: an attestation for `{dist_name}`, which is not among the files to upload",
        path.display()
    )]
    Orphan { path: PathBuf, dist_name: String },

    #[error(transparent)]
    Io(#[from] IoError),

    #[error("{}: not a PEP 740 attestation: {reason}", path.display())]
    Malformed { path: PathBuf, reason: String },

    #[error(
        "{}: attests {found}, not {dist_name} with sha256 {sha256}; \
         attest the file that is uploaded",
        path.display()
    )]
    WrongSubject {
        path: PathBuf,
        dist_name: String,
        sha256: String,
        found: String,
    },
}

/// Whether a path names an attestation file rather than a distribution.
pub fn is_attestation(path: &Path) -> bool {
    path.to_string_lossy().ends_with(SUFFIX)
}

/// `<dist>.<kind>.attestation`.
pub fn attestation_path(dist: &Path, kind: &str) -> PathBuf {
    let mut name = dist.as_os_str().to_owned();
    name.push(format!(".{kind}{SUFFIX}"));
    PathBuf::from(name)
}

/// The distribution file name an attestation file belongs to (`x.whl` for
/// `x.whl.publish.attestation`), as twine matches them.
fn attested_name(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?.strip_suffix(SUFFIX)?;
    let (dist, kind) = name.rsplit_once('.')?;
    (!kind.is_empty() && !dist.is_empty()).then(|| dist.to_owned())
}

/// Every attestation file beside `dist`, sorted by name.
pub fn attestations_beside(dist: &Path) -> Result<Vec<PathBuf>, AttestationError> {
    let Some(dist_name) = dist.file_name().and_then(|name| name.to_str()) else {
        return Ok(Vec::new());
    };
    let dir = match dist.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let entries = std::fs::read_dir(dir).map_err(IoError::at("list", dir))?;
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(IoError::at("list", dir))?;
        let path = dir.join(entry.file_name());
        if attested_name(&path).as_deref() == Some(dist_name) {
            found.push(path);
        }
    }
    found.sort();
    Ok(found)
}

/// Attestation files given among the distributions must belong to one of them; returns
/// the distributions alone.
pub fn split_inputs(files: &[PathBuf]) -> Result<Vec<PathBuf>, AttestationError> {
    let (attestations, dists): (Vec<&PathBuf>, Vec<&PathBuf>) =
        files.iter().partition(|path| is_attestation(path));
    for path in attestations {
        let dist_name = attested_name(path).unwrap_or_default();
        let owner = path.with_file_name(&dist_name);
        if !dists.iter().any(|dist| **dist == owner) {
            return Err(AttestationError::Orphan {
                path: path.clone(),
                dist_name,
            });
        }
    }
    Ok(dists.into_iter().cloned().collect())
}

/// Reads an attestation and checks that its statement's subject is the distribution
/// `dist_name` with SHA-256 `sha256` (lowercase hex). Returns the attestation's JSON as
/// the upload form sends it.
pub fn verify(
    path: &Path,
    dist_name: &str,
    sha256: &str,
) -> Result<serde_json::Value, AttestationError> {
    let bytes = std::fs::read(path).map_err(IoError::at("read", path))?;
    let malformed = |reason: String| AttestationError::Malformed {
        path: path.to_owned(),
        reason,
    };
    let attestation: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|err| malformed(format!("invalid JSON: {err}")))?;
    let statement = attestation
        .pointer("/envelope/statement")
        .and_then(|value| value.as_str())
        .ok_or_else(|| malformed("no `envelope.statement` string".into()))?;
    let statement = base64::engine::general_purpose::STANDARD
        .decode(statement)
        .map_err(|err| malformed(format!("`envelope.statement` is not base64: {err}")))?;
    let statement: serde_json::Value = serde_json::from_slice(&statement)
        .map_err(|err| malformed(format!("the statement is not JSON: {err}")))?;
    let subjects = statement
        .get("subject")
        .and_then(|value| value.as_array())
        .ok_or_else(|| malformed("the statement has no `subject` list".into()))?;
    let described: Vec<String> = subjects.iter().map(describe).collect();
    let matches = |subject: &serde_json::Value| {
        subject.get("name").and_then(|v| v.as_str()) == Some(dist_name)
            && subject.pointer("/digest/sha256").and_then(|v| v.as_str()) == Some(sha256)
    };
    // PEP 740: exactly one subject, the distribution itself.
    if subjects.len() == 1 && matches(&subjects[0]) {
        return Ok(attestation);
    }
    Err(AttestationError::WrongSubject {
        path: path.to_owned(),
        dist_name: dist_name.to_owned(),
        sha256: sha256.to_owned(),
        found: if described.is_empty() {
            "no subject".to_owned()
        } else {
            described.join(" and ")
        },
    })
}

fn describe(subject: &serde_json::Value) -> String {
    let name = subject.get("name").and_then(|v| v.as_str()).unwrap_or("?");
    let sha256 = subject
        .pointer("/digest/sha256")
        .and_then(|v| v.as_str())
        .unwrap_or("none");
    format!("{name} with sha256 {sha256}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attestation_files_belong_to_the_file_name_before_their_kind() {
        assert_eq!(
            attested_name(Path::new("d/a-1.0.tar.gz.publish.attestation")).as_deref(),
            Some("a-1.0.tar.gz")
        );
        assert_eq!(attested_name(Path::new("d/a-1.0.tar.gz")), None);
        assert_eq!(
            attestation_path(Path::new("d/a-1.whl"), PUBLISH_KIND),
            Path::new("d/a-1.whl.publish.attestation")
        );
    }

    #[test]
    fn an_attestation_without_its_distribution_is_refused() {
        let files = [
            PathBuf::from("d/a-1.whl"),
            PathBuf::from("d/a-1.whl.publish.attestation"),
        ];
        assert_eq!(split_inputs(&files).unwrap(), [PathBuf::from("d/a-1.whl")]);
        let error = split_inputs(&files[1..]).unwrap_err();
        assert!(
            error.to_string().contains("not among the files to upload"),
            "{error}"
        );
    }
}
