//! A C++ standard library in place of zig's libc++, for a target whose users' C++ ABI
//! libc++ cannot give (`cxx_runtime` in config/targets.toml: GCC's libstdc++ with IBM
//! double-double `long double` on ppc64le). Debian's packages, unpacked once; their static
//! archives copied with every symbol hidden, so each extension carries the code it calls
//! and exports none of it, as zig's libc++ is linked elsewhere.

use std::path::{Path, PathBuf};

use super::ToolchainError;
use crate::formats::elf::visibility::hide_archive_definitions;
use crate::io_error::IoError;
use crate::support::host::{Cache, Network, cache_key};
use crate::support::sysroot::{self, LinuxArch, TreeSpec};
use crate::target::Target;

/// The packages are `Architecture: all` cross packages, indexed with the build machine's.
const BUILD_ARCH: LinuxArch = LinuxArch::X86_64;

/// What the archives' copies hide; part of their cache key, so a change is never mixed
/// with copies an older rule made.
const HIDDEN: &str = "global weak unique definitions";

/// What the wrappers compile and link C++ with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CxxLibrary {
    /// Header folders, in search order.
    pub include: Vec<PathBuf>,
    /// `-l` names and the hidden-symbol archive that stands for each.
    pub archives: Vec<(String, PathBuf)>,
    /// Shared libraries every link using the archives names.
    pub shared: Vec<PathBuf>,
    /// For the toolchain's description.
    pub name: String,
}

/// The library for `target`, unpacked and prepared on first use; `None` keeps zig's libc++.
pub fn cxx_library(
    cache: &Cache,
    target: &Target,
    network: &Network,
) -> Result<Option<CxxLibrary>, ToolchainError> {
    let Some(runtime) = &target.data().cxx_runtime else {
        return Ok(None);
    };
    let failed = |reason: String| ToolchainError::CxxRuntime {
        target: target.id().to_string(),
        name: runtime.name.clone(),
        reason,
    };
    let key = cache_key(&[
        runtime.release.as_bytes(),
        runtime.packages.join(" ").as_bytes(),
        HIDDEN.as_bytes(),
    ]);
    let spec = TreeSpec::release_packages(
        BUILD_ARCH,
        &runtime.release,
        runtime.packages.clone(),
        false,
        &format!("cxx-runtime-{}-{key}", target.id()),
        network,
    );
    let tree = sysroot::provision(cache.root(), &spec).map_err(|err| failed(err.to_string()))?;
    let root = tree.root();
    let existing = |relative: &String| {
        let path = root.join(relative);
        if path.exists() {
            Ok(path)
        } else {
            Err(failed(format!("its packages have no {relative}")))
        }
    };
    let include = runtime
        .include
        .iter()
        .map(existing)
        .collect::<Result<_, _>>()?;
    let shared = runtime
        .shared
        .iter()
        .map(existing)
        .collect::<Result<_, _>>()?;
    let folder = cache
        .toolchains()
        .join("cxx-runtime")
        .join(format!("{}-{key}", target.id()));
    let archives = runtime
        .archives
        .iter()
        .map(|(name, relative)| {
            let source = existing(relative)?;
            let hidden = folder.join(format!("lib{name}.a"));
            if !hidden.is_file() {
                write_hidden(&source, &hidden).map_err(failed)?;
            }
            Ok((name.clone(), hidden))
        })
        .collect::<Result<_, ToolchainError>>()?;
    Ok(Some(CxxLibrary {
        include,
        archives,
        shared,
        name: runtime.name.clone(),
    }))
}

/// Writes the copy of `source` with its definitions hidden through a temporary file
/// renamed into place, so a concurrent build never links half an archive.
fn write_hidden(source: &Path, hidden: &Path) -> Result<(), String> {
    let data = std::fs::read(source)
        .map_err(|err| IoError::new("read", source.to_path_buf(), err).to_string())?;
    let (edited, _) =
        hide_archive_definitions(&data).map_err(|err| format!("{}: {err}", source.display()))?;
    let folder = hidden.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(folder)
        .map_err(|err| IoError::new("create", folder.to_path_buf(), err).to_string())?;
    let mut partial = tempfile::NamedTempFile::new_in(folder)
        .map_err(|err| IoError::new("create a file in", folder.to_path_buf(), err).to_string())?;
    std::io::Write::write_all(&mut partial, &edited)
        .map_err(|err| IoError::new("write", partial.path().to_path_buf(), err).to_string())?;
    partial.persist(hidden).map_err(|err| {
        IoError::new("move into place", hidden.to_path_buf(), err.error).to_string()
    })?;
    Ok(())
}
