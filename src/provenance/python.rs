//! Files that came from a Python distribution: a wheel unpacked or installed into a
//! folder leaves `<name>-<version>.dist-info/` there, whose RECORD lists the file.

use std::path::Path;

use super::Provenance;
use crate::sbom::{Licence, Package, Source};
use crate::wheel::{NameVersion, Record, WheelMetadata};

/// The distribution in `folder` whose RECORD lists `relative`, if any.
pub fn owner(folder: &Path, relative: &Path) -> Option<Provenance> {
    let relative = relative.to_str()?;
    let entries = std::fs::read_dir(folder).ok()?;
    let mut dist_infos: Vec<_> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "dist-info"))
        .collect();
    // Two distributions cannot both own a file; sorting keeps the answer stable if they do.
    dist_infos.sort();
    dist_infos.into_iter().find_map(|dist_info| {
        let record = std::fs::read_to_string(dist_info.join("RECORD")).ok()?;
        Record::parse(&record).ok()?.get(relative)?;
        let metadata = std::fs::read_to_string(dist_info.join("METADATA")).ok()?;
        let NameVersion { name, version } = NameVersion::parse(&metadata).ok()?;
        Some(Provenance {
            source: Source::Python(Package { name, version }),
            licence: licence(&metadata),
        })
    })
}

/// PEP 639's `License-Expression`, else a one-line `License` field (longer ones are the
/// licence's whole text, which names nothing).
fn licence(metadata: &str) -> Option<Licence> {
    let headers = WheelMetadata::parse(metadata).ok()?;
    if let Some(expression) = headers.get("License-Expression").filter(|e| !e.is_empty()) {
        return Some(Licence::Expression(expression.to_string()));
    }
    let name = headers.get("License")?;
    let one_line = !name.is_empty() && name.len() <= 100 && !metadata_continues(metadata, name);
    one_line.then(|| Licence::Name(name.to_string()))
}

/// Whether the `License` header whose first line is `first` goes on over more lines.
fn metadata_continues(metadata: &str, first: &str) -> bool {
    let mut lines = metadata.lines();
    lines
        .find(|line| line.starts_with("License:") && line.ends_with(first))
        .and_then(|_| lines.next())
        .is_some_and(|next| next.starts_with([' ', '\t']))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unpacked_wheel(metadata: &str) -> tempfile::TempDir {
        let folder = tempfile::tempdir().unwrap();
        let dist_info = folder
            .path()
            .join("scipy_openblas32-0.3.31.188.0.dist-info");
        std::fs::create_dir_all(&dist_info).unwrap();
        std::fs::write(dist_info.join("METADATA"), metadata).unwrap();
        std::fs::write(
            dist_info.join("RECORD"),
            "scipy_openblas32/lib/libscipy_openblas.so,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n\
             scipy_openblas32-0.3.31.188.0.dist-info/RECORD,,\n",
        )
        .unwrap();
        folder
    }

    #[test]
    fn a_file_the_record_lists_belongs_to_that_distribution() {
        let folder = unpacked_wheel(
            "Metadata-Version: 2.4\nName: scipy-openblas32\nVersion: 0.3.31.188.0\n\
             License-Expression: BSD-3-Clause\n\n",
        );
        let found = owner(
            folder.path(),
            Path::new("scipy_openblas32/lib/libscipy_openblas.so"),
        )
        .unwrap();
        assert_eq!(
            found.source,
            Source::Python(Package {
                name: "scipy-openblas32".into(),
                version: "0.3.31.188.0".into()
            })
        );
        assert_eq!(
            found.licence,
            Some(Licence::Expression("BSD-3-Clause".into()))
        );
        assert_eq!(owner(folder.path(), Path::new("elsewhere/libx.so")), None);
    }

    #[test]
    fn a_licence_text_is_not_a_licence_name() {
        let folder = unpacked_wheel(
            "Metadata-Version: 2.1\nName: scipy-openblas32\nVersion: 0.3.31.188.0\n\
             License: Copyright (c) 2011-2014, The OpenBLAS Project\n        All rights reserved.\n\n",
        );
        let found = owner(
            folder.path(),
            Path::new("scipy_openblas32/lib/libscipy_openblas.so"),
        )
        .unwrap();
        assert_eq!(found.licence, None);
    }
}
