//! `WheelArchive::open` on arbitrary bytes: every structural and RECORD check,
//! then reading every entry the archive accepted.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use crosswheel::formats::wheel::{Limits, WheelArchive};
use libfuzzer_sys::fuzz_target;

/// `open` reads from a path (the file name is part of what it checks), so each
/// input is written to one file per fuzzing process.
fn wheel_path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("crosswheel-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the fuzzing temp dir");
        dir.join("demo-1.0-py3-none-any.whl")
    })
}

fuzz_target!(|data: &[u8]| {
    let path = wheel_path();
    std::fs::write(path, data).expect("write the input wheel");
    // Small limits keep a legitimate-looking bomb from exhausting the fuzzer's memory.
    let limits = Limits {
        max_total_size: 64 << 20,
        ..Limits::default()
    };
    let Ok(wheel) = WheelArchive::open_with_limits(path, &limits) else {
        return;
    };
    let names: Vec<String> = wheel
        .entries()
        .iter()
        .map(|entry| entry.name.clone())
        .collect();
    for name in &names {
        let _ = wheel.read(name);
        let _ = wheel.raw_entry(name);
    }
    let _ = wheel.raw_entries().count();
});
