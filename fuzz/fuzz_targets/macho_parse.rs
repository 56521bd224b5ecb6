//! `MachOFile::parse` on arbitrary bytes, plus the per-slice queries.
#![no_main]

use crosswheel::formats::macho::{LibraryOrdinal, MachOFile, is_system_library};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(file) = MachOFile::parse(data) else {
        return;
    };
    for slice in &file.slices {
        let _ = slice.bytes().len();
        let _ = slice.is_two_level_namespace();
        let _ = slice.segment("__LINKEDIT");
        for symbol in &slice.imported_symbols {
            let _ = slice.dependency_for(symbol.library);
        }
        for ordinal in 1..=u8::MAX {
            let _ = slice.dependency_for(LibraryOrdinal::Dylib(ordinal));
        }
        for dependency in &slice.dependencies {
            let _ = is_system_library(&dependency.install_name);
        }
        let _ = slice.deployment_target.map(|target| target.is_macos());
    }
});
