//! Libraries crosswheel built for the target (`target-libraries`): the prefix a library
//! was installed into holds its record.

use std::path::Path;

use super::Provenance;
use crate::formats::sbom::{IndexSdist, Licence, Package, Source};
use crate::support::target_libraries::record_of;

/// The library built into the prefix `folder`, if `folder` is one.
pub fn owner(folder: &Path) -> Option<Provenance> {
    let record = record_of(folder)?;
    Some(Provenance {
        source: Source::DebianSource {
            version: record.version,
            package: record.source.package,
            debian_version: record.source.version,
            sha256: record.source.sha256,
            also_from: record
                .index_sources
                .iter()
                .map(|source| IndexSdist {
                    package: Package {
                        name: source.project.clone(),
                        version: source.version().to_string(),
                    },
                    sha256: source.sha256.clone(),
                    licence: source.licence.clone(),
                })
                .collect(),
            notes: record.notes,
        },
        licence: Some(Licence::Expression(record.licence)),
    })
}
