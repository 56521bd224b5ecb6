//! Debian's archive as the test stage uses it: which release ships which target CPython,
//! the mirror, and the keys its suites are verified with (`config/debian/`).
//!
//! Nothing here depends on the host's package sources: an Ubuntu host, whose own archive
//! has neither Debian's suites nor arm64/ppc64el packages, fetches exactly what a Debian
//! host does.

use std::sync::OnceLock;

use serde::Deserialize;

use super::{LinuxArch, Network, SysrootError};
use crate::python_tag::PythonTag;

const RELEASES_TOML: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/config/debian/releases.toml"
));

/// Debian's public archive signing keys, armored; APT reads them as a `Signed-By` file.
pub(crate) const ARCHIVE_KEYS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/config/debian/archive-keys.asc"
));

#[derive(Debug, Deserialize)]
pub(crate) struct Config {
    default_mirror: String,
    #[serde(deserialize_with = "crate::python_tag::deserialize_version")]
    pub default_python: PythonTag,
    qemu_release: String,
    pub qemu_package: String,
    pub qemu_keep: Vec<String>,
    pub prune: Vec<String>,
    pub forwarded_acquire_settings: Vec<String>,
    system_release: String,
    pub system_libraries: Vec<String>,
    /// The release of the `musl` package musl CPythons run on.
    pub musl_release: String,
    release: Vec<Release>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Release {
    pub codename: String,
    architectures: Vec<String>,
    #[serde(deserialize_with = "crate::python_tag::deserialize_versions")]
    pythons: Vec<PythonTag>,
    valid_until: bool,
    roots: Vec<String>,
}

/// One suite of one mirror: what a private APT source list names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suite {
    pub mirror: String,
    pub codename: String,
    /// Whether APT may refuse the suite's Release file for its age (stable releases carry
    /// no expiry; testing's expires within a week, which a mirror snapshot outlives).
    pub check_valid_until: bool,
    /// `--offline`: the suite is read from the cache only (see `refuse_when_offline`).
    pub offline: bool,
}

#[cfg(test)]
impl Config {
    /// Whether `codename` is a release of config/debian/releases.toml.
    pub(crate) fn knows_release(&self, codename: &str) -> bool {
        self.release
            .iter()
            .any(|release| release.codename == codename)
    }
}

pub(crate) fn config() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(|| match toml::from_str(RELEASES_TOML) {
        Ok(config) => config,
        // The file is compiled in; the unit test `bundled_releases_parse` guards it.
        Err(err) => panic!("config/debian/releases.toml is invalid: {err}"),
    })
}

/// Debian's own archive, where no `debian-mirror` (or `CROSSWHEEL_DEBIAN_MIRROR`, read
/// with the options) names another.
fn default_mirror() -> String {
    config().default_mirror.clone()
}

/// A mirror setting with its trailing slash and spaces dropped; empty or unset: Debian's.
pub(crate) fn mirror_from(variable: Option<String>) -> String {
    variable
        .map(|value| value.trim().trim_end_matches('/').to_string())
        .filter(|value| !value.is_empty())
        .unwrap_or_else(|| config().default_mirror.clone())
}

impl Release {
    fn suite(&self) -> Suite {
        Suite {
            mirror: default_mirror(),
            codename: self.codename.clone(),
            check_valid_until: !self.valid_until,
            offline: false,
        }
    }

    fn serves(&self, arch: LinuxArch) -> bool {
        self.architectures.iter().any(|name| name == arch.debian())
    }
}

/// The suite and the packages whose closure runs target CPython `version` on `arch`,
/// from the first release that ships it.
pub(crate) fn python_packages(
    arch: LinuxArch,
    python: PythonTag,
) -> Result<(Suite, Vec<String>), SysrootError> {
    python_package_sets(arch, python)?
        .into_iter()
        .next()
        .ok_or_else(|| unsupported(arch, python))
}

/// Every release that ships CPython `version` for `arch`, in the order to try them: a
/// mirror caught between updates may lack a file its index names, and the next release
/// with the same CPython is as good a target interpreter.
pub(crate) fn python_package_sets(
    arch: LinuxArch,
    python: PythonTag,
) -> Result<Vec<(Suite, Vec<String>)>, SysrootError> {
    let version = python.interpreter_version();
    let sets: Vec<(Suite, Vec<String>)> = config()
        .release
        .iter()
        .filter(|release| release.serves(arch) && release.pythons.contains(&python))
        .map(|release| {
            let packages = release
                .roots
                .iter()
                .map(|root| root.replace("{pyver}", &version))
                .collect();
            (release.suite(), packages)
        })
        .collect();
    if sets.is_empty() {
        return Err(unsupported(arch, python));
    }
    Ok(sets)
}

pub(crate) fn unsupported(arch: LinuxArch, python: PythonTag) -> SysrootError {
    let shipped = shipped_pythons(arch).join(", ");
    SysrootError::UnsupportedPython {
        version: python.interpreter_version(),
        arch: arch.machine(),
        // Debian builds no free-threaded CPython.
        available: if python.is_free_threaded() {
            format!("{shipped}, none of them free-threaded")
        } else {
            shipped
        },
    }
}

/// The suite of the target's system libraries and compiler runtime packages, as
/// `network` reaches it.
pub(crate) fn system_suite(network: &Network) -> Suite {
    release_suite(&config().system_release, network)
}

/// [`system_suite`] for `arch`'s packages: `system_release`, or for an architecture it
/// does not carry (riscv64 starts in trixie) the first release listed that does.
pub(crate) fn system_suite_for(arch: LinuxArch, network: &Network) -> Suite {
    let config = config();
    let system = &config.system_release;
    let serves_system = config
        .release
        .iter()
        .any(|release| &release.codename == system && release.serves(arch));
    let codename = match config.release.iter().find(|release| release.serves(arch)) {
        Some(release) if !serves_system => &release.codename,
        _ => system,
    };
    release_suite(codename, network)
}

/// The suite of release `codename` (a release of config/debian/releases.toml, or any
/// other suite of the default mirror), as `network` reaches it: on its mirror when it has
/// one, and from the cache alone when it is offline.
pub(crate) fn release_suite(codename: &str, network: &Network) -> Suite {
    let mut suite = config()
        .release
        .iter()
        .find(|release| release.codename == codename)
        .map(Release::suite)
        .unwrap_or_else(|| Suite {
            mirror: default_mirror(),
            codename: codename.to_owned(),
            check_valid_until: true,
            offline: false,
        });
    suite.reached_through(network);
    suite
}

impl Suite {
    /// The suite as `network` reaches it: its mirror, and whether it may be downloaded.
    pub(crate) fn reached_through(&mut self, network: &Network) {
        if let Some(mirror) = network.mirror() {
            self.mirror = mirror_from(Some(mirror.to_string()));
        }
        self.offline = network.offline;
    }
}

/// The suite whose host-architecture qemu-user package the test stage falls back to.
pub(crate) fn qemu_suite() -> Suite {
    let config = config();
    config
        .release
        .iter()
        .find(|release| release.codename == config.qemu_release)
        .map(Release::suite)
        .unwrap_or_else(|| Suite {
            mirror: default_mirror(),
            codename: config.qemu_release.clone(),
            check_valid_until: true,
            offline: false,
        })
}

/// The CPython of the first release serving `arch`, whose root supplies the C library
/// for a user's own target CPython and runs target programs during builds of versions
/// Debian has none of for `arch` (riscv64's cp311 builds run them on trixie's 3.13).
pub fn default_python_for(arch: LinuxArch) -> PythonTag {
    let config = config();
    if python_packages(arch, config.default_python).is_ok() {
        return config.default_python;
    }
    config
        .release
        .iter()
        .find(|release| release.serves(arch))
        .and_then(|release| release.pythons.first().copied())
        .unwrap_or(config.default_python)
}

/// Every CPython version Debian ships for `arch`, oldest first: `3.11`.
pub fn shipped_versions(arch: LinuxArch) -> Vec<PythonTag> {
    shipped(arch)
        .into_iter()
        .map(|(version, _)| version)
        .collect()
}

/// Every CPython version Debian ships for `arch`, oldest first, with its release:
/// `3.11 (Debian bookworm)`.
pub fn shipped_pythons(arch: LinuxArch) -> Vec<String> {
    shipped(arch)
        .into_iter()
        .map(|(version, codename)| format!("{} (Debian {codename})", version.version()))
        .collect()
}

/// (version, release) for every CPython Debian ships for `arch`, oldest first, each named
/// after the first release that ships it.
fn shipped(arch: LinuxArch) -> Vec<(PythonTag, &'static str)> {
    let mut found: Vec<(PythonTag, &'static str)> = config()
        .release
        .iter()
        .filter(|release| release.serves(arch))
        .flat_map(|release| {
            release
                .pythons
                .iter()
                .map(|version| (*version, release.codename.as_str()))
        })
        .collect();
    // Stable: a version stays named after the first release that ships it.
    found.sort_by_key(|(version, _)| *version);
    found.dedup_by(|a, b| a.0 == b.0);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn py(version: &str) -> PythonTag {
        PythonTag::parse_version(version).unwrap()
    }

    #[test]
    fn system_libraries_come_from_the_first_release_carrying_the_architecture() {
        assert_eq!(
            system_suite_for(LinuxArch::Aarch64, &Network::default()).codename,
            "bookworm"
        );
        assert_eq!(
            system_suite_for(LinuxArch::Armv7l, &Network::default()).codename,
            "bookworm"
        );
        assert_eq!(
            system_suite_for(LinuxArch::Riscv64, &Network::default()).codename,
            "trixie"
        );
    }

    #[test]
    fn bundled_releases_parse_and_name_every_library_by_release() {
        let config = config();
        assert!(!config.forwarded_acquire_settings.is_empty());
        for release in &config.release {
            assert!(
                release
                    .roots
                    .iter()
                    .any(|root| root == "python{pyver}-minimal"),
                "{}",
                release.codename
            );
        }
        assert!(ARCHIVE_KEYS.starts_with("-----BEGIN PGP PUBLIC KEY BLOCK-----"));
    }

    /// The keys crosswheel verifies Debian's archive with expire; the suite fails loudly a
    /// year before the first one does, so a release with new keys is never a surprise.
    #[test]
    fn the_archive_keys_outlive_the_next_year_and_are_the_documented_ones() {
        #[derive(Deserialize)]
        struct Keys {
            archive_keys_sha256: String,
            key: Vec<Key>,
        }
        #[derive(Deserialize)]
        struct Key {
            uid: String,
            expires: String,
            signs: Vec<String>,
        }
        let keys: Keys = toml::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/config/debian/archive-keys.toml"
        )))
        .unwrap();
        use sha2::Digest;
        let actual: String = sha2::Sha256::digest(ARCHIVE_KEYS.as_bytes())
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        assert_eq!(
            actual, keys.archive_keys_sha256,
            "archive-keys.toml describes other keys"
        );
        let seconds = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let next_year = 1970 + seconds / 31_556_952 + 1;
        for release in &config().release {
            let signers: Vec<&Key> = keys
                .key
                .iter()
                .filter(|key| key.signs.contains(&release.codename))
                .collect();
            assert!(!signers.is_empty(), "no key signs {}", release.codename);
            for key in signers {
                let year: u64 = key.expires[..4].parse().unwrap();
                assert!(
                    year > next_year,
                    "{} expires {}: update config/debian/ from Debian's debian-archive-keyring",
                    key.uid,
                    key.expires
                );
            }
        }
    }

    #[test]
    fn each_python_comes_from_the_release_that_ships_it() {
        let (suite, packages) = python_packages(LinuxArch::Ppc64le, py("3.11")).unwrap();
        assert_eq!(suite.codename, "bookworm");
        assert!(suite.check_valid_until);
        assert!(packages.iter().any(|p| p == "libssl3"));
        let (suite, packages) = python_packages(LinuxArch::Aarch64, py("3.13")).unwrap();
        assert_eq!(suite.codename, "trixie");
        assert!(packages.iter().any(|p| p == "libssl3t64"));
        let (suite, _) = python_packages(LinuxArch::Aarch64, py("3.14")).unwrap();
        assert_eq!(suite.codename, "forky");
        assert!(
            !suite.check_valid_until,
            "testing's Release files expire in days"
        );
        let (suite, packages) = python_packages(LinuxArch::Aarch64, py("3.9")).unwrap();
        assert_eq!(suite.codename, "bullseye");
        assert!(packages.iter().any(|p| p == "libffi7"));
    }

    #[test]
    fn a_python_no_release_ships_for_the_arch_is_refused_naming_those_that_are() {
        let err = python_packages(LinuxArch::Ppc64le, py("3.9")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no ppc64le CPython 3.9: crosswheel runs the CPython Debian ships for ppc64le, which is \
             3.11 (Debian bookworm), 3.13 (Debian trixie), 3.14 (Debian forky), 3.15 (Debian forky); \
             for another, give its root with --target-python (the `target-python` option)"
        );
        assert!(python_packages(LinuxArch::Aarch64, py("3.12")).is_err());
        let free_threaded = python_packages(LinuxArch::Aarch64, py("3.13t")).unwrap_err();
        assert!(
            free_threaded
                .to_string()
                .contains("3.15 (Debian forky), none of them free-threaded; for another"),
            "{free_threaded}"
        );
    }

    #[test]
    fn the_mirror_variable_replaces_debians_mirror() {
        let set = |value: &str| mirror_from(Some(value.to_string()));
        assert_eq!(
            set("http://mirror.test/debian/"),
            "http://mirror.test/debian"
        );
        assert_eq!(set("  "), "http://deb.debian.org/debian");
        assert_eq!(mirror_from(None), "http://deb.debian.org/debian");
    }
}
