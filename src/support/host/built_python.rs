//! The host CPythons crosswheel builds itself. A build needs CPython X.Y on the build
//! machine to run the backend; when the machine has none and `uv python install` cannot
//! get one (no network access to uv's Python builds), crosswheel builds it from Debian's
//! source package of that CPython (config/host-cpython.toml) with the build machine's own
//! C compiler, through the machinery that builds target libraries: the orig tarball
//! checked against the signed Sources index and its pinned SHA-256, a build in a staging
//! folder, a check of the result, and a rename into `<cache>/host-cpython/`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::Cache;
use crate::support::target_libraries::{
    CrossBuild, LibraryEntry, TargetLibraryError, ensure_verified_library, host_cpythons,
    library_prefix, record_of,
};
use crate::target::{Libc, LinuxArch, Target};

/// The cache folder of the CPythons built for the build machine.
const HOST_CPYTHON: &str = "host-cpython";

/// Why crosswheel cannot build a host CPython; each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum HostBuildError {
    #[error(
        "it needs the build machine's development packages {packages} (`apt-get install {packages}`)"
    )]
    MissingPackages { packages: String },
    #[error("it needs a C compiler on PATH (`cc` or `gcc`; `apt-get install gcc`)")]
    NoCompiler,
    #[error(transparent)]
    Build(#[from] TargetLibraryError),
}

/// One CPython of config/host-cpython.toml, as this machine builds it.
pub(super) struct HostBuild {
    entry: &'static LibraryEntry,
    cross: CrossBuild,
}

/// One build at a time: the free-threaded and the GIL identifiers of a version need the
/// same interpreter, and a second build would only double the minutes on the same cores.
static BUILDING: Mutex<()> = Mutex::new(());

impl HostBuild {
    /// The build of CPython `version` (`3.14`) for this machine; `None` when
    /// config/host-cpython.toml has no source of it, or crosswheel has no Linux target of
    /// this machine's architecture to describe it.
    pub(super) fn for_version(version: &str, network: &super::Network) -> Option<HostBuild> {
        let entry = host_cpythons().for_version(version)?;
        let target = build_machine()?;
        let jobs = std::thread::available_parallelism().map_or(1, usize::from);
        let cross = CrossBuild {
            target,
            // The compiler's version is not part of the key: an upgraded gcc would
            // rebuild for minutes an interpreter that runs as well as before.
            toolchain: "the build machine's C compiler".to_string(),
            vars: BTreeMap::new(),
            jobs,
            network: network.clone(),
            build_python: None,
            cache_folder: HOST_CPYTHON,
            announcement: Some(format!(
                "building CPython {} for the build machine from Debian's source ({} {}): no CPython {version} here; once, about {} minutes on {jobs} cores",
                entry.version,
                entry.debian_source,
                entry.debian_version,
                host_cpythons().cpu_minutes().div_ceil(jobs as u32).max(1),
            )),
            fortran: Err("no library of a CPython compiles Fortran".into()),
        };
        Some(HostBuild { entry, cross })
    }

    /// The interpreter built before, if the cache has it.
    pub(super) fn cached(&self, cache: &Cache) -> Option<PathBuf> {
        let prefix = library_prefix(cache, self.entry, &self.cross);
        record_of(&prefix)?;
        let exe = self.interpreter(&prefix);
        exe.is_file().then_some(exe)
    }

    /// Builds it (or takes it from the cache, should another thread have built it) and
    /// returns its interpreter.
    pub(super) fn build(&self, cache: &Cache) -> Result<PathBuf, HostBuildError> {
        let _one_at_a_time = BUILDING
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(exe) = self.cached(cache) {
            return Ok(exe);
        }
        let compiler = super::find_on_path("cc")
            .or_else(|| super::find_on_path("gcc"))
            .ok_or(HostBuildError::NoCompiler)?;
        let missing = missing_packages(host_cpythons().build_headers(), |header| {
            compiles_include(&compiler, header)
        });
        if !missing.is_empty() {
            return Err(HostBuildError::MissingPackages {
                packages: missing.join(" "),
            });
        }
        let mut cross = self.cross.clone();
        cross
            .vars
            .insert("CC".to_string(), compiler.to_string_lossy().into_owned());
        let verify = |root: &Path| check_interpreter(&self.interpreter(root));
        let built = ensure_verified_library(cache, self.entry, &cross, &verify)?;
        Ok(self.interpreter(&built.prefix))
    }

    /// `3.14` of `3.14.8`.
    fn minor_version(&self) -> String {
        let mut parts = self.entry.version.split('.');
        let major = parts.next().unwrap_or_default();
        let minor = parts.next().unwrap_or_default();
        format!("{major}.{minor}")
    }

    fn interpreter(&self, prefix: &Path) -> PathBuf {
        prefix
            .join("bin")
            .join(format!("python{}", self.minor_version()))
    }
}

/// The glibc Linux target of the machine crosswheel runs on: what the cache key and the
/// build's messages name it by.
fn build_machine() -> Option<Target> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let arch = LinuxArch::host()?;
    Target::all()
        .into_iter()
        .find(|target| target.libc() == Some(Libc::Glibc) && target.linux_arch() == Some(arch))
}

/// The apt packages of the headers `has` lacks, in the order of `headers`, each once.
fn missing_packages(headers: &BTreeMap<String, String>, has: impl Fn(&str) -> bool) -> Vec<String> {
    let mut missing: Vec<String> = Vec::new();
    for (header, package) in headers {
        if !has(header) && !missing.contains(package) {
            missing.push(package.clone());
        }
    }
    missing
}

/// Whether `compiler` finds `header` where it looks by default (Debian's multiarch
/// folders included): the preprocessor is asked, not a list of paths.
fn compiles_include(compiler: &Path, header: &str) -> bool {
    duct::cmd(compiler, ["-E", "-x", "c", "-", "-o", "/dev/null"])
        .stdin_bytes(format!("#include <{header}>\n"))
        .stdout_null()
        .stderr_null()
        .unchecked()
        .run()
        .is_ok_and(|output| output.status.success())
}

/// The modules of config/host-cpython.toml import, zlib compresses, and OpenSSL makes a
/// context with the system's certificates: what pip and the build environments use.
const CHECK: &str = r#"
import importlib, ssl, sys, zlib
for name in sys.argv[1:]:
    importlib.import_module(name)
assert zlib.decompress(zlib.compress(b"crosswheel" * 64)) == b"crosswheel" * 64
ssl.create_default_context()
print(sys.version.split()[0], ssl.OPENSSL_VERSION)
"#;

/// Runs the fresh interpreter's check where it was installed; `Err` is one line.
fn check_interpreter(python: &Path) -> Result<(), String> {
    let mut args = vec!["-I".to_string(), "-c".to_string(), CHECK.to_string()];
    args.extend(host_cpythons().check_imports().iter().cloned());
    let mut command = duct::cmd(python, &args)
        .stderr_to_stdout()
        .stdout_capture()
        .unchecked();
    for name in super::CROSS_ONLY_VARS {
        command = command.env_remove(name);
    }
    let output = command
        .run()
        .map_err(|error| format!("cannot run {}: {error}", python.display()))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let last = text.lines().rev().find(|line| !line.trim().is_empty());
    let last = last.unwrap_or("no output").trim();
    if !output.status.success() {
        return Err(format!("{} fails its check: {last}", python.display()));
    }
    tracing::info!("checked the built CPython: {last}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_headers_are_named_by_their_apt_packages_once() {
        let headers = BTreeMap::from([
            ("ffi.h".to_string(), "libffi-dev".to_string()),
            ("openssl/ssl.h".to_string(), "libssl-dev".to_string()),
            ("openssl/evp.h".to_string(), "libssl-dev".to_string()),
            ("zlib.h".to_string(), "zlib1g-dev".to_string()),
        ]);
        assert!(missing_packages(&headers, |_| true).is_empty());
        assert_eq!(
            missing_packages(&headers, |header| header == "zlib.h"),
            ["libffi-dev", "libssl-dev"]
        );
        let error = HostBuildError::MissingPackages {
            packages: missing_packages(&headers, |_| false).join(" "),
        };
        assert_eq!(
            error.to_string(),
            "it needs the build machine's development packages libffi-dev libssl-dev zlib1g-dev (`apt-get install libffi-dev libssl-dev zlib1g-dev`)"
        );
    }

    #[test]
    fn the_build_machine_is_a_glibc_linux_target_and_builds_into_its_own_folder() {
        let Some(build) = HostBuild::for_version("3.14", &super::super::Network::default()) else {
            panic!(
                "config/host-cpython.toml builds 3.14 on {}",
                std::env::consts::ARCH
            );
        };
        assert_eq!(build.cross.target.libc(), Some(Libc::Glibc));
        assert!(build.cross.target.runs_natively_here());
        let cache = Cache::at("/nonexistent/cache");
        let prefix = library_prefix(&cache, build.entry, &build.cross);
        let prefix = prefix.to_string_lossy();
        assert!(
            prefix.starts_with("/nonexistent/cache/host-cpython/cpython-3.14."),
            "{prefix}"
        );
        assert_eq!(build.cached(&cache), None);
        let announced = build.cross.announcement.as_deref().unwrap();
        assert!(
            announced.starts_with("building CPython 3.14.") && announced.contains("minutes on"),
            "{announced}"
        );
        assert!(HostBuild::for_version("3.12", &super::super::Network::default()).is_none());
    }
}
