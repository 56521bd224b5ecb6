//! The catalogue of target libraries (`config/target-libraries.toml`), of the CPythons the
//! test stage builds (`config/target-cpython.toml`) and of those the build machine builds
//! for itself (`config/host-cpython.toml`), each parsed once.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use crate::target::Target;
use serde::{Deserialize, Serialize};

const CATALOGUE_TOML: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/config/target-libraries.toml"
));

const TARGET_CPYTHON_TOML: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/config/target-cpython.toml"
));

const HOST_CPYTHON_TOML: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/config/host-cpython.toml"
));

/// One library crosswheel can build for a target (or, for config/host-cpython.toml, for
/// the build machine).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LibraryEntry {
    pub name: String,
    pub version: String,
    pub licence: String,
    /// Package names (yum, apt, apk, brew) that mean this library; only on the first of
    /// its versions, which names them all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<String>,
    /// Variables a project's build environment pins the library's version with
    /// (`LIBXML2_VERSION`, which lxml's own build of libxml2 reads): a pin picks the first
    /// version of the catalogue no older than it. Only on the first of its versions. Not
    /// serialised: they change no byte of the library.
    #[serde(default, skip_serializing)]
    pub version_variables: Vec<String>,
    pub debian_source: String,
    pub debian_version: String,
    /// The Debian release whose Sources index lists `debian_version`; `None`: the
    /// system release of config/debian/releases.toml.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debian_release: Option<String>,
    /// Fetched from the archive's pool by its path rather than through a Sources index: a
    /// version no current release lists, which the archive still keeps. `sha256` is then
    /// the only check, and the entry says where its value comes from.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_pool: bool,
    pub orig: String,
    pub sha256: String,
    /// Programs of the build machine the build runs besides make and the compilers
    /// (`llvm-objcopy`), looked for on PATH before anything is built.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Target architectures (as `make_vars_by_arch` names them) whose build hands its
    /// assembly to the target's GNU assembler (`gnu_assembler` in config/targets.toml), which
    /// must then be on PATH: OpenBLAS's POWER kernels, which LLVM's assembler refuses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gnu_assembler_for: Vec<String>,
    /// Top-level folders of the orig tarball to unpack; empty: all of it. LLVM's tarball
    /// unpacks to 2 GB, of which the OpenMP runtime's build reads 10 MB.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unpack: Vec<String>,
    /// Folders of sdists from the package index added to the unpacked source, for what
    /// Debian's orig tarball leaves out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub index_sources: Vec<super::IndexSource>,
    /// Edits made to the unpacked source before anything runs: fixes a release lacks for
    /// the compilers crosswheel builds with (each says where upstream made the same fix).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_edits: Vec<SourceEdit>,
    /// Catalogue libraries this one links, built (and made visible to it) first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends: Vec<String>,
    /// Makes the configure script of a tarball that ships none; empty: it has one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bootstrap: Vec<String>,
    /// The configure command (`./configure ...`, `cmake -S . -B build ...`); empty: the
    /// library's Makefile is used as it comes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configure: Vec<String>,
    /// The build command; `None`: `make -j{jobs}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<Vec<String>>,
    /// The install command, which installs under `{destdir}`; `None`: `make install
    /// DESTDIR={destdir}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub configure_env: BTreeMap<String, String>,
    /// Variables that builds using the library read instead of probing it (h5py loads
    /// libhdf5 with ctypes unless `HDF5_VERSION` says its version), given to every build of
    /// the target that has the library and does not set them itself; `{prefix}` and
    /// `{version}` filled. Not serialised: they change no byte of the library, so they are
    /// no part of its cache key.
    #[serde(default, skip_serializing)]
    pub consumer_environment: BTreeMap<String, String>,
    /// `consumer_environment` for macOS targets only: what a Linux target's build learns
    /// from the library itself, through the cross environment's ctypes bridge (the target's
    /// CPython loads it under qemu), a macOS build can only be told.
    #[serde(default, skip_serializing)]
    pub macos_consumer_environment: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub linux_configure_env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub macos_configure_env: BTreeMap<String, String>,
    /// Arguments added to `configure` for macOS targets: what zig's macOS libc lacks
    /// (libiconv, a library of its own on macOS, has no stub there).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub macos_configure_args: Vec<String>,
    /// Variables given to every `make` on macOS targets, as command-line assignments
    /// (which override the Makefile's own).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub macos_make_vars: BTreeMap<String, String>,
    /// `NAME=value` assignments given to every `make`, per target architecture (as the
    /// platform tag names it: `aarch64`, `armv7l`, `arm64`): a Makefile-only library's
    /// CPU (OpenBLAS's `TARGET`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub make_vars_by_arch: BTreeMap<String, Vec<String>>,
    /// The name a library's own configure script gives each target (OpenSSL's
    /// `./Configure linux-aarch64`), keyed by platform and architecture (`linux-aarch64`,
    /// `macos-arm64`: musllinux targets share their glibc twin's), filled in for
    /// `{configure_target}`; empty: the library's configure takes `--host` alone.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub configure_target: BTreeMap<String, String>,
    /// How the build differs by whether the target has a Fortran compiler for libraries;
    /// `None`: it compiles no Fortran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fortran: Option<FortranRoute>,
    pub check: Checks,
}

/// A library that compiles Fortran where the target has a compiler for it and takes
/// another route where it has none (OpenBLAS: LAPACK from its Fortran, or its C
/// translation).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct FortranRoute {
    /// `NAME=value` assignments given to every `make` when the target has a Fortran
    /// compiler (`{fc}` names it, `{fortran_runtime}` the folder of the runtime it links).
    pub with: Vec<String>,
    /// The same when it has none.
    pub without: Vec<String>,
    /// What the library's SBOM entry says of each route.
    pub with_note: String,
    pub without_note: String,
    /// The route with LLVM flang (macOS's Fortran), which takes other flags than gfortran;
    /// `None`: the library takes its route without Fortran there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flang: Option<FlangRoute>,
}

/// [`FortranRoute::with`] and its note for flang.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct FlangRoute {
    pub with: Vec<String>,
    pub note: String,
}

/// One text replacement in one file of a library's source.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SourceEdit {
    /// The file, relative to the source's top folder.
    pub file: String,
    pub find: String,
    pub replace: String,
    /// How many times `find` occurs: another count means the source is not the one the
    /// edit was written for, and the build stops rather than guess.
    pub occurrences: usize,
}

/// Files an install must have produced, relative to the prefix.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Checks {
    pub linux: Vec<String>,
    pub macos: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalogue {
    library: Vec<LibraryEntry>,
    build_tools: BuildTools,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BuildTools {
    packages: Vec<String>,
    /// The Debian/Ubuntu packages that install a program a catalogue build runs.
    apt: BTreeMap<String, String>,
}

/// A file of config/ compiled into the binary, parsed; the unit tests of this module parse
/// each one, so a broken file fails them rather than a run.
fn parse_bundled<T: serde::de::DeserializeOwned>(text: &str, file: &str) -> T {
    toml::from_str(text).unwrap_or_else(|error| panic!("config/{file} is invalid: {error}"))
}

pub fn catalogue() -> &'static Catalogue {
    static CATALOGUE: OnceLock<Catalogue> = OnceLock::new();
    CATALOGUE.get_or_init(|| parse_bundled(CATALOGUE_TOML, "target-libraries.toml"))
}

/// The CPythons crosswheel builds to test wheels on where Debian ships none of the
/// version (every musl target; riscv64 before 3.13).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetCpythons {
    /// The modules every built CPython must import under qemu before it is cached.
    smoke_imports: Vec<String>,
    cpython: Vec<LibraryEntry>,
}

pub fn target_cpythons() -> &'static TargetCpythons {
    static CPYTHONS: OnceLock<TargetCpythons> = OnceLock::new();
    CPYTHONS.get_or_init(|| parse_bundled(TARGET_CPYTHON_TOML, "target-cpython.toml"))
}

impl TargetCpythons {
    /// The standard-library modules a built CPython's smoke test imports: the extension
    /// modules a failed optional build would silently leave out.
    pub fn smoke_imports(&self) -> &[String] {
        &self.smoke_imports
    }

    /// The entry building CPython `major_minor` (`3.11`).
    pub fn for_version(&self, major_minor: &str) -> Option<&LibraryEntry> {
        entry_for_version(&self.cpython, major_minor)
    }

    /// The versions it can build (`3.11`), for messages.
    pub fn versions(&self) -> Vec<String> {
        self.cpython
            .iter()
            .map(|entry| {
                let mut parts = entry.version.split('.');
                format!(
                    "{}.{}",
                    parts.next().unwrap_or_default(),
                    parts.next().unwrap_or_default()
                )
            })
            .collect()
    }
}

/// The entry of `entries` whose version is `major_minor` (`3.11`) plus a patch release.
fn entry_for_version<'a>(
    entries: &'a [LibraryEntry],
    major_minor: &str,
) -> Option<&'a LibraryEntry> {
    entries.iter().find(|entry| {
        entry
            .version
            .strip_prefix(major_minor)
            .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// The CPythons crosswheel builds for the build machine when it has none of a version a
/// build needs and uv cannot install one.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostCpythons {
    /// CPU-minutes one build takes, for the line announcing it.
    cpu_minutes: u32,
    /// A header of the build machine the build needs, and the apt package providing it.
    build_headers: BTreeMap<String, String>,
    check: HostCheck,
    cpython: Vec<LibraryEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostCheck {
    imports: Vec<String>,
}

pub fn host_cpythons() -> &'static HostCpythons {
    static CPYTHONS: OnceLock<HostCpythons> = OnceLock::new();
    CPYTHONS.get_or_init(|| parse_bundled(HOST_CPYTHON_TOML, "host-cpython.toml"))
}

impl HostCpythons {
    /// The entry building CPython `major_minor` (`3.14`) for the build machine.
    pub fn for_version(&self, major_minor: &str) -> Option<&LibraryEntry> {
        entry_for_version(&self.cpython, major_minor)
    }

    pub fn cpu_minutes(&self) -> u32 {
        self.cpu_minutes
    }

    /// Header (`openssl/ssl.h`) and apt package (`libssl-dev`) of each development file
    /// of the build machine the build needs.
    pub fn build_headers(&self) -> &BTreeMap<String, String> {
        &self.build_headers
    }

    /// The modules a fresh build must import before it is cached.
    pub fn check_imports(&self) -> &[String] {
        &self.check.imports
    }
}

impl LibraryEntry {
    /// What of the entry a library's cache key for `target` is made of: the fields it
    /// sets, as JSON, with the per-target tables narrowed to `target`'s row. Fields it
    /// leaves unset are left out, so a field added to the model later keeps every library
    /// built before it (a key made of all fields would rebuild them all); and a row added
    /// or changed for one architecture keeps the others' builds.
    pub fn cache_identity(&self, target: &Target) -> String {
        let per_target = !self.make_vars_by_arch.is_empty()
            || !self.configure_target.is_empty()
            || !self.gnu_assembler_for.is_empty();
        if !per_target {
            // The entry's own JSON, in its fields' order, as every key was made before the
            // tables were narrowed: a library without such tables keeps its cached builds
            // (the narrowed form below orders fields by name, which would rebuild all).
            return serde_json::to_string(self).expect("a catalogue entry serialises");
        }
        let mut value = serde_json::to_value(self).expect("a catalogue entry serialises");
        let fields = value
            .as_object_mut()
            .expect("a catalogue entry serialises to an object");
        let platform_arch = format!("{}-{}", target.platform().name(), target.arch());
        for (table, row) in [
            ("make_vars_by_arch", target.arch()),
            ("configure_target", platform_arch.as_str()),
        ] {
            if let Some(serde_json::Value::Object(rows)) = fields.get_mut(table) {
                rows.retain(|key, _| key == row);
            }
        }
        // The flang route is macOS's (its Fortran is flang): the Linux targets' builds
        // keep their keys whatever it says.
        if !target.is_macos()
            && let Some(serde_json::Value::Object(route)) = fields.get_mut("fortran")
        {
            route.remove("flang");
        }
        if fields.contains_key("gnu_assembler_for") {
            let needed = self
                .gnu_assembler_for
                .iter()
                .any(|arch| arch == target.arch());
            fields.insert("gnu_assembler_for".into(), needed.into());
        }
        value.to_string()
    }
}

impl Catalogue {
    pub fn libraries(&self) -> &[LibraryEntry] {
        &self.library
    }

    /// The library named `name` (as `target-libraries` spells it), at the first of its
    /// versions: the one a build gets unless a requirement or a pin asks for another.
    pub fn library(&self, name: &str) -> Option<&LibraryEntry> {
        self.versions(name).into_iter().next()
    }

    /// Every version of the library named `name`, in catalogue order.
    pub fn versions(&self, name: &str) -> Vec<&LibraryEntry> {
        self.library
            .iter()
            .filter(|entry| entry.name.eq_ignore_ascii_case(name))
            .collect()
    }

    /// The variables that pin the version of the library named `name`.
    pub fn version_variables(&self, name: &str) -> &[String] {
        self.library(name)
            .map_or(&[], |entry| entry.version_variables.as_slice())
    }

    /// The library whose install has a shared library of `file_name`'s name, version
    /// suffixes aside (`libpq.so.5.15` and `libpq.so` are `lib/libpq.so`'s): what a build
    /// that linked the build machine's copy of that file needed for the target.
    pub fn providing_library(&self, file_name: &str) -> Option<&LibraryEntry> {
        let stem = |name: &str| -> String {
            let name = name.rsplit('/').next().unwrap_or(name);
            match name.find(".so") {
                Some(at) => name[..at].to_string(),
                None => name.trim_end_matches(".a").to_string(),
            }
        };
        let wanted = stem(file_name);
        self.library.iter().find(|entry| {
            entry
                .check
                .linux
                .iter()
                .any(|path| path.contains(".so") && stem(path) == wanted)
        })
    }

    /// The library a package manager's package `name` stands for.
    pub fn by_package(&self, name: &str) -> Option<&LibraryEntry> {
        self.library.iter().find(|entry| {
            entry
                .packages
                .iter()
                .any(|package| package.eq_ignore_ascii_case(name))
        })
    }

    /// Whether package `name` is a tool of the build machine (a compiler, a build system).
    pub fn is_build_tool(&self, name: &str) -> bool {
        self.build_tools
            .packages
            .iter()
            .any(|tool| tool.eq_ignore_ascii_case(name))
    }

    /// The apt packages that install `tool`, for the message saying it is missing.
    pub fn tool_packages<'a>(&'a self, tool: &'a str) -> &'a str {
        self.build_tools.apt.get(tool).map_or(tool, String::as_str)
    }

    /// The catalogue's names, for messages.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for entry in &self.library {
            if !names.contains(&entry.name.as_str()) {
                names.push(&entry.name);
            }
        }
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_catalogue_parses_and_every_entry_is_complete() {
        let catalogue = catalogue();
        assert!(catalogue.library("libffi").is_some());
        for entry in catalogue.libraries() {
            assert_eq!(entry.sha256.len(), 64, "{}", entry.name);
            assert!(
                entry.orig.starts_with(&format!("{}_", entry.debian_source)),
                "{}: the orig tarball is named after its source package",
                entry.name
            );
            let steps = entry.configure.iter().chain(entry.install.iter().flatten());
            assert!(
                steps.clone().any(|arg| arg.contains("{prefix}")),
                "{}: configure or install names the prefix",
                entry.name
            );
            for dependency in &entry.depends {
                let position = |name: &str| {
                    catalogue
                        .libraries()
                        .iter()
                        .position(|other| other.name == name)
                };
                assert!(
                    position(dependency) < position(&entry.name) && position(dependency).is_some(),
                    "{}: its dependency {dependency} comes before it in the catalogue",
                    entry.name
                );
            }
            assert!(!entry.check.linux.is_empty() && !entry.check.macos.is_empty());
            assert!(
                entry.macos_configure_args.is_empty() || !entry.configure.is_empty(),
                "{}: macos_configure_args are added to `configure`, which it has not",
                entry.name
            );
            for package in &entry.packages {
                assert!(
                    !catalogue.is_build_tool(package),
                    "{package} is both a library and a build tool"
                );
            }
        }
    }

    #[test]
    fn a_cache_key_names_only_what_an_entry_sets() {
        let aarch64 = Target::parse("linux-aarch64").unwrap();
        let libyaml = catalogue()
            .library("libyaml")
            .unwrap()
            .cache_identity(&aarch64);
        assert!(
            libyaml.contains("\"orig\":\"libyaml_0.2.5.orig.tar.gz\""),
            "{libyaml}"
        );
        for unset in [
            "configure_target",
            "from_pool",
            "make_vars_by_arch",
            "depends",
        ] {
            assert!(!libyaml.contains(unset), "{unset} in {libyaml}");
        }
        let macos = Target::parse("macos-arm64").unwrap();
        let openssl = catalogue()
            .library("openssl")
            .unwrap()
            .cache_identity(&macos);
        assert!(openssl.contains("darwin64-arm64-cc"), "{openssl}");
    }

    #[test]
    fn an_entry_without_per_target_tables_keeps_the_key_it_always_had() {
        let aarch64 = Target::parse("linux-aarch64").unwrap();
        for name in ["libffi", "zlib", "libyaml", "hdf5"] {
            let entry = catalogue().library(name).unwrap();
            assert_eq!(
                entry.cache_identity(&aarch64),
                serde_json::to_string(entry).unwrap(),
                "{name}"
            );
        }
    }

    #[test]
    fn a_cache_key_names_only_its_targets_row_of_a_per_target_table() {
        let openblas = catalogue().library("openblas").unwrap();
        let ppc64le = Target::parse("linux-ppc64le").unwrap();
        let aarch64 = Target::parse("linux-aarch64").unwrap();
        let for_ppc64le = openblas.cache_identity(&ppc64le);
        assert!(for_ppc64le.contains("TARGET=POWER8"), "{for_ppc64le}");
        assert!(!for_ppc64le.contains("TARGET=ARMV8"), "{for_ppc64le}");
        assert!(
            for_ppc64le.contains("\"gnu_assembler_for\":true"),
            "{for_ppc64le}"
        );
        let for_aarch64 = openblas.cache_identity(&aarch64);
        assert!(for_aarch64.contains("TARGET=ARMV8"), "{for_aarch64}");
        assert!(!for_aarch64.contains("POWER8"), "{for_aarch64}");
        assert!(
            for_aarch64.contains("\"gnu_assembler_for\":false"),
            "{for_aarch64}"
        );
        let openssl = catalogue().library("openssl").unwrap();
        let for_linux = openssl.cache_identity(&aarch64);
        assert!(for_linux.contains("linux-aarch64"), "{for_linux}");
        assert!(!for_linux.contains("darwin64-arm64-cc"), "{for_linux}");
    }

    #[test]
    fn configure_target_names_every_target_of_a_library_that_asks_for_it() {
        let known: Vec<String> = crate::target::Target::all()
            .iter()
            .map(|target| format!("{}-{}", target.platform().name(), target.arch()))
            .collect();
        for entry in catalogue().libraries() {
            let steps = entry
                .configure
                .iter()
                .chain(entry.build.iter().flatten())
                .chain(entry.install.iter().flatten());
            let asks = steps.clone().any(|arg| arg.contains("{configure_target}"));
            assert_eq!(
                asks,
                !entry.configure_target.is_empty(),
                "{}: {{configure_target}} is used exactly when configure_target is given",
                entry.name
            );
            for key in entry.configure_target.keys() {
                assert!(
                    known.contains(key),
                    "{}: configure_target names {key}, which is no target's platform and architecture (one of {known:?})",
                    entry.name
                );
            }
        }
    }

    #[test]
    fn every_tool_a_library_needs_is_provided_or_names_the_apt_packages_that_install_it() {
        let catalogue = catalogue();
        for entry in catalogue.libraries() {
            for tool in &entry.tools {
                assert!(
                    crate::support::build_tools::can_provide(tool)
                        || catalogue.build_tools.apt.contains_key(tool),
                    "{}: {tool} is not in config/build-tools.toml, so the missing-tool message needs its apt packages in [build_tools].apt",
                    entry.name
                );
            }
        }
    }

    #[test]
    fn a_librarys_later_versions_are_newer_and_named_by_its_first() {
        let catalogue = catalogue();
        for name in catalogue.names() {
            let versions = catalogue.versions(name);
            let (first, later) = versions.split_first().unwrap();
            let mut previous = first;
            for entry in later {
                assert!(
                    entry.packages.is_empty() && entry.version_variables.is_empty(),
                    "{name} {}: packages and version_variables are the first version's",
                    entry.version
                );
                assert!(
                    super::super::resolve::compare_versions(&entry.version, &previous.version)
                        .is_gt(),
                    "{name} {}: a later version of a library is newer than the one before",
                    entry.version
                );
                let release = entry.debian_release.as_deref().unwrap_or_default();
                assert!(
                    crate::support::sysroot::archive::config().knows_release(release),
                    "{name} {}: a later version comes from a suite of config/debian/releases.toml ({release:?})",
                    entry.version
                );
                previous = entry;
            }
        }
    }

    #[test]
    fn a_package_name_means_one_library_only() {
        let mut seen = BTreeMap::new();
        for entry in catalogue().libraries() {
            for package in &entry.packages {
                if let Some(other) = seen.insert(package.to_ascii_lowercase(), &entry.name) {
                    panic!("{package} means both {other} and {}", entry.name);
                }
            }
        }
    }

    #[test]
    fn bundled_target_cpythons_parse_and_build_linux_interpreters_with_a_build_python() {
        let cpythons = target_cpythons();
        let entry = cpythons
            .for_version("3.11")
            .expect("CPython 3.11 is catalogued");
        assert_eq!(entry.version, "3.11.2");
        assert!(cpythons.for_version("3.1").is_none());
        assert_eq!(cpythons.versions(), ["3.11"]);
        for module in ["_ctypes", "zlib", "_decimal", "pyexpat"] {
            assert!(
                cpythons.smoke_imports().iter().any(|name| name == module),
                "the smoke test imports {module}"
            );
        }
        for entry in &cpythons.cpython {
            assert_eq!(entry.sha256.len(), 64);
            assert!(entry.orig.starts_with(&format!("{}_", entry.debian_source)));
            assert!(
                entry
                    .configure
                    .iter()
                    .any(|arg| arg.contains("{build_python}"))
            );
            assert!(
                entry
                    .check
                    .linux
                    .iter()
                    .any(|file| file.starts_with("bin/python3."))
            );
        }
    }

    #[test]
    fn bundled_host_cpythons_parse_and_build_with_pip_from_a_pinned_source() {
        let cpythons = host_cpythons();
        let entry = cpythons
            .for_version("3.14")
            .expect("CPython 3.14 is catalogued for the build machine");
        assert!(cpythons.for_version("3.1").is_none());
        assert!(
            cpythons.for_version("3.12").is_none(),
            "Debian ships no 3.12"
        );
        assert!(cpythons.cpu_minutes() > 0);
        assert_eq!(cpythons.build_headers()["openssl/ssl.h"], "libssl-dev");
        for module in ["ssl", "zlib", "ctypes", "venv", "pip"] {
            assert!(cpythons.check_imports().iter().any(|name| name == module));
        }
        for entry in [entry].into_iter().chain(&cpythons.cpython) {
            assert_eq!(entry.sha256.len(), 64);
            assert!(entry.orig.starts_with(&format!("{}_", entry.debian_source)));
            assert!(entry.debian_version.starts_with(&entry.version));
            assert!(entry.configure.iter().any(|arg| arg == "--prefix={prefix}"));
            assert!(
                entry
                    .configure
                    .iter()
                    .any(|arg| arg == "--with-ensurepip=install"),
                "build environments are made with the build python's pip"
            );
            let python = format!("bin/python{}", &entry.debian_source["python".len()..]);
            assert!(entry.check.linux.contains(&python), "{python}");
            // A source only a suite crosswheel knows is fetched with its signature checked;
            // one from the archive's pool is checked by its pinned SHA-256 alone.
            if entry.from_pool {
                assert!(entry.debian_release.is_none(), "{}", entry.version);
                continue;
            }
            let release = entry.debian_release.as_deref().unwrap();
            assert!(
                crate::support::sysroot::archive::config().knows_release(release),
                "{release} is in config/debian/releases.toml"
            );
        }
    }

    #[test]
    fn package_names_of_every_package_manager_mean_the_same_library() {
        let catalogue = catalogue();
        for package in ["libffi-devel", "libffi-dev", "libffi", "LIBFFI-DEVEL"] {
            assert_eq!(catalogue.by_package(package).unwrap().name, "libffi");
        }
        assert_eq!(catalogue.by_package("zlib1g-dev").unwrap().name, "zlib");
        assert!(catalogue.by_package("cmake").is_none());
        assert!(catalogue.is_build_tool("ninja-build"));
    }
}
