//! Finding external libraries the way the target's dynamic loader would,
//! but only ever accepting files of the wheel's own architecture: on an
//! x86_64 host, an aarch64 wheel must never be given a host library.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::formats::elf::facts::{ElfClass, ElfFacts, Endianness};

/// The ABI a candidate library must have to be loadable next to the wheel's binaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Abi {
    pub machine: u16,
    pub is_64: bool,
    pub little_endian: bool,
}

impl Abi {
    pub fn of(facts: &ElfFacts) -> Abi {
        Abi {
            machine: facts.machine,
            is_64: facts.class == ElfClass::Elf64,
            little_endian: facts.endianness == Endianness::Little,
        }
    }
}

/// A library found on disk, already parsed.
#[derive(Debug, Clone)]
pub struct FoundLibrary {
    pub path: PathBuf,
    pub data: std::sync::Arc<Vec<u8>>,
    pub facts: std::sync::Arc<ElfFacts>,
}

/// Library folders in search order. `--lib-path` folders come first because
/// they are the user's explicit answer; then the loader's own order
/// (DT_RPATH when there is no DT_RUNPATH, LD_LIBRARY_PATH, DT_RUNPATH),
/// then the target sysroot's (or, for a native wheel, the host's) default folders.
pub struct LibrarySearch {
    abi: Abi,
    lib_paths: Vec<PathBuf>,
    env_paths: Vec<PathBuf>,
    default_paths: Vec<PathBuf>,
    cache: HashMap<(PathBuf, String), Option<FoundLibrary>>,
}

/// Debian multiarch folder names and cross-toolchain roots per e_machine.
fn multiarch_names(machine: u16) -> &'static [&'static str] {
    match machine {
        goblin::elf::header::EM_AARCH64 => &["aarch64-linux-gnu"],
        goblin::elf::header::EM_PPC64 => &["powerpc64le-linux-gnu"],
        goblin::elf::header::EM_X86_64 => &["x86_64-linux-gnu"],
        goblin::elf::header::EM_386 => &["i386-linux-gnu", "i686-linux-gnu"],
        goblin::elf::header::EM_S390 => &["s390x-linux-gnu"],
        goblin::elf::header::EM_ARM => &["arm-linux-gnueabihf"],
        _ => &[],
    }
}

fn default_folders(root: &Path, machine: u16) -> Vec<PathBuf> {
    let mut folders = Vec::new();
    for multiarch in multiarch_names(machine) {
        folders.push(root.join("lib").join(multiarch));
        folders.push(root.join("usr/lib").join(multiarch));
    }
    for plain in ["lib64", "usr/lib64", "lib", "usr/lib"] {
        folders.push(root.join(plain));
    }
    folders
}

impl LibrarySearch {
    pub fn new(abi: Abi, lib_paths: &[PathBuf], sysroot: Option<&Path>) -> LibrarySearch {
        let env_paths = std::env::var_os("LD_LIBRARY_PATH")
            .map(|value| {
                std::env::split_paths(&value)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let mut default_paths = Vec::new();
        if let Some(root) = sysroot {
            default_paths.extend(default_folders(root, abi.machine));
        }
        // Debian's cross packages (libc6-dev-arm64-cross, ...) install here.
        for multiarch in multiarch_names(abi.machine) {
            default_paths.push(Path::new("/usr").join(multiarch).join("lib"));
        }
        // The host's own folders: harmless for a foreign wheel because every
        // candidate's ABI is checked, and right for a native one.
        default_paths.extend(default_folders(Path::new("/"), abi.machine));
        LibrarySearch {
            abi,
            lib_paths: lib_paths.to_vec(),
            env_paths,
            default_paths,
            cache: HashMap::new(),
        }
    }

    /// Finds `name` for a binary whose loader-visible rpaths are given
    /// (already expanded, `$ORIGIN` replaced by the binary's folder).
    pub fn find(
        &mut self,
        name: &str,
        rpath: &[PathBuf],
        runpath: &[PathBuf],
    ) -> Option<FoundLibrary> {
        let mut folders: Vec<PathBuf> = self.lib_paths.clone();
        if runpath.is_empty() {
            folders.extend(rpath.iter().cloned());
        }
        folders.extend(self.env_paths.iter().cloned());
        folders.extend(runpath.iter().cloned());
        folders.extend(self.default_paths.iter().cloned());
        folders
            .into_iter()
            .find_map(|folder| self.candidate(&folder, name))
    }

    fn candidate(&mut self, folder: &Path, name: &str) -> Option<FoundLibrary> {
        let key = (folder.to_path_buf(), name.to_string());
        if let Some(known) = self.cache.get(&key) {
            return known.clone();
        }
        let found = self.load(&folder.join(name));
        self.cache.insert(key, found.clone());
        found
    }

    fn load(&self, path: &Path) -> Option<FoundLibrary> {
        let data = std::fs::read(path).ok()?;
        // A file of another architecture is skipped, as ld.so skips it.
        let facts = ElfFacts::parse(&data).ok()?;
        if Abi::of(&facts) != self.abi {
            tracing::debug!("skipping {} (other architecture)", path.display());
            return None;
        }
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        Some(FoundLibrary {
            path,
            data: data.into(),
            facts: facts.into(),
        })
    }
}

/// Expands `$ORIGIN` / `${ORIGIN}` in a host-side rpath entry.
pub fn expand_origin(entry: &str, origin: &Path) -> PathBuf {
    let origin = origin.to_string_lossy();
    PathBuf::from(
        entry
            .replace("${ORIGIN}", &origin)
            .replace("$ORIGIN", &origin),
    )
}
