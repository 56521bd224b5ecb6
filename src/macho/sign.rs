//! Ad-hoc signing: what `codesign --force --sign -` does, in process.
//!
//! arm64 macOS refuses to map an image whose page hashes do not match, and
//! every load-command edit changes hashed bytes, so a repair re-signs each
//! edited file. Ad-hoc signatures carry no certificate and no timestamp, so
//! the same input always gives the same bytes.

use std::panic::{AssertUnwindSafe, catch_unwind};

use apple_codesign::{MachOSigner, SettingsScope, SigningSettings};

use super::error::MachOError;
use super::facts::MachOFile;
use super::signature::{SignatureStatus, verify_signature};

/// Signs every slice of `data` ad hoc and returns the signed file.
///
/// `identifier` becomes the CodeDirectory identifier (codesign uses the file
/// name). Entitlements, hardened-runtime flags and, for old deployment targets,
/// the extra SHA-1 CodeDirectory are carried over from the existing signature.
/// The output is checked with [`verify_signature`] before it is returned.
pub fn sign_adhoc(data: &[u8], identifier: &str) -> Result<Vec<u8>, MachOError> {
    // Our parser is stricter than the signer's: only well-formed files get past it.
    MachOFile::parse(data)?;

    // The signer asserts on layouts it does not expect instead of returning an
    // error; a panic there must not take the whole repair down.
    let signed = catch_unwind(AssertUnwindSafe(|| sign_with_apple_codesign(data, identifier)))
        .map_err(|_| MachOError::Signing {
            reason: "the signer rejected the file's layout (it panicked); the binary may be unusual or corrupt".into(),
        })??;

    let parsed = MachOFile::parse(&signed).map_err(|error| MachOError::Signing {
        reason: format!("the signed output does not parse: {error}"),
    })?;
    for slice in &parsed.slices {
        match verify_signature(slice) {
            SignatureStatus::Valid { adhoc: true, .. } => {}
            other => {
                return Err(MachOError::Signing {
                    reason: format!(
                        "the new signature of the {} slice does not verify: {other:?}",
                        slice.arch
                    ),
                });
            }
        }
    }
    Ok(signed)
}

fn sign_with_apple_codesign(data: &[u8], identifier: &str) -> Result<Vec<u8>, MachOError> {
    let failed = |error: apple_codesign::AppleCodesignError| MachOError::Signing {
        reason: error.to_string(),
    };
    let mut settings = SigningSettings::default();
    // Set before importing: the import keeps settings that are already present.
    settings.set_binary_identifier(SettingsScope::Main, identifier);
    if let Err(error) = settings.import_settings_from_macho(data) {
        // A damaged old signature is exactly what re-signing replaces.
        tracing::debug!("not carrying over settings from the existing signature: {error}");
        settings = SigningSettings::default();
        settings.set_binary_identifier(SettingsScope::Main, identifier);
    }
    let signer = MachOSigner::new(data).map_err(failed)?;
    let mut signed = Vec::with_capacity(data.len() + 64 * 1024);
    signer
        .write_signed_binary(&settings, &mut signed)
        .map_err(failed)?;
    Ok(signed)
}
