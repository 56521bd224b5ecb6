//! Publishing: `check` finds what an index would refuse in a wheel or sdist
//! before it is uploaded; `upload` sends distributions with the index's
//! legacy upload API.
//!
//! Archive safety and RECORD are [`crate::formats::wheel::WheelArchive::open`]'s
//! job; this module adds what only an index cares about: tags, core
//! metadata and whether the long description renders.

mod attestation;
mod check;
mod metadata;
mod rst;
mod sdist;
mod trusted;
mod upload;

pub use attestation::{
    AttestationError, PUBLISH_KIND, attestation_path, is_attestation, split_inputs,
};
pub use check::{Attestation, CheckError, CheckReport, DistributionKind, check_distribution};
pub use metadata::{CoreMetadata, KNOWN_METADATA_VERSIONS};
pub use rst::{RstProblem, check_rst};
pub use sdist::SdistError;
pub use trusted::{OidcEndpoint, TrustedPublishingError};
pub use upload::{Credentials, UploadError, UploadOptions, UploadOutcome, upload};
