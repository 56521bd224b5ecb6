//! What the repair will change, decided before any byte is written: where
//! vendored libraries go, which install names, ids, rpaths and minimum
//! versions are rewritten, and which files need a new signature.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::analysis::facts::layout;
use crate::analysis::facts::macos::{
    Graph, Link, MachOBinary, Origin, SliceMinos, Via, arm64_floor,
};
use crate::formats::macho::{Arch, LoadCommandEdit, SignatureStatus, Version};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    #[error(
        "{binary} needs `{name}`, which is not in the wheel, not a macOS system library and not found \
         on this host; pass --lib-path DIR with a macOS build of it, or --exclude it"
    )]
    MissingLibrary { binary: String, name: String },
    #[error(
        "{binary} needs `{name}`: found {found} but it is {has}, {binary} needs {missing}; \
         pass --lib-path DIR with a build of it that has {missing}, or --exclude it"
    )]
    WrongArch {
        binary: String,
        name: String,
        found: String,
        has: String,
        missing: String,
    },
    #[error("cannot vendor {library} as {path}: {other} would go there too; rename one of them")]
    NameCollision {
        library: String,
        path: String,
        other: String,
    },
    #[error("cannot vendor {library} as {path}: the wheel already has another file there")]
    Occupied { library: String, path: String },
}

#[derive(Debug)]
pub struct RepairPlan {
    pub graph: Graph,
    /// Final install path of each binary of the graph.
    pub paths: Vec<String>,
    pub edits: Vec<Vec<LoadCommandEdit>>,
    pub needs_signing: Vec<bool>,
}

/// `@loader_path/<relative>` from the folder of `from` to the file `to`.
pub fn loader_path_reference(from: &str, to: &str) -> String {
    let from_dir: Vec<&str> = layout::parent(from)
        .split('/')
        .filter(|p| !p.is_empty())
        .collect();
    let to_parts: Vec<&str> = to.split('/').filter(|p| !p.is_empty()).collect();
    let to_dir = &to_parts[..to_parts.len().saturating_sub(1)];
    let common = from_dir
        .iter()
        .zip(to_dir)
        .take_while(|(a, b)| a == b)
        .count();
    let mut parts = vec!["@loader_path"];
    parts.extend(std::iter::repeat_n("..", from_dir.len() - common));
    parts.extend(&to_parts[common..]);
    parts.join("/")
}

fn describe(binary: &MachOBinary) -> String {
    match &binary.origin {
        Origin::Wheel { .. } => binary.path.clone(),
        Origin::Host { source } => source.display().to_string(),
    }
}

/// Why `name`, needed by binary `index`, is missing: a host file of the wrong
/// architecture, or nothing at all.
fn missing_library(graph: &Graph, index: usize, binary: String, name: String) -> PlanError {
    let Some(wrong) = graph.wrong_arch.get(&(index, name.clone())) else {
        return PlanError::MissingLibrary { binary, name };
    };
    let join = |arches: Vec<&Arch>| {
        let names: Vec<String> = arches.into_iter().map(Arch::to_string).collect();
        names.join(" and ")
    };
    PlanError::WrongArch {
        binary,
        name,
        found: wrong.path.display().to_string(),
        has: join(wrong.has.iter().collect()),
        missing: join(
            wrong
                .wanted
                .iter()
                .filter(|arch| !wrong.has.contains(*arch))
                .collect(),
        ),
    }
}

fn is_arm64(arch: Arch) -> bool {
    matches!(arch, Arch::Arm64 | Arch::Arm64e)
}

pub fn plan(graph: Graph, libs_dir: &str) -> Result<RepairPlan, PlanError> {
    for (index, (binary, links)) in graph.binaries.iter().zip(&graph.links).enumerate() {
        if let Some(missing) = links
            .iter()
            .find(|link| link.link == Link::Unresolved && link.is_required())
        {
            let name = missing.dependency.install_name.clone();
            return Err(missing_library(&graph, index, describe(binary), name));
        }
    }

    let mut paths = Vec::with_capacity(graph.binaries.len());
    let mut taken: BTreeMap<String, usize> = BTreeMap::new();
    for (index, binary) in graph.binaries.iter().enumerate() {
        let path = match binary.origin {
            Origin::Wheel { .. } => binary.path.clone(),
            Origin::Host { .. } => format!("{libs_dir}/{}", binary.file_name()),
        };
        if let Some(&other) = taken.get(&path) {
            let other = &graph.binaries[other];
            return Err(match other.origin {
                Origin::Wheel { .. } => PlanError::Occupied {
                    library: describe(binary),
                    path,
                },
                Origin::Host { .. } => PlanError::NameCollision {
                    library: describe(binary),
                    path,
                    other: describe(other),
                },
            });
        }
        taken.insert(path.clone(), index);
        paths.push(path);
    }

    let edits: Vec<Vec<LoadCommandEdit>> = (0..graph.binaries.len())
        .map(|index| edits_for(&graph, &paths, index))
        .collect();
    let needs_signing = graph
        .binaries
        .iter()
        .zip(&edits)
        .map(|(binary, edits)| {
            !edits.is_empty()
                || binary.slices.iter().any(|slice| match slice.signature {
                    SignatureStatus::Valid { .. } => false,
                    SignatureStatus::Invalid(_) => true,
                    // arm64 macOS refuses unsigned images; x86_64 loads them, but a
                    // repaired wheel is signed throughout, as codesign leaves a file,
                    // so that universal2 fuses of it carry a signature in every slice.
                    SignatureStatus::Missing => true,
                })
        })
        .collect();
    Ok(RepairPlan {
        graph,
        paths,
        edits,
        needs_signing,
    })
}

fn edits_for(graph: &Graph, paths: &[String], index: usize) -> Vec<LoadCommandEdit> {
    let binary = &graph.binaries[index];
    let mut edits = Vec::new();
    for link in &graph.links[index] {
        let Link::Binary { index: target, via } = link.link else {
            continue;
        };
        // References between wheel files through the image's own
        // `@loader_path` or relative rpaths work wherever pip installs the
        // wheel; everything else is pinned to the file's new place.
        let portable = !binary.is_grafted()
            && !graph.binaries[target].is_grafted()
            && matches!(via, Via::LoaderPath | Via::OwnRpath);
        if portable {
            continue;
        }
        let reference = loader_path_reference(&paths[index], &paths[target]);
        if reference != link.dependency.install_name {
            edits.push(LoadCommandEdit::ChangeDependency {
                from: link.dependency.install_name.clone(),
                to: reference,
            });
        }
    }
    if let Some(new_id) = neutral_install_id(binary, &paths[index]) {
        edits.push(LoadCommandEdit::SetInstallId(new_id));
    }
    for rpath in binary.rpaths() {
        if !is_sanitary_rpath(&rpath) {
            edits.push(LoadCommandEdit::DeleteRpath(rpath));
        }
    }
    if let Some(minos) = raised_minos(binary) {
        edits.push(LoadCommandEdit::SetMinos(minos));
    }
    edits
}

/// Whether an LC_RPATH works wherever pip installs the wheel: relative to the image
/// (`@loader_path/`) or the executable (`@executable_path/`). Absolute paths name the
/// build machine and relative ones the folder a process happens to run in, so the
/// repair deletes them, as delocate's `--sanitize-rpaths` (its default) does.
fn is_sanitary_rpath(rpath: &str) -> bool {
    ["@loader_path", "@executable_path"].iter().any(|prefix| {
        rpath
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}

/// The install id `binary` should have instead of its current one, if any.
///
/// Grafted libraries follow delocate's convention: an id that names the copy's place
/// and can never resolve to a file on the user's machine. A Python extension module
/// (a `.so` of the wheel) linked by zig, which links `-shared` because `-bundle`
/// crashes it, carries the path it was linked at, e.g.
/// `build/lib.macosx-11.0-arm64-cpython-311/pkg/_ext.so`: a build-tree path nothing
/// resolves, which leaks the build's layout. Its file name is what the id of a
/// macOS-built extension (a bundle, which has none) comes closest to. Ids starting
/// with `@` were chosen by the project and stay.
fn neutral_install_id(binary: &MachOBinary, path: &str) -> Option<String> {
    let id = binary.install_id()?;
    let new_id = if binary.is_grafted() {
        format!("/DLC/{path}")
    } else if binary.file_name().ends_with(".so") && !id.starts_with('@') {
        binary.file_name().to_string()
    } else {
        return None;
    };
    (id != new_id).then_some(new_id)
}

/// The minos to write when an arm64 slice claims less than macOS 11: the
/// edit applies to every slice, so it never lowers another slice's minos.
fn raised_minos(binary: &MachOBinary) -> Option<Version> {
    let macos_minos = |arm64_only: bool| {
        binary
            .slices
            .iter()
            .filter(move |slice| !arm64_only || is_arm64(slice.arch))
            .filter_map(|slice| slice.deployment_target.filter(|target| target.is_macos()))
            .map(|target| target.minos)
    };
    let lowest_arm64 = macos_minos(true).min()?;
    let floor = arm64_floor();
    (lowest_arm64 < floor).then(|| macos_minos(false).fold(floor, Version::max))
}

impl RepairPlan {
    /// Every slice's minos as it will be after the edits.
    pub fn final_minos(&self) -> Vec<SliceMinos> {
        let mut all = Vec::new();
        for (index, binary) in self.graph.binaries.iter().enumerate() {
            let raised = self.edits[index].iter().find_map(|edit| match edit {
                LoadCommandEdit::SetMinos(version) => Some(*version),
                _ => None,
            });
            for slice in &binary.slices {
                let Some(target) = slice.deployment_target.filter(|target| target.is_macos())
                else {
                    continue;
                };
                all.push(SliceMinos {
                    file: self.paths[index].clone(),
                    arch: slice.arch,
                    minos: raised.unwrap_or(target.minos),
                    vendored: binary.is_grafted(),
                });
            }
        }
        all
    }

    /// Host source → wheel path of each vendored library.
    pub fn grafted(&self) -> Vec<(PathBuf, String)> {
        self.graph
            .binaries
            .iter()
            .zip(&self.paths)
            .filter_map(|(binary, path)| match &binary.origin {
                Origin::Host { source } => Some((source.clone(), path.clone())),
                Origin::Wheel { .. } => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loader_and_executable_relative_rpaths_are_sanitary() {
        for kept in [
            "@loader_path/",
            "@loader_path/../lib",
            "@executable_path/../Frameworks",
        ] {
            assert!(is_sanitary_rpath(kept), "{kept}");
        }
        for dropped in [
            "/opt/lib",
            "libs/",
            "./lib",
            "fake/@loader_path/x",
            "@rpath/x",
        ] {
            assert!(!is_sanitary_rpath(dropped), "{dropped}");
        }
    }

    #[test]
    fn loader_path_reference_walks_up_then_down() {
        assert_eq!(
            loader_path_reference("pkg/_blas.so", "pkg/.dylibs/libx.dylib"),
            "@loader_path/.dylibs/libx.dylib"
        );
        assert_eq!(
            loader_path_reference("pkg/sub/deep/_m.so", "pkg/.dylibs/libx.dylib"),
            "@loader_path/../../.dylibs/libx.dylib"
        );
        assert_eq!(
            loader_path_reference("pkg/.dylibs/liba.dylib", "pkg/.dylibs/libb.dylib"),
            "@loader_path/libb.dylib"
        );
        assert_eq!(
            loader_path_reference("_top.so", "pkg/.dylibs/libx.dylib"),
            "@loader_path/pkg/.dylibs/libx.dylib"
        );
    }
}
