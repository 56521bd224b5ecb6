//! Where a file on this machine came from, for the SBOM of the wheel it is vendored into:
//! a wheel installed or unpacked here (a `*.dist-info/RECORD` above it lists the file), a
//! Debian target tree crosswheel built (its manifest lists the package that ships it), a
//! library crosswheel built from a Debian source package (its prefix's record), or nothing
//! known.
//!
//! Only reads: a lookup that fails for any reason answers "unknown", never an error, so an
//! SBOM can always be written.

mod built;
mod debian;
mod python;

use std::path::Path;

use crate::formats::sbom::{Licence, Source};

/// What is known about one file's origin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provenance {
    pub source: Source,
    pub licence: Option<Licence>,
}

/// How many folders above a file a distribution's record or a tree's manifest may sit:
/// `site-packages/scipy_openblas32/lib/libscipy_openblas.so` is three, a Debian tree's
/// `usr/lib/aarch64-linux-gnu/libgfortran.so.5` four.
const MAX_DEPTH: usize = 6;

/// Where `path` came from. The path as found and the file it resolves to are both tried,
/// since a record lists the real file and a package may ship the link.
pub fn of_file(path: &Path) -> Provenance {
    let resolved = std::fs::canonicalize(path).ok();
    let candidates = std::iter::once(path).chain(resolved.as_deref());
    for candidate in candidates {
        for (depth, folder) in candidate.ancestors().skip(1).enumerate() {
            if depth >= MAX_DEPTH {
                break;
            }
            let Ok(relative) = candidate.strip_prefix(folder) else {
                continue;
            };
            if let Some(found) = python::owner(folder, relative) {
                return found;
            }
            if let Some(found) = debian::owner(folder, relative) {
                return found;
            }
            if let Some(found) = built::owner(folder) {
                return found;
            }
        }
    }
    Provenance {
        source: Source::Unknown,
        licence: None,
    }
}
