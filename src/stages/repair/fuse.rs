//! Fusing two thin macOS wheels of one build (an x86_64 and an arm64 one) into one whose
//! every Mach-O holds both slices: delocate-merge's job, stricter. Both wheels must hold
//! the same files; files that are not Mach-O must be identical; each pair of binaries is
//! fused with [`crate::formats::macho::fuse_slices`] and keeps its slices' signatures (re-signed ad
//! hoc where a slice has none). The tag follows delocate's rules: per architecture the
//! newer of its tag and its binaries' minos; `macosx_<x86_64>_universal2` when arm64 needs
//! no more than 11.0 or the same as x86_64, else one tag per architecture. An SBOM of
//! either wheel is carried over with both wheels' components and the fused files' hashes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::analysis::facts::macos::{MacosTag, arm64_floor, tag_version};
use crate::formats::macho::{
    Arch, MachOError, MachOFile, SignatureStatus, Version, fuse_slices, is_macho, sign_adhoc,
    verify_signature,
};
use crate::formats::sbom::{Bom, is_sbom_path};
use crate::formats::wheel::{
    Contents, PlatformTag, WheelArchive, WheelError, WriteOptions, join_platform_tags, join_tags,
    write_wheel,
};

#[derive(Debug, thiserror::Error)]
pub enum FuseError {
    #[error(
        "{first} and {second} are not two builds of one release ({what}); fuse wheels of the same project, version, Python and ABI tags"
    )]
    Mismatch {
        first: String,
        second: String,
        what: String,
    },
    #[error("{wheel} is not a macOS wheel (platform {tags}); fuse two thin macOS wheels")]
    NotMacos { wheel: String, tags: String },
    #[error(
        "{file} is in {wheel} only: both wheels must hold the same files (a binary in one only would lack the other's slice)"
    )]
    OnlyIn { file: String, wheel: String },
    #[error("{file} differs between the wheels and is not a Mach-O file: only binaries may differ")]
    Differs { file: String },
    #[error("{file}: cannot fuse its slices: {source}")]
    Binary { file: String, source: MachOError },
    #[error(
        "{file} holds only {arches} after fusing; a universal2 wheel needs an x86_64 and an arm64 slice in every binary"
    )]
    MissingSlice { file: String, arches: String },
    #[error("{file}: its SBOM does not parse ({detail}); rebuild the wheel")]
    Sbom { file: String, detail: String },
    #[error("{0}")]
    Wheel(#[from] WheelError),
    #[error("cannot create {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What a fuse produced.
#[derive(Debug)]
pub struct Fused {
    pub output: PathBuf,
    pub platform_tags: Vec<PlatformTag>,
    /// Wheel paths of the binaries that were fused.
    pub binaries: Vec<String>,
}

/// Fuses `first` and `second` into `out_dir` (written atomically; neither input changes).
pub fn fuse_wheels(
    first: &WheelArchive,
    second: &WheelArchive,
    out_dir: &Path,
    epoch: Option<u64>,
) -> Result<Fused, FuseError> {
    check_same_release(first, second)?;
    let dist_info = first.dist_info_dir().to_string();
    let skipped = |name: &str| {
        name == format!("{dist_info}/RECORD")
            || name == format!("{dist_info}/WHEEL")
            || name.starts_with(&format!("{dist_info}/RECORD."))
            || is_sbom_path(&dist_info, name)
    };
    let names = |wheel: &WheelArchive| -> BTreeSet<String> {
        wheel
            .entries()
            .iter()
            .map(|entry| entry.name.clone())
            .filter(|name| !name.ends_with('/') && !skipped(name))
            .collect()
    };
    let (first_names, second_names) = (names(first), names(second));
    for (only, wheel) in [
        (first_names.difference(&second_names), first),
        (second_names.difference(&first_names), second),
    ] {
        if let Some(file) = only.into_iter().next() {
            return Err(FuseError::OnlyIn {
                file: file.clone(),
                wheel: wheel.name().file_name(),
            });
        }
    }

    let mut entries: Vec<(String, Contents<'_>)> = Vec::new();
    let mut fused_bytes: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut minos: Vec<(Arch, Version)> = Vec::new();
    for name in &first_names {
        let (a, b) = (first.read(name)?, second.read(name)?);
        let binary = is_macho(&a);
        let data = if a == b {
            if !binary {
                entries.push((name.clone(), Contents::Raw(first.raw_entry(name)?)));
                continue;
            }
            a
        } else if binary && is_macho(&b) {
            fuse_binary(name, &a, &b)?
        } else {
            return Err(FuseError::Differs { file: name.clone() });
        };
        let file = MachOFile::parse(&data).map_err(|source| FuseError::Binary {
            file: name.clone(),
            source,
        })?;
        let arches: Vec<Arch> = file.slices.iter().map(|slice| slice.arch).collect();
        if !(arches.contains(&Arch::X86_64) && arches.contains(&Arch::Arm64)) {
            let names: Vec<String> = arches.iter().map(Arch::to_string).collect();
            return Err(FuseError::MissingSlice {
                file: name.clone(),
                arches: names.join(" and "),
            });
        }
        minos.extend(file.slices.iter().filter_map(|slice| {
            let target = slice.deployment_target.filter(|t| t.is_macos())?;
            Some((slice.arch, target.minos))
        }));
        let mode = first
            .entry(name)
            .and_then(|entry| entry.unix_mode)
            .unwrap_or(0o755);
        entries.push((
            name.clone(),
            Contents::Bytes {
                data: data.clone(),
                mode,
            },
        ));
        fused_bytes.insert(name.clone(), data);
    }

    let platform_tags = fused_tags(first, second, &minos)?;
    let new_name = first.name().with_platforms(platform_tags.clone());
    let mut metadata = first.wheel_metadata().clone();
    metadata.replace_tags(&new_name.tags());
    entries.push((
        format!("{dist_info}/WHEEL"),
        Contents::Bytes {
            data: metadata.to_string().into_bytes(),
            mode: 0o644,
        },
    ));
    for (path, bom) in merged_sboms(first, second, &dist_info, &fused_bytes)? {
        entries.push((
            path,
            Contents::Bytes {
                data: bom,
                mode: 0o644,
            },
        ));
    }
    std::fs::create_dir_all(out_dir).map_err(|source| FuseError::Io {
        path: out_dir.to_path_buf(),
        source,
    })?;
    let output = write_wheel(out_dir, &new_name, entries, &WriteOptions { epoch })?;
    Ok(Fused {
        output,
        platform_tags,
        binaries: fused_bytes.into_keys().collect(),
    })
}

fn check_same_release(first: &WheelArchive, second: &WheelArchive) -> Result<(), FuseError> {
    let (a, b) = (first.name(), second.name());
    for wheel in [a, b] {
        if !wheel.platform.iter().all(|tag| tag.macos().is_some()) {
            return Err(FuseError::NotMacos {
                wheel: wheel.file_name(),
                tags: join_platform_tags(&wheel.platform),
            });
        }
    }
    let differs = if a.distribution != b.distribution {
        Some(format!("{} and {}", a.distribution, b.distribution))
    } else if a.version != b.version || a.build != b.build {
        Some(format!("version {} and {}", a.version, b.version))
    } else if a.python != b.python || a.abi != b.abi {
        Some(format!(
            "{}-{} and {}-{}",
            join_tags(&a.python),
            join_tags(&a.abi),
            join_tags(&b.python),
            join_tags(&b.abi)
        ))
    } else {
        None
    };
    match differs {
        Some(what) => Err(FuseError::Mismatch {
            first: a.file_name(),
            second: b.file_name(),
            what,
        }),
        None => Ok(()),
    }
}

/// The two binaries as one universal file whose every slice carries a valid signature.
fn fuse_binary(name: &str, a: &[u8], b: &[u8]) -> Result<Vec<u8>, FuseError> {
    let error = |source| FuseError::Binary {
        file: name.to_string(),
        source,
    };
    let fused = fuse_slices(&[a, b]).map_err(error)?;
    let all_signed = MachOFile::parse(&fused)
        .map_err(error)?
        .slices
        .iter()
        .all(|slice| matches!(verify_signature(slice), SignatureStatus::Valid { .. }));
    if all_signed {
        return Ok(fused);
    }
    let file_name = name.rsplit('/').next().unwrap_or(name);
    sign_adhoc(&fused, file_name).map_err(error)
}

/// The fused wheel's tags, or why the two wheels do not make an x86_64 + arm64 pair.
fn fused_tags(
    first: &WheelArchive,
    second: &WheelArchive,
    minos: &[(Arch, Version)],
) -> Result<Vec<PlatformTag>, FuseError> {
    let tags: Vec<PlatformTag> = first
        .name()
        .platform
        .iter()
        .chain(&second.name().platform)
        .cloned()
        .collect();
    packed_tags(&tags, minos).ok_or_else(|| FuseError::Mismatch {
        first: first.name().file_name(),
        second: second.name().file_name(),
        what: "together they do not tag an x86_64 and an arm64 build".into(),
    })
}

/// delocate's tag of a fused wheel (`_pack_architectures`): per architecture the newer of
/// what the input tags say and what its slices need; `None` without both architectures.
fn packed_tags(tags: &[PlatformTag], minos: &[(Arch, Version)]) -> Option<Vec<PlatformTag>> {
    let mut floor: BTreeMap<&str, Version> = BTreeMap::new();
    for tag in tags {
        let Some(tag) = MacosTag::parse(tag) else {
            continue;
        };
        for (arch, name) in [(Arch::X86_64, "x86_64"), (Arch::Arm64, "arm64")] {
            if tag.covers(arch) {
                let version = floor.entry(name).or_insert(Version::new(0, 0, 0));
                *version = (*version).max(tag.floor_for(arch));
            }
        }
    }
    for &(arch, version) in minos {
        let name = if arch == Arch::Arm64 {
            "arm64"
        } else {
            "x86_64"
        };
        let entry = floor.entry(name).or_insert(Version::new(0, 0, 0));
        *entry = (*entry).max(tag_version(version));
    }
    let (Some(&intel), Some(&arm)) = (floor.get("x86_64"), floor.get("arm64")) else {
        return None;
    };
    let render = |version: Version, arch: &str| {
        MacosTag {
            version,
            arch: arch.into(),
        }
        .render()
    };
    if arm == intel || arm <= arm64_floor() {
        Some(vec![render(intel, "universal2")])
    } else {
        Some(vec![render(intel, "x86_64"), render(arm, "arm64")])
    }
}

/// Each SBOM of either wheel, with the other wheel's components of the same document added
/// and every component located at a fused file given that file's SHA-256.
fn merged_sboms(
    first: &WheelArchive,
    second: &WheelArchive,
    dist_info: &str,
    fused: &BTreeMap<String, Vec<u8>>,
) -> Result<Vec<(String, Vec<u8>)>, FuseError> {
    let sbom_names = |wheel: &WheelArchive| -> BTreeSet<String> {
        wheel
            .entries()
            .iter()
            .map(|entry| entry.name.clone())
            .filter(|name| is_sbom_path(dist_info, name))
            .collect()
    };
    let mut names = sbom_names(first);
    names.extend(sbom_names(second));
    let parse = |wheel: &WheelArchive, name: &str| -> Result<Option<Bom>, FuseError> {
        if wheel.entry(name).is_none() {
            return Ok(None);
        }
        Bom::parse(&wheel.read(name)?)
            .map(Some)
            .map_err(|detail| FuseError::Sbom {
                file: name.to_string(),
                detail,
            })
    };
    let mut out = Vec::new();
    for name in names {
        let (a, b) = (parse(first, &name)?, parse(second, &name)?);
        let mut bom = match (a, b) {
            (Some(mut a), Some(b)) => {
                // A component's bom-ref is its path in the wheel, which a fused file
                // keeps: the first wheel's entry stands for it, with the new hash.
                for component in b.components {
                    if !a.components.iter().any(|c| c.bom_ref == component.bom_ref) {
                        a.components.push(component);
                    }
                }
                for dependency in b.dependencies {
                    match a
                        .dependencies
                        .iter_mut()
                        .find(|d| d.reference == dependency.reference)
                    {
                        Some(known) => {
                            for to in dependency.depends_on {
                                if !known.depends_on.contains(&to) {
                                    known.depends_on.push(to);
                                }
                            }
                        }
                        None => a.dependencies.push(dependency),
                    }
                }
                a
            }
            (Some(only), None) | (None, Some(only)) => only,
            (None, None) => continue,
        };
        for component in &mut bom.components {
            let Some(location) = component.locations().next().map(str::to_string) else {
                continue;
            };
            if let Some(bytes) = fused.get(&location) {
                let digest: String = Sha256::digest(bytes)
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                for hash in &mut component.hashes {
                    if hash.alg == crate::formats::sbom::document::SHA256 {
                        hash.content = digest.clone();
                    }
                }
            }
        }
        bom.serial_number = None;
        // As the repair numbers its SBOM: from the document's own bytes.
        bom.serial_number = Some(crate::formats::sbom::content_serial_number(&bom.to_json()));
        out.push((name, bom.to_json()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(names: &[&str]) -> Vec<PlatformTag> {
        names.iter().map(|name| PlatformTag::parse(name)).collect()
    }

    #[test]
    fn universal2_takes_the_x86_64_floor_while_arm64_needs_only_eleven() {
        let minos = [
            (Arch::X86_64, Version::new(10, 13, 0)),
            (Arch::Arm64, Version::new(11, 0, 0)),
        ];
        let thin = tags(&["macosx_10_13_x86_64", "macosx_11_0_arm64"]);
        assert_eq!(
            packed_tags(&thin, &minos).unwrap(),
            ["macosx_10_13_universal2"]
        );
    }

    #[test]
    fn arm64_needing_more_than_eleven_and_more_than_x86_64_splits_the_tag() {
        let minos = [
            (Arch::X86_64, Version::new(10, 13, 0)),
            (Arch::Arm64, Version::new(12, 1, 0)),
        ];
        let thin = tags(&["macosx_10_13_x86_64", "macosx_11_0_arm64"]);
        assert_eq!(
            packed_tags(&thin, &minos).unwrap(),
            ["macosx_10_13_x86_64", "macosx_12_0_arm64"]
        );
        let same = [
            (Arch::X86_64, Version::new(12, 0, 0)),
            (Arch::Arm64, Version::new(12, 0, 0)),
        ];
        assert_eq!(
            packed_tags(&thin, &same).unwrap(),
            ["macosx_12_0_universal2"]
        );
    }

    #[test]
    fn a_slice_newer_than_its_tag_raises_that_architecture() {
        let minos = [(Arch::X86_64, Version::new(10, 15, 0))];
        let thin = tags(&["macosx_10_9_x86_64", "macosx_11_0_arm64"]);
        assert_eq!(
            packed_tags(&thin, &minos).unwrap(),
            ["macosx_10_15_universal2"]
        );
        assert_eq!(packed_tags(&tags(&["macosx_10_9_x86_64"]), &minos), None);
    }
}
