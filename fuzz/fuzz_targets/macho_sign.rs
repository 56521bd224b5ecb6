//! `sign_adhoc` on arbitrary bytes: it must refuse or return a file whose every
//! slice carries a valid ad-hoc signature, and signing that file again must give
//! the same bytes.
#![no_main]

use crosswheel::formats::macho::{MachOFile, SignatureStatus, sign_adhoc, verify_signature};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(signed) = sign_adhoc(data, "fuzzed.dylib") else {
        return;
    };
    let file = MachOFile::parse(&signed).expect("a signed file parses");
    for slice in &file.slices {
        assert!(matches!(verify_signature(slice), SignatureStatus::Valid { adhoc: true, .. }));
    }
    let again = sign_adhoc(&signed, "fuzzed.dylib").expect("a signed file signs again");
    assert!(again == signed, "re-signing a freshly signed file changed it");
});
