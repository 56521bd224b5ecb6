//! Turning the resolved graph into per-binary ELF edits: new SONAMEs for grafted
//! libraries, renamed DT_NEEDED entries (grafted libraries, and the C library by the name
//! its policies give it), libpython dropped, and RUNPATHs that stay inside the wheel.

use crate::analysis::facts::layout;
use crate::analysis::facts::linux::{Binary, Graph, Link, Origin};
use crate::analysis::manylinux::CLibrary;
use crate::formats::elf::edit::ElfEdits;

/// The edits for `graph.binaries[index]`; `None` when the file stays as it is.
/// `c_library`: the C library's name for the policies (musl's `libc.musl-x86_64.so.1`),
/// which replaces the linker's name for it (zig's `libc.so`).
pub fn edits_for(
    graph: &Graph,
    index: usize,
    libs_dir: &str,
    c_library: Option<&CLibrary>,
) -> Option<ElfEdits> {
    let binary = &graph.binaries[index];
    let links = &graph.links[index];
    let mut edits = ElfEdits::default();
    let mut needs_grafted = false;
    for (needed, link) in links {
        // The interpreter that imports the module provides libpython (auditwheel drops
        // it the same way); a manylinux CPython has no libpython to load.
        if *link == Link::Python {
            edits.remove_needed.insert(needed.clone());
        }
        if let Some(c_library) = c_library
            && *link == Link::System
            && c_library.linker_names.contains(needed)
        {
            edits
                .replace_needed
                .insert(needed.clone(), c_library.soname.clone());
        }
        if let Link::Internal(path) = link
            && is_grafted(graph, path)
        {
            needs_grafted = true;
            let file_name = path.rsplit('/').next().unwrap_or(path);
            if file_name != needed {
                edits
                    .replace_needed
                    .insert(needed.clone(), file_name.to_string());
            }
        }
    }
    match &binary.origin {
        Origin::Grafted { .. } => {
            let file_name = binary.path.rsplit('/').next().unwrap_or(&binary.path);
            if binary.facts.soname.as_deref() != Some(file_name) {
                edits.soname = Some(file_name.to_string());
            }
            // A vendored library's own rpaths point into the build machine.
            let wanted: Vec<String> = if needs_grafted {
                vec!["$ORIGIN".to_string()]
            } else {
                Vec::new()
            };
            if binary.facts.runpath != wanted || !binary.facts.rpath.is_empty() {
                edits.runpath = Some(wanted);
            }
        }
        Origin::Wheel { .. } => {
            if let Some(runpath) = wheel_runpath(binary, needs_grafted, libs_dir) {
                edits.runpath = Some(runpath);
            }
        }
    }
    let changed = edits.soname.is_some()
        || !edits.replace_needed.is_empty()
        || !edits.remove_needed.is_empty()
        || edits.runpath.is_some();
    changed.then_some(edits)
}

fn is_grafted(graph: &Graph, path: &str) -> bool {
    graph
        .binaries
        .iter()
        .any(|b| b.path == path && matches!(b.origin, Origin::Grafted { .. }))
}

/// Keeps the rpath entries that stay inside the wheel, adds the way to
/// `<dist>.libs` when needed; `None` when nothing changes.
fn wheel_runpath(binary: &Binary, needs_grafted: bool, libs_dir: &str) -> Option<Vec<String>> {
    let facts = &binary.facts;
    let current: Vec<&String> = if facts.runpath.is_empty() {
        facts.rpath.iter().collect()
    } else {
        facts.runpath.iter().collect()
    };
    let mut kept: Vec<String> = current
        .iter()
        .filter(|entry| layout::rpath_in_wheel(entry, &binary.path).is_some())
        .map(|entry| entry.to_string())
        .collect();
    let dropped = kept.len() != current.len();
    let mut added = false;
    if needs_grafted {
        let to_libs = layout::origin_relative(&binary.path, libs_dir);
        let already = kept
            .iter()
            .any(|entry| layout::rpath_in_wheel(entry, &binary.path).as_deref() == Some(libs_dir));
        if !already {
            kept.push(to_libs);
            added = true;
        }
    }
    (dropped || added).then_some(kept)
}
