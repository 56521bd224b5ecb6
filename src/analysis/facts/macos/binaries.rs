//! The Mach-O files of a wheel (and libraries found on the host), parsed
//! once into owned facts so the resolution graph can outlive the bytes'
//! borrows.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use rayon::prelude::*;

use crate::analysis::facts::layout;
use crate::formats::macho::{
    Arch, Dependency, DeploymentTarget, FileType, MachOError, MachOFile, SignatureStatus, is_macho,
    verify_signature,
};
use crate::formats::wheel::WheelArchive;

/// Where a binary's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A wheel entry, by zip entry name.
    Wheel { entry: String },
    /// A library found on the host (canonical path), to be vendored.
    Host { source: PathBuf },
}

/// One Mach-O file with the facts resolution and repair need.
#[derive(Debug, Clone)]
pub struct MachOBinary {
    /// For wheel files: the install path (what `@loader_path` sees). For
    /// host files: the file name, until the repair gives it a wheel path.
    pub path: String,
    pub origin: Origin,
    pub data: Arc<Vec<u8>>,
    /// A universal file (fat header), even with a single slice.
    pub is_fat: bool,
    pub slices: Vec<SliceFacts>,
}

/// Per-architecture facts of one slice.
#[derive(Debug, Clone)]
pub struct SliceFacts {
    pub arch: Arch,
    pub file_type: FileType,
    pub install_id: Option<String>,
    pub dependencies: Vec<Dependency>,
    pub rpaths: Vec<String>,
    pub deployment_target: Option<DeploymentTarget>,
    pub header_padding: u64,
    pub signature: SignatureStatus,
}

impl MachOBinary {
    pub fn parse(path: String, origin: Origin, data: Vec<u8>) -> Result<MachOBinary, MachOError> {
        let parsed = MachOFile::parse(&data)?;
        let slices = parsed
            .slices
            .iter()
            .map(|slice| SliceFacts {
                arch: slice.arch,
                file_type: slice.file_type,
                install_id: slice.install_id.clone(),
                dependencies: slice.dependencies.clone(),
                rpaths: slice.rpaths.clone(),
                deployment_target: slice.deployment_target,
                header_padding: slice.header_padding,
                signature: verify_signature(slice),
            })
            .collect();
        let is_fat = parsed.is_fat;
        Ok(MachOBinary {
            path,
            origin,
            data: Arc::new(data),
            is_fat,
            slices,
        })
    }

    /// Dependencies of every slice, each install name once, in load-command
    /// order of the first slice that names it.
    pub fn dependencies(&self) -> Vec<Dependency> {
        let mut all: Vec<Dependency> = Vec::new();
        for dependency in self.slices.iter().flat_map(|slice| &slice.dependencies) {
            if !all
                .iter()
                .any(|known| known.install_name == dependency.install_name)
            {
                all.push(dependency.clone());
            }
        }
        all
    }

    /// LC_RPATH entries of every slice, each once, in order.
    pub fn rpaths(&self) -> Vec<String> {
        let mut all: Vec<String> = Vec::new();
        for rpath in self.slices.iter().flat_map(|slice| &slice.rpaths) {
            if !all.contains(rpath) {
                all.push(rpath.clone());
            }
        }
        all
    }

    pub fn install_id(&self) -> Option<&str> {
        self.slices
            .iter()
            .find_map(|slice| slice.install_id.as_deref())
    }

    pub fn is_executable(&self) -> bool {
        self.slices
            .iter()
            .any(|slice| slice.file_type == FileType::Execute)
    }

    pub fn arches(&self) -> Vec<Arch> {
        self.slices.iter().map(|slice| slice.arch).collect()
    }

    pub fn file_name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }

    pub fn is_grafted(&self) -> bool {
        matches!(self.origin, Origin::Host { .. })
    }
}

/// Every Mach-O file of the wheel, parsed in parallel, in entry order.
pub fn wheel_binaries(wheel: &WheelArchive) -> Result<Vec<MachOBinary>> {
    let parsed: Vec<Option<MachOBinary>> = wheel
        .entries()
        .par_iter()
        .map(|entry| -> Result<Option<MachOBinary>> {
            let data = wheel.read(&entry.name)?;
            if !is_macho(&data) {
                return Ok(None);
            }
            let path = layout::install_path(&entry.name).to_string();
            let origin = Origin::Wheel {
                entry: entry.name.clone(),
            };
            MachOBinary::parse(path, origin, data)
                .map(Some)
                .with_context(|| format!("{}: {}", wheel.path().display(), entry.name))
        })
        .collect::<Result<_>>()?;
    Ok(parsed.into_iter().flatten().collect())
}
