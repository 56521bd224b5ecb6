//! Files from a Debian target tree: the tree's manifest lists each package's libraries.

use std::path::Path;

use super::Provenance;
use crate::formats::sbom::Source;
use crate::support::sysroot::tree_manifest;

/// The Debian package of the tree rooted at `folder` that shipped `relative`, if any.
pub fn owner(folder: &Path, relative: &Path) -> Option<Provenance> {
    let manifest = tree_manifest(folder)?;
    let package = manifest.owner_of(relative.to_str()?)?;
    Some(Provenance {
        source: Source::Debian {
            package: package.name.clone(),
            version: package.version.clone(),
            arch: manifest.debian_arch.clone(),
        },
        // Debian states licences per file in copyright files, not per package.
        licence: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_library_the_manifest_lists_belongs_to_its_package() {
        let tree = tempfile::tempdir().unwrap();
        let lib = tree.path().join("usr/lib/aarch64-linux-gnu");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(lib.join("libgfortran.so.5.0.0"), b"elf").unwrap();
        std::fs::write(
            tree.path().join(".crosswheel-tree.json"),
            r#"{"debian_arch": "arm64", "packages": [
                {"name": "libc6", "version": "2.36-9+deb12u14"},
                {"name": "libgfortran5", "version": "12.2.0-14",
                 "libraries": ["usr/lib/aarch64-linux-gnu/libgfortran.so.5.0.0"]}]}"#,
        )
        .unwrap();
        let found = crate::analysis::provenance::of_file(&lib.join("libgfortran.so.5.0.0"));
        assert_eq!(
            found.source,
            Source::Debian {
                package: "libgfortran5".into(),
                version: "12.2.0-14".into(),
                arch: "arm64".into(),
            }
        );
        assert_eq!(
            owner(
                tree.path(),
                Path::new("usr/lib/aarch64-linux-gnu/libz.so.1")
            ),
            None
        );
    }
}
