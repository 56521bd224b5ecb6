//! Finding external libraries the way the target's dynamic loader would,
//! but only ever accepting files of the wheel's own architecture: on an
//! x86_64 host, an aarch64 wheel must never be given a host library.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::formats::elf::facts::{ElfClass, ElfFacts, Endianness};
use crate::target::LinuxArch;

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

impl Abi {
    /// The Debian multiarch folder names (and cross-toolchain roots) of the architecture
    /// with this ABI, from `config/targets.toml`; none for one crosswheel does not know.
    fn multiarch_names(self) -> &'static [String] {
        LinuxArch::of_elf(self.machine, self.is_64, self.little_endian)
            .map_or(&[], LinuxArch::debian_multiarch)
    }
}

fn default_folders(root: &Path, abi: Abi) -> Vec<PathBuf> {
    let mut folders = Vec::new();
    for multiarch in abi.multiarch_names() {
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
            default_paths.extend(default_folders(root, abi));
        }
        // Debian's cross packages (libc6-dev-arm64-cross, ...) install here.
        for multiarch in abi.multiarch_names() {
            default_paths.push(Path::new("/usr").join(multiarch).join("lib"));
        }
        // The host's own folders: harmless for a foreign wheel because every
        // candidate's ABI is checked, and right for a native one.
        default_paths.extend(default_folders(Path::new("/"), abi));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The ELF header of a shared object of `arch`, with no program or section headers:
    /// all that [`ElfFacts::parse`] and the search's architecture check read.
    fn shared_object(arch: LinuxArch) -> Vec<u8> {
        let [class, data] = arch.elf_ident();
        let half = |value: u16| match arch.big_endian() {
            true => value.to_be_bytes(),
            false => value.to_le_bytes(),
        };
        let word = |value: u32| match arch.big_endian() {
            true => value.to_be_bytes(),
            false => value.to_le_bytes(),
        };
        // e_ehsize, e_phentsize, e_shentsize; where e_flags and e_ehsize sit.
        let (sizes, flags_at) = match arch.is_32_bit() {
            true => ([52, 32, 40], 36),
            false => ([64, 56, 64], 48),
        };
        let mut header = vec![0u8; sizes[0] as usize];
        header[..7].copy_from_slice(&[0x7f, b'E', b'L', b'F', class, data, 1]);
        header[16..18].copy_from_slice(&half(3)); // ET_DYN
        header[18..20].copy_from_slice(&arch.elf_machine_bytes());
        header[20..24].copy_from_slice(&word(1));
        // armhf: EABI version 5 with the hard-float ABI, as Debian's libraries say.
        let flags = if arch == LinuxArch::Armv7l {
            0x0500_0400
        } else {
            0
        };
        header[flags_at..flags_at + 4].copy_from_slice(&word(flags));
        header[flags_at + 4..flags_at + 6].copy_from_slice(&half(sizes[0]));
        header[flags_at + 6..flags_at + 8].copy_from_slice(&half(sizes[1]));
        header[flags_at + 10..flags_at + 12].copy_from_slice(&half(sizes[2]));
        header
    }

    fn abi(arch: LinuxArch) -> Abi {
        Abi::of(&ElfFacts::parse(&shared_object(arch)).expect("a valid ELF header"))
    }

    fn put(path: &Path, bytes: &[u8]) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    #[test]
    fn a_riscv64_library_is_found_in_the_target_trees_multiarch_folder() {
        let tree = tempfile::tempdir().unwrap();
        let library = tree.path().join("usr/lib/riscv64-linux-gnu/libfoo.so.1");
        put(&library, &shared_object(LinuxArch::Riscv64));
        // Searched first, but of another architecture: skipped, as ld.so skips it.
        let decoy = tree.path().join("lib/riscv64-linux-gnu/libfoo.so.1");
        put(&decoy, &shared_object(LinuxArch::Aarch64));

        let mut search = LibrarySearch::new(abi(LinuxArch::Riscv64), &[], Some(tree.path()));
        let found = search
            .find("libfoo.so.1", &[], &[])
            .expect("riscv64's multiarch folder is searched");
        assert_eq!(found.path, std::fs::canonicalize(&library).unwrap());
        assert_eq!(found.facts.machine, LinuxArch::Riscv64.elf_machine());
    }

    #[test]
    fn every_architectures_library_is_found_in_its_debian_multiarch_folders() {
        for arch in LinuxArch::ALL {
            for multiarch in arch.debian_multiarch() {
                let tree = tempfile::tempdir().unwrap();
                let library = tree
                    .path()
                    .join("usr/lib")
                    .join(multiarch)
                    .join("libbar.so.2");
                put(&library, &shared_object(arch));
                let mut search = LibrarySearch::new(abi(arch), &[], Some(tree.path()));
                let found = search.find("libbar.so.2", &[], &[]);
                assert_eq!(
                    found.map(|found| found.path),
                    Some(std::fs::canonicalize(&library).unwrap()),
                    "{arch} in {multiarch}"
                );
            }
        }
    }
}
