//! Does a wheel's SBOM tell the truth about its files?
//!
//! An SBOM that locates files inside the wheel (CycloneDX `evidence.occurrences`, as
//! crosswheel writes) must locate every vendored file and give each the SHA-256 of its
//! bytes. SBOMs that name packages without locating files (auditwheel's, a build
//! backend's) only have to parse.

use std::collections::BTreeSet;

use super::document::Bom;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SbomError {
    #[error("{sbom} is not a CycloneDX JSON document ({detail})")]
    Unreadable { sbom: String, detail: String },
    #[error("{sbom} lists {file}, which is not in the wheel")]
    NotInWheel { sbom: String, file: String },
    #[error(
        "{sbom} gives {file} the SHA-256 {listed}, but the file's is {actual}: the SBOM does not describe this file"
    )]
    WrongHash {
        sbom: String,
        file: String,
        listed: String,
        actual: String,
    },
    #[error("{sbom} lists the vendored {file} without its SHA-256")]
    NoHash { sbom: String, file: String },
    #[error(
        "{file} is vendored but no SBOM in the wheel lists it, though {sbom} lists other files; repair the wheel again to write a complete one"
    )]
    Unlisted { sbom: String, file: String },
    #[error("cannot read {file} to check it against {sbom}: {detail}")]
    Read {
        sbom: String,
        file: String,
        detail: String,
    },
}

/// Whether `name` (a wheel entry) is a CycloneDX SBOM under `<dist_info>/sboms/`.
pub fn is_sbom_path(dist_info: &str, name: &str) -> bool {
    name.strip_prefix(dist_info)
        .and_then(|rest| rest.strip_prefix("/sboms/"))
        .is_some_and(|file| !file.contains('/') && file.ends_with(".cdx.json"))
}

/// Whether a wheel entry is a library a repair vendored: inside auditwheel's top-level
/// `<dist>.libs/` or delocate's `.dylibs/` (in a package, or `<dist>.dylibs/` at the root).
pub fn is_vendored_path(name: &str) -> bool {
    let Some((dirs, file)) = name.rsplit_once('/') else {
        return false;
    };
    let mut dirs = dirs.split('/');
    let top = dirs.next().unwrap_or_default();
    !file.is_empty()
        && (top.ends_with(".libs") || top.ends_with(".dylibs") || dirs.any(|dir| dir == ".dylibs"))
}

/// Checks each SBOM (`(path in the wheel, bytes)`) against the wheel's entries;
/// `sha256_of` reads one entry and hashes it (lower-case hex).
pub fn verify(
    sboms: &[(String, Vec<u8>)],
    entries: &[&str],
    mut sha256_of: impl FnMut(&str) -> Result<String, String>,
) -> Result<(), SbomError> {
    let present: BTreeSet<&str> = entries.iter().copied().collect();
    let mut located: BTreeSet<String> = BTreeSet::new();
    let mut locating_sbom: Option<&str> = None;
    for (sbom, bytes) in sboms {
        let bom = Bom::parse(bytes).map_err(|detail| SbomError::Unreadable {
            sbom: sbom.clone(),
            detail,
        })?;
        for component in bom.all_components() {
            for file in component.locations() {
                if !present.contains(file) {
                    return Err(SbomError::NotInWheel {
                        sbom: sbom.clone(),
                        file: file.to_string(),
                    });
                }
                locating_sbom.get_or_insert(sbom);
                match component.sha256() {
                    Some(listed) => {
                        let actual = sha256_of(file).map_err(|detail| SbomError::Read {
                            sbom: sbom.clone(),
                            file: file.to_string(),
                            detail,
                        })?;
                        if listed != actual {
                            return Err(SbomError::WrongHash {
                                sbom: sbom.clone(),
                                file: file.to_string(),
                                listed,
                                actual,
                            });
                        }
                    }
                    None if is_vendored_path(file) => {
                        return Err(SbomError::NoHash {
                            sbom: sbom.clone(),
                            file: file.to_string(),
                        });
                    }
                    None => {}
                }
                located.insert(file.to_string());
            }
        }
    }
    let Some(sbom) = locating_sbom else {
        return Ok(());
    };
    match entries
        .iter()
        .find(|entry| is_vendored_path(entry) && !located.contains(**entry))
    {
        Some(file) => Err(SbomError::Unlisted {
            sbom: sbom.to_string(),
            file: file.to_string(),
        }),
        None => Ok(()),
    }
}
