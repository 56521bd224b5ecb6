//! Test requirements the index has no target wheel of (numpy, scipy, pyyaml, pillow on
//! ppc64le), taken from the target CPython's own Debian release: `python3-numpy` and its
//! libraries go into a target tree of their own, and the test venv sees that tree's
//! `dist-packages` through a `.pth` file, after its own `site-packages`.
//!
//! The host pip resolves with `--target`, which ignores anything installed, so it is told
//! what Debian provides through placeholder wheels: one empty `py3-none-any` wheel per
//! distribution in the tree, at Debian's version, offered with `--find-links`. pip then
//! checks the requirement's specifier against Debian's version itself, resolves the
//! rest, and "installs" the placeholder, whose metadata folder is removed afterwards.

use std::fs;
use std::path::{Path, PathBuf};

use crate::package_name::requirement_name;
use crate::sysroot::python_packages::{
    self, DIST_PACKAGES, ProvidedDistribution, debian_package, normalize,
};
use crate::wheel::{Contents, WheelName, WriteOptions, write_wheel};

use super::TestError;
use super::emulator::Emulator;
use super::run::Log;
use super::venv::{InstalledBy, TargetEnv};

/// Variables by name.
type Vars = std::collections::BTreeMap<String, String>;

/// The emulated test venv for `requirements`: on `emulator`'s tree when the index has a
/// target wheel of everything, else on a tree that adds the Debian packages of what it
/// lacks (one more package per round, as pip names them one at a time). What neither
/// provides is left to the installation, which builds it under emulation or says why not.
pub(crate) fn emulated_env(
    mut env: TargetEnv,
    emulator: &Emulator,
    requirements: &[String],
    vars: &Vars,
    cache: &Path,
    mirror: Option<&str>,
    log: &mut Log,
) -> Result<TargetEnv, TestError> {
    let root = env.root().to_path_buf();
    let mut asked: Vec<String> = Vec::new();
    loop {
        let probe = env.probe(requirements, vars, log)?;
        if probe.status.success() {
            return Ok(env);
        }
        let Some(missing) = missing_distribution(&probe.tail()) else {
            return Ok(env);
        };
        let Some(name) = requirement_name(&missing) else {
            return Ok(env);
        };
        let name = name.as_ref();
        if let Some(debian) = env.debian()
            && let Some(provided) = debian.provides(name)
        {
            return Err(TestError::DebianVersion {
                requirement: missing.clone(),
                package: debian_package(&provided.name),
                version: provided.version.clone(),
                release: debian.release.clone(),
            });
        }
        let package = debian_package(name);
        if asked.contains(&package) {
            return Ok(env);
        }
        let arch = emulator.sysroot().arch();
        log.note(&format!(
            "the index has no {arch} wheel of {missing}: trying Debian's {package} for CPython {}",
            emulator.sysroot().python_version().interpreter_version()
        ))?;
        let mut packages = asked.clone();
        packages.extend(python_packages::with_companions(&package));
        let with_packages = match emulator.with_debian_packages(cache, &packages, mirror) {
            Ok(Some(found)) => found,
            Ok(None) => {
                log.note("the target CPython is the user's (target-python): Debian's packages were not built for it")?;
                return Ok(env);
            }
            Err(TestError::Sysroot(crate::sysroot::SysrootError::Apt { detail, .. })) => {
                log.note(&format!("Debian has no {package} for {arch} ({detail})"))?;
                return Ok(env);
            }
            Err(other) => return Err(other),
        };
        asked = packages;
        fs::remove_dir_all(&root).map_err(TestError::io("remove", &root))?;
        env = TargetEnv::emulated(&root, &with_packages)?;
        let sysroot = with_packages.sysroot();
        let versions: Vec<(String, String)> = sysroot
            .tree()
            .map(|tree| {
                tree.manifest()
                    .packages
                    .iter()
                    .map(|p| (p.name.clone(), p.version.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let placeholders = root.with_file_name("debian-placeholders");
        let _ = fs::remove_dir_all(&placeholders);
        let debian = DebianPython::from_tree(
            sysroot.root(),
            &asked,
            &versions,
            sysroot.release().unwrap_or("Debian"),
            &placeholders,
        )?;
        log.note(&format!(
            "target tree with Debian's Python packages: {}",
            sysroot.root().display()
        ))?;
        env.use_debian(debian)?;
    }
}

/// Written into each placeholder's metadata folder, naming the Debian package.
const PLACEHOLDER_MARKER: &str = "CROSSWHEEL-DEBIAN-PACKAGE";

/// The `.pth` file that puts Debian's `dist-packages` on the venv's path.
const PTH_NAME: &str = "_crosswheel_debian.pth";

/// What a target tree with Debian's Python packages provides to a test venv.
#[derive(Debug, Clone)]
pub(crate) struct DebianPython {
    /// The tree's `dist-packages`.
    pub dist_packages: PathBuf,
    /// Every distribution there, at the version Debian ships.
    pub provided: Vec<ProvidedDistribution>,
    /// The packages asked for, with Debian's full version (`1:1.24.2-1+deb12u1`).
    pub packages: Vec<(String, String)>,
    /// The Debian release they come from.
    pub release: String,
    /// Placeholder wheels for pip's `--find-links`.
    pub placeholders: PathBuf,
}

impl DebianPython {
    /// Reads what the tree at `root` provides and writes a placeholder wheel for each
    /// distribution into `placeholders`.
    pub fn from_tree(
        root: &Path,
        asked: &[String],
        versions: &[(String, String)],
        release: &str,
        placeholders: &Path,
    ) -> Result<Self, TestError> {
        let provided = python_packages::provided_distributions(root)?;
        fs::create_dir_all(placeholders).map_err(TestError::io("create", placeholders))?;
        for distribution in &provided {
            let package = debian_package(&distribution.name);
            write_placeholder(placeholders, distribution, &package)?;
        }
        let packages = asked
            .iter()
            .map(|package| {
                let version = versions
                    .iter()
                    .find(|(name, _)| name == package)
                    .map_or_else(|| "?".to_string(), |(_, version)| version.clone());
                (package.clone(), version)
            })
            .collect();
        Ok(DebianPython {
            dist_packages: root.join(DIST_PACKAGES),
            provided,
            packages,
            release: release.to_string(),
            placeholders: placeholders.to_path_buf(),
        })
    }

    /// The distribution `name` as Debian provides it, if it does.
    pub fn provides(&self, name: &str) -> Option<&ProvidedDistribution> {
        let wanted = normalize(name);
        self.provided.iter().find(|d| normalize(&d.name) == wanted)
    }

    /// "Debian package python3-numpy 1:1.24.2-1+deb12u1 (bookworm)" for distribution `name`.
    pub fn source_of(&self, name: &str) -> Option<String> {
        let distribution = self.provides(name)?;
        let package = debian_package(&distribution.name);
        let version = self
            .packages
            .iter()
            .find(|(asked, _)| *asked == package)
            .map_or(distribution.version.as_str(), |(_, version)| version);
        Some(format!(
            "Debian package {package} {version} ({})",
            self.release
        ))
    }

    /// Puts Debian's `dist-packages` on `site_packages`' path, after it.
    pub fn link_into(&self, site_packages: &Path) -> Result<(), TestError> {
        let pth = site_packages.join(PTH_NAME);
        fs::write(&pth, format!("{}\n", self.dist_packages.display()))
            .map_err(TestError::io("write", &pth))
    }
}

/// One line per test requirement saying where it came from.
pub(crate) fn requirement_sources(
    test_requires: &[String],
    env: &TargetEnv,
    installed_by: &InstalledBy,
) -> Vec<String> {
    let debian = env.debian();
    let mut lines = Vec::new();
    let mut named = Vec::new();
    for requirement in test_requires {
        let Some(name) = requirement_name(requirement) else {
            continue;
        };
        let name = name.as_ref();
        named.push(normalize(name));
        let source = debian
            .and_then(|debian| debian.source_of(name))
            .unwrap_or_else(|| match installed_by {
                InstalledBy::HostPip => "target wheel from the index".to_string(),
                InstalledBy::InterpreterPip { built }
                    if built.iter().any(|b| normalize(b) == normalize(name)) =>
                {
                    "built from source by pip under the target interpreter".to_string()
                }
                InstalledBy::InterpreterPip { .. } => {
                    "wheel from the index, installed by pip under the target interpreter"
                        .to_string()
                }
            });
        lines.push(format!("test requirement {requirement}: {source}"));
    }
    // What Debian provided for a dependency rather than a named test requirement.
    for (package, _) in debian.map(|d| d.packages.as_slice()).unwrap_or_default() {
        let Some(distribution) = debian.and_then(|d| {
            d.provided
                .iter()
                .find(|p| debian_package(&p.name) == *package)
        }) else {
            continue;
        };
        if !named.contains(&normalize(&distribution.name)) {
            let source = debian
                .and_then(|d| d.source_of(&distribution.name))
                .unwrap_or_default();
            lines.push(format!("dependency {}: {source}", distribution.name));
        }
    }
    lines
}

/// An empty wheel standing for Debian's `distribution`, so pip counts it as available.
fn write_placeholder(
    dir: &Path,
    distribution: &ProvidedDistribution,
    package: &str,
) -> Result<(), TestError> {
    let escaped = normalize(&distribution.name).replace('-', "_");
    let file_name = format!("{escaped}-{}-py3-none-any.whl", distribution.version);
    // A Debian version pip cannot read as a wheel version is skipped: pip would ignore
    // the file, and the requirement is then reported as unsatisfied by Debian.
    let Ok(name) = WheelName::parse(&file_name) else {
        return Ok(());
    };
    let info = format!("{escaped}-{}.dist-info", distribution.version);
    let text = |text: String| Contents::Bytes {
        data: text.into_bytes(),
        mode: 0o644,
    };
    let entries = vec![
        (
            format!("{info}/METADATA"),
            text(format!(
                "Metadata-Version: 2.1\nName: {}\nVersion: {}\nSummary: provided by Debian's {package}\n",
                distribution.name, distribution.version
            )),
        ),
        (
            format!("{info}/WHEEL"),
            text("Wheel-Version: 1.0\nGenerator: crosswheel\nRoot-Is-Purelib: true\nTag: py3-none-any\n".into()),
        ),
        (format!("{info}/{PLACEHOLDER_MARKER}"), text(format!("{package}\n"))),
    ];
    write_wheel(dir, &name, entries, &WriteOptions { epoch: Some(0) })
        .map(|_| ())
        .map_err(|err| TestError::Placeholder(err.to_string()))
}

/// Removes the metadata folders placeholders left in `site_packages`, so that Debian's
/// own metadata (in `dist-packages`) is what the tests see.
pub(crate) fn remove_placeholders(site_packages: &Path) -> Result<(), TestError> {
    let Ok(entries) = fs::read_dir(site_packages) else {
        return Ok(());
    };
    for entry in entries {
        let path = entry.map_err(TestError::io("list", site_packages))?.path();
        if path.join(PLACEHOLDER_MARKER).is_file() {
            fs::remove_dir_all(&path).map_err(TestError::io("remove", &path))?;
        }
    }
    Ok(())
}

/// The requirement pip names in `No matching distribution found for numpy>=2`.
pub(crate) fn missing_distribution(pip_output: &[String]) -> Option<String> {
    pip_output.iter().rev().find_map(|line| {
        line.split_once("No matching distribution found for ")
            .map(|(_, requirement)| requirement.trim().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pips_missing_distribution_is_found_in_its_output() {
        let output = [
            "Looking in links: /x".to_string(),
            "ERROR: Could not find a version that satisfies the requirement numpy>=2 (from versions: 1.24.2)".to_string(),
            "ERROR: No matching distribution found for numpy>=2".to_string(),
        ];
        assert_eq!(missing_distribution(&output).as_deref(), Some("numpy>=2"));
        assert_eq!(missing_distribution(&output[..1]), None);
    }

    #[test]
    fn placeholders_carry_debians_version_and_are_removed_after_install() {
        let dir = tempfile::tempdir().unwrap();
        let numpy = ProvidedDistribution {
            name: "numpy".into(),
            version: "1.24.2".into(),
        };
        write_placeholder(dir.path(), &numpy, "python3-numpy").unwrap();
        let wheel = dir.path().join("numpy-1.24.2-py3-none-any.whl");
        let archive = crate::wheel::WheelArchive::open(&wheel).unwrap();
        let marker = archive
            .read(&format!("numpy-1.24.2.dist-info/{PLACEHOLDER_MARKER}"))
            .unwrap();
        assert_eq!(marker, b"python3-numpy\n");

        let site = dir.path().join("site-packages");
        let info = site.join("numpy-1.24.2.dist-info");
        fs::create_dir_all(&info).unwrap();
        fs::write(info.join(PLACEHOLDER_MARKER), "python3-numpy\n").unwrap();
        fs::create_dir_all(site.join("pytest-9.0.dist-info")).unwrap();
        remove_placeholders(&site).unwrap();
        assert!(!info.exists());
        assert!(site.join("pytest-9.0.dist-info").exists());
    }
}
