//! C libraries built for a target: the catalogue of `config/target-libraries.toml`, built
//! from Debian's source packages with the target's toolchain into a prefix of their own
//! in the cache, and the target prefix every build of a target sees (`CROSSWHEEL_PREFIX`
//! and those libraries: their headers, libraries and pkg-config files), whose `lib/`
//! folders the repair vendors from.
//!
//! A library's prefix is keyed by (library entry, target, toolchain, flags), and holds a
//! [`LibraryRecord`] written last: its presence is what makes the prefix usable, and it is
//! what the SBOM of a wheel the library is vendored into says of it.

mod before_all;
mod build;
mod catalogue;
mod index_source;
mod resolve;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::support::host::run_folder::staging_in;
use crate::target::Target;

pub use before_all::{BeforeAll, read_before_all};
pub use build::{
    BuiltLibrary, CrossBuild, FortranFamily, InstallCheck, LibraryFortran, TARGET_LIBRARIES,
    ensure_library, ensure_verified_library, library_prefix,
};
pub use catalogue::{
    Catalogue, FortranRoute, HostCpythons, LibraryEntry, TargetCpythons, catalogue, host_cpythons,
    target_cpythons,
};
pub use index_source::{IndexSource, index_sdist};
pub use resolve::{PinOutcome, Resolution, linked_by, requested_libraries, resolve};

/// The file in a library's prefix that records what was built there.
pub const RECORD_NAME: &str = ".crosswheel-library.json";

#[derive(Debug, thiserror::Error)]
pub enum TargetLibraryError {
    #[error(
        "before-all in {origin}: `{line}` installs {package}, which crosswheel cannot build for the target: \
         build it into $CROSSWHEEL_PREFIX in a before-all of its own \
         (`./configure --host=$CROSSWHEEL_HOST --prefix=$CROSSWHEEL_PREFIX && make install`), \
         or add it to crosswheel's catalogue (config/target-libraries.toml; it has {known})",
        known = catalogue().names().join(", ")
    )]
    UnknownPackage {
        package: String,
        line: String,
        origin: String,
    },
    #[error(
        "target-libraries: `{requirement}`: {problem} (the catalogue, config/target-libraries.toml, has {known})",
        known = catalogue().names().join(", ")
    )]
    BadRequirement {
        requirement: String,
        problem: String,
    },
    #[error("{library} for {target}: `{step}` failed ({status}); its log: {log}")]
    BuildFailed {
        library: String,
        target: String,
        step: String,
        status: String,
        log: PathBuf,
    },
    #[error(
        "building {library} needs `{tool}` on the build machine: install it (Debian/Ubuntu: apt-get install {packages})",
        packages = catalogue().tool_packages(tool)
    )]
    ToolMissing { library: String, tool: String },
    #[error(transparent)]
    ToolNotProvided(#[from] crate::support::build_tools::ProvideError),
    #[error(
        "{library} for {target} needs `{program}`, the target's GNU assembler, on the build machine (LLVM's assembler refuses its assembly): install it (Debian/Ubuntu: apt-get install {package})"
    )]
    AssemblerMissing {
        library: String,
        target: String,
        program: String,
        package: String,
    },
    #[error(
        "{library} for {target}: the catalogue does not say how to build it for {arch} ({table} in config/target-libraries.toml): build it into $CROSSWHEEL_PREFIX in a before-all of your own"
    )]
    UnsupportedArch {
        library: String,
        target: String,
        arch: String,
        table: &'static str,
    },
    #[error(
        "{library}: config/target-libraries.toml edits {file} where the source has {found} of the {expected} occurrences the edit expects: the entry does not match its source"
    )]
    SourceEditMismatch {
        library: String,
        file: String,
        expected: usize,
        found: usize,
    },
    #[error("{file} from the package index: {problem}")]
    IndexSource { file: String, problem: String },
    #[error("{library} for {target}: the install has no {missing}; its log: {log}")]
    Incomplete {
        library: String,
        target: String,
        missing: String,
        log: PathBuf,
    },
    #[error("{library} for {target} was built but does not work: {problem}")]
    FailedCheck {
        library: String,
        target: String,
        problem: String,
    },
    #[error(transparent)]
    Source(#[from] crate::support::sysroot::SysrootError),
    #[error(transparent)]
    Io(#[from] crate::io_error::IoError),
}

/// What is known of a library built into a prefix: what an SBOM says of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LibraryRecord {
    pub name: String,
    pub version: String,
    /// SPDX expression.
    pub licence: String,
    pub source: DebianSource,
    /// Source added from the package index (OpenBLAS's C LAPACK).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub index_sources: Vec<IndexSource>,
    /// The target id (`linux-aarch64`) it was built for.
    pub target: String,
    /// The toolchain it was built with, as logs name it.
    pub toolchain: String,
    /// What its build chose that the source does not say: OpenBLAS's LAPACK, compiled from
    /// Fortran or its C translation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

/// A Debian source package's orig tarball.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DebianSource {
    pub package: String,
    pub version: String,
    pub file: String,
    pub sha256: String,
}

/// The record of the library prefix `folder`, if it is one.
pub fn record_of(folder: &Path) -> Option<LibraryRecord> {
    let text = std::fs::read_to_string(folder.join(RECORD_NAME)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Everything a target's builds see besides the cross environment: the libraries built
/// for it and the prefix its `before-all` installs into (`CROSSWHEEL_PREFIX`).
#[derive(Debug, Clone, Default)]
pub struct TargetPrefix {
    /// `CROSSWHEEL_PREFIX`: `include/`, `lib/`, `lib/pkgconfig/` for the user's own
    /// libraries.
    pub user: Option<PathBuf>,
    pub libraries: Vec<BuiltLibrary>,
}

impl TargetPrefix {
    /// Every prefix, the catalogue libraries' first.
    pub fn roots(&self) -> Vec<PathBuf> {
        self.libraries
            .iter()
            .map(|library| library.prefix.clone())
            .chain(self.user.clone())
            .collect()
    }

    /// The `lib/` folders the repair vendors from.
    pub fn library_dirs(&self) -> Vec<PathBuf> {
        self.roots().iter().map(|root| root.join("lib")).collect()
    }
}

/// `vars` with the prefixes `roots` made visible to compilers (`CPPFLAGS`, `LDFLAGS`),
/// pkg-config (`PKG_CONFIG_LIBDIR`), CMake (`CMAKE_PREFIX_PATH`) and builds that ask a
/// library's `*-config` script (`PATH`, see [`config_script_folders`]), before what
/// `vars` already has.
pub fn add_prefix_variables(vars: &mut BTreeMap<String, String>, roots: &[PathBuf]) {
    if roots.is_empty() {
        return;
    }
    let scripts: Vec<String> = config_script_folders(roots)
        .iter()
        .map(|folder| folder.display().to_string())
        .collect();
    let mut prepend = |name: &str, items: Vec<String>, separator: &str| {
        let mut value = items.join(separator);
        // A value the process has, and `vars` does not replace, is the user's: kept after.
        let inherited = std::env::var(name).ok();
        if let Some(existing) = vars
            .get(name)
            .or(inherited.as_ref())
            .filter(|existing| !existing.is_empty())
        {
            value.push_str(separator);
            value.push_str(existing);
        }
        vars.insert(name.to_string(), value);
    };
    let each = |format: &dyn Fn(&Path) -> String| -> Vec<String> {
        roots.iter().map(|root| format(root)).collect()
    };
    prepend(
        "CPPFLAGS",
        each(&|root| format!("-I{}", root.join("include").display())),
        " ",
    );
    prepend(
        "LDFLAGS",
        each(&|root| format!("-L{}", root.join("lib").display())),
        " ",
    );
    prepend(
        "PKG_CONFIG_LIBDIR",
        each(&|root| root.join("lib/pkgconfig").display().to_string()),
        ":",
    );
    prepend(
        "CMAKE_PREFIX_PATH",
        each(&|root| root.display().to_string()),
        ":",
    );
    if !scripts.is_empty() {
        prepend("PATH", scripts, ":");
    }
    for (name, value) in consumer_environment(roots) {
        if !vars.contains_key(&name) && std::env::var_os(&name).is_none() {
            vars.insert(name, value);
        }
    }
    if let Some(runtime) = roots.iter().find(|root| is_flang_runtime_prefix(root)) {
        vars.insert(
            FORTRAN_RUNTIME_VARIABLE.to_string(),
            runtime.to_string_lossy().into_owned(),
        );
    }
    if let Some(openmp) = roots.iter().find(|root| is_openmp_prefix(root)) {
        vars.insert(
            OPENMP_VARIABLE.to_string(),
            openmp.to_string_lossy().into_owned(),
        );
    }
}

/// `PKG_CONFIG_PATH` for a hook that runs on the build machine
/// (`get_requires_for_build_wheel`): the pkg-config folders of `roots` before the user's
/// own value. A setup.py that asks `pkg-config --modversion libxml-2.0` at import hears of
/// the library the build will link, as `build_wheel` does; a query for anything else falls
/// back to the build machine's folders, which this variable does not replace. `user`, the
/// value the build would otherwise have, comes after. `None` without target libraries.
pub fn host_pkg_config_path(roots: &[PathBuf], user: Option<&str>) -> Option<String> {
    let mut folders: Vec<String> = roots
        .iter()
        .map(|root| root.join("lib/pkgconfig"))
        .filter(|folder| folder.is_dir())
        .map(|folder| folder.display().to_string())
        .collect();
    if folders.is_empty() {
        return None;
    }
    if let Some(user) = user.filter(|user| !user.is_empty()) {
        folders.push(user.to_string());
    }
    Some(folders.join(":"))
}

/// The catalogue's `consumer_environment` of each catalogue library among `roots`, filled
/// in for the prefix it was built into.
fn consumer_environment(roots: &[PathBuf]) -> Vec<(String, String)> {
    roots
        .iter()
        .filter_map(|root| Some((root, record_of(root)?)))
        .filter_map(|(root, record)| {
            let entry = catalogue().library(&record.name)?;
            Some((root, record, entry))
        })
        .flat_map(|(root, record, entry)| {
            let macos = Target::parse(&record.target).is_ok_and(|target| target.is_macos());
            let for_macos = macos.then_some(&entry.macos_consumer_environment);
            let version = record.version;
            entry
                .consumer_environment
                .iter()
                .chain(for_macos.into_iter().flatten())
                .map(move |(name, value)| {
                    let value = value
                        .replace("{prefix}", &root.to_string_lossy())
                        .replace("{version}", &version);
                    (name.clone(), value)
                })
        })
        .collect()
}

/// Names the prefix of the OpenMP runtime (the catalogue's `libomp`) to the compiler
/// wrappers, which give a `-fopenmp` compile its `omp.h` and a `-fopenmp` link `-lomp`:
/// zig's clang has neither, and a build's own OpenMP flags rarely name a folder.
pub const OPENMP_VARIABLE: &str = "CROSSWHEEL_OPENMP";

/// The catalogue's OpenMP runtime, which a project asking for OpenMP gets.
pub const OPENMP_LIBRARY: &str = "libomp";

/// The catalogue's build of flang's runtime, which a project compiling Fortran for a
/// macOS target gets: that target's Fortran is LLVM flang
/// (src/stages/toolchain/fortran/flang.rs).
pub const FLANG_RUNTIME_LIBRARY: &str = "flang-runtime";

/// Names the prefix of [`FLANG_RUNTIME_LIBRARY`] to the `flang` script, which links
/// `lib/libFortranRuntime.dylib` from it.
pub const FORTRAN_RUNTIME_VARIABLE: &str = "CROSSWHEEL_FORTRAN_RUNTIME";

fn is_flang_runtime_prefix(root: &Path) -> bool {
    ["lib/libFortranRuntime.dylib", "lib/libFortranRuntime.so"]
        .iter()
        .any(|lib| root.join(lib).exists())
}

fn is_openmp_prefix(root: &Path) -> bool {
    root.join("include/omp.h").is_file()
        && ["lib/libomp.so", "lib/libomp.dylib"]
            .iter()
            .any(|lib| root.join(lib).exists())
}

/// The folder beside each prefix's `bin/` that holds its `*-config` scripts alone
/// (`xml2-config`, `xslt-config`, `pcap-config`, the catalogue's `pg_config`), for the prefixes that have any. They are
/// shell scripts that answer with the prefix they were installed for, so a build that asks
/// one where its library is (lxml runs `xml2-config --cflags`) hears of the target's
/// library, not of the build machine's `/usr/bin/xml2-config`. `bin/` itself holds the
/// target's programs too, which must not shadow the build machine's.
pub fn config_script_folders(roots: &[PathBuf]) -> Vec<PathBuf> {
    roots
        .iter()
        .filter_map(|root| match config_script_folder(root) {
            Ok(folder) => folder,
            Err(error) => {
                tracing::warn!(
                    "the *-config scripts of {} stay off PATH: {error}",
                    root.display()
                );
                None
            }
        })
        .collect()
}

const CONFIG_SCRIPTS: &str = "config-scripts";

fn config_script_folder(root: &Path) -> std::io::Result<Option<PathBuf>> {
    let bin = root.join("bin");
    let mut scripts: Vec<PathBuf> = match std::fs::read_dir(&bin) {
        Ok(entries) => entries
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| is_config_script(path))
            .collect(),
        Err(_) => return Ok(None),
    };
    if scripts.is_empty() {
        return Ok(None);
    }
    scripts.sort();
    let folder = root.join(CONFIG_SCRIPTS);
    let current = |folder: &Path| {
        scripts.iter().all(|script| {
            script
                .file_name()
                .is_some_and(|name| folder.join(name).exists())
        })
    };
    if current(&folder) {
        return Ok(Some(folder));
    }
    // Made aside and renamed into place: runs sharing the cache may make it at once, and
    // a prefix that gained scripts (a later `before-all`) gets the folder made anew.
    let staging = staging_in(root, ".config-scripts-")?;
    for script in &scripts {
        if let Some(name) = script.file_name() {
            std::os::unix::fs::symlink(script, staging.path().join(name))?;
        }
    }
    let staged = staging.keep();
    if folder.exists() {
        std::fs::remove_dir_all(&folder)?;
    }
    if let Err(error) = std::fs::rename(&staged, &folder) {
        std::fs::remove_dir_all(&staged).ok();
        if !current(&folder) {
            return Err(error);
        }
    }
    Ok(Some(folder))
}

/// A `bin/NAME-config` or `bin/NAME_config` (`pg_config`) that is a script (`#!`), not a
/// program of the target.
fn is_config_script(path: &Path) -> bool {
    use std::io::Read;
    let named = path
        .file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| {
            ["-config", "_config"]
                .iter()
                .any(|suffix| name.ends_with(suffix) && name.len() > suffix.len())
        });
    let mut start = [0u8; 2];
    named
        && std::fs::File::open(path)
            .and_then(|mut file| file.read_exact(&mut start))
            .is_ok()
        && &start == b"#!"
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A prefix holding the catalogue's HDF5 built for `target`, with its record.
    fn hdf5_prefix(target: &str) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let record = serde_json::json!({
            "name": "hdf5", "version": "1.14.5", "licence": "BSD-3-Clause",
            "source": {"package": "hdf5", "version": "1.14.5+repack-3",
                       "file": "hdf5_1.14.5+repack.orig.tar.gz", "sha256": "00"},
            "target": target, "toolchain": "zig",
        });
        std::fs::write(root.path().join(RECORD_NAME), record.to_string()).unwrap();
        root
    }

    /// h5py asks a Linux target's libhdf5 itself (the ctypes bridge loads it under qemu);
    /// a macOS build, where nothing can load it, is told its version and features.
    #[test]
    fn only_a_macos_build_is_told_what_it_cannot_ask_the_library() {
        for (target, told) in [("linux-aarch64", false), ("macos-arm64", true)] {
            let root = hdf5_prefix(target);
            let vars: BTreeMap<String, String> = consumer_environment(&[root.path().to_path_buf()])
                .into_iter()
                .collect();
            assert_eq!(
                vars.get("HDF5_DIR").map(String::as_str),
                Some(root.path().to_str().unwrap()),
                "{target}"
            );
            assert_eq!(
                vars.get("HDF5_VERSION").map(String::as_str),
                told.then_some("1.14.5"),
                "{target}"
            );
            assert_eq!(vars.contains_key("H5PY_ROS3"), told, "{target}");
        }
    }

    #[test]
    fn a_prefixs_config_scripts_alone_come_first_on_path() {
        let root = tempfile::tempdir().unwrap();
        let bin = root.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(
            bin.join("xml2-config"),
            "#! /bin/sh\necho -I/prefix/include\n",
        )
        .unwrap();
        // A target program named like a script, and a target program: neither is taken.
        std::fs::write(bin.join("icu-config"), b"\x7fELF\x02\x01").unwrap();
        std::fs::write(bin.join("xmllint"), b"\x7fELF\x02\x01").unwrap();
        // PostgreSQL's is named with an underscore.
        std::fs::write(bin.join("pg_config"), "#!/bin/sh\necho /prefix/lib\n").unwrap();
        let mut vars = BTreeMap::from([("PATH".to_string(), "/wrappers".to_string())]);
        add_prefix_variables(&mut vars, &[root.path().to_path_buf()]);
        let folder = root.path().join(CONFIG_SCRIPTS);
        assert_eq!(vars["PATH"], format!("{}:/wrappers", folder.display()));
        let mut names: Vec<String> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["pg_config", "xml2-config"]);
        // A later script (a `before-all` installing another library) joins the folder.
        std::fs::write(bin.join("xslt-config"), "#!/bin/sh\n").unwrap();
        let again = config_script_folders(&[root.path().to_path_buf()]);
        assert_eq!(again.len(), 1);
        assert_eq!(again[0], folder);
        assert!(folder.join("xslt-config").exists());
    }

    #[test]
    fn a_prefix_without_config_scripts_leaves_path_alone() {
        let root = tempfile::tempdir().unwrap();
        let mut vars = BTreeMap::from([("PATH".to_string(), "/wrappers".to_string())]);
        add_prefix_variables(&mut vars, &[root.path().to_path_buf()]);
        assert_eq!(vars["PATH"], "/wrappers");
        assert!(!root.path().join(CONFIG_SCRIPTS).exists());
    }

    #[test]
    fn a_host_hook_asks_pkg_config_of_the_prefixes_first_and_the_build_machine_after() {
        let with = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(with.path().join("lib/pkgconfig")).unwrap();
        let without = tempfile::tempdir().unwrap();
        let roots = [with.path().to_path_buf(), without.path().to_path_buf()];
        let ours = with.path().join("lib/pkgconfig").display().to_string();
        // Only folders that exist; the user's value after them. The build machine's
        // default folders stay: PKG_CONFIG_PATH adds to them.
        assert_eq!(host_pkg_config_path(&roots, None).unwrap(), ours);
        assert_eq!(host_pkg_config_path(&roots, Some("")).unwrap(), ours);
        assert_eq!(
            host_pkg_config_path(&roots, Some("/mine/pkgconfig")).unwrap(),
            format!("{ours}:/mine/pkgconfig")
        );
        assert_eq!(host_pkg_config_path(&roots[1..], Some("/mine")), None);
    }

    #[test]
    fn prefixes_come_before_the_users_flags() {
        let mut vars = BTreeMap::from([
            ("CPPFLAGS".to_string(), "-DX".to_string()),
            (
                "PKG_CONFIG_LIBDIR".to_string(),
                "/env/lib/pkgconfig".to_string(),
            ),
        ]);
        add_prefix_variables(
            &mut vars,
            &[PathBuf::from("/p/ffi"), PathBuf::from("/p/user")],
        );
        assert_eq!(vars["CPPFLAGS"], "-I/p/ffi/include -I/p/user/include -DX");
        assert_eq!(vars["LDFLAGS"], "-L/p/ffi/lib -L/p/user/lib");
        assert_eq!(
            vars["PKG_CONFIG_LIBDIR"],
            "/p/ffi/lib/pkgconfig:/p/user/lib/pkgconfig:/env/lib/pkgconfig"
        );
        assert_eq!(vars["CMAKE_PREFIX_PATH"], "/p/ffi:/p/user");
    }
}
