//! Ad-hoc signing: what `codesign --force --sign -` does, in process.
//!
//! arm64 macOS refuses to map an image whose page hashes do not match, and
//! every load-command edit changes hashed bytes, so a repair re-signs each
//! edited file. Ad-hoc signatures carry no certificate and no timestamp, so
//! the same input always gives the same bytes.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

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
    let input = MachOFile::parse(data)?;
    // The signer reads the old signature to carry settings over and trusts its
    // offsets and counts (it can allocate gigabytes or assert on lies). A
    // signature that is merely stale — pages edited, file grown — is re-signed;
    // one whose structure is broken is refused.
    for slice in &input.slices {
        if let SignatureStatus::Invalid(reason) = verify_signature(slice)
            && !(reason.contains("does not match") || reason.contains("codeLimit"))
        {
            return Err(MachOError::Signing { reason: format!("its existing {} code signature is malformed ({reason}); rebuild the file or strip the signature", slice.arch) });
        }
    }

    // The signer asserts on layouts it does not expect instead of returning an
    // error; a panic there must not take the whole repair down.
    quiet_signer_panics();
    SIGNING.with(|flag| flag.set(true));
    let outcome = catch_unwind(AssertUnwindSafe(|| sign_with_apple_codesign(data, identifier)));
    SIGNING.with(|flag| flag.set(false));
    let signed = outcome
        .map_err(|_| MachOError::Signing {
            reason: "the signer rejected the file's layout (an internal assertion failed); the binary may be unusual or corrupt".into(),
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

thread_local! {
    /// Set while apple-codesign runs on this thread.
    static SIGNING: Cell<bool> = const { Cell::new(false) };
}

/// A panic inside the signer is caught and reported as one error line; the
/// default hook would also print its message and backtrace hint to stderr.
/// Panics anywhere else still reach the previous hook.
fn quiet_signer_panics() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !SIGNING.with(Cell::get) {
                previous(info);
            }
        }));
    });
}
