//! Python distributions from Debian's own packages: which package provides a distribution
//! (`config/debian/python-packages.toml`), what a tree holding such packages provides, and
//! the update-alternatives links that unpacking alone does not make.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Deserialize;

use super::SysrootError;

const PYTHON_PACKAGES_TOML: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/config/debian/python-packages.toml"
));

/// Where Debian's `python3-*` packages put their modules, relative to the tree root.
pub const DIST_PACKAGES: &str = "usr/lib/python3/dist-packages";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    exceptions: BTreeMap<String, String>,
    with: BTreeMap<String, Vec<String>>,
    alternative: Vec<Alternative>,
}

/// A link update-alternatives would make inside each `usr/lib/<triplet>/`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Alternative {
    pub link: String,
    /// Relative to the link's folder, best first.
    pub providers: Vec<String>,
}

fn config() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(|| match toml::from_str(PYTHON_PACKAGES_TOML) {
        Ok(config) => config,
        // The file is compiled in; the unit test `bundled_mapping_parses` guards it.
        Err(err) => panic!("config/debian/python-packages.toml is invalid: {err}"),
    })
}

pub use crate::package_name::normalize;

/// The Debian package providing distribution `name` for Debian's python3.
pub fn debian_package(name: &str) -> String {
    let name = normalize(name);
    config()
        .exceptions
        .get(&name)
        .cloned()
        .unwrap_or_else(|| format!("python3-{name}"))
}

/// `package` and what must come with it (a BLAS for numpy), in install order.
pub fn with_companions(package: &str) -> Vec<String> {
    let mut packages = vec![package.to_string()];
    packages.extend(config().with.get(package).into_iter().flatten().cloned());
    packages
}

pub fn alternatives() -> &'static [Alternative] {
    &config().alternative
}

/// A distribution a tree's `dist-packages` provides, read from its metadata folder's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvidedDistribution {
    /// As Debian's metadata spells it (`PyYAML`).
    pub name: String,
    pub version: String,
}

/// Every distribution under `root`'s [`DIST_PACKAGES`], from its `*.dist-info` and
/// `*.egg-info` entries (`numpy-1.24.2.egg-info`, `PyYAML-6.0.egg-info`,
/// `foo-1.0-py3.11.egg-info`), sorted by normalized name.
pub fn provided_distributions(root: &Path) -> Result<Vec<ProvidedDistribution>, SysrootError> {
    let folder = root.join(DIST_PACKAGES);
    let entries = match fs::read_dir(&folder) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(SysrootError::io("list", &folder)(err)),
    };
    let mut found = Vec::new();
    for entry in entries {
        let name = entry
            .map_err(SysrootError::io("list", &folder))?
            .file_name();
        if let Some(distribution) = parse_metadata_name(&name.to_string_lossy()) {
            found.push(distribution);
        }
    }
    found.sort_by_key(|d| normalize(&d.name));
    found.dedup_by_key(|d| normalize(&d.name));
    Ok(found)
}

fn parse_metadata_name(entry: &str) -> Option<ProvidedDistribution> {
    let stem = entry
        .strip_suffix(".dist-info")
        .or_else(|| entry.strip_suffix(".egg-info"))?;
    let (name, rest) = stem.split_once('-')?;
    // egg-info names may end with the Python they were built for: `-py3.11`.
    let version = match rest.rsplit_once("-py") {
        Some((version, python)) if python.chars().all(|c| c.is_ascii_digit() || c == '.') => {
            version
        }
        _ => rest,
    };
    (!name.is_empty() && !version.is_empty()).then(|| ProvidedDistribution {
        name: name.to_string(),
        version: version.to_string(),
    })
}

/// Makes each alternative's link in every `usr/lib/*/` folder holding one of its providers
/// (and no file of that name yet). Returns the links made.
pub(crate) fn make_alternative_links(
    root: &Path,
    alternatives: &[Alternative],
) -> Result<Vec<PathBuf>, SysrootError> {
    let lib = root.join("usr/lib");
    let Ok(entries) = fs::read_dir(&lib) else {
        return Ok(Vec::new());
    };
    let mut made = Vec::new();
    for entry in entries {
        let folder = entry.map_err(SysrootError::io("list", &lib))?.path();
        if !folder.is_dir() {
            continue;
        }
        for alternative in alternatives {
            let link = folder.join(&alternative.link);
            if fs::symlink_metadata(&link).is_ok() {
                continue;
            }
            if let Some(provider) = alternative
                .providers
                .iter()
                .find(|provider| folder.join(provider).exists())
            {
                std::os::unix::fs::symlink(provider, &link)
                    .map_err(SysrootError::io("create the symlink", &link))?;
                made.push(link);
            }
        }
    }
    Ok(made)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_mapping_parses() {
        assert!(!config().exceptions.is_empty());
        assert!(!alternatives().is_empty());
    }

    #[test]
    fn requirement_names_map_to_debian_packages_by_rule_and_exception() {
        assert_eq!(debian_package("numpy"), "python3-numpy");
        assert_eq!(debian_package("SciPy"), "python3-scipy");
        assert_eq!(debian_package("PyYAML"), "python3-yaml");
        assert_eq!(debian_package("Pillow"), "python3-pil");
        assert_eq!(debian_package("scikit_learn"), "python3-sklearn");
        assert_eq!(debian_package("zope.interface"), "python3-zope-interface");
        assert_eq!(normalize("Foo__Bar.baz"), "foo-bar-baz");
    }

    #[test]
    fn numpy_brings_openblas_and_others_come_alone() {
        assert_eq!(
            with_companions("python3-numpy"),
            ["python3-numpy", "libopenblas0-pthread"]
        );
        assert_eq!(with_companions("python3-yaml"), ["python3-yaml"]);
    }

    #[test]
    fn metadata_folder_names_give_distribution_and_version() {
        let parsed = |entry: &str| parse_metadata_name(entry).map(|d| (d.name, d.version));
        assert_eq!(
            parsed("numpy-1.24.2.egg-info"),
            Some(("numpy".into(), "1.24.2".into()))
        );
        assert_eq!(
            parsed("PyYAML-6.0.1-py3.11.egg-info"),
            Some(("PyYAML".into(), "6.0.1".into()))
        );
        assert_eq!(
            parsed("scipy-1.14.1.dist-info"),
            Some(("scipy".into(), "1.14.1".into()))
        );
        assert_eq!(parsed("numpy"), None);
        assert_eq!(parsed("README.egg-info"), None);
    }

    #[test]
    fn alternatives_link_the_best_present_provider() {
        let root = tempfile::tempdir().unwrap();
        let folder = root.path().join("usr/lib/powerpc64le-linux-gnu");
        for provider in ["openblas-pthread", "blas", "lapack"] {
            fs::create_dir_all(folder.join(provider)).unwrap();
        }
        fs::write(folder.join("openblas-pthread/libblas.so.3"), "").unwrap();
        fs::write(folder.join("blas/libblas.so.3"), "").unwrap();
        fs::write(folder.join("lapack/liblapack.so.3"), "").unwrap();
        let made = make_alternative_links(root.path(), alternatives()).unwrap();
        assert_eq!(made.len(), 2);
        assert_eq!(
            fs::read_link(folder.join("libblas.so.3")).unwrap(),
            Path::new("openblas-pthread/libblas.so.3")
        );
        assert_eq!(
            fs::read_link(folder.join("liblapack.so.3")).unwrap(),
            Path::new("lapack/liblapack.so.3")
        );
        assert!(
            make_alternative_links(root.path(), alternatives())
                .unwrap()
                .is_empty()
        );
    }
}
