//! `crosswheel check`: what an index would refuse, found before uploading.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::formats::sbom::{SbomError, is_sbom_path};
use crate::formats::wheel::{WheelArchive, WheelError, same_project};
use crate::io_error::IoError;
use crate::package_name::normalize;
use crate::stages::publish::attestation::{self, AttestationError};
use crate::stages::publish::metadata::{
    CoreMetadata, KNOWN_METADATA_VERSIONS, is_valid_project_name,
};
use crate::stages::publish::rst::check_rst;
use crate::stages::publish::sdist::{SdistError, read_sdist};

/// The kinds of distribution the index takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DistributionKind {
    Wheel,
    Sdist,
}

impl DistributionKind {
    /// The upload form's `filetype`.
    pub fn filetype(self) -> &'static str {
        match self {
            Self::Wheel => "bdist_wheel",
            Self::Sdist => "sdist",
        }
    }
}

/// A distribution that passed every check.
#[derive(Clone, Debug)]
pub struct CheckReport {
    pub path: PathBuf,
    pub kind: DistributionKind,
    /// The upload form's `pyversion`: the wheel's python tag set, or `source`.
    pub pyversion: String,
    pub metadata: CoreMetadata,
    /// Things worth fixing that the index accepts, one line each.
    pub warnings: Vec<String>,
    /// The PEP 740 attestations beside the file, each checked to attest this file.
    pub attestations: Vec<Attestation>,
}

/// One attestation file and its JSON, as the upload form sends it.
#[derive(Clone, Debug)]
pub struct Attestation {
    pub path: PathBuf,
    pub json: serde_json::Value,
}

/// Why a distribution would be refused. Each message is one line naming the file.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error(transparent)]
    Wheel(#[from] WheelError),

    #[error(transparent)]
    Sdist(#[from] SdistError),

    #[error("{}: {source}", path.display())]
    Sbom {
        path: PathBuf,
        source: Box<SbomError>,
    },

    #[error(transparent)]
    Attestation(#[from] AttestationError),

    #[error(transparent)]
    Io(#[from] IoError),

    #[error("{}: not a distribution: expected a wheel (`.whl`) or an sdist (`.tar.gz`)", path.display())]
    UnknownKind { path: PathBuf },

    #[error("{}: no such file", path.display())]
    Missing { path: PathBuf },

    #[error(
        "{}: tag `{tag}` is in the file name but not in `{wheel_file}`; \
         the file name and the WHEEL `Tag` lines must list the same tags",
        path.display()
    )]
    TagOnlyInFileName {
        path: PathBuf,
        tag: String,
        wheel_file: String,
    },

    #[error(
        "{}: `{wheel_file}` lists tag `{tag}`, which the file name does not; \
         the file name and the WHEEL `Tag` lines must list the same tags",
        path.display()
    )]
    TagOnlyInWheelFile {
        path: PathBuf,
        tag: String,
        wheel_file: String,
    },

    #[error("{}: `{metadata_file}` has no `{field}` field, which the index requires", path.display())]
    MissingField {
        path: PathBuf,
        metadata_file: String,
        field: &'static str,
    },

    #[error(
        "{}: `{metadata_file}` declares Metadata-Version `{found}`, which is not one of {}",
        path.display(),
        KNOWN_METADATA_VERSIONS.join(", ")
    )]
    BadMetadataVersion {
        path: PathBuf,
        metadata_file: String,
        found: String,
    },

    #[error(
        "{}: `{metadata_file}` Name `{name}` is not a valid project name \
         (ASCII letters, digits, and `.`, `_`, `-` inside)",
        path.display()
    )]
    InvalidName {
        path: PathBuf,
        metadata_file: String,
        name: String,
    },

    #[error(
        "{}: `{metadata_file}` says `{metadata}` but the file name says `{file_name}`; \
         rename the file or fix the metadata",
        path.display()
    )]
    NameVersionMismatch {
        path: PathBuf,
        metadata_file: String,
        metadata: String,
        file_name: String,
    },

    #[error(
        "{}: Description-Content-Type `{content_type}` is not text/plain, text/x-rst or text/markdown",
        path.display()
    )]
    UnknownContentType { path: PathBuf, content_type: String },

    #[error(
        "{}: the long description does not render as reStructuredText: line {line}: {message}{}",
        path.display(),
        more_problems(*more)
    )]
    BrokenDescription {
        path: PathBuf,
        line: usize,
        message: String,
        more: usize,
    },
}

fn more_problems(more: usize) -> String {
    match more {
        0 => String::new(),
        1 => " (and 1 more problem)".to_owned(),
        n => format!(" (and {n} more problems)"),
    }
}

/// Checks a wheel or sdist the way the index would before accepting it.
pub fn check_distribution(path: impl AsRef<Path>) -> Result<CheckReport, CheckError> {
    let path = path.as_ref();
    let file_name = path.file_name().unwrap_or_default().to_string_lossy();
    // Checked first: an unmatched shell glob (`wheelhouse/*` in an empty folder) arrives
    // as a literal path, and "no such file" is what is wrong with it.
    if !path.exists() {
        return Err(CheckError::Missing {
            path: path.to_owned(),
        });
    }
    let mut report = if file_name.ends_with(".whl") {
        check_wheel(path)?
    } else if file_name.ends_with(".tar.gz") {
        check_sdist(path)?
    } else {
        return Err(CheckError::UnknownKind {
            path: path.to_owned(),
        });
    };
    report.attestations = check_attestations(path, &file_name)?;
    Ok(report)
}

/// Every attestation beside the distribution must attest it, by name and SHA-256.
fn check_attestations(path: &Path, file_name: &str) -> Result<Vec<Attestation>, CheckError> {
    let paths = attestation::attestations_beside(path)?;
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let content = std::fs::read(path).map_err(IoError::at("read", path))?;
    let sha256: String = {
        use sha2::{Digest, Sha256};
        Sha256::digest(&content)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    paths
        .into_iter()
        .map(|path| {
            let json = attestation::verify(&path, file_name, &sha256)?;
            Ok(Attestation { path, json })
        })
        .collect()
}

fn check_wheel(path: &Path) -> Result<CheckReport, CheckError> {
    // Opening checks zip safety, entry names, the dist-info directory and
    // RECORD: everything about the archive itself.
    let archive = WheelArchive::open(path)?;
    check_tags(&archive)?;
    let metadata_file = format!("{}/METADATA", archive.dist_info_dir());
    let bytes = archive.read(&metadata_file)?;
    let text = String::from_utf8_lossy(&bytes);
    let metadata = CoreMetadata::parse(&text);
    let located = Located {
        path,
        metadata_file: &metadata_file,
    };
    let (name, version) = located.required_fields(&metadata)?;
    let stem = format!("{name}-{version}");
    if !same_project(&stem, archive.name()) {
        return Err(located.mismatch(stem, archive.name().dist_info_stem()));
    }
    let warnings = located.description(&metadata)?;
    check_sboms(&archive)?;
    Ok(CheckReport {
        path: path.to_owned(),
        kind: DistributionKind::Wheel,
        pyversion: crate::formats::wheel::join_tags(&archive.name().python),
        metadata,
        warnings,
        attestations: Vec::new(),
    })
}

fn check_tags(archive: &WheelArchive) -> Result<(), CheckError> {
    let in_file_name: BTreeSet<String> = archive.name().tags().into_iter().collect();
    let in_wheel_file: BTreeSet<String> = archive
        .wheel_metadata()
        .tags()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let path = archive.path().to_owned();
    let wheel_file = format!("{}/WHEEL", archive.dist_info_dir());
    if let Some(tag) = in_file_name.difference(&in_wheel_file).next() {
        return Err(CheckError::TagOnlyInFileName {
            path,
            tag: tag.clone(),
            wheel_file,
        });
    }
    if let Some(tag) = in_wheel_file.difference(&in_file_name).next() {
        return Err(CheckError::TagOnlyInWheelFile {
            path,
            tag: tag.clone(),
            wheel_file,
        });
    }
    Ok(())
}

/// The wheel's PEP 770 SBOMs against its files: every file they locate is there with the
/// SHA-256 they give, and every vendored file is located.
fn check_sboms(archive: &WheelArchive) -> Result<(), CheckError> {
    let dist_info = archive.dist_info_dir();
    let names: Vec<&str> = archive.entries().iter().map(|e| e.name.as_str()).collect();
    let sboms = names
        .iter()
        .filter(|name| is_sbom_path(dist_info, name))
        .map(|name| Ok((name.to_string(), archive.read(name)?)))
        .collect::<Result<Vec<_>, CheckError>>()?;
    if sboms.is_empty() {
        return Ok(());
    }
    let sha256_of = |name: &str| -> Result<String, String> {
        use sha2::{Digest, Sha256};
        let bytes = archive.read(name).map_err(|err| err.to_string())?;
        Ok(Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect())
    };
    crate::formats::sbom::verify(&sboms, &names, sha256_of).map_err(|source| CheckError::Sbom {
        path: archive.path().to_owned(),
        source: Box::new(source),
    })
}

fn check_sdist(path: &Path) -> Result<CheckReport, CheckError> {
    let sdist = read_sdist(path)?;
    let metadata = CoreMetadata::parse(&sdist.pkg_info);
    let located = Located {
        path,
        metadata_file: &sdist.pkg_info_entry,
    };
    let (name, version) = located.required_fields(&metadata)?;
    let agrees = normalize(name) == normalize(&sdist.file_name_project)
        && version.eq_ignore_ascii_case(&sdist.file_name_version);
    if !agrees {
        return Err(located.mismatch(
            format!("{name}-{version}"),
            format!("{}-{}", sdist.file_name_project, sdist.file_name_version),
        ));
    }
    let warnings = located.description(&metadata)?;
    Ok(CheckReport {
        path: path.to_owned(),
        kind: DistributionKind::Sdist,
        pyversion: "source".to_owned(),
        metadata,
        warnings,
        attestations: Vec::new(),
    })
}

/// The distribution and metadata file that errors name.
struct Located<'a> {
    path: &'a Path,
    metadata_file: &'a str,
}

impl Located<'_> {
    fn required_fields<'m>(
        &self,
        metadata: &'m CoreMetadata,
    ) -> Result<(&'m str, &'m str), CheckError> {
        let missing = |field| CheckError::MissingField {
            path: self.path.to_owned(),
            metadata_file: self.metadata_file.to_owned(),
            field,
        };
        let metadata_version = metadata
            .metadata_version()
            .ok_or_else(|| missing("Metadata-Version"))?;
        if !KNOWN_METADATA_VERSIONS.contains(&metadata_version) {
            return Err(CheckError::BadMetadataVersion {
                path: self.path.to_owned(),
                metadata_file: self.metadata_file.to_owned(),
                found: metadata_version.to_owned(),
            });
        }
        let name = metadata.name().ok_or_else(|| missing("Name"))?;
        let version = metadata.version().ok_or_else(|| missing("Version"))?;
        if !is_valid_project_name(name) {
            return Err(CheckError::InvalidName {
                path: self.path.to_owned(),
                metadata_file: self.metadata_file.to_owned(),
                name: name.to_owned(),
            });
        }
        Ok((name, version))
    }

    fn mismatch(&self, metadata: String, file_name: String) -> CheckError {
        CheckError::NameVersionMismatch {
            path: self.path.to_owned(),
            metadata_file: self.metadata_file.to_owned(),
            metadata,
            file_name,
        }
    }

    /// Renders the long description as the index would; returns warnings.
    fn description(&self, metadata: &CoreMetadata) -> Result<Vec<String>, CheckError> {
        let mut warnings = Vec::new();
        let content_type = metadata.description_content_type();
        // The index renders an undeclared description as reStructuredText.
        let mime = match content_type {
            Some(declared) => declared
                .split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase(),
            None => {
                warnings.push(format!(
                    "{}: no Description-Content-Type; the index renders the description as text/x-rst",
                    self.path.display()
                ));
                "text/x-rst".to_owned()
            }
        };
        let Some(description) = metadata.description() else {
            warnings.push(format!("{}: no long description", self.path.display()));
            return Ok(warnings);
        };
        match mime.as_str() {
            "text/plain" | "text/markdown" => Ok(warnings),
            "text/x-rst" => {
                let mut problems = check_rst(description).into_iter();
                match problems.next() {
                    None => Ok(warnings),
                    Some(first) => Err(CheckError::BrokenDescription {
                        path: self.path.to_owned(),
                        line: first.line,
                        message: first.message,
                        more: problems.count(),
                    }),
                }
            }
            _ => Err(CheckError::UnknownContentType {
                path: self.path.to_owned(),
                content_type: content_type.unwrap_or_default().to_owned(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_files_that_are_not_distributions() {
        let dir = tempfile::tempdir().unwrap();
        let zip = dir.path().join("demo-1.0.zip");
        std::fs::write(&zip, b"PK").unwrap();
        let error = check_distribution(&zip).unwrap_err();
        assert!(matches!(error, CheckError::UnknownKind { .. }), "{error}");
    }

    #[test]
    fn a_missing_file_is_no_such_file_whatever_its_name() {
        // An unmatched shell glob arrives as a literal path.
        let error = check_distribution("wheelhouse/*").unwrap_err();
        assert_eq!(error.to_string(), "wheelhouse/*: no such file");
    }

    #[test]
    fn counts_further_description_problems() {
        assert_eq!(more_problems(0), "");
        assert_eq!(more_problems(2), " (and 2 more problems)");
    }
}
