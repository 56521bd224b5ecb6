//! Which installed packages serve the target: `config/target-installs.toml`'s rule, read
//! here for the build requirements (the hook environment's Python side reads the same data,
//! `python_files/hook_env.py`), and the way back from a library path to the distribution
//! that installed it, for the wrong-architecture error.

use std::path::{Path, PathBuf};

#[derive(Debug, serde::Deserialize, serde::Serialize)]
pub(crate) struct Rule {
    pub build_tools: Vec<String>,
    pub link_time_files: LinkTimeFiles,
}

#[derive(Debug, serde::Deserialize, serde::Serialize)]
pub(crate) struct LinkTimeFiles {
    pub suffixes: Vec<String>,
    pub shared_library_prefix: String,
}

/// `config/target-installs.toml`, parsed once.
pub(crate) fn rule() -> &'static Rule {
    static RULE: std::sync::OnceLock<Rule> = std::sync::OnceLock::new();
    RULE.get_or_init(|| {
        toml::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/config/target-installs.toml"
        )))
        .expect("config/target-installs.toml is valid")
    })
}

impl Rule {
    /// A file a compiler, linker, pkg-config or CMake reads; a Python extension module
    /// (`_core.cpython-311-x86_64-linux-gnu.so`) is not one.
    pub fn is_link_time_file(&self, relative: &str) -> bool {
        let base = relative.rsplit('/').next().unwrap_or(relative);
        let files = &self.link_time_files;
        files.suffixes.iter().any(|suffix| base.ends_with(suffix))
            || (base.starts_with(&files.shared_library_prefix)
                && (base.ends_with(".so") || base.contains(".so.")))
    }

    pub fn is_build_tool(&self, name: &str) -> bool {
        let name = crate::package_name::normalize(name);
        self.build_tools
            .iter()
            .any(|tool| crate::package_name::normalize(tool) == name)
    }
}

/// A distribution installed in a site-packages folder, as its `.dist-info` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Installed {
    pub name: String,
    pub version: String,
    /// The `Tag:` lines of its WHEEL file.
    pub tags: Vec<String>,
    /// The paths of its RECORD, relative to the site-packages folder.
    pub files: Vec<String>,
}

impl Installed {
    fn read(dist_info: &Path) -> Option<Installed> {
        let metadata = std::fs::read_to_string(dist_info.join("METADATA")).ok()?;
        let field = |key: &str| {
            metadata
                .lines()
                .take_while(|line| !line.trim().is_empty())
                .find_map(|line| line.strip_prefix(key).map(|v| v.trim().to_string()))
        };
        let wheel = std::fs::read_to_string(dist_info.join("WHEEL")).unwrap_or_default();
        let record = std::fs::read_to_string(dist_info.join("RECORD")).unwrap_or_default();
        Some(Installed {
            name: field("Name:")?,
            version: field("Version:")?,
            tags: wheel
                .lines()
                .filter_map(|line| line.strip_prefix("Tag:").map(|t| t.trim().to_string()))
                .collect(),
            // RECORD paths never hold a comma unquoted in practice; a quoted one only
            // loses its match, which makes the owner unknown, not wrong.
            files: record
                .lines()
                .filter_map(|line| line.split(',').next())
                .map(|path| path.trim_matches('"').to_string())
                .filter(|path| !path.is_empty())
                .collect(),
        })
    }

    /// A platform wheel, not a build tool, that ships link-time files: the build must
    /// see its target wheel's files.
    pub fn is_library_wheel(&self, rule: &Rule) -> bool {
        let platform = !self.tags.is_empty() && self.tags.iter().any(|tag| !tag.ends_with("-any"));
        platform
            && !rule.is_build_tool(&self.name)
            && self
                .files
                .iter()
                .any(|file| rule.is_link_time_file(file) && !in_runtime_folder(file))
    }
}

/// auditwheel's `<name>.libs/` and delocate's `.dylibs/`: libraries a package's own
/// extension modules load, never given to the linker.
fn in_runtime_folder(relative: &str) -> bool {
    let mut parts: Vec<&str> = relative.split('/').collect();
    parts.pop();
    parts
        .iter()
        .any(|part| part.ends_with(".libs") || *part == ".dylibs")
}

/// Every distribution of a site-packages folder.
pub(crate) fn installed_in(site: &Path) -> Vec<Installed> {
    let Ok(entries) = std::fs::read_dir(site) else {
        return Vec::new();
    };
    let mut found: Vec<Installed> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "dist-info"))
        .filter_map(|path| Installed::read(&path))
        .collect();
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// `<venv>/lib/python3.X/site-packages`.
pub(crate) fn site_packages_of(venv: &Path) -> Option<PathBuf> {
    let lib = std::fs::read_dir(venv.join("lib")).ok()?;
    lib.filter_map(Result::ok)
        .map(|entry| entry.path().join("site-packages"))
        .find(|path| path.is_dir())
}

/// The names of the library wheels among the packages of a build environment: the
/// build links their target wheels.
pub(crate) fn library_requirements(venv: &Path) -> Vec<String> {
    let Some(site) = site_packages_of(venv) else {
        return Vec::new();
    };
    let rule = rule();
    installed_in(&site)
        .into_iter()
        .filter(|dist| dist.is_library_wheel(rule))
        .map(|dist| dist.name)
        .collect()
}

/// Folders under `site` holding shared libraries (`.so*`, `.dylib`).
pub(crate) fn shared_library_dirs(site: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = walkdir::WalkDir::new(site)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| {
            let name = entry.file_name().to_string_lossy();
            entry.file_type().is_file() && (name.contains(".so") || name.ends_with(".dylib"))
        })
        .filter_map(|entry| entry.path().parent().map(Path::to_path_buf))
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// The distribution that installed `path`: the `.dist-info` of the nearest site-packages
/// folder above it whose RECORD lists it.
pub(crate) fn owner_of(path: &Path) -> Option<Installed> {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    path.ancestors().skip(1).find_map(|site| {
        let relative = path.strip_prefix(site).ok()?.to_string_lossy().into_owned();
        installed_in(site)
            .into_iter()
            .find(|dist| dist.files.contains(&relative))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dist(name: &str, tag: &str, files: &[&str]) -> Installed {
        Installed {
            name: name.into(),
            version: "1".into(),
            tags: vec![tag.into()],
            files: files.iter().map(|f| f.to_string()).collect(),
        }
    }

    #[test]
    fn a_platform_wheel_shipping_a_library_serves_the_target() {
        let rule = rule();
        let openblas = dist(
            "scipy-openblas64",
            "py3-none-manylinux_2_17_x86_64",
            &[
                "scipy_openblas64/__init__.py",
                "scipy_openblas64/lib/libscipy_openblas64_.so",
            ],
        );
        assert!(openblas.is_library_wheel(rule));
        let numpy = dist(
            "numpy",
            "cp311-cp311-manylinux_2_17_x86_64",
            &[
                "numpy/_core/include/numpy/ndarrayobject.h",
                "numpy/_core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so",
            ],
        );
        assert!(numpy.is_library_wheel(rule));
    }

    #[test]
    fn build_tools_extension_modules_and_pure_wheels_stay_the_build_machines() {
        let rule = rule();
        assert!(
            !dist(
                "cmake",
                "py3-none-manylinux_2_17_x86_64",
                &["cmake/data/share/cmake-3.31/Modules/FindBLAS.cmake"]
            )
            .is_library_wheel(rule)
        );
        assert!(
            !dist(
                "Cython",
                "cp311-cp311-manylinux_2_17_x86_64",
                &["Cython/Utility/arrayarray.h"]
            )
            .is_library_wheel(rule)
        );
        assert!(
            !dist(
                "markupsafe",
                "cp311-cp311-manylinux_2_17_x86_64",
                &["markupsafe/_speedups.cpython-311-x86_64-linux-gnu.so"]
            )
            .is_library_wheel(rule)
        );
        assert!(
            !dist(
                "pybind11",
                "py3-none-any",
                &["pybind11/include/pybind11/pybind11.h"]
            )
            .is_library_wheel(rule)
        );
        // Libraries auditwheel vendored for the package's own extension modules.
        assert!(
            !dist(
                "pillow",
                "cp311-cp311-manylinux_2_28_x86_64",
                &["pillow.libs/libjpeg-1a2b3c4d.so.62"]
            )
            .is_library_wheel(rule)
        );
    }
}
