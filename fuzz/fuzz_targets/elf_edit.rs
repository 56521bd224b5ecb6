//! `apply_edits` on arbitrary bytes with the edits a repair makes: a new
//! SONAME, every DT_NEEDED renamed to a longer vendored name, and a RUNPATH.
//! The longer names force the relayout of `.dynstr`/`.dynamic`.
#![no_main]

use crosswheel::formats::elf::edit::{ElfEdits, apply_edits};
use crosswheel::formats::elf::facts::ElfFacts;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The repair edits only files it could read.
    let Ok(facts) = ElfFacts::parse(data) else {
        return;
    };
    let needed = facts.needed;
    let edits = ElfEdits {
        soname: Some("libfuzzed-0123abcd.so.1".to_string()),
        replace_needed: needed
            .into_iter()
            .filter(|name| !name.is_empty() && !name.contains('\0'))
            .map(|name| {
                let vendored = format!("{name}-0123abcd.vendored.so");
                (name, vendored)
            })
            .collect(),
        remove_needed: Default::default(),
        runpath: Some(vec!["$ORIGIN/../fuzzed.libs".to_string()]),
    };
    if let Ok(output) = apply_edits(data, &edits) {
        // What the editor wrote must read back, with the new names.
        let edited = ElfFacts::parse(&output).expect("an edited file parses");
        assert_eq!(edited.soname.as_deref(), Some("libfuzzed-0123abcd.so.1"));
        assert_eq!(edited.runpath, ["$ORIGIN/../fuzzed.libs"]);
    }
});
