//! Files that came from a Python distribution: a wheel unpacked or installed into a
//! folder leaves `<name>-<version>.dist-info/` there, whose RECORD lists the file.

use std::path::Path;

use super::Provenance;
use crate::formats::sbom::{Licence, Package, Source};
use crate::formats::wheel::{NameVersion, Record, WheelMetadata};

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

/// PEP 639's `License-Expression`, else the `License` field when it is a name (one line)
/// or a licence text whose first line is its title (`BSD 2-Clause License`, as
/// scipy-openblas32 ships), else a `License ::` classifier's last part.
fn licence(metadata: &str) -> Option<Licence> {
    let headers = WheelMetadata::parse(metadata).ok()?;
    if let Some(expression) = headers.get("License-Expression").filter(|e| !e.is_empty()) {
        return Some(Licence::Expression(expression.to_string()));
    }
    let named = headers.get("License").filter(|first| {
        let lower = first.to_ascii_lowercase();
        let is_title = (lower.contains("license") || lower.contains("licence"))
            && !lower.starts_with("copyright");
        !first.is_empty()
            && first.len() <= 100
            && (is_title || !metadata_continues(metadata, first))
    });
    let classified = || {
        headers
            .get_all("Classifier")
            .filter_map(|classifier| classifier.strip_prefix("License ::"))
            .filter_map(|rest| rest.rsplit("::").next())
            .map(str::trim)
            .find(|name| !name.is_empty())
    };
    named
        .or_else(classified)
        .map(|name| Licence::Name(name.to_string()))
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
    fn a_licence_text_gives_its_title_or_else_the_classifier() {
        let titled = "Metadata-Version: 2.1\nName: x\nVersion: 1\n\
            License: BSD 2-Clause License\n        \n        Copyright (c) 2021, MacPython\n\n";
        assert_eq!(
            licence(titled),
            Some(Licence::Name("BSD 2-Clause License".into()))
        );
        let classified = "Metadata-Version: 2.1\nName: x\nVersion: 1\n\
            License: Copyright (c) 2011, someone\n        All rights reserved.\n\
            Classifier: License :: OSI Approved :: BSD License\n\n";
        assert_eq!(
            licence(classified),
            Some(Licence::Name("BSD License".into()))
        );
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
