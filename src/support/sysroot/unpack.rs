//! Unpacking `.deb` files into a tree that works from any folder.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use super::{PackageVersion, SysrootError};

pub(crate) fn require_dpkg_deb() -> Result<(), SysrootError> {
    match Command::new("dpkg-deb").arg("--version").output() {
        Ok(_) => Ok(()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            Err(SysrootError::ToolMissing { tool: "dpkg-deb" })
        }
        Err(err) => Err(SysrootError::Io(crate::io_error::IoError::new(
            "run", "dpkg-deb", err,
        ))),
    }
}

/// Extracts every package's files (no maintainer scripts run: nothing here needs them to
/// load a library or start an interpreter). Returns, per package, the shared libraries it
/// shipped (paths relative to the root), so an SBOM can say which package a vendored
/// library came from.
pub(crate) fn unpack_all(debs: &[PathBuf], root: &Path) -> Result<Vec<Vec<String>>, SysrootError> {
    fs::create_dir_all(root).map_err(SysrootError::io("create", root))?;
    let mut libraries = Vec::with_capacity(debs.len());
    for deb in debs {
        // `-X` is `-x` that also lists what it extracted.
        let output = Command::new("dpkg-deb")
            .arg("-X")
            .arg(deb)
            .arg(root)
            .output()
            .map_err(SysrootError::io("run dpkg-deb on", deb))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(SysrootError::Unpack {
                deb: deb.clone(),
                detail: stderr
                    .lines()
                    .last()
                    .unwrap_or("dpkg-deb failed without a message")
                    .to_string(),
            });
        }
        libraries.push(shared_libraries(&String::from_utf8_lossy(&output.stdout)));
    }
    Ok(libraries)
}

/// The shared libraries among `dpkg-deb -X`'s listing (`./usr/lib/…/libz.so.1.2.13`).
fn shared_libraries(listing: &str) -> Vec<String> {
    listing
        .lines()
        .map(|line| line.trim_start_matches("./"))
        .filter(|path| {
            let name = path.rsplit('/').next().unwrap_or(path);
            name.starts_with("lib") && (name.ends_with(".so") || name.contains(".so."))
        })
        .map(str::to_string)
        .collect()
}

/// Top-level folders that merged-/usr systems keep under `usr/` only.
const MERGED_USR_DIRS: [&str; 6] = ["bin", "sbin", "lib", "lib32", "lib64", "libx32"];

/// Adds merged-/usr's `lib -> usr/lib` (and bin, sbin, lib64, ...) where the packages
/// install only under `usr/`. Debian 13's libc6 ships its loader as
/// `usr/lib/ld-linux-aarch64.so.1` while binaries ask for `/lib/ld-linux-aarch64.so.1`; the
/// links normally come from `base-files`, which is Essential and so never part of a
/// dependency closure. Trees with real top-level folders (Debian 12) are left as they are.
pub(crate) fn link_merged_usr(root: &Path) -> Result<(), SysrootError> {
    for dir in MERGED_USR_DIRS {
        let link = root.join(dir);
        let under_usr = root.join("usr").join(dir);
        if under_usr.is_dir() && fs::symlink_metadata(&link).is_err() {
            std::os::unix::fs::symlink(Path::new("usr").join(dir), &link)
                .map_err(SysrootError::io("create the symlink", &link))?;
        }
    }
    Ok(())
}

/// A walk's error, naming where it was.
fn walk_error(root: &Path, err: walkdir::Error) -> SysrootError {
    SysrootError::Io(crate::io_error::IoError::new(
        "walk",
        err.path().unwrap_or(root).to_path_buf(),
        err.into(),
    ))
}

/// Rewrites every absolute symlink as a relative one, so the tree resolves inside itself:
/// ppc64le's `lib64/ld64.so.2 -> /lib/powerpc64le-linux-gnu/ld64.so.2` otherwise points at
/// the host (or nowhere) and the loader cannot be found. Returns how many were rewritten.
pub(crate) fn relativize_absolute_symlinks(root: &Path) -> Result<usize, SysrootError> {
    let mut rewritten = 0;
    for entry in walkdir::WalkDir::new(root).follow_links(false) {
        let entry = entry.map_err(|err| walk_error(root, err))?;
        if !entry.path_is_symlink() {
            continue;
        }
        let link = entry.path();
        let target = fs::read_link(link).map_err(SysrootError::io("read the symlink", link))?;
        if !target.is_absolute() {
            continue;
        }
        let Ok(inside) = link.strip_prefix(root) else {
            continue;
        };
        let relative = relative_link_target(inside, &target);
        fs::remove_file(link).map_err(SysrootError::io("replace the symlink", link))?;
        std::os::unix::fs::symlink(&relative, link)
            .map_err(SysrootError::io("create the symlink", link))?;
        rewritten += 1;
    }
    Ok(rewritten)
}

/// Rewrites, in every file of the tree that is not an ELF object, each of `paths` (absolute
/// paths the packages were built for, `/usr/share/autoconf`) as the same path under
/// `final_dir`, the place the tree will have in the cache. The GNU autotools find their
/// data and each other by such paths and have no complete set of variables to say
/// otherwise (libtoolize has none). One pass over the text, so a replacement is never
/// rewritten again; a path is only taken where it starts (not preceded by a path
/// character), so a rewritten file stays as it is. Permissions are kept. Returns how
/// many files changed.
pub(crate) fn relocate(
    root: &Path,
    final_dir: &Path,
    paths: &[String],
) -> Result<usize, SysrootError> {
    let mut changed = 0;
    for entry in walkdir::WalkDir::new(root).follow_links(false) {
        let entry = entry.map_err(|err| walk_error(root, err))?;
        if !entry.file_type().is_file() {
            continue;
        }
        let path = entry.path();
        let bytes = fs::read(path).map_err(SysrootError::io("read", path))?;
        if bytes.starts_with(b"\x7fELF") {
            continue;
        }
        if let Some(rewritten) = rewrite_paths(&bytes, final_dir, paths) {
            fs::write(path, rewritten).map_err(SysrootError::io("write", path))?;
            changed += 1;
        }
    }
    Ok(changed)
}

/// `text` with each of `paths` that starts at a path boundary prefixed by `final_dir`;
/// `None` when none occurs.
fn rewrite_paths(text: &[u8], final_dir: &Path, paths: &[String]) -> Option<Vec<u8>> {
    let prefix = final_dir.as_os_str().as_encoded_bytes();
    let mut longest_first: Vec<&[u8]> = paths.iter().map(|path| path.as_bytes()).collect();
    longest_first.sort_by_key(|path| std::cmp::Reverse(path.len()));
    let is_path_byte = |byte: u8| byte.is_ascii_alphanumeric() || b"/._".contains(&byte);
    let mut out = Vec::with_capacity(text.len());
    let mut any = false;
    let mut at = 0;
    while at < text.len() {
        let boundary = at == 0 || !is_path_byte(text[at - 1]);
        let found = boundary
            .then(|| {
                longest_first
                    .iter()
                    .find(|path| text[at..].starts_with(path))
            })
            .flatten();
        if let Some(path) = found {
            out.extend_from_slice(prefix);
            out.extend_from_slice(path);
            at += path.len();
            any = true;
        } else {
            out.push(text[at]);
            at += 1;
        }
    }
    any.then_some(out)
}

/// For a link at `link` (relative to the tree root) pointing at the absolute `target`,
/// the relative target that reaches the same place inside the tree. Walking up is exact
/// because the walk never descends through symlinked folders.
pub(crate) fn relative_link_target(link: &Path, target: &Path) -> PathBuf {
    let depth = link
        .parent()
        .map_or(0, |parent| parent.components().count());
    let mut relative = PathBuf::new();
    for _ in 0..depth {
        relative.push("..");
    }
    for component in target.components() {
        if let Component::Normal(name) = component {
            relative.push(name);
        }
    }
    if relative.as_os_str().is_empty() {
        relative.push(".");
    }
    relative
}

pub(crate) fn prune(root: &Path, paths: &[String]) -> Result<(), SysrootError> {
    for relative in paths {
        let path = root.join(relative);
        match fs::remove_dir_all(&path) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => return Err(SysrootError::io("remove", &path)(err)),
        }
    }
    Ok(())
}

/// Reduces the tree at `root` to the listed paths (those absent are skipped), using
/// `scratch` to assemble the reduced tree.
pub(crate) fn keep_only(root: &Path, scratch: &Path, keep: &[String]) -> Result<(), SysrootError> {
    for relative in keep {
        let from = root.join(relative);
        if fs::symlink_metadata(&from).is_err() {
            continue;
        }
        let to = scratch.join(relative);
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent).map_err(SysrootError::io("create", parent))?;
        }
        fs::rename(&from, &to).map_err(SysrootError::io("move", &from))?;
    }
    fs::create_dir_all(scratch).map_err(SysrootError::io("create", scratch))?;
    fs::remove_dir_all(root).map_err(SysrootError::io("remove", root))?;
    fs::rename(scratch, root).map_err(SysrootError::io("move", scratch))
}

/// Name and version of each package, from APT's `name_version_arch.deb` file names
/// (the version is URL-escaped there: `1%3a1.2.13` for epoch 1).
pub(crate) fn package_versions(debs: &[PathBuf], libraries: &[Vec<String>]) -> Vec<PackageVersion> {
    let mut packages: Vec<PackageVersion> = debs
        .iter()
        .enumerate()
        .filter_map(|(index, deb)| {
            let stem = deb.file_stem()?.to_str()?;
            let mut fields = stem.splitn(3, '_');
            let name = fields.next()?.to_string();
            let version = percent_decode(fields.next()?);
            let libraries = libraries.get(index).cloned().unwrap_or_default();
            Some(PackageVersion {
                name,
                version,
                libraries,
            })
        })
        .collect();
    packages.sort_by(|a, b| a.name.cmp(&b.name));
    packages
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while let Some(&byte) = bytes.get(index) {
        let escaped = (byte == b'%')
            .then(|| bytes.get(index + 1..index + 3))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(decoded) => {
                out.push(decoded);
                index += 3;
            }
            None => {
                out.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn relocation_rewrites_each_named_path_once_and_only_where_a_path_starts() {
        let paths = ["/usr/share/aclocal".to_string(), "/usr/bin/m4".to_string()];
        let text = b"my @system_includes = ('/usr/share/aclocal');\n\
                     acdir=/usr/share/aclocal-1.16 m4=${M4-/usr/bin/m4}\n\
                     keep /opt/usr/share/aclocal\n";
        let once =
            super::rewrite_paths(text, std::path::Path::new("/cache/tools/t"), &paths).unwrap();
        assert_eq!(
            String::from_utf8(once.clone()).unwrap(),
            "my @system_includes = ('/cache/tools/t/usr/share/aclocal');\n\
             acdir=/cache/tools/t/usr/share/aclocal-1.16 m4=${M4-/cache/tools/t/usr/bin/m4}\n\
             keep /opt/usr/share/aclocal\n"
        );
        assert_eq!(
            super::rewrite_paths(&once, std::path::Path::new("/cache/tools/t"), &paths),
            None
        );
        assert_eq!(
            super::rewrite_paths(b"#!/usr/bin/perl\n", std::path::Path::new("/c"), &paths),
            None
        );
    }

    use super::*;

    #[test]
    fn merged_usr_trees_get_their_top_level_links_and_others_keep_their_folders() {
        let root = tempfile::tempdir().unwrap();
        fs::create_dir_all(root.path().join("usr/lib")).unwrap();
        fs::create_dir_all(root.path().join("usr/bin")).unwrap();
        fs::create_dir_all(root.path().join("bin")).unwrap();
        link_merged_usr(root.path()).unwrap();
        assert_eq!(
            fs::read_link(root.path().join("lib")).unwrap(),
            Path::new("usr/lib")
        );
        assert!(root.path().join("bin").is_dir() && !root.path().join("bin").is_symlink());
        assert!(fs::symlink_metadata(root.path().join("lib64")).is_err());
    }

    #[test]
    fn absolute_link_becomes_relative_to_the_tree_root() {
        assert_eq!(
            relative_link_target(
                Path::new("lib64/ld64.so.2"),
                Path::new("/lib/powerpc64le-linux-gnu/ld64.so.2")
            ),
            PathBuf::from("../lib/powerpc64le-linux-gnu/ld64.so.2")
        );
        assert_eq!(
            relative_link_target(
                Path::new("usr/lib/python3.11/sitecustomize.py"),
                Path::new("/etc/python3.11/sitecustomize.py")
            ),
            PathBuf::from("../../../etc/python3.11/sitecustomize.py")
        );
        assert_eq!(
            relative_link_target(Path::new("top"), Path::new("/etc/x")),
            PathBuf::from("etc/x")
        );
        assert_eq!(
            relative_link_target(Path::new("a/b"), Path::new("/")),
            PathBuf::from("..")
        );
    }

    #[test]
    fn rewritten_links_resolve_inside_the_tree() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("lib/powerpc64le-linux-gnu")).unwrap();
        fs::create_dir_all(root.join("lib64")).unwrap();
        fs::write(root.join("lib/powerpc64le-linux-gnu/ld64.so.2"), "loader").unwrap();
        std::os::unix::fs::symlink(
            "/lib/powerpc64le-linux-gnu/ld64.so.2",
            root.join("lib64/ld64.so.2"),
        )
        .unwrap();
        std::os::unix::fs::symlink("powerpc64le-linux-gnu/ld64.so.2", root.join("lib/ld.so"))
            .unwrap();

        assert_eq!(
            relativize_absolute_symlinks(root).unwrap(),
            1,
            "only the absolute link is rewritten"
        );
        assert_eq!(
            fs::read_to_string(root.join("lib64/ld64.so.2")).unwrap(),
            "loader"
        );
        assert_eq!(
            fs::read_link(root.join("lib/ld.so")).unwrap(),
            PathBuf::from("powerpc64le-linux-gnu/ld64.so.2")
        );
    }

    #[test]
    fn keep_only_leaves_just_the_listed_paths() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        fs::create_dir_all(root.join("usr/bin")).unwrap();
        fs::create_dir_all(root.join("usr/share/doc")).unwrap();
        fs::write(root.join("usr/bin/qemu-aarch64-static"), "a").unwrap();
        fs::write(root.join("usr/bin/qemu-mips-static"), "m").unwrap();
        let keep = [
            "usr/bin/qemu-aarch64-static".to_string(),
            "usr/bin/absent".to_string(),
        ];
        keep_only(&root, &dir.path().join("scratch"), &keep).unwrap();
        assert_eq!(
            fs::read_to_string(root.join("usr/bin/qemu-aarch64-static")).unwrap(),
            "a"
        );
        assert!(!root.join("usr/bin/qemu-mips-static").exists());
        assert!(!root.join("usr/share").exists());
    }

    #[test]
    fn versions_come_from_apt_file_names_with_epochs_unescaped() {
        let debs = vec![
            PathBuf::from("/x/zlib1g_1%3a1.2.13.dfsg-1_arm64.deb"),
            PathBuf::from("/x/libc6_2.36-9+deb12u14_arm64.deb"),
            PathBuf::from("/x/not-a-package.deb"),
        ];
        let libraries = vec![vec!["usr/lib/aarch64-linux-gnu/libz.so.1.2.13".to_string()]];
        assert_eq!(
            package_versions(&debs, &libraries),
            vec![
                PackageVersion {
                    name: "libc6".into(),
                    version: "2.36-9+deb12u14".into(),
                    libraries: Vec::new(),
                },
                PackageVersion {
                    name: "zlib1g".into(),
                    version: "1:1.2.13.dfsg-1".into(),
                    libraries: libraries[0].clone(),
                },
            ]
        );
        assert_eq!(percent_decode("100%"), "100%");
    }

    #[test]
    fn the_listing_keeps_shared_libraries_only() {
        let listing = "./\n./usr/\n./usr/lib/aarch64-linux-gnu/libgfortran.so.5.0.0\n\
            ./usr/lib/aarch64-linux-gnu/libgfortran.so.5\n./usr/share/doc/libgfortran5/copyright\n\
            ./usr/lib/python3.11/lib-dynload/_ssl.cpython-311-aarch64-linux-gnu.so\n";
        assert_eq!(
            shared_libraries(listing),
            vec![
                "usr/lib/aarch64-linux-gnu/libgfortran.so.5.0.0",
                "usr/lib/aarch64-linux-gnu/libgfortran.so.5",
            ]
        );
    }
}
