//! `ElfFacts::parse` on arbitrary bytes, plus the queries built on its result.
#![no_main]

use crosswheel::formats::elf::facts::ElfFacts;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(facts) = ElfFacts::parse(data) else {
        return;
    };
    let _ = facts.versions_by_prefix();
    for needed in &facts.needed {
        let _ = facts.versions_required_from(needed).count();
    }
});
