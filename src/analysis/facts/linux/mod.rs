//! The Linux half of wheel analysis: a wheel's ELF files, their DT_NEEDED
//! graph, the host search for external libraries, and the manylinux verdict.

pub mod abi;
pub mod graph;
pub mod search;
pub mod symbols;

use std::sync::Arc;

use anyhow::{Context, Result};
use rayon::prelude::*;

use crate::analysis::facts::layout;
use crate::formats::elf::facts::{ElfFacts, is_elf};
use crate::formats::wheel::WheelArchive;

pub use abi::{choose_tags, glibc_evidence, musl_evidence, policy_input, wheel_abi, wheel_libc};
pub use graph::{Binary, Graph, HostSearch, Link, Origin, Rules, WheelFiles, needed_link};
pub use search::{Abi, FoundLibrary, LibrarySearch};
pub use symbols::{SymbolReport, SystemLibraries, Unresolved, check_symbols};

/// The ELF files of a wheel, parsed (in parallel: big wheels have hundreds).
pub fn wheel_binaries(wheel: &WheelArchive) -> Result<Vec<Binary>> {
    let candidates: Vec<_> = wheel.entries().iter().collect();
    let parsed: Vec<Option<Binary>> = candidates
        .par_iter()
        .map(|entry| -> Result<Option<Binary>> {
            let data = wheel.read(&entry.name)?;
            if !is_elf(&data) {
                return Ok(None);
            }
            let facts = ElfFacts::parse(&data)
                .with_context(|| format!("{}: {}", wheel.path().display(), entry.name))?;
            Ok(Some(Binary {
                path: layout::install_path(&entry.name).to_string(),
                facts: Arc::new(facts),
                origin: Origin::Wheel {
                    entry: entry.name.clone(),
                },
            }))
        })
        .collect::<Result<_>>()?;
    Ok(parsed.into_iter().flatten().collect())
}
