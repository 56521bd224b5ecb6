//! One composition of what a build for a target runs with: the build machine's CPython,
//! the target's toolchain, and the cross environment that joins them. The pipeline's
//! builds, the target libraries' and target CPythons' builds, and `crosswheel env` all
//! get it from [`TargetSetup::prepare`], so they never put the three together differently.

use std::collections::BTreeMap;
use std::path::Path;

use super::{CrossEnv, CrossEnvError, TargetRunner};
use crate::python_tag::PythonTag;
use crate::stages::toolchain::{
    CudaRequest, Language, Toolchain, ToolchainError, resolve_toolchain,
};
use crate::support::host::{BuildPython, Cache, Network, PythonError};
use crate::target::{Target, ToolchainKind};

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("{purpose} needs a python{version} interpreter on PATH to build with")]
    Python {
        purpose: String,
        version: String,
        #[source]
        source: PythonError,
    },
    #[error(transparent)]
    Toolchain(#[from] ToolchainError),
    #[error(transparent)]
    CrossEnv(#[from] CrossEnvError),
}

/// Where the build python comes from when the machine has no CPython of the version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PythonSource {
    /// The machine's own, else one crosswheel installs or builds (builds).
    FindOrInstall,
    /// The machine's own only (`crosswheel env` describes, it does not install).
    Machine,
}

/// What [`TargetSetup::prepare`] needs.
#[derive(Debug, Clone)]
pub struct SetupRequest<'a> {
    /// What the setup is for, as error messages name it (`cp311-manylinux_aarch64`).
    pub purpose: &'a str,
    pub target: &'a Target,
    /// The interpreter the build runs for; a free-threaded tag targets the free-threaded
    /// ABI with the GIL build of its version.
    pub python: PythonTag,
    pub python_source: PythonSource,
    pub toolchain: ToolchainKind,
    pub cache: &'a Cache,
    pub network: &'a Network,
    /// qemu-user and the target's root, for the target programs a build runs.
    pub runner: Option<TargetRunner>,
    /// For a musllinux target, the root of Debian's musl loader, which runs the build's
    /// dynamic musl programs.
    pub musl_root: Option<std::path::PathBuf>,
    /// The languages beyond C and C++ the build compiles (Rust for a maturin project).
    pub languages: &'a [Language],
    /// The CUDA release and components the options ask for (`cuda`); a build whose files
    /// enable CUDA without it gets the newest release.
    pub cuda: Option<&'a CudaRequest>,
}

/// The build python, the toolchain and the cross environment of one target.
#[derive(Debug, Clone)]
pub struct TargetSetup {
    pub python: BuildPython,
    pub toolchain: Toolchain,
    pub cross_env: CrossEnv,
}

impl TargetSetup {
    /// Finds (or installs) the build python, resolves the toolchain and creates the
    /// cross environment, in that order.
    pub fn prepare(request: &SetupRequest<'_>) -> Result<TargetSetup, SetupError> {
        let gil = request.python.with_gil();
        let found = match request.python_source {
            PythonSource::FindOrInstall => {
                BuildPython::find_or_install(gil, request.cache, request.network)
            }
            PythonSource::Machine => BuildPython::find(gil),
        };
        let python = found
            .map_err(|source| SetupError::Python {
                purpose: request.purpose.to_string(),
                version: request.python.version(),
                source,
            })?
            .targeting(request.python.is_free_threaded());
        let toolchain = resolve_toolchain(
            request.toolchain,
            request.target,
            request.cache,
            &python.executable,
            request.network,
            request.languages,
            request.cuda,
        )?;
        let cross_env = CrossEnv::create(
            request.cache,
            &python,
            &toolchain,
            request.runner.clone(),
            request.musl_root.clone(),
        )?;
        Ok(TargetSetup {
            python,
            toolchain,
            cross_env,
        })
    }

    /// The variables for commands that run on the build machine but build for the
    /// target (`before-all`, the catalogue's library builds): the cross environment's
    /// compilers, archivers, CMake toolchain file and pkg-config folder, with `NM`,
    /// `STRIP`, `LD`, the GNU triple (`CROSSWHEEL_HOST`, for `./configure --host=`) and
    /// the meson cross file added. The target's sysconfig is left out: the build
    /// machine's Python and pip run there as themselves.
    pub fn command_variables(&self) -> BTreeMap<String, String> {
        let mut vars = self.cross_env.env_vars();
        for python_only in [
            "PYTHONPATH",
            "_PYTHON_HOST_PLATFORM",
            "_PYTHON_SYSCONFIGDATA_NAME",
        ] {
            vars.remove(python_only);
        }
        let path = |path: &Path| path.to_string_lossy().into_owned();
        let binutils = &self.toolchain.binutils;
        for (name, tool) in [
            ("NM", &binutils.nm),
            ("STRIP", &binutils.strip),
            ("LD", &binutils.ld),
        ] {
            if let Some(tool) = tool {
                vars.insert(name.to_string(), path(tool));
            }
        }
        vars.insert(
            "CROSSWHEEL_HOST".to_string(),
            self.toolchain.target.gnu_triple().to_string(),
        );
        vars.insert(
            "CROSSWHEEL_MESON_CROSS_FILE".to_string(),
            path(&self.cross_env.meson_cross_file),
        );
        vars
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_build_python_is_named_with_what_it_was_for() {
        let folder = tempfile::tempdir().unwrap();
        let cache = Cache::at(folder.path());
        let target = Target::parse("linux-aarch64").unwrap();
        // No machine has a CPython 3.99.
        let python = PythonTag::parse("cp399").unwrap();
        let err = TargetSetup::prepare(&SetupRequest {
            purpose: "cp399-manylinux_aarch64",
            target: &target,
            python,
            python_source: PythonSource::Machine,
            toolchain: ToolchainKind::Zig,
            cache: &cache,
            network: &Network::new(true, None),
            runner: None,
            musl_root: None,
            languages: &[],
            cuda: None,
        })
        .unwrap_err();
        assert!(matches!(err, SetupError::Python { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "cp399-manylinux_aarch64 needs a python3.99 interpreter on PATH to build with"
        );
    }
}
