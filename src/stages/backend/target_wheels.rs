//! Build requirements needed in their *target* form: libraries an extension links
//! against (scipy-openblas32). The host copy installed as a build requirement holds
//! x86_64 binaries, so the target's wheels are downloaded with `pip download --platform`
//! and unpacked into a folder the backend is told about through `CROSSWHEEL_TARGET_SITE`.

use std::path::{Path, PathBuf};

use super::{BuildError, host_env};
use crate::support::host::{BuildPython, Cache, cache_key};
use crate::target::Target;

const MARKER: &str = ".crosswheel-complete";

#[derive(serde::Deserialize)]
struct HeaderPackage {
    required_as: Vec<String>,
    /// Options that replace the package's own in a build made for its headers alone.
    #[serde(default)]
    headers_only: std::collections::BTreeMap<String, String>,
}

/// `config/target-headers.toml`: packages whose headers are the target's business.
fn header_packages() -> &'static std::collections::BTreeMap<String, HeaderPackage> {
    static PACKAGES: std::sync::OnceLock<std::collections::BTreeMap<String, HeaderPackage>> =
        std::sync::OnceLock::new();
    PACKAGES.get_or_init(|| {
        toml::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/config/target-headers.toml"
        )))
        .expect("config/target-headers.toml is valid")
    })
}

/// The normalized project a requirement names; empty for text that is not a requirement,
/// which then matches no package.
fn requirement_name(requirement: &str) -> String {
    crate::package_name::requirement_name(requirement)
        .map(|name| name.to_string())
        .unwrap_or_default()
}

/// Build requirements whose headers must be the target's (numpy) and that the user's
/// `target-requires` does not already name: the requirement as the project wrote it, or
/// the package's bare name when it came in through a meta-package.
pub fn header_requirements(build_requires: &[String], target_requires: &[String]) -> Vec<String> {
    let named: Vec<String> = target_requires
        .iter()
        .map(|r| requirement_name(r))
        .collect();
    let mut found = Vec::new();
    for (package, data) in header_packages() {
        if named.contains(package) {
            continue;
        }
        let requirement = build_requires.iter().find_map(|requirement| {
            let name = requirement_name(requirement);
            if name == *package {
                // Markers were for the build machine's pip; the version applies as is.
                Some(
                    requirement
                        .split(';')
                        .next()
                        .unwrap_or(requirement)
                        .trim()
                        .to_string(),
                )
            } else if data.required_as.contains(&name) {
                Some(package.clone())
            } else {
                None
            }
        });
        found.extend(requirement);
    }
    found
}

/// Whether `requirement` names a header package (config/target-headers.toml: numpy), as
/// opposed to a library wheel: only a header package is built from its sdist where the
/// index has no target wheel of it; a library wheel's sdist builds the library itself
/// (OpenBLAS), which the target-library catalogue does instead.
pub fn is_header_package(requirement: &str) -> bool {
    header_packages().contains_key(&requirement_name(requirement))
}

/// The options (`config/target-headers.toml`'s `headers_only`) that replace a header
/// package's own in a build of it made for its headers alone; `None` for another package.
pub fn headers_only_options(
    requirement: &str,
) -> Option<&'static std::collections::BTreeMap<String, String>> {
    header_packages()
        .get(&requirement_name(requirement))
        .map(|package| &package.headers_only)
}

/// The header requirements at the version the build environment installed (the venv at
/// `env_root`): Cython writes its C code from that numpy's `.pxd` files, which name
/// functions only that numpy's headers declare (numpy 2.3's `PyDataType_TYPEOBJ`), so the
/// target's headers must be of the same release, not the newest the target's glibc
/// floor has a wheel of (scipy 1.18 on manylinux2014 aarch64 got numpy 2.4's `.pxd` and
/// 2.2's headers). A package the environment lacks keeps its requirement.
pub fn pinned_to_build_environment(header: Vec<String>, env_root: &Path) -> Vec<String> {
    let installed = super::target_installs::site_packages_of(env_root)
        .map(|site| super::target_installs::installed_in(&site))
        .unwrap_or_default();
    header
        .into_iter()
        .map(|requirement| {
            let name = requirement_name(&requirement);
            installed
                .iter()
                .find(|dist| crate::package_name::normalize(&dist.name) == name)
                .map(|dist| format!("{name}=={}", dist.version))
                .unwrap_or(requirement)
        })
        .collect()
}

/// The header requirements with the build environment's library wheels (names,
/// config/target-installs.toml) added, as the build requirements spell them when they name
/// them: the target gets the newest wheel it can install that satisfies them, which is
/// not always the build machine's version (scipy-openblas32 0.3.34 has no manylinux2014
/// aarch64 wheel). Nothing is added twice, nor for a package `target-requires` names.
pub fn with_library_requirements(
    header: Vec<String>,
    library: &[String],
    build_requires: &[String],
    target_requires: &[String],
) -> Vec<String> {
    let mut named: Vec<String> = target_requires
        .iter()
        .chain(&header)
        .map(|r| requirement_name(r))
        .collect();
    let mut all = header;
    for name in library {
        let name = crate::package_name::normalize(name);
        if named.contains(&name) {
            continue;
        }
        let spelt = build_requires
            .iter()
            .find(|r| requirement_name(r) == name)
            .map(|r| r.split(';').next().unwrap_or(r).trim().to_string());
        all.push(spelt.unwrap_or_else(|| name.clone()));
        named.push(name);
    }
    all
}

/// Unpacks the target wheels of `requires` (without dependencies) and returns the folder.
/// `find_links`: folders of wheels built here for the target (a header package the index
/// has no wheel of), offered to pip beside the index.
pub fn prepare_target_site(
    cache: &Cache,
    target: &Target,
    python: &BuildPython,
    requires: &[String],
    find_links: &[PathBuf],
    offline: bool,
) -> Result<PathBuf, BuildError> {
    let mut sorted: Vec<String> = requires.to_vec();
    // A wheel built here is part of what the site is made of: another build, another site.
    sorted.extend(find_links.iter().map(|folder| folder.display().to_string()));
    sorted.sort_unstable();
    let key = cache_key(&[sorted.join("\n").as_bytes()]);
    let root = cache.target_wheels().join(format!(
        "{}-{}-{}-{key}",
        target.id(),
        target.os_version(),
        python.abi_tag()
    ));
    let site = root.join("site");
    std::fs::create_dir_all(&root).map_err(|source| {
        BuildError::Io(crate::io_error::IoError::new(
            "create",
            root.clone(),
            source,
        ))
    })?;
    let _lock = host_env::lock(&root.join("lock"))?;
    if site.join(MARKER).is_file() {
        return Ok(site);
    }
    if offline {
        return Err(BuildError::OfflineTargetRequires {
            target: target.id().to_string(),
            requires: requires.join(", "),
        });
    }
    let wheels = root.join("wheels");
    for dir in [&wheels, &site] {
        if dir.exists() {
            std::fs::remove_dir_all(dir).map_err(|source| {
                BuildError::Io(crate::io_error::IoError::new("remove", dir.clone(), source))
            })?;
        }
    }
    tracing::info!(
        "downloading the {} wheels of {} that the build links against (once per target and Python; OpenBLAS is ~30 MB)",
        target.id(),
        requires.join(", ")
    );
    // Headers do not depend on the glibc a wheel was built for, only on the architecture:
    // a header package comes from any of the architecture's wheels, so it can be the build
    // environment's release even where that release needs a newer glibc than the target.
    let (headers, libraries): (Vec<String>, Vec<String>) = requires
        .iter()
        .cloned()
        .partition(|requirement| header_packages().contains_key(&requirement_name(requirement)));
    for (group, platforms) in [
        (&headers, target.every_platform_of_its_arch()),
        (&libraries, target.compatible_platforms()),
    ] {
        if !group.is_empty() {
            download(python, group, &platforms, find_links, &wheels).map_err(|output| {
                BuildError::TargetRequires {
                    target: target.id().to_string(),
                    requires: group.join(", "),
                    output,
                }
            })?;
        }
    }
    std::fs::create_dir_all(&site).map_err(|source| {
        BuildError::Io(crate::io_error::IoError::new(
            "create",
            site.clone(),
            source,
        ))
    })?;
    for entry in std::fs::read_dir(&wheels).map_err(|source| {
        BuildError::Io(crate::io_error::IoError::new(
            "list",
            wheels.clone(),
            source,
        ))
    })? {
        let path = entry
            .map_err(|source| {
                BuildError::Io(crate::io_error::IoError::new(
                    "list",
                    wheels.clone(),
                    source,
                ))
            })?
            .path();
        if path.extension().is_some_and(|ext| ext == "whl") {
            unpack(&path, &site)?;
        }
    }
    std::fs::write(site.join(MARKER), "").map_err(|source| {
        BuildError::Io(crate::io_error::IoError::new("write", site.clone(), source))
    })?;
    Ok(site)
}

fn download(
    python: &BuildPython,
    requires: &[String],
    platforms: &[String],
    find_links: &[PathBuf],
    dest: &Path,
) -> Result<(), String> {
    let abi = python.abi_tag();
    let mut args: Vec<String> = vec![
        "--no-deps".into(),
        "--only-binary=:all:".into(),
        "--python-version".into(),
        python.version_text(),
        "--implementation".into(),
        "cp".into(),
        "--abi".into(),
        abi,
        "--abi".into(),
        "abi3".into(),
        "--abi".into(),
        "none".into(),
    ];
    for platform in platforms {
        args.push("--platform".into());
        args.push(platform.clone());
    }
    for folder in find_links {
        args.push("--find-links".into());
        args.push(folder.to_string_lossy().into_owned());
    }
    args.push("--dest".into());
    args.push(dest.to_string_lossy().into_owned());
    args.extend(requires.iter().cloned());
    let rest: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    host_env::run_host(
        &python.executable,
        &[
            "-m",
            "pip",
            "--disable-pip-version-check",
            "download",
            "--quiet",
        ],
        &rest,
    )
    .map(|_| ())
}

fn unpack(wheel: &Path, site: &Path) -> Result<(), BuildError> {
    let bad = |message: String| BuildError::BadTargetWheel {
        wheel: wheel.to_path_buf(),
        message,
    };
    let file = std::fs::File::open(wheel).map_err(|source| {
        BuildError::Io(crate::io_error::IoError::new(
            "open",
            wheel.to_path_buf(),
            source,
        ))
    })?;
    let mut archive = zip::ZipArchive::new(file).map_err(|err| bad(err.to_string()))?;
    // `extract` refuses entries escaping the folder (`..`, absolute paths).
    archive.extract(site).map_err(|err| bad(err.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| item.to_string()).collect()
    }

    #[test]
    fn numpy_among_the_build_requirements_is_wanted_in_its_target_form() {
        let build = strings(&["meson-python>=0.15", "numpy>=2.0; python_version>='3.9'"]);
        assert_eq!(header_requirements(&build, &[]), ["numpy>=2.0"]);
    }

    #[test]
    fn an_installed_library_wheel_joins_the_target_requirements_as_the_project_spells_it() {
        let all = with_library_requirements(
            strings(&["numpy>=2.0"]),
            &strings(&["numpy", "scipy_openblas32", "pillow", "scipy-openblas64"]),
            &strings(&[
                "scipy-openblas32>=0.3.30; sys_platform != 'win32'",
                "numpy>=2.0",
            ]),
            &strings(&["Pillow"]),
        );
        assert_eq!(
            all,
            ["numpy>=2.0", "scipy-openblas32>=0.3.30", "scipy-openblas64"]
        );
    }

    #[test]
    fn headers_are_of_the_release_the_build_environment_installed() {
        let venv = tempfile::tempdir().unwrap();
        let dist_info = venv
            .path()
            .join("lib/python3.13/site-packages/numpy-2.4.6.dist-info");
        std::fs::create_dir_all(&dist_info).unwrap();
        std::fs::write(
            dist_info.join("METADATA"),
            "Metadata-Version: 2.1\nName: numpy\nVersion: 2.4.6\n",
        )
        .unwrap();
        assert_eq!(
            pinned_to_build_environment(strings(&["numpy>=2.0.0,<2.7", "pybind11"]), venv.path()),
            ["numpy==2.4.6", "pybind11"]
        );
    }

    #[test]
    fn headers_come_from_any_glibc_of_the_architecture_libraries_from_the_targets() {
        let target = Target::parse("linux-aarch64").unwrap();
        let every = target.every_platform_of_its_arch();
        assert!(
            every.contains(&"manylinux_2_28_aarch64".to_string()),
            "{every:?}"
        );
        assert!(
            every.contains(&"manylinux2014_aarch64".to_string()),
            "{every:?}"
        );
        let compatible = target.compatible_platforms();
        assert!(!compatible.contains(&"manylinux_2_28_aarch64".to_string()));
        assert!(compatible.iter().all(|tag| every.contains(tag)));
    }

    #[test]
    fn only_a_header_package_is_one_to_build_from_its_sdist() {
        assert!(is_header_package("numpy==2.4.6"));
        assert!(is_header_package("NumPy>=2"));
        assert!(!is_header_package("scipy-openblas32"));
        assert!(!is_header_package("not a requirement"));
    }

    #[test]
    fn oldest_supported_numpy_brings_numpy() {
        let build = strings(&["setuptools", "oldest-supported-numpy"]);
        assert_eq!(header_requirements(&build, &[]), ["numpy"]);
    }

    #[test]
    fn a_user_listed_target_requirement_is_not_added_twice() {
        let build = strings(&["numpy>=2"]);
        assert!(header_requirements(&build, &strings(&["NumPy==2.1.0"])).is_empty());
        assert!(header_requirements(&strings(&["cython", "pybind11"]), &[]).is_empty());
    }
}
