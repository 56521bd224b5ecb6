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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use before_all::{BeforeAll, read_before_all};
pub use build::{
    BuiltLibrary, CrossBuild, InstallCheck, TARGET_LIBRARIES, ensure_library,
    ensure_verified_library, library_prefix,
};
pub use catalogue::{
    Catalogue, HostCpythons, LibraryEntry, TargetCpythons, catalogue, host_cpythons,
    target_cpythons,
};
pub use index_source::{IndexSource, index_sdist};

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

/// The catalogue libraries `requirements` name (`libffi`, `openssl>=3`, `zlib==1.2.13`).
pub fn requested_libraries(
    requirements: &[String],
) -> Result<Vec<&'static LibraryEntry>, TargetLibraryError> {
    let mut entries: Vec<&'static LibraryEntry> = Vec::new();
    for requirement in requirements {
        let entry = requested(requirement)?;
        if !entries.iter().any(|known| known.name == entry.name) {
            entries.push(entry);
        }
    }
    Ok(entries)
}

/// `entries` with every catalogue library they depend on, each after what it depends on.
pub fn in_build_order(entries: &[&'static LibraryEntry]) -> Vec<&'static LibraryEntry> {
    let mut ordered: Vec<&'static LibraryEntry> = Vec::new();
    for entry in entries {
        for needed in dependencies_of(entry).into_iter().chain([*entry]) {
            if !ordered.iter().any(|known| known.name == needed.name) {
                ordered.push(needed);
            }
        }
    }
    ordered
}

/// The catalogue libraries `entry` depends on, directly or not, each after its own.
pub fn dependencies_of(entry: &LibraryEntry) -> Vec<&'static LibraryEntry> {
    let mut found: Vec<&'static LibraryEntry> = Vec::new();
    for name in &entry.depends {
        // The catalogue's own test holds every dependency to an earlier entry, so this
        // recursion ends.
        let Some(dependency) = catalogue().library(name) else {
            continue;
        };
        for needed in dependencies_of(dependency).into_iter().chain([dependency]) {
            if !found.iter().any(|known| known.name == needed.name) {
                found.push(needed);
            }
        }
    }
    found
}

fn requested(requirement: &str) -> Result<&'static LibraryEntry, TargetLibraryError> {
    let bad = |problem: String| TargetLibraryError::BadRequirement {
        requirement: requirement.to_string(),
        problem,
    };
    let at = requirement
        .find(['<', '>', '=', '!', '~'])
        .unwrap_or(requirement.len());
    let name = requirement[..at].trim();
    let constraint = requirement[at..].trim();
    let entry = catalogue()
        .library(name)
        .ok_or_else(|| bad(format!("no library {name} in the catalogue")))?;
    if constraint.is_empty() {
        return Ok(entry);
    }
    let (operator, wanted) = ["==", ">=", "<=", "!=", ">", "<"]
        .iter()
        .find_map(|op| constraint.strip_prefix(op).map(|rest| (*op, rest.trim())))
        .ok_or_else(|| {
            bad(format!(
                "`{constraint}` is not ==, >=, <=, !=, > or < a version"
            ))
        })?;
    let have = version_parts(&entry.version);
    let want = version_parts(wanted);
    let ordering = compare(&have, &want);
    let satisfied = match operator {
        "==" => ordering.is_eq(),
        ">=" => ordering.is_ge(),
        "<=" => ordering.is_le(),
        "!=" => ordering.is_ne(),
        ">" => ordering.is_gt(),
        _ => ordering.is_lt(),
    };
    if !satisfied {
        return Err(bad(format!(
            "the catalogue's {name} is {}, not {operator}{wanted}",
            entry.version
        )));
    }
    Ok(entry)
}

fn version_parts(version: &str) -> Vec<u64> {
    version
        .split('.')
        .map(|part| {
            part.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .unwrap_or(0)
        })
        .collect()
}

/// Compares versions part by part, a missing part counting as 0 (`3` == `3.0`).
fn compare(left: &[u64], right: &[u64]) -> std::cmp::Ordering {
    let length = left.len().max(right.len());
    let at = |parts: &[u64], index: usize| parts.get(index).copied().unwrap_or(0);
    (0..length)
        .map(|index| at(left, index).cmp(&at(right, index)))
        .find(|ordering| ordering.is_ne())
        .unwrap_or(std::cmp::Ordering::Equal)
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
    if let Some(openmp) = roots.iter().find(|root| is_openmp_prefix(root)) {
        vars.insert(
            OPENMP_VARIABLE.to_string(),
            openmp.to_string_lossy().into_owned(),
        );
    }
}

/// The catalogue's `consumer_environment` of each catalogue library among `roots`, filled
/// in for the prefix it was built into.
fn consumer_environment(roots: &[PathBuf]) -> Vec<(String, String)> {
    roots
        .iter()
        .filter_map(|root| Some((root, record_of(root)?)))
        .filter_map(|(root, record)| {
            Some((root, record.version, catalogue().library(&record.name)?))
        })
        .flat_map(|(root, version, entry)| {
            entry.consumer_environment.iter().map(move |(name, value)| {
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
    let staging = tempfile::Builder::new()
        .prefix(".config-scripts-")
        .tempdir_in(root)?;
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
    fn requirements_name_catalogue_libraries_with_optional_versions() {
        let names = |list: &[&str]| -> Result<Vec<String>, String> {
            let list: Vec<String> = list.iter().map(|s| s.to_string()).collect();
            requested_libraries(&list)
                .map(|entries| entries.iter().map(|e| e.name.clone()).collect())
                .map_err(|error| error.to_string())
        };
        assert_eq!(
            names(&["libffi", "zlib>=1.2", "libffi==3.4.4"]).unwrap(),
            ["libffi", "zlib"]
        );
        let too_new = names(&["libffi>=4"]).unwrap_err();
        assert!(
            too_new.starts_with(
                "target-libraries: `libffi>=4`: the catalogue's libffi is 3.4.4, not >=4"
            ),
            "{too_new}"
        );
        let unknown = names(&["libfoo"]).unwrap_err();
        assert!(
            unknown.contains("no library libfoo in the catalogue"),
            "{unknown}"
        );
    }

    #[test]
    fn libraries_come_after_the_catalogue_libraries_they_link() {
        let names = |list: &[&str]| -> Vec<String> {
            let list: Vec<String> = list.iter().map(|s| s.to_string()).collect();
            let entries = requested_libraries(&list).unwrap();
            in_build_order(&entries)
                .iter()
                .map(|entry| entry.name.clone())
                .collect()
        };
        assert_eq!(names(&["libxslt"]), ["zlib", "libxml2", "libxslt"]);
        assert_eq!(
            names(&["freetype", "zlib", "mpfr"]),
            ["zlib", "libpng", "freetype", "gmp", "mpfr"]
        );
        let freetype = catalogue().library("freetype").unwrap();
        let linked: Vec<&str> = dependencies_of(freetype)
            .iter()
            .map(|entry| entry.name.as_str())
            .collect();
        assert_eq!(linked, ["zlib", "libpng"]);
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
