//! `edit_load_commands` on arbitrary bytes with the edits a macOS repair makes.
#![no_main]

use crosswheel::formats::macho::{LoadCommandEdit, MachOFile, Version, edit_load_commands};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(file) = MachOFile::parse(data) else {
        let _ = edit_load_commands(data, &[LoadCommandEdit::AddRpath("@loader_path/x".into())]);
        return;
    };
    let mut edits = vec![
        LoadCommandEdit::SetInstallId("@rpath/libfuzzed.dylib".into()),
        LoadCommandEdit::AddRpath("@loader_path/../.dylibs".into()),
        LoadCommandEdit::SetMinos(Version::new(11, 0, 0)),
    ];
    if let Some(slice) = file.slices.first() {
        if let Some(rpath) = slice.rpaths.first() {
            edits.push(LoadCommandEdit::DeleteRpath(rpath.clone()));
        }
        if let Some(dependency) = slice.dependencies.first() {
            edits.push(LoadCommandEdit::ChangeDependency {
                from: dependency.install_name.clone(),
                to: "@loader_path/../.dylibs/libvendored.dylib".into(),
            });
        }
    }
    // Each edit alone, then all together: a failing edit must not hide the others.
    for edit in &edits {
        if let Ok(output) = edit_load_commands(data, std::slice::from_ref(edit)) {
            MachOFile::parse(&output).expect("an edited file parses");
        }
    }
    if let Ok(output) = edit_load_commands(data, &edits) {
        MachOFile::parse(&output).expect("an edited file parses");
    }
});
