//! `crosswheel build spam-0.1.0.tar.gz`: an sdist is unpacked into a temporary folder and
//! that tree is built, as cibuildwheel does. The unpacking refuses what Python's `tarfile`
//! `data` filter (cibuildwheel's `safe_extractall`) refuses: absolute names, `..`, links
//! that leave the tree, device files. The sdist itself is only read.

use std::fs::File;
use std::io::{self, BufReader};
use std::path::{Component, Path, PathBuf};

use crate::io_error::IoError;

#[derive(Debug, thiserror::Error)]
pub enum SdistError {
    #[error("no such project folder or sdist: {}", .0.display())]
    Missing(PathBuf),
    #[error("{}: not a gzip-compressed tar archive ({reason}); an sdist is a .tar.gz", .path.display())]
    NotTarGz { path: PathBuf, reason: String },
    #[error("{}: unsafe sdist member `{member}`: {reason}; refusing to unpack it", .path.display())]
    Unsafe {
        path: PathBuf,
        member: String,
        reason: &'static str,
    },
    #[error("{}: invalid sdist: it must hold exactly one top-level folder, it holds {found}", .path.display())]
    NotOneFolder { path: PathBuf, found: String },
    #[error(transparent)]
    Io(#[from] IoError),
}

/// Whether `crosswheel build PATH` names an sdist rather than a folder: a file, or a
/// `.tar.gz` name (so a missing sdist is reported as one), as cibuildwheel decides.
pub fn is_sdist(path: &Path) -> bool {
    path.is_file() || path.to_string_lossy().ends_with(".tar.gz")
}

/// An unpacked sdist: the tree (its one top-level folder) lives as long as this value.
pub struct Unpacked {
    _scratch: tempfile::TempDir,
    pub tree: PathBuf,
}

/// Unpacks `sdist` into a new temporary folder and returns its one top-level folder.
pub fn unpack(sdist: &Path) -> Result<Unpacked, SdistError> {
    if !sdist.is_file() {
        return Err(SdistError::Missing(sdist.to_path_buf()));
    }
    let scratch = tempfile::Builder::new()
        .prefix("crosswheel-sdist-")
        .tempdir()
        .map_err(|err| IoError::new("create a temporary folder for", sdist, err))?;
    unpack_into(sdist, scratch.path())?;
    let tree = single_folder(sdist, scratch.path())?;
    Ok(Unpacked {
        _scratch: scratch,
        tree,
    })
}

fn unpack_into(sdist: &Path, dest: &Path) -> Result<(), SdistError> {
    let file = File::open(sdist).map_err(|err| IoError::new("open", sdist, err))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(BufReader::new(file)));
    archive.set_preserve_permissions(false);
    archive.set_unpack_xattrs(false);
    let not_tar = |err: io::Error| SdistError::NotTarGz {
        path: sdist.to_path_buf(),
        reason: err.to_string(),
    };
    for entry in archive.entries().map_err(not_tar)? {
        let mut entry = entry.map_err(not_tar)?;
        let name = entry.path().map_err(not_tar)?.into_owned();
        let unsafe_member = |reason| SdistError::Unsafe {
            path: sdist.to_path_buf(),
            member: name.display().to_string(),
            reason,
        };
        check_member(&name, &entry).map_err(unsafe_member)?;
        let unpacked = entry
            .unpack_in(dest)
            .map_err(|err| IoError::new("unpack a member of", sdist, err))?;
        if !unpacked {
            return Err(unsafe_member("it would land outside the tree"));
        }
    }
    Ok(())
}

/// Why a member may not be unpacked, if it may not.
fn check_member<R: io::Read>(name: &Path, entry: &tar::Entry<R>) -> Result<(), &'static str> {
    inside_tree(name).ok_or("the name is absolute or leaves the tree with `..`")?;
    let kind = entry.header().entry_type();
    if kind.is_file() || kind.is_dir() || kind.is_gnu_sparse() {
        return Ok(());
    }
    let target = || {
        entry
            .link_name()
            .ok()
            .flatten()
            .map(|target| target.into_owned())
            .ok_or("a link without a target")
    };
    if kind.is_symlink() {
        // A symlink's target is relative to the folder holding it.
        let from = name.parent().unwrap_or(Path::new(""));
        return inside_tree(&from.join(target()?))
            .map(drop)
            .ok_or("a symbolic link that points outside the tree");
    }
    if kind.is_hard_link() {
        return inside_tree(&target()?)
            .map(drop)
            .ok_or("a hard link to a file outside the tree");
    }
    Err("not a file, folder or link (a device, FIFO or other special file)")
}

/// `path` with `.` and `..` resolved lexically, if it is relative and never climbs above
/// its start.
fn inside_tree(path: &Path) -> Option<PathBuf> {
    let mut inside = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => inside.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                if !inside.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(inside)
}

fn single_folder(sdist: &Path, dest: &Path) -> Result<PathBuf, SdistError> {
    let entries: Vec<PathBuf> = std::fs::read_dir(dest)
        .and_then(|read| read.map(|entry| entry.map(|e| e.path())).collect())
        .map_err(|err| IoError::new("list", dest, err))?;
    match entries.as_slice() {
        [one] if one.is_dir() => Ok(one.clone()),
        _ => Err(SdistError::NotOneFolder {
            path: sdist.to_path_buf(),
            found: describe(&entries),
        }),
    }
}

fn describe(entries: &[PathBuf]) -> String {
    let names: Vec<String> = entries
        .iter()
        .filter_map(|path| path.file_name())
        .map(|name| name.to_string_lossy().into_owned())
        .collect();
    match names.as_slice() {
        [] => "nothing".to_string(),
        [one] => format!("only the file `{one}`"),
        many => format!("{} entries ({})", many.len(), many.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_inside_the_tree_are_resolved_and_others_refused() {
        assert_eq!(
            inside_tree(Path::new("a/./b/../c")),
            Some(PathBuf::from("a/c"))
        );
        assert_eq!(inside_tree(Path::new("a/../../etc")), None);
        assert_eq!(inside_tree(Path::new("/etc/passwd")), None);
    }
}
