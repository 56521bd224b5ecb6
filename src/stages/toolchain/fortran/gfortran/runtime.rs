//! gfortran's runtime, which a wheel vendors, and where it comes from: the libgfortran
//! cibuildwheel's images give a build, taken from the index's scipy-openblas32 wheels that
//! vendor exactly that build; where the index has no such wheel for an architecture,
//! Debian's own runtime packages of the compiler's release, whose glibc floor is then the
//! row's (config/fortran-toolchain.toml says which and why).

use std::path::{Path, PathBuf};

use super::super::config;
use super::FortranTarget;
use crate::formats::elf::edit::{ElfEdits, apply_edits};
use crate::io_error::IoError;
use crate::support::host::run_folder::staging_in;
use crate::support::host::{Cache, Network, cache_key, package_index};
use crate::support::sysroot::{self, LinuxArch, TreeSpec};
use crate::target::OsVersion;

/// The runtime's libraries as gfortran links them, whatever the wheel named them.
pub(super) const LIBGFORTRAN: &str = "libgfortran.so.5";
const LIBQUADMATH: &str = "libquadmath.so.0";
/// GCC's support library, which a musl runtime links by name: musl systems may lack it, so
/// the runtime's wheel vendors it and so does the repair.
const LIBGCC_S: &str = "libgcc_s.so.1";

/// Where a row's runtime comes from (config/fortran-toolchain.toml's `runtime_wheel` and
/// `runtime_sha256`, or its `runtime_debian`).
pub(super) enum RuntimeSource<'a> {
    Wheel(PinnedWheel),
    Debian(&'a DebianRuntime),
}

/// A wheel of `runtime_project`, pinned by SHA-256.
pub(super) struct PinnedWheel {
    pub file: String,
    pub sha256: String,
}

/// Debian's runtime packages for the row's architecture, from the compiler's release.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DebianRuntime {
    /// `libgfortran5`, with `libquadmath0` where the architecture has it.
    packages: Vec<String>,
    /// The glibc they need: the newest `GLIBC_` version their symbols name (measured).
    glibc: String,
}

impl FortranTarget {
    /// The row's runtime source: a wheel or Debian's packages, never both.
    pub(super) fn runtime(&self) -> Result<RuntimeSource<'_>, String> {
        match (
            &self.runtime_wheel,
            &self.runtime_sha256,
            &self.runtime_debian,
        ) {
            (Some(file), Some(sha256), None) => Ok(RuntimeSource::Wheel(PinnedWheel {
                file: file.clone(),
                sha256: sha256.clone(),
            })),
            (None, None, Some(debian)) => Ok(RuntimeSource::Debian(debian)),
            _ => Err(format!(
                "config/fortran-toolchain.toml's {} row names its runtime as neither a pinned wheel nor Debian's packages",
                self.debian_arch
            )),
        }
    }
}

/// The C library the runtime needs: its wheel's first tag of the row's C library
/// (`..._manylinux_2_27_aarch64.manylinux_2_28_aarch64.whl`, `..._musllinux_1_2_aarch64.whl`),
/// or the glibc the row says Debian's packages need.
pub(super) fn runtime_floor(row: &FortranTarget) -> Result<OsVersion, String> {
    let wheel = match row.runtime()? {
        RuntimeSource::Wheel(wheel) => wheel,
        RuntimeSource::Debian(debian) => {
            return OsVersion::parse(&debian.glibc)
                .ok_or_else(|| format!("{} is not a glibc version", debian.glibc));
        }
    };
    let stem = format!("{}_", row.libc.identifier_prefix());
    let tag = wheel.file.split(['-', '.']).find_map(|part| {
        let mut numbers = part.strip_prefix(&stem)?.split('_');
        Some(OsVersion::new(
            numbers.next()?.parse().ok()?,
            numbers.next()?.parse().ok()?,
        ))
    });
    tag.ok_or_else(|| format!("the runtime wheel {} names no {stem}X_Y tag", wheel.file))
}

/// The runtime as a library's record and the log name it.
pub(super) fn describe(row: &FortranTarget) -> Result<String, String> {
    Ok(match row.runtime()? {
        RuntimeSource::Wheel(wheel) => {
            format!(
                "runtime from {} (sha256 {})",
                wheel.file,
                &wheel.sha256[..12]
            )
        }
        RuntimeSource::Debian(debian) => format!(
            "runtime Debian {}'s {} for {}",
            config().debian_release,
            debian.packages.join(" "),
            row.debian_arch
        ),
    })
}

/// The folder holding the runtime as gfortran links it (`libgfortran.so` for the link
/// beside the versioned libraries), made once.
pub(super) fn runtime_dir(
    cache: &Cache,
    row: &FortranTarget,
    arch: LinuxArch,
    network: &Network,
) -> Result<PathBuf, String> {
    match row.runtime()? {
        RuntimeSource::Wheel(wheel) => wheel_runtime_dir(cache, row, &wheel, network),
        RuntimeSource::Debian(debian) => debian_runtime_dir(cache, arch, debian, network),
    }
}

/// Debian's runtime packages unpacked as a tree of the cache (verified against Debian's
/// signed indices like every Debian tree, and announced before the download); the folder
/// is the tree's library folder, with the link-time `libgfortran.so` that the `-dev`
/// package would add. The tree's manifest tells the SBOM which package each file is.
fn debian_runtime_dir(
    cache: &Cache,
    arch: LinuxArch,
    debian: &DebianRuntime,
    network: &Network,
) -> Result<PathBuf, String> {
    let release = &config().debian_release;
    let name = format!(
        "fortran-runtime-{}-{release}-{}",
        arch.debian(),
        cache_key(&[debian.packages.join(" ").as_bytes()])
    );
    let spec = TreeSpec::release_packages(
        arch,
        release,
        debian.packages.clone(),
        false,
        &name,
        network,
    );
    let tree = sysroot::provision(cache.root(), &spec).map_err(|err| {
        format!(
            "cannot get Debian's {} for {} from {release}: {err}",
            debian.packages.join(" "),
            arch.debian()
        )
    })?;
    let folder = arch
        .debian_multiarch()
        .iter()
        .map(|multiarch| tree.root().join("usr/lib").join(multiarch))
        .find(|folder| folder.join(LIBGFORTRAN).exists())
        .ok_or_else(|| {
            format!(
                "Debian's {} for {} hold no {LIBGFORTRAN}",
                debian.packages.join(" "),
                arch.debian()
            )
        })?;
    let link = folder.join("libgfortran.so");
    if std::fs::symlink_metadata(&link).is_err() {
        std::os::unix::fs::symlink(LIBGFORTRAN, &link)
            .map_err(|err| IoError::new("link", link, err).to_string())?;
    }
    Ok(folder)
}

/// The folder holding the runtime as gfortran links it (`libgfortran.so` for the link,
/// `libgfortran.so.5` and, where the wheel has it, `libquadmath.so.0`), made once from
/// the pinned wheel.
fn wheel_runtime_dir(
    cache: &Cache,
    row: &FortranTarget,
    wheel: &PinnedWheel,
    network: &Network,
) -> Result<PathBuf, String> {
    let folder = cache.toolchains().join("fortran").join(format!(
        "runtime-{}-{}",
        row.debian_arch,
        &wheel.sha256[..12]
    ));
    if folder.join(LIBGFORTRAN).is_file() {
        return Ok(folder);
    }
    let parent = cache.toolchains().join("fortran");
    std::fs::create_dir_all(&parent)
        .map_err(|err| IoError::new("create", parent.clone(), err).to_string())?;
    let scratch = staging_in(&parent, ".runtime-")
        .map_err(|err| IoError::new("create a folder in", parent.clone(), err).to_string())?;
    let file = scratch.path().join(&wheel.file);
    fetch_wheel(row, wheel, &file, network)?;
    let staged = scratch.path().join("runtime");
    extract_runtime(&file, &staged)?;
    match std::fs::rename(&staged, &folder) {
        Ok(()) => Ok(folder),
        // Another build made it first: theirs is the same bytes.
        Err(_) if folder.join(LIBGFORTRAN).is_file() => Ok(folder),
        Err(err) => Err(IoError::new("move into place", folder, err).to_string()),
    }
}

/// Downloads the pinned wheel, refusing it unless the index publishes the pinned SHA-256
/// and the bytes have it.
fn fetch_wheel(
    row: &FortranTarget,
    wheel: &PinnedWheel,
    destination: &Path,
    network: &Network,
) -> Result<(), String> {
    tracing::info!(
        "downloading the {} Fortran runtime for {}: {} (sha256 {})",
        row.libc.name(),
        row.debian_arch,
        wheel.file,
        wheel.sha256
    );
    package_index::download_pinned(
        &config().runtime_project,
        &wheel.file,
        &wheel.sha256,
        destination,
        network,
    )
}

/// Writes the wheel's `libgfortran-<hash>.so.5*`, `libquadmath-<hash>.so.0*` and
/// `libgcc_s-<hash>.so.1` (musl's wheels) into `to`
/// under the names gfortran links (their SONAMEs and the reference between them renamed
/// back), with `libgfortran.so` for the linker.
fn extract_runtime(wheel: &Path, to: &Path) -> Result<(), String> {
    let file = std::fs::File::open(wheel)
        .map_err(|err| IoError::new("open", wheel.to_path_buf(), err).to_string())?;
    let mut archive = zip::ZipArchive::new(file)
        .map_err(|err| format!("{} is not a wheel: {err}", wheel.display()))?;
    let mut members: Vec<(String, &str, Vec<u8>)> = Vec::new();
    for index in 0..archive.len() {
        let mut entry = archive
            .by_index(index)
            .map_err(|err| format!("cannot read {}: {err}", wheel.display()))?;
        let name = entry
            .name()
            .map_err(|err| format!("cannot read {}: {err}", wheel.display()))?
            .into_owned();
        let base = name.rsplit('/').next().unwrap_or("").to_string();
        let wanted = if base.starts_with("libgfortran") && base.contains(".so.5") {
            LIBGFORTRAN
        } else if base.starts_with("libquadmath") && base.contains(".so.0") {
            LIBQUADMATH
        } else if base.starts_with("libgcc_s") && base.contains(".so.1") {
            LIBGCC_S
        } else {
            continue;
        };
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut data)
            .map_err(|err| format!("cannot read {base} in {}: {err}", wheel.display()))?;
        members.push((base, wanted, data));
    }
    if !members.iter().any(|(_, wanted, _)| *wanted == LIBGFORTRAN) {
        return Err(format!("{} holds no libgfortran", wheel.display()));
    }
    let renames: std::collections::BTreeMap<String, String> = members
        .iter()
        .map(|(base, wanted, _)| (base.clone(), wanted.to_string()))
        .collect();
    std::fs::create_dir_all(to)
        .map_err(|err| IoError::new("create", to.to_path_buf(), err).to_string())?;
    for (base, wanted, data) in &members {
        let edits = ElfEdits {
            soname: Some(wanted.to_string()),
            replace_needed: renames.clone(),
            ..ElfEdits::default()
        };
        let edited =
            apply_edits(data, &edits).map_err(|err| format!("cannot rename {base}: {err}"))?;
        let path = to.join(wanted);
        std::fs::write(&path, edited)
            .map_err(|err| IoError::new("write", path.clone(), err).to_string())?;
    }
    record_origin(to, wheel, &members)?;
    let link = to.join("libgfortran.so");
    std::os::unix::fs::symlink(LIBGFORTRAN, &link)
        .map_err(|err| IoError::new("link", link, err).to_string())
}

/// The distribution the files came from, as an installed wheel records it (one
/// `*.dist-info` per file, for their licences differ from the distribution's own), so the
/// SBOM of a wheel that vendors them names the wheel and the licence.
fn record_origin(
    to: &Path,
    wheel: &Path,
    members: &[(String, &str, Vec<u8>)],
) -> Result<(), String> {
    let file_name = wheel.file_name().unwrap_or_default().to_string_lossy();
    let version = file_name.split('-').nth(1).unwrap_or("0");
    for (_, wanted, _) in members {
        let licence = if *wanted == LIBQUADMATH {
            "LGPL-2.1-or-later"
        } else {
            "GPL-3.0-or-later WITH GCC-exception-3.1"
        };
        let stem = wanted.split('.').next().unwrap_or(wanted);
        let folder = to.join(format!("{stem}-{version}.dist-info"));
        std::fs::create_dir_all(&folder)
            .map_err(|err| IoError::new("create", folder.clone(), err).to_string())?;
        let metadata = format!(
            "Metadata-Version: 2.4\nName: {}\nVersion: {version}\nLicense-Expression: {licence}\n",
            config().runtime_project
        );
        for (file, text) in [("METADATA", metadata), ("RECORD", format!("{wanted},,\n"))] {
            let path = folder.join(file);
            std::fs::write(&path, text)
                .map_err(|err| IoError::new("write", path.clone(), err).to_string())?;
        }
    }
    Ok(())
}
