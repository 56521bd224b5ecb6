//! `verify_signature` on every slice of whatever parses.
#![no_main]

use crosswheel::formats::macho::{MachOFile, verify_signature};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(file) = MachOFile::parse(data) {
        for slice in &file.slices {
            let _ = verify_signature(slice);
        }
    }
});
