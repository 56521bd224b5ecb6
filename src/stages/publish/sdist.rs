//! Reading a source distribution (`{name}-{version}.tar.gz`) far enough to
//! check it: safe member names and links, one top-level directory, PKG-INFO.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::formats::wheel::{UnsafeName, check_entry_name};
use crate::io_error::IoError;

/// PKG-INFO is a few kilobytes; anything far larger is not one.
const MAX_PKG_INFO_LEN: u64 = 16 << 20;

#[derive(Debug, thiserror::Error)]
pub enum SdistError {
    #[error(transparent)]
    Io(#[from] crate::io_error::IoError),

    #[error("{}: not a gzip-compressed tar archive or truncated ({source}); build the sdist again", path.display())]
    NotATarGz { path: PathBuf, source: io::Error },

    #[error("{}: sdist file names are `{{name}}-{{version}}.tar.gz`", path.display())]
    BadFileName { path: PathBuf },

    #[error("{}: member name `{entry}` is not valid UTF-8", path.display())]
    NonUtf8Entry { path: PathBuf, entry: String },

    #[error("{}: unsafe member name `{}`: it {problem}", path.display(), entry.escape_debug())]
    UnsafeEntry {
        path: PathBuf,
        entry: String,
        problem: UnsafeName,
    },

    #[error("{}: member `{entry}` is a link to `{target}`, outside the sdist's directory", path.display())]
    LinkOutside {
        path: PathBuf,
        entry: String,
        target: String,
    },

    #[error(
        "{}: member `{entry}` is a device, fifo or other special file; sdists hold files, directories and links",
        path.display()
    )]
    SpecialFile { path: PathBuf, entry: String },

    #[error("{}: member `{entry}` is outside the top-level directory `{expected}/`", path.display())]
    OutsideTopLevel {
        path: PathBuf,
        entry: String,
        expected: String,
    },

    #[error("{}: no `{expected}`; an sdist must carry its metadata there", path.display())]
    MissingPkgInfo { path: PathBuf, expected: String },

    #[error("{}: `{entry}` {problem}", path.display())]
    UnreadablePkgInfo {
        path: PathBuf,
        entry: String,
        problem: &'static str,
    },
}

/// What the checks need from an sdist.
#[derive(Debug)]
pub(crate) struct Sdist {
    pub file_name_project: String,
    pub file_name_version: String,
    pub pkg_info_entry: String,
    pub pkg_info: String,
}

pub(crate) fn read_sdist(path: &Path) -> Result<Sdist, SdistError> {
    let file_name = path.file_name().unwrap_or_default().to_string_lossy();
    let stem = file_name
        .strip_suffix(".tar.gz")
        .unwrap_or(&file_name)
        .to_owned();
    let Some((project, version)) = stem
        .rsplit_once('-')
        .filter(|(p, v)| !p.is_empty() && !v.is_empty())
    else {
        return Err(SdistError::BadFileName {
            path: path.to_owned(),
        });
    };
    let file = std::fs::File::open(path).map_err(IoError::at("read", path))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(io::BufReader::new(file)));
    let not_tar = |source| SdistError::NotATarGz {
        path: path.to_owned(),
        source,
    };
    let pkg_info_entry = format!("{stem}/PKG-INFO");
    let mut pkg_info = None;
    for entry in archive.entries().map_err(not_tar)? {
        let mut entry = entry.map_err(not_tar)?;
        let kind = entry.header().entry_type();
        if kind.is_pax_global_extensions() {
            continue;
        }
        let name = member_name(path, &entry.path_bytes())?;
        check_member(path, &stem, &name, &entry)?;
        if name == pkg_info_entry && kind.is_file() {
            let mut bytes = Vec::new();
            entry
                .by_ref()
                .take(MAX_PKG_INFO_LEN + 1)
                .read_to_end(&mut bytes)
                .map_err(not_tar)?;
            let unreadable = |problem| SdistError::UnreadablePkgInfo {
                path: path.to_owned(),
                entry: name.clone(),
                problem,
            };
            if bytes.len() as u64 > MAX_PKG_INFO_LEN {
                return Err(unreadable("is over 16 MiB"));
            }
            pkg_info =
                Some(String::from_utf8(bytes).map_err(|_| unreadable("is not valid UTF-8"))?);
        }
    }
    let pkg_info = pkg_info.ok_or_else(|| SdistError::MissingPkgInfo {
        path: path.to_owned(),
        expected: pkg_info_entry.clone(),
    })?;
    Ok(Sdist {
        file_name_project: project.to_owned(),
        file_name_version: version.to_owned(),
        pkg_info_entry,
        pkg_info,
    })
}

fn member_name(path: &Path, bytes: &[u8]) -> Result<String, SdistError> {
    let name = std::str::from_utf8(bytes).map_err(|_| SdistError::NonUtf8Entry {
        path: path.to_owned(),
        entry: String::from_utf8_lossy(bytes).into_owned(),
    })?;
    // Directory members end in `/`; the name rules apply to the rest.
    Ok(name.strip_suffix('/').unwrap_or(name).to_owned())
}

fn check_member<R: Read>(
    path: &Path,
    top_level: &str,
    name: &str,
    entry: &tar::Entry<'_, R>,
) -> Result<(), SdistError> {
    check_entry_name(name).map_err(|problem| SdistError::UnsafeEntry {
        path: path.to_owned(),
        entry: name.to_owned(),
        problem,
    })?;
    if name != top_level && !name.starts_with(&format!("{top_level}/")) {
        return Err(SdistError::OutsideTopLevel {
            path: path.to_owned(),
            entry: name.to_owned(),
            expected: top_level.to_owned(),
        });
    }
    let kind = entry.header().entry_type();
    if kind.is_symlink() || kind.is_hard_link() {
        let target = entry
            .link_name_bytes()
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default();
        // Hard link targets are archive paths; symbolic ones are relative
        // to the link's directory.
        let base = if kind.is_symlink() { parent(name) } else { "" };
        if !stays_inside(top_level, base, &target) {
            return Err(SdistError::LinkOutside {
                path: path.to_owned(),
                entry: name.to_owned(),
                target,
            });
        }
    } else if !(kind.is_file() || kind.is_dir() || kind.is_contiguous()) {
        return Err(SdistError::SpecialFile {
            path: path.to_owned(),
            entry: name.to_owned(),
        });
    }
    Ok(())
}

fn parent(name: &str) -> &str {
    name.rsplit_once('/').map_or("", |(parent, _)| parent)
}

/// Whether `target`, resolved from the directory `base`, stays within `top_level/`.
fn stays_inside(top_level: &str, base: &str, target: &str) -> bool {
    if target.is_empty() || target.starts_with('/') || target.contains('\\') {
        return false;
    }
    let mut components: Vec<&str> = base.split('/').filter(|c| !c.is_empty()).collect();
    for component in target.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                if components.pop().is_none() {
                    return false;
                }
            }
            other => components.push(other),
        }
    }
    components.first() == Some(&top_level) && components.len() > 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_must_resolve_inside_the_top_level_directory() {
        assert!(stays_inside("demo-1.0", "demo-1.0/src", "../README"));
        assert!(stays_inside("demo-1.0", "", "demo-1.0/README"));
        assert!(!stays_inside("demo-1.0", "demo-1.0", "../../etc/passwd"));
        assert!(!stays_inside("demo-1.0", "demo-1.0", ".."));
        assert!(!stays_inside("demo-1.0", "demo-1.0", "/etc/passwd"));
        assert!(!stays_inside("demo-1.0", "demo-1.0/a", "../../other-1.0/x"));
    }
}
