//! Target root filesystems assembled from Debian's packages.
//!
//! A tree is the unpacked dependency closure of a few packages for one Debian
//! architecture, fetched under a private APT configuration so the host's dpkg and APT
//! state are never touched (no `dpkg --add-architecture`). Trees live in crosswheel's
//! cache and are built once: the work happens in a temporary folder beside the final one
//! and is renamed into place, so an interrupted or concurrent run never leaves a
//! half-built tree behind. The package lists are data (`config/debian/releases.toml`).

mod apt;
pub mod archive;
mod lock;
pub mod python_packages;
mod source;
mod unpack;

pub use source::{OrigTarball, orig_tarball};

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use archive::{Suite, config};

use crate::support::host::run_folder::staging_in;
use lock::{Acquired, BuildLock};

/// Written last into a finished tree; its presence is what makes a tree usable.
const MANIFEST_NAME: &str = ".crosswheel-tree.json";

/// How long a second process waits for another one building the same tree.
const LOCK_TIMEOUT: Duration = Duration::from_secs(15 * 60);

#[derive(Debug, thiserror::Error)]
pub enum SysrootError {
    #[error("crosswheel needs apt-get and dpkg-deb (Debian/Ubuntu hosts): `{tool}` is not on PATH")]
    ToolMissing { tool: &'static str },
    #[error(
        "--offline forbids downloading {what} from Debian {suite}, which crosswheel's cache \
         does not hold: run once without --offline to fill the cache"
    )]
    Offline { what: String, suite: String },
    #[error(
        "`{command}` failed for {arch}: {detail}; crosswheel fetches from Debian's archive at \
         {mirror}: check that it is reachable (http_proxy is honoured) or set \
         CROSSWHEEL_DEBIAN_MIRROR to a Debian mirror that carries {arch}"
    )]
    Apt {
        command: String,
        arch: String,
        mirror: String,
        detail: String,
    },
    #[error("cannot unpack {deb}: {detail}")]
    Unpack { deb: PathBuf, detail: String },
    #[error("{packages} holds extension modules for CPython {found}, not {python}")]
    NotForPython {
        /// `Debian forky's python3-numpy for ppc64el`.
        packages: String,
        python: String,
        found: String,
    },
    #[error(
        "Debian source {package} {version} is not what the catalogue (config/target-libraries.toml) names: {detail}; fix the entry, or set CROSSWHEEL_DEBIAN_MIRROR to a mirror that carries that version"
    )]
    SourceMismatch {
        package: String,
        version: String,
        detail: String,
    },
    #[error(
        "{}: SHA-256 {actual}, but {pinned_in} pins {expected}: the cached download was \
         changed after it was verified; delete it and crosswheel fetches and verifies it again",
        path.display()
    )]
    CachedMismatch {
        path: std::path::PathBuf,
        pinned_in: &'static str,
        expected: String,
        actual: String,
    },
    #[error(transparent)]
    Io(#[from] crate::io_error::IoError),
    #[error(
        "gave up after {waited_secs} s waiting for process {pid} to finish {path}: if no \
         crosswheel is running, delete that lock file"
    )]
    LockTimeout {
        path: PathBuf,
        pid: u32,
        waited_secs: u64,
    },
    #[error(
        "target-python {folder} is not a target CPython ({detail}): point it at a folder holding bin/python3.X for the target"
    )]
    BadTargetPython { folder: PathBuf, detail: String },
    #[error("{path} is not a crosswheel tree ({detail}): delete that folder and run again")]
    BadTree { path: PathBuf, detail: String },
    #[error(
        "no {arch} CPython {version}: crosswheel runs the CPython Debian ships for {arch}, which is {available}; for another, give its root with --target-python (the `target-python` option)"
    )]
    UnsupportedPython {
        version: String,
        arch: &'static str,
        available: String,
    },
}

impl SysrootError {
    pub(crate) fn io<'a>(
        action: &'static str,
        path: &'a Path,
    ) -> impl FnOnce(io::Error) -> Self + 'a {
        move |source| SysrootError::Io(crate::io_error::IoError::new(action, path, source))
    }
}

use crate::python_tag::PythonTag;
pub use crate::support::host::Network;
pub use crate::target::LinuxArch;
use crate::target::OsVersion;

/// The target CPython for wheels that do not name one (py3, abi3).
pub fn default_target_python() -> PythonTag {
    config().default_python
}

/// Whether target CPython `python` can be provisioned for `arch`; the error names the
/// versions that can.
pub fn check_target_python(arch: LinuxArch, python: PythonTag) -> Result<(), SysrootError> {
    archive::python_packages(arch, python).map(|_| ())
}

/// What to fetch and where to keep it, relative to the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeSpec {
    pub cache_subdir: PathBuf,
    pub debian_arch: String,
    pub packages: Vec<String>,
    /// Fetch the whole dependency closure (a root filesystem) or only the named packages
    /// (self-contained tools such as the static qemu binaries).
    pub with_dependencies: bool,
    /// Paths (relative to the tree root) to keep; empty keeps everything.
    pub keep_only: Vec<String>,
    /// The archive suite to fetch from.
    pub suite: Suite,
    /// Links update-alternatives would make (libblas.so.3 for Debian's numpy).
    pub alternatives: Vec<python_packages::Alternative>,
    /// Absolute paths (`/usr/share/autoconf`) that the tree's scripts and data files name,
    /// rewritten to the tree's own place in the cache: programs that find their data by
    /// an absolute path then run from there (docs of [`unpack::relocate`]).
    pub relocate: Vec<String>,
}

impl TreeSpec {
    /// The root filesystem able to run target CPython `python` (`3.13`) under qemu-user.
    pub fn python_sysroot(arch: LinuxArch, python: PythonTag) -> Result<Self, SysrootError> {
        let (suite, packages) = archive::python_packages(arch, python)?;
        Ok(Self::python_tree(arch, python, suite, packages))
    }

    /// The same tree from each release that ships `python`, in the order to try them.
    pub fn python_sysroot_candidates(
        arch: LinuxArch,
        python: PythonTag,
    ) -> Result<Vec<Self>, SysrootError> {
        Self::python_sysroot_candidates_with(arch, python, &[])
    }

    /// [`TreeSpec::python_sysroot_candidates`] with Debian packages built for that CPython
    /// added (`python3-numpy`): a tree of its own, named after them, so the plain tree and
    /// every tree in use stay unchanged.
    pub fn python_sysroot_candidates_with(
        arch: LinuxArch,
        python: PythonTag,
        extra: &[String],
    ) -> Result<Vec<Self>, SysrootError> {
        Ok(archive::python_package_sets(arch, python)?
            .into_iter()
            .enumerate()
            .map(|(index, (suite, mut packages))| {
                packages.extend(extra.iter().cloned());
                // A fallback release's tree is kept under a name of its own: under the first
                // release's name it would be taken for that release's on every later run.
                let fallback = (index > 0).then(|| suite.codename.clone());
                let mut spec = Self::python_tree(arch, python, suite, packages);
                if let Some(codename) = fallback {
                    let mut name = spec
                        .cache_subdir
                        .file_name()
                        .unwrap_or_default()
                        .to_os_string();
                    name.push(format!("-{codename}"));
                    spec.cache_subdir.set_file_name(name);
                }
                if !extra.is_empty() {
                    spec.cache_subdir = tree_name_with(&spec.cache_subdir, extra);
                    spec.alternatives = python_packages::alternatives().to_vec();
                }
                spec
            })
            .collect())
    }

    fn python_tree(
        arch: LinuxArch,
        python: PythonTag,
        suite: Suite,
        packages: Vec<String>,
    ) -> Self {
        let name = format!("{}-py{}", arch.debian(), python.interpreter_version());
        TreeSpec {
            cache_subdir: Path::new("sysroots").join(name),
            debian_arch: arch.debian().to_string(),
            packages,
            with_dependencies: true,
            keep_only: Vec::new(),
            suite,
            alternatives: Vec::new(),
            relocate: Vec::new(),
        }
    }

    /// The target's system libraries (C library, libgcc_s, libstdc++) whose symbols the
    /// repair's symbol check reads.
    pub fn system_libraries(arch: LinuxArch, network: &Network) -> Self {
        let suite = archive::system_suite_for(arch, network);
        TreeSpec {
            cache_subdir: Path::new("system-libraries").join(format!(
                "{}-{}",
                arch.debian(),
                suite.codename
            )),
            debian_arch: arch.debian().to_string(),
            packages: config().system_libraries.clone(),
            with_dependencies: false,
            keep_only: Vec::new(),
            suite,
            alternatives: Vec::new(),
            relocate: Vec::new(),
        }
    }

    /// One package of the target, without its dependencies, keeping only `keep` (paths
    /// in the package): a compiler runtime archive for the toolchain.
    pub fn target_package(
        arch: LinuxArch,
        package: &str,
        keep: &[String],
        network: &Network,
    ) -> Self {
        let suite = archive::system_suite_for(arch, network);
        TreeSpec {
            cache_subdir: Path::new("tools").join(format!(
                "{package}-{}-{}",
                arch.debian(),
                suite.codename
            )),
            debian_arch: arch.debian().to_string(),
            packages: vec![package.to_owned()],
            with_dependencies: false,
            keep_only: keep.to_vec(),
            suite,
            alternatives: Vec::new(),
            relocate: Vec::new(),
        }
    }

    /// `packages` of `arch` from release `codename` (with their dependency closure when
    /// `with_dependencies`), kept under `tools/<name>`: a toolchain Debian ships (Rust).
    /// A package may name its version (`libstd-rust-dev=1.97.1+dfsg1-1`).
    pub fn release_packages(
        arch: LinuxArch,
        codename: &str,
        packages: Vec<String>,
        with_dependencies: bool,
        name: &str,
        network: &Network,
    ) -> Self {
        TreeSpec {
            cache_subdir: Path::new("tools").join(name),
            debian_arch: arch.debian().to_string(),
            packages,
            with_dependencies,
            keep_only: Vec::new(),
            suite: archive::release_suite(codename, network),
            alternatives: Vec::new(),
            relocate: Vec::new(),
        }
    }

    /// Debian's `musl` package for `arch`: the loader and C library a musl CPython runs
    /// on, from `musl_release` (zig builds against musl 1.2.5, whose functions older
    /// loaders lack).
    pub fn musl_runtime(arch: LinuxArch, network: &Network) -> Self {
        let codename = &config().musl_release;
        let suite = archive::release_suite(codename, network);
        TreeSpec {
            cache_subdir: Path::new("tools").join(format!("musl-{}-{codename}", arch.debian())),
            debian_arch: arch.debian().to_string(),
            packages: vec!["musl".to_owned()],
            with_dependencies: false,
            keep_only: Vec::new(),
            suite,
            alternatives: Vec::new(),
            relocate: Vec::new(),
        }
    }

    /// Debian's static qemu-user for `host`, used when none is on PATH, as `network`
    /// reaches it.
    pub fn qemu_user(host: LinuxArch, network: &Network) -> Self {
        let package = config().qemu_package.clone();
        let mut suite = archive::qemu_suite();
        suite.reached_through(network);
        // Named after the emulators kept too: a tree made before a target was added lacks
        // its emulator and must not be taken for the current one.
        let keep = config().qemu_keep.join("\n");
        let kept = crate::support::host::cache_key(&[keep.as_bytes()]);
        TreeSpec {
            cache_subdir: Path::new("tools").join(format!(
                "{package}-{}-{}",
                host.debian(),
                kept.get(..12).unwrap_or(&kept)
            )),
            debian_arch: host.debian().to_string(),
            packages: vec![package],
            with_dependencies: false,
            keep_only: config().qemu_keep.clone(),
            suite,
            alternatives: Vec::new(),
            relocate: Vec::new(),
        }
    }
}

/// `sysroots/ppc64el-py3.11+python3-numpy+python3-yaml`: the plain tree's name and the
/// added packages, sorted so that one set always names one tree; a long set is hashed.
fn tree_name_with(plain: &Path, extra: &[String]) -> PathBuf {
    let mut names: Vec<&str> = extra.iter().map(String::as_str).collect();
    names.sort_unstable();
    names.dedup();
    let mut joined = names.join("+");
    if joined.len() > 80 {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(names.join(" ").as_bytes());
        let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
        joined = format!("packages-{hex}");
    }
    let mut name = plain.file_name().unwrap_or_default().to_os_string();
    name.push(format!("+{joined}"));
    plain.with_file_name(name)
}

/// One unpacked package and the version it came at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageVersion {
    pub name: String,
    pub version: String,
    /// The shared libraries it shipped, relative to the tree's root; empty in trees built
    /// before crosswheel recorded them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub libraries: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub debian_arch: String,
    pub packages: Vec<PackageVersion>,
}

impl Manifest {
    /// The package that shipped the library at `relative` (a path from the tree's root).
    pub fn owner_of(&self, relative: &str) -> Option<&PackageVersion> {
        self.packages
            .iter()
            .find(|package| package.libraries.iter().any(|path| path == relative))
    }

    /// The upstream part of a package's version: `2.36` from libc6 `2.36-9+deb12u14`.
    pub fn upstream_version(&self, package: &str) -> Option<&str> {
        let version = &self.packages.iter().find(|p| p.name == package)?.version;
        let without_epoch = version
            .split_once(':')
            .map_or(version.as_str(), |(_, rest)| rest);
        without_epoch.split(['-', '+', '~']).next()
    }
}

/// The manifest of the tree rooted at `root`, if `root` is one crosswheel built.
pub fn tree_manifest(root: &Path) -> Option<Manifest> {
    let text = fs::read_to_string(root.join(MANIFEST_NAME)).ok()?;
    serde_json::from_str(&text).ok()
}

/// A finished tree in the cache.
#[derive(Debug, Clone)]
pub struct PackageTree {
    root: PathBuf,
    manifest: Manifest,
    downloaded: bool,
}

impl PackageTree {
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Whether this call fetched the packages (false when the cache already had the tree).
    pub fn downloaded(&self) -> bool {
        self.downloaded
    }

    fn open(root: &Path) -> Result<Option<Self>, SysrootError> {
        let manifest_path = root.join(MANIFEST_NAME);
        let text = match fs::read_to_string(&manifest_path) {
            Ok(text) => text,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                return match root.try_exists() {
                    Ok(false) => Ok(None),
                    _ => Err(SysrootError::BadTree {
                        path: root.to_path_buf(),
                        detail: format!("no {MANIFEST_NAME}"),
                    }),
                };
            }
            Err(err) => return Err(SysrootError::io("read", &manifest_path)(err)),
        };
        let manifest = serde_json::from_str(&text).map_err(|err| SysrootError::BadTree {
            path: root.to_path_buf(),
            detail: err.to_string(),
        })?;
        Ok(Some(PackageTree {
            root: root.to_path_buf(),
            manifest,
            downloaded: false,
        }))
    }
}

/// The root of `arch`'s system libraries for the repair's symbol check, fetched into
/// `cache` on first use (~5 MB) as `network` reaches Debian's archive.
pub fn system_libraries(
    cache: &Path,
    arch: LinuxArch,
    network: &Network,
) -> Result<PathBuf, SysrootError> {
    Ok(
        provision(cache, &TreeSpec::system_libraries(arch, network))?
            .root()
            .to_path_buf(),
    )
}

/// Returns the tree described by `spec`, building it in `cache` on first use.
pub fn provision(cache: &Path, spec: &TreeSpec) -> Result<PackageTree, SysrootError> {
    let final_dir = cache.join(&spec.cache_subdir);
    if let Some(tree) = PackageTree::open(&final_dir)? {
        return Ok(tree);
    }
    let parent = final_dir.parent().unwrap_or(cache);
    fs::create_dir_all(parent).map_err(SysrootError::io("create", parent))?;
    let name = final_dir
        .file_name()
        .map_or_else(|| "tree".into(), |n| n.to_string_lossy().into_owned());

    let lock_path = parent.join(format!(".{name}.lock"));
    let finished = || final_dir.join(MANIFEST_NAME).exists();
    let _lock: BuildLock = match lock::acquire(&lock_path, &finished, LOCK_TIMEOUT)? {
        Acquired::Lock(lock) => lock,
        Acquired::FinishedElsewhere => return open_finished(&final_dir),
    };
    if finished() {
        return open_finished(&final_dir);
    }

    remove_abandoned_work(parent, &name);
    refuse_when_offline(format!("{} packages", spec.debian_arch), &spec.suite)?;
    tracing::info!(
        "fetching {} for {} from Debian {} at {} (once)",
        if spec.with_dependencies {
            format!(
                "{} and its libraries",
                spec.packages.first().map_or("", String::as_str)
            )
        } else {
            spec.packages.join(" ")
        },
        spec.debian_arch,
        spec.suite.codename,
        spec.suite.mirror,
    );
    let started = std::time::Instant::now();
    let work = staging_in(parent, &format!(".{name}.tmp-"))
        .map_err(SysrootError::io("create a temporary folder in", parent))?;
    let debs = fetch(work.path(), spec)?;
    let downloaded: u64 = debs
        .iter()
        .filter_map(|deb| fs::metadata(deb).ok())
        .map(|meta| meta.len())
        .sum();
    let root = work.path().join("root");
    let libraries = unpack::unpack_all(&debs, &root)?;
    unpack::relativize_absolute_symlinks(&root)?;
    unpack::link_merged_usr(&root)?;
    python_packages::make_alternative_links(&root, &spec.alternatives)?;
    unpack::prune(&root, &config().prune)?;
    if !spec.relocate.is_empty() {
        unpack::relocate(&root, &final_dir, &spec.relocate)?;
    }
    if !spec.keep_only.is_empty() {
        unpack::keep_only(&root, &work.path().join("kept"), &spec.keep_only)?;
    }
    let manifest = Manifest {
        debian_arch: spec.debian_arch.clone(),
        packages: unpack::package_versions(&debs, &libraries),
    };
    write_manifest(&root, &manifest)?;
    let unpacked = tree_size(&root);

    if let Err(err) = fs::rename(&root, &final_dir) {
        // Another process that did not see our lock (a stale one was broken) may have won
        // the race; its tree is as good as ours.
        if !finished() {
            return Err(SysrootError::io("move the finished tree to", &final_dir)(
                err,
            ));
        }
    }
    tracing::info!(
        "provisioned {} ({} packages, {} MB downloaded, {} MB unpacked) in {:.1} s",
        final_dir.display(),
        manifest.packages.len(),
        downloaded.div_ceil(1_000_000),
        unpacked.div_ceil(1_000_000),
        started.elapsed().as_secs_f64()
    );
    let mut tree = open_finished(&final_dir)?;
    tree.downloaded = true;
    Ok(tree)
}

/// The bytes of the regular files below `root` (links not followed), for the log.
fn tree_size(root: &Path) -> u64 {
    walkdir::WalkDir::new(root)
        .into_iter()
        .flatten()
        .filter(|entry| entry.file_type().is_file())
        .filter_map(|entry| entry.metadata().ok())
        .map(|meta| meta.len())
        .sum()
}

/// An offline suite (`--offline`, [`Network::offline`]): what is not in the cache cannot
/// be had, which is said before anything announces a download.
pub(crate) fn refuse_when_offline(what: String, suite: &Suite) -> Result<(), SysrootError> {
    if suite.offline {
        return Err(SysrootError::Offline {
            what,
            suite: suite.codename.clone(),
        });
    }
    Ok(())
}

/// Temporary folders of builds that were killed before they could clean up. Only old
/// ones go: a younger one may belong to a process that broke a stale lock just now.
fn remove_abandoned_work(parent: &Path, name: &str) {
    const ABANDONED_AFTER: Duration = Duration::from_secs(60 * 60);
    let prefix = format!(".{name}.tmp-");
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|meta| meta.modified())
            .ok()
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|age| age > ABANDONED_AFTER);
        if old && entry.file_name().to_string_lossy().starts_with(&prefix) {
            tracing::debug!("removing abandoned {}", entry.path().display());
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

fn fetch(work: &Path, spec: &TreeSpec) -> Result<Vec<PathBuf>, SysrootError> {
    unpack::require_dpkg_deb()?;
    let apt = apt::PrivateApt::create(
        &work.join("apt"),
        &spec.debian_arch,
        &config().forwarded_acquire_settings,
        &spec.suite,
    )?;
    let index_problems = apt.update()?;
    if spec.with_dependencies {
        apt.download_closure(&spec.packages, &index_problems)
    } else {
        let debs_dir = work.join("debs");
        fs::create_dir_all(&debs_dir).map_err(SysrootError::io("create", &debs_dir))?;
        apt.download(&spec.packages, &debs_dir, &index_problems)
    }
}

fn open_finished(root: &Path) -> Result<PackageTree, SysrootError> {
    PackageTree::open(root)?.ok_or_else(|| SysrootError::BadTree {
        path: root.to_path_buf(),
        detail: "it vanished while in use".into(),
    })
}

fn write_manifest(root: &Path, manifest: &Manifest) -> Result<(), SysrootError> {
    let path = root.join(MANIFEST_NAME);
    let text = serde_json::to_string_pretty(manifest).map_err(|err| {
        SysrootError::Io(crate::io_error::IoError::new(
            "write",
            path.clone(),
            err.into(),
        ))
    })?;
    fs::write(&path, text).map_err(SysrootError::io("write", &path))
}

/// A root filesystem holding the target CPython.
#[derive(Debug, Clone)]
pub struct Sysroot {
    /// What qemu resolves the target's absolute paths against (`QEMU_LD_PREFIX`): a root
    /// filesystem with the target's C library.
    prefix: PathBuf,
    python: PathBuf,
    arch: LinuxArch,
    python_version: PythonTag,
    python_full_version: Option<String>,
    glibc: Option<OsVersion>,
    /// The musl version of a musl CPython's loader, whose musllinux tags the target
    /// accepts; `None` for glibc.
    musl: Option<OsVersion>,
    release: Option<String>,
    /// The tree crosswheel fetched into its cache (and so may add bytecode to); `None` for
    /// a folder of the user's, which is never written.
    tree: Option<PackageTree>,
}

impl Sysroot {
    /// Returns the sysroot holding CPython `python_version` (`3.11`) for `arch`,
    /// fetching it into `cache` on first use as `network` reaches Debian's archive (the
    /// `debian-mirror` option, whose variable is `CROSSWHEEL_DEBIAN_MIRROR`).
    pub fn provision(
        cache: &Path,
        arch: LinuxArch,
        python_version: PythonTag,
        network: &Network,
    ) -> Result<Self, SysrootError> {
        Self::provision_with(cache, arch, python_version, network, &[])
    }

    /// [`Sysroot::provision`] with Debian packages for that CPython added
    /// (`python3-numpy` and what it depends on), from the same release.
    pub fn provision_with(
        cache: &Path,
        arch: LinuxArch,
        python_version: PythonTag,
        network: &Network,
        extra_packages: &[String],
    ) -> Result<Self, SysrootError> {
        let mut candidates =
            TreeSpec::python_sysroot_candidates_with(arch, python_version, extra_packages)?;
        for spec in &mut candidates {
            spec.suite.reached_through(network);
        }
        let mut candidates = candidates.into_iter();
        let first = candidates
            .next()
            .ok_or_else(|| archive::unsupported(arch, python_version))?;
        let attempt = |spec: &TreeSpec| {
            let tree = provision(cache, spec)?;
            if !extra_packages.is_empty() {
                extensions_fit(&tree, spec, python_version, extra_packages)?;
            }
            Ok(tree)
        };
        let mut release = first.suite.codename.clone();
        let mut tree = attempt(&first);
        for fallback in candidates {
            let detail = match &tree {
                Err(SysrootError::Apt { detail, .. }) => detail.clone(),
                Err(error @ SysrootError::NotForPython { .. }) => error.to_string(),
                _ => break,
            };
            tracing::warn!(
                "the {arch} tree for CPython {} from Debian {release} failed ({detail}); trying Debian {}",
                python_version.interpreter_version(),
                fallback.suite.codename
            );
            release = fallback.suite.codename.clone();
            tree = attempt(&fallback);
        }
        let tree = tree?;
        let manifest = tree.manifest();
        Ok(Sysroot {
            prefix: tree.root().to_path_buf(),
            python: tree
                .root()
                .join("usr/bin")
                .join(format!("python{}", python_version.interpreter_version())),
            arch,
            python_version,
            python_full_version: manifest
                .upstream_version(&format!(
                    "python{}-minimal",
                    python_version.interpreter_version()
                ))
                .map(str::to_string),
            glibc: manifest.upstream_version("libc6").and_then(major_minor),
            musl: None,
            release: Some(release),
            tree: Some(tree.clone()),
        })
    }

    /// A target CPython the user supplies (`target-python`) for a version Debian does not
    /// ship: a folder holding `bin/python3.X` or `usr/bin/python3.X` for `arch`. When the
    /// folder is a whole root filesystem (it has the target's loader), qemu resolves paths
    /// against it; otherwise (an unpacked python-build-standalone build) against the Debian
    /// root crosswheel fetches for `arch`, which supplies the C library.
    pub fn user_supplied(
        cache: &Path,
        folder: &Path,
        arch: LinuxArch,
        python_version: PythonTag,
        network: &Network,
    ) -> Result<Self, SysrootError> {
        let name = format!("python{}", python_version.interpreter_version());
        let python = [
            folder.join("bin").join(&name),
            folder.join("usr/bin").join(&name),
        ]
        .into_iter()
        .find(|path| path.is_file())
        .ok_or_else(|| SysrootError::BadTargetPython {
            folder: folder.to_path_buf(),
            detail: format!("it has no bin/{name} or usr/bin/{name}"),
        })?;
        refuse_free_threaded_for_gil(folder, &python, python_version)?;
        if links_musl(&python) {
            let runtime = provision(cache, &TreeSpec::musl_runtime(arch, network))?;
            let root = runtime.root().to_path_buf();
            link_merged_lib(&root)?;
            return Ok(Sysroot {
                prefix: root,
                python,
                arch,
                python_version,
                python_full_version: None,
                glibc: None,
                musl: runtime
                    .manifest()
                    .upstream_version("musl")
                    .and_then(major_minor),
                release: None,
                tree: None,
            });
        }
        let (prefix, glibc) = if has_loader(folder, arch) {
            (folder.to_path_buf(), libc_version_in(folder))
        } else {
            let debian =
                Sysroot::provision(cache, arch, archive::default_python_for(arch), network)?;
            (debian.prefix, debian.glibc)
        };
        Ok(Sysroot {
            prefix,
            python,
            arch,
            python_version,
            python_full_version: None,
            glibc,
            musl: None,
            release: None,
            tree: None,
        })
    }

    pub fn arch(&self) -> LinuxArch {
        self.arch
    }

    /// The root qemu resolves the target's absolute paths against (`QEMU_LD_PREFIX`).
    pub fn root(&self) -> &Path {
        &self.prefix
    }

    /// Whether crosswheel fetched this root into its cache (and may add bytecode to it).
    pub fn owned(&self) -> bool {
        self.tree.is_some()
    }

    /// The Debian release the tree came from; `None` for a user-supplied target CPython.
    pub fn release(&self) -> Option<&str> {
        self.release.as_deref()
    }

    /// The tree crosswheel fetched, or `None` for a user-supplied target CPython.
    pub fn tree(&self) -> Option<&PackageTree> {
        self.tree.as_ref()
    }

    /// The CPython inside (`python3.11` is `cp311`).
    pub fn python_version(&self) -> PythonTag {
        self.python_version
    }

    /// The interpreter binary, a target-architecture ELF file.
    pub fn python(&self) -> PathBuf {
        self.python.clone()
    }

    /// The full interpreter version such as `3.11.2`, from the package that shipped it.
    pub fn python_full_version(&self) -> Option<&str> {
        self.python_full_version.as_deref()
    }

    /// The glibc inside, which bounds the manylinux tags the target accepts.
    pub fn glibc_version(&self) -> Option<OsVersion> {
        self.glibc
    }

    /// The musl of a musl CPython's loader, which bounds the musllinux tags it accepts.
    pub fn musl_version(&self) -> Option<OsVersion> {
        self.musl
    }
}

/// A free-threaded CPython installs `python3.13` as a link to `python3.13t`, which cannot
/// import `cp313` wheels: a GIL build pointed at such a tree is told so before its tests fail
/// with a puzzling `No module named`.
fn refuse_free_threaded_for_gil(
    folder: &Path,
    python: &Path,
    tag: PythonTag,
) -> Result<(), SysrootError> {
    if tag.is_free_threaded() {
        return Ok(());
    }
    let python_version = tag.version();
    let resolved = std::fs::canonicalize(python).unwrap_or_else(|_| python.to_path_buf());
    let free_threaded = format!("python{python_version}t");
    if resolved
        .file_name()
        .is_some_and(|name| name == free_threaded.as_str())
    {
        return Err(SysrootError::BadTargetPython {
            folder: folder.to_path_buf(),
            detail: format!(
                "its python{python_version} is the free-threaded {free_threaded}, which cannot run {tag} wheels; set target-python for the free-threaded identifiers only ([[overrides]] select = \"{tag}t-*\")"
            ),
        });
    }
    Ok(())
}

/// Whether `python` is a dynamically linked musl program (its loader is `ld-musl-*`).
fn links_musl(python: &Path) -> bool {
    fs::read(python)
        .ok()
        .and_then(|bytes| crate::formats::elf::facts::ElfFacts::parse(&bytes).ok())
        .and_then(|facts| facts.interpreter)
        .is_some_and(|loader| loader.contains("/ld-musl-"))
}

/// A root holding only Debian's `musl` package for `arch`: what qemu-user resolves a
/// dynamic musl program's `/lib/ld-musl-*.so.1` against (the loader is musl's C library
/// too; the program's other libraries come from its rpath).
pub fn musl_loader_root(
    cache: &Path,
    arch: LinuxArch,
    network: &Network,
) -> Result<PathBuf, SysrootError> {
    let runtime = provision(cache, &TreeSpec::musl_runtime(arch, network))?;
    let root = runtime.root().to_path_buf();
    link_merged_lib(&root)?;
    Ok(root)
}

/// Debian's `musl` package installs its loader under `usr/lib` and relies on the base
/// system's `/lib -> usr/lib` link (merged /usr) for the `/lib/ld-musl-*.so.1` that musl
/// programs name; a tree of that package alone gets the link here.
fn link_merged_lib(root: &Path) -> Result<(), SysrootError> {
    let lib = root.join("lib");
    if lib.symlink_metadata().is_ok() {
        return Ok(());
    }
    match std::os::unix::fs::symlink("usr/lib", &lib) {
        // A concurrent run made it first.
        Err(error) if error.kind() != io::ErrorKind::AlreadyExists => {
            Err(SysrootError::io("create", &lib)(error))
        }
        _ => Ok(()),
    }
}

/// Whether `root` holds the dynamic loader of `arch` (so it is a whole root filesystem).
fn has_loader(root: &Path, arch: LinuxArch) -> bool {
    arch.glibc_loaders()
        .iter()
        .any(|loader| root.join(loader).exists())
}

/// Checks that the Debian packages `extra` added to `tree` were built for `python`: a
/// release that still ships an older CPython (forky keeps 3.13 beside its default 3.14)
/// builds its `python3-*` extension packages for the default one only, and a tree whose
/// `python3-numpy` has `cpython-314` modules alone would give a 3.13 venv a numpy that
/// cannot import.
fn extensions_fit(
    tree: &PackageTree,
    spec: &TreeSpec,
    python: PythonTag,
    extra: &[String],
) -> Result<(), SysrootError> {
    let dist_packages = tree.root().join(python_packages::DIST_PACKAGES);
    let mut found = std::collections::BTreeSet::new();
    for entry in walkdir::WalkDir::new(&dist_packages).into_iter().flatten() {
        let name = entry.file_name().to_string_lossy();
        if let Some(tag) = extension_tag(&name) {
            found.insert(tag.to_string());
        }
    }
    let wanted = python.interpreter_version().replace('.', "");
    if found.is_empty() || found.contains(&wanted) {
        return Ok(());
    }
    let dotted = |tag: &String| format!("{}.{}", &tag[..1], &tag[1..]);
    Err(SysrootError::NotForPython {
        packages: format!(
            "Debian {}'s {} for {}",
            spec.suite.codename,
            extra.join(", "),
            spec.debian_arch
        ),
        python: python.interpreter_version(),
        found: found.iter().map(dotted).collect::<Vec<_>>().join(", "),
    })
}

/// `313` of an extension module's file name (`_multiarray_umath.cpython-313-powerpc64le-linux-gnu.so`).
fn extension_tag(name: &str) -> Option<&str> {
    let rest = name.strip_suffix(".so")?;
    let tag = rest.split('.').next_back()?.strip_prefix("cpython-")?;
    let tag = tag.split('-').next()?;
    (tag.len() >= 3
        && tag
            .trim_end_matches('t')
            .bytes()
            .all(|b| b.is_ascii_digit()))
    .then_some(tag)
}

/// The version of the GNU C library under `root`, read from its `libc.so.6` ("... release
/// version 2.36").
fn libc_version_in(root: &Path) -> Option<OsVersion> {
    let candidates = ["lib", "lib64", "usr/lib", "usr/lib64"]
        .iter()
        .flat_map(|dir| {
            let dir = root.join(dir);
            let nested = fs::read_dir(&dir)
                .into_iter()
                .flatten()
                .flatten()
                .map(|entry| entry.path().join("libc.so.6"));
            std::iter::once(dir.join("libc.so.6")).chain(nested)
        });
    for libc in candidates {
        let Ok(bytes) = fs::read(&libc) else {
            continue;
        };
        let marker = b"release version ";
        if let Some(at) = bytes.windows(marker.len()).position(|w| w == marker) {
            let rest = &bytes[at + marker.len()..];
            let end = rest
                .iter()
                .position(|b| !(b.is_ascii_digit() || *b == b'.'))
                .unwrap_or(rest.len());
            let text = String::from_utf8_lossy(&rest[..end]);
            return major_minor(text.trim_end_matches('.'));
        }
    }
    None
}

/// `2.36` from a C library's release, `2.36` or `2.36.1`; a bare `2` is no release.
fn major_minor(release: &str) -> Option<OsVersion> {
    let release = release.trim();
    if !release.contains('.') {
        return None;
    }
    OsVersion::parse_release(release)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trees_size_counts_its_files_once_and_not_what_its_links_point_at() {
        let root = tempfile::tempdir().unwrap();
        fs::create_dir_all(root.path().join("usr/lib")).unwrap();
        fs::write(root.path().join("usr/lib/libx.so.1"), [0u8; 1000]).unwrap();
        fs::write(root.path().join("copyright"), [0u8; 24]).unwrap();
        std::os::unix::fs::symlink("libx.so.1", root.path().join("usr/lib/libx.so")).unwrap();
        assert_eq!(tree_size(root.path()), 1024);
    }

    fn py(version: &str) -> PythonTag {
        PythonTag::parse_version(version).unwrap()
    }

    #[test]
    fn a_free_threaded_tree_is_refused_for_gil_wheels_and_taken_for_free_threaded_ones() {
        let tree = tempfile::tempdir().unwrap();
        let bin = tree.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("python3.13t"), "").unwrap();
        std::os::unix::fs::symlink("python3.13t", bin.join("python3.13")).unwrap();
        let err = refuse_free_threaded_for_gil(tree.path(), &bin.join("python3.13"), py("3.13"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "its python3.13 is the free-threaded python3.13t, which cannot run cp313 wheels"
            ),
            "{err}"
        );
        assert!(err.contains("select = \"cp313t-*\""), "{err}");
        assert!(
            refuse_free_threaded_for_gil(tree.path(), &bin.join("python3.13t"), py("3.13t"))
                .is_ok()
        );
        std::fs::remove_file(bin.join("python3.13")).unwrap();
        std::fs::write(bin.join("python3.13"), "").unwrap();
        assert!(
            refuse_free_threaded_for_gil(tree.path(), &bin.join("python3.13"), py("3.13")).is_ok()
        );
    }

    #[test]
    fn python_sysroot_lives_under_debian_arch_and_python_version() {
        let spec = TreeSpec::python_sysroot(LinuxArch::Ppc64le, py("3.11")).unwrap();
        assert_eq!(spec.cache_subdir, Path::new("sysroots/ppc64el-py3.11"));
        assert_eq!(spec.debian_arch, "ppc64el");
        assert_eq!(spec.suite.codename, "bookworm");
        assert!(spec.packages.iter().any(|p| p == "python3.11-minimal"));
        assert!(spec.packages.iter().all(|p| !p.contains('{')));
        let newer = TreeSpec::python_sysroot(LinuxArch::Aarch64, py("3.13")).unwrap();
        assert_eq!(newer.cache_subdir, Path::new("sysroots/arm64-py3.13"));
        assert_eq!(newer.suite.codename, "trixie");
        assert!(newer.packages.iter().any(|p| p == "libpython3.13-stdlib"));
    }

    #[test]
    fn a_fallback_releases_tree_is_kept_under_a_name_of_its_own() {
        let extra = ["python3-numpy".to_string()];
        let specs =
            TreeSpec::python_sysroot_candidates_with(LinuxArch::Ppc64le, py("3.13"), &extra)
                .unwrap();
        assert!(specs.len() > 1, "3.13 comes from trixie, then forky");
        assert_eq!(
            specs[0].cache_subdir,
            Path::new("sysroots/ppc64el-py3.13+python3-numpy")
        );
        let fallback = &specs[1];
        assert_eq!(
            fallback.cache_subdir,
            Path::new(&format!(
                "sysroots/ppc64el-py3.13-{}+python3-numpy",
                fallback.suite.codename
            ))
        );
    }

    #[test]
    fn a_sysroot_with_debian_python_packages_is_a_tree_of_its_own() {
        let extra = ["python3-yaml".to_string(), "python3-numpy".to_string()];
        let specs =
            TreeSpec::python_sysroot_candidates_with(LinuxArch::Ppc64le, py("3.11"), &extra)
                .unwrap();
        let spec = &specs[0];
        assert_eq!(
            spec.cache_subdir,
            Path::new("sysroots/ppc64el-py3.11+python3-numpy+python3-yaml")
        );
        assert_eq!(spec.suite.codename, "bookworm");
        assert!(spec.packages.iter().any(|p| p == "python3.11-minimal"));
        assert!(spec.packages.iter().any(|p| p == "python3-numpy"));
        assert!(!spec.alternatives.is_empty());
        let plain = TreeSpec::python_sysroot(LinuxArch::Ppc64le, py("3.11")).unwrap();
        assert!(plain.alternatives.is_empty());
        let many: Vec<String> = (0..20).map(|i| format!("python3-package{i}")).collect();
        let hashed = tree_name_with(&plain.cache_subdir, &many);
        let name = hashed.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("ppc64el-py3.11+packages-"), "{name}");
    }

    #[test]
    fn parses_kernel_and_debian_architecture_names() {
        assert_eq!(LinuxArch::parse("arm64"), Some(LinuxArch::Aarch64));
        assert_eq!(LinuxArch::parse("aarch64"), Some(LinuxArch::Aarch64));
        assert_eq!(LinuxArch::parse("ppc64el"), Some(LinuxArch::Ppc64le));
        assert_eq!(LinuxArch::parse("AMD64"), Some(LinuxArch::X86_64));
        assert_eq!(LinuxArch::parse("armhf"), Some(LinuxArch::Armv7l));
        assert_eq!(LinuxArch::parse("i386"), Some(LinuxArch::I686));
        assert_eq!(LinuxArch::parse("loongarch64"), None);
    }

    #[test]
    fn upstream_version_drops_epoch_and_debian_revision() {
        let manifest = Manifest {
            debian_arch: "arm64".into(),
            packages: vec![
                PackageVersion {
                    name: "libc6".into(),
                    version: "2.36-9+deb12u14".into(),
                    libraries: Vec::new(),
                },
                PackageVersion {
                    name: "zlib1g".into(),
                    version: "1:1.2.13.dfsg-1".into(),
                    libraries: Vec::new(),
                },
            ],
        };
        assert_eq!(manifest.upstream_version("libc6"), Some("2.36"));
        assert_eq!(manifest.upstream_version("zlib1g"), Some("1.2.13.dfsg"));
        assert_eq!(manifest.upstream_version("libssl3"), None);
        assert_eq!(
            major_minor("2.36"),
            Some(OsVersion {
                major: 2,
                minor: 36
            })
        );
        assert_eq!(major_minor("3"), None);
    }

    #[test]
    fn missing_tool_is_one_line_naming_the_supported_hosts() {
        let message = SysrootError::ToolMissing { tool: "apt-get" }.to_string();
        assert_eq!(
            message,
            "crosswheel needs apt-get and dpkg-deb (Debian/Ubuntu hosts): `apt-get` is not on PATH"
        );
    }

    /// `--offline` travels with the request, not through a process-wide switch: one
    /// offline request refuses in one line before any download, and another request of
    /// the same process may still download.
    #[test]
    fn an_offline_request_refuses_what_the_cache_lacks_and_says_so() {
        let cache = tempfile::tempdir().unwrap();
        let offline = Network::new(true, None);
        let spec = TreeSpec::system_libraries(LinuxArch::Aarch64, &offline);
        assert!(spec.suite.offline);
        let err = provision(cache.path(), &spec).unwrap_err();
        assert!(matches!(err, SysrootError::Offline { .. }), "{err:?}");
        assert!(!err.to_string().contains('\n'), "{err}");
        let online = TreeSpec::system_libraries(LinuxArch::Aarch64, &Network::default());
        assert!(!online.suite.offline);
    }

    #[test]
    fn an_extension_modules_name_says_its_cpython() {
        assert_eq!(
            extension_tag("_multiarray_umath.cpython-313-powerpc64le-linux-gnu.so"),
            Some("313")
        );
        assert_eq!(
            extension_tag("_core.cpython-313t-aarch64-linux-gnu.so"),
            Some("313t")
        );
        assert_eq!(extension_tag("_x.cpython-314.so"), Some("314"));
        assert_eq!(extension_tag("libopenblas.so"), None);
        assert_eq!(extension_tag("_x.abi3.so"), None);
        assert_eq!(extension_tag("numpy.cpython-313.pyc"), None);
    }

    #[test]
    fn qemu_tree_keeps_only_the_emulators_crosswheel_runs() {
        let spec = TreeSpec::qemu_user(LinuxArch::X86_64, &Network::default());
        let name = spec.cache_subdir.to_string_lossy().into_owned();
        assert!(name.starts_with("tools/qemu-user-static-amd64-"), "{name}");
        assert!(!spec.with_dependencies);
        let emulated = LinuxArch::ALL
            .into_iter()
            .filter(|a| *a != LinuxArch::X86_64);
        for arch in emulated {
            let binary = format!("usr/bin/qemu-{}-static", arch.qemu_name());
            assert!(
                spec.keep_only.contains(&binary),
                "{binary} missing from {:?}",
                spec.keep_only
            );
        }
    }

    #[test]
    fn folder_without_manifest_is_reported_not_reused() {
        let dir = tempfile::tempdir().unwrap();
        let err = PackageTree::open(dir.path()).unwrap_err();
        assert!(err.to_string().contains("delete that folder"), "{err}");
        assert!(
            PackageTree::open(&dir.path().join("absent"))
                .unwrap()
                .is_none()
        );
    }
}
