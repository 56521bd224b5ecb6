//! What a project's `pyproject.toml` tells the build stage: its name and PEP 517 build
//! system. (Its options, `target-requires` among them, come from the resolved plan.)

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::BuildError;
use crate::stages::toolchain::Language;

/// The build backends crosswheel points at a cross environment. The three it knows get
/// their own cross files; any other (an in-tree backend wrapping setuptools, as the
/// aio-libs projects have, or another PEP 517 backend) runs in the same cross environment
/// and sees it through sysconfig and the environment (`CC`, `CMAKE_TOOLCHAIN_FILE`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Setuptools,
    MesonPython,
    ScikitBuildCore,
    Other,
}

impl Backend {
    fn from_name(name: &str) -> Backend {
        let module = name.split(':').next().unwrap_or(name).trim();
        match module {
            "setuptools.build_meta" => Backend::Setuptools,
            "mesonpy" => Backend::MesonPython,
            "scikit_build_core.build" => Backend::ScikitBuildCore,
            _ => Backend::Other,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Backend::Setuptools => "setuptools",
            Backend::MesonPython => "meson-python",
            Backend::ScikitBuildCore => "scikit-build-core",
            Backend::Other => "the project's build backend",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildSystem {
    pub requires: Vec<String>,
    /// `module:object` as written (PEP 517).
    pub build_backend: String,
    pub backend_path: Vec<String>,
    pub backend: Backend,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    pub dir: PathBuf,
    /// `[project] name`, else the folder name; for messages and log names.
    pub name: String,
    pub build_system: BuildSystem,
}

#[derive(Debug, Default, Deserialize)]
struct Pyproject {
    #[serde(rename = "build-system")]
    build_system: Option<RawBuildSystem>,
    project: Option<RawProject>,
}

#[derive(Debug, Deserialize)]
struct RawBuildSystem {
    #[serde(default)]
    requires: Vec<String>,
    #[serde(rename = "build-backend")]
    build_backend: Option<String>,
    #[serde(rename = "backend-path", default)]
    backend_path: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct RawProject {
    name: Option<String>,
}

impl Project {
    pub fn read(dir: &Path) -> Result<Project, BuildError> {
        let path = dir.join("pyproject.toml");
        let pyproject: Pyproject = match std::fs::read_to_string(&path) {
            Ok(text) => toml::from_str(&text).map_err(|err| BuildError::BadPyproject {
                path: path.clone(),
                message: err.message().to_string(),
            })?,
            // PEP 517: a project without pyproject.toml is a legacy setuptools project.
            Err(err)
                if err.kind() == std::io::ErrorKind::NotFound && dir.join("setup.py").is_file() =>
            {
                Pyproject::default()
            }
            Err(source) => {
                return Err(BuildError::Io(crate::io_error::IoError::new(
                    "read", path, source,
                )));
            }
        };
        let (requires, build_backend, backend_path) = match pyproject.build_system {
            Some(raw) => match raw.build_backend {
                Some(backend) => (raw.requires, backend, raw.backend_path),
                None => (
                    raw.requires,
                    "setuptools.build_meta:__legacy__".to_string(),
                    Vec::new(),
                ),
            },
            None => (
                vec!["setuptools>=40.8.0".to_string()],
                "setuptools.build_meta:__legacy__".to_string(),
                Vec::new(),
            ),
        };
        let backend = Backend::from_name(&build_backend);
        let name = pyproject
            .project
            .and_then(|project| project.name)
            .or_else(|| {
                dir.file_name()
                    .map(|name| name.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| "project".to_string());
        Ok(Project {
            dir: dir.to_path_buf(),
            name,
            build_system: BuildSystem {
                requires,
                build_backend,
                backend_path,
                backend,
            },
        })
    }

    /// The languages beyond C and C++ the project compiles, so that the toolchain gets
    /// their compilers and other builds never fetch them: Fortran when its meson or CMake
    /// build requires it ([`build_files::requires_fortran`]), CUDA likewise; Rust for a maturin backend,
    /// setuptools-rust among the build requirements, or a Cargo.toml in the project.
    pub fn languages(&self) -> Vec<Language> {
        let mut languages = Vec::new();
        if super::build_files::requires_fortran(&self.dir) {
            languages.push(Language::Fortran);
        }
        if super::build_files::requires_cuda(&self.dir) {
            languages.push(Language::Cuda);
        }
        let module = self.build_system.build_backend.split(':').next();
        let rust = module.is_some_and(|module| module.trim() == "maturin")
            || self.build_system.requires.iter().any(|requirement| {
                crate::package_name::requirement_name(requirement)
                    .is_some_and(|name| matches!(name.as_ref(), "setuptools-rust" | "maturin"))
            })
            || self.dir.join("Cargo.toml").is_file();
        if rust {
            languages.push(Language::Rust);
        }
        languages
    }
}

/// [`Project::languages`] of the project in `dir`; none when its pyproject.toml cannot be
/// read (the build then stops on that, saying why).
pub fn languages_of_project(dir: &Path) -> Vec<Language> {
    Project::read(dir)
        .map(|project| project.languages())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project_with(pyproject: &str) -> Result<Project, BuildError> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("pyproject.toml"), pyproject).unwrap();
        Project::read(dir.path())
    }

    #[test]
    fn rust_is_needed_by_maturin_setuptools_rust_or_a_cargo_manifest() {
        let maturin = project_with(
            "[build-system]\nrequires = ['maturin>=1,<2']\nbuild-backend = 'maturin'\n",
        );
        assert_eq!(maturin.unwrap().languages(), [Language::Rust]);
        let setuptools_rust = project_with(
            "[build-system]\nrequires = ['setuptools', 'setuptools_rust>=1.5']\nbuild-backend = 'setuptools.build_meta'\n",
        );
        assert_eq!(setuptools_rust.unwrap().languages(), [Language::Rust]);
        let plain = project_with("[build-system]\nrequires = ['setuptools']\n");
        assert!(plain.unwrap().languages().is_empty());
    }

    #[test]
    fn reads_backend_and_name() {
        let project = project_with(
            "[build-system]\nrequires = ['meson-python']\nbuild-backend = 'mesonpy'\n\
             [project]\nname = 'demo'\n[tool.crosswheel]\ntarget-requires = ['scipy-openblas32']\n",
        )
        .unwrap();
        assert_eq!(project.name, "demo");
        assert_eq!(project.build_system.backend, Backend::MesonPython);
    }

    #[test]
    fn missing_backend_means_legacy_setuptools() {
        let project = project_with("[build-system]\nrequires = ['setuptools']\n").unwrap();
        assert_eq!(
            project.build_system.build_backend,
            "setuptools.build_meta:__legacy__"
        );
        assert_eq!(project.build_system.backend, Backend::Setuptools);
    }

    #[test]
    fn an_in_tree_or_other_backend_builds_in_the_cross_environment_without_cross_files() {
        let project = project_with(
            "[build-system]\nrequires = ['setuptools', 'expandvars']\nbuild-backend = 'pep517_backend.hooks'\nbackend-path = ['packaging']\n",
        )
        .unwrap();
        assert_eq!(project.build_system.backend, Backend::Other);
        assert_eq!(project.build_system.build_backend, "pep517_backend.hooks");
        assert_eq!(project.build_system.backend_path, ["packaging"]);
    }

    #[test]
    fn reports_invalid_toml_with_path() {
        let err = project_with("[build-system\n").unwrap_err().to_string();
        assert!(err.contains("pyproject.toml is not valid TOML"), "{err}");
    }
}
