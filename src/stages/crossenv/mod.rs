//! A crossenv-like environment: the build python runs the build backend, but sysconfig,
//! compilers and cross files describe the target.
//!
//! One folder per (target, OS version, python, toolchain) under the cache holds the
//! target's `_sysconfigdata_*.py`, a copy of the build python's headers, and meson/CMake
//! cross files; [`CrossEnv::env_vars`] lists the variables that switch a process into it.

mod config_site;
mod files;
mod pyconfig;
mod runner;
mod setup;
mod sysconfigdata;
mod target_import;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use files::meson_prefix_options;
pub use runner::TargetRunner;
pub use setup::{PythonSource, SetupError, SetupRequest, TargetSetup};

use crate::python_tag::PythonTag;
use crate::stages::toolchain::{Language, Toolchain, UserFlags, build_machine_program};
use crate::support::host::run_folder::staging_in;
use crate::support::host::{BuildPython, Cache, cache_key, find_on_path, shell_quote};
use crate::target::Target;

#[derive(Debug, thiserror::Error)]
pub enum CrossEnvError {
    #[error(
        "build python {python} has no C headers ({missing} is missing): install {package} (apt install {package}) or use another CPython"
    )]
    NoHeaders {
        python: PathBuf,
        missing: PathBuf,
        package: String,
    },
    #[error(transparent)]
    Io(#[from] crate::io_error::IoError),
}

/// A ready cross environment for one target and one build python.
#[derive(Debug, Clone)]
pub struct CrossEnv {
    pub root: PathBuf,
    pub target: Target,
    pub python: PathBuf,
    /// Folder on PYTHONPATH holding the target's sysconfigdata module.
    pub sysconfig_dir: PathBuf,
    pub sysconfigdata_name: String,
    /// `.../include/python3.11`: the headers extensions compile against.
    pub python_include_dir: PathBuf,
    pub meson_cross_file: PathBuf,
    pub meson_native_file: PathBuf,
    pub cmake_toolchain_file: PathBuf,
    /// `config.site`, named by `CONFIG_SITE`: an autoconf configure the build runs
    /// without `--host` cross compiles for the target (see [`config_site`]).
    pub config_site: PathBuf,
    /// Runs the programs a build runs: the build python as it is, target programs under
    /// qemu-user (CMake's CROSSCOMPILING_EMULATOR, meson's exe_wrapper); see [`runner`].
    pub run_program: PathBuf,
    /// qemu-user and the target's root for target programs; `None` for macOS, or when no
    /// emulator could be provisioned.
    pub runner: Option<TargetRunner>,
    /// For a musllinux target, the root of Debian's musl loader, on which the build's
    /// dynamic musl programs run (under the runner's qemu, or as a command on this machine
    /// when the target is its own); see [`runner::run_program_script`].
    pub musl_root: Option<PathBuf>,
    /// Empty pkg-config directory that keeps the host's `.pc` files out of a cross build.
    pub pkgconfig_dir: PathBuf,
    /// The target CPython (`cp313t`: free-threaded).
    pub target_python: PythonTag,
    toolchain: Toolchain,
}

/// Generated files of an environment, kept in memory until written.
struct Contents {
    files: Vec<(PathBuf, String)>,
    stamp: String,
}

impl CrossEnv {
    /// Creates (or reuses, when nothing changed) the environment for `toolchain.target`.
    /// User `CFLAGS`/`CXXFLAGS`/`CPPFLAGS`/`LDFLAGS` are read from the environment now.
    /// With a `runner`, target programs the build runs go to qemu-user.
    pub fn create(
        cache: &Cache,
        python: &BuildPython,
        toolchain: &Toolchain,
        runner: Option<TargetRunner>,
        musl_root: Option<PathBuf>,
    ) -> Result<CrossEnv, CrossEnvError> {
        let target = &toolchain.target;
        let key = cache_key(&[
            python.executable.to_string_lossy().as_bytes(),
            toolchain.description.as_bytes(),
            toolchain.program_or_gnu_name(Language::C).as_bytes(),
        ]);
        let name = format!(
            "{}-{}-{}-{key}",
            target.id(),
            target.os_version(),
            python.abi_tag()
        );
        // The folder is named by what goes in it too (the user's flags, and whatever a
        // crosswheel version writes): an environment is never replaced while a build of
        // another run, with other contents, compiles against its headers (a replacement
        // is two renames, and numpy's macOS build lost `structmember.h` between them).
        let flags = UserFlags::from_env(toolchain.compilers.languages());
        let provisional = Self::at(
            cache.cross_envs().join(&name),
            python,
            toolchain,
            runner.clone(),
            musl_root.clone(),
        );
        let content_key = cache_key(&[provisional.contents(python, &flags)?.stamp.as_bytes()]);
        let root = cache.cross_envs().join(format!("{name}-{content_key}"));
        let env = Self::at(root, python, toolchain, runner, musl_root);
        let contents = env.contents(python, &flags)?;
        let stamp_path = env.root.join("stamp");
        if std::fs::read_to_string(&stamp_path).is_ok_and(|stamp| stamp == contents.stamp) {
            return Ok(env);
        }
        env.write(python, &contents)?;
        Ok(env)
    }

    /// The environment's layout under `root`.
    fn at(
        root: PathBuf,
        python: &BuildPython,
        toolchain: &Toolchain,
        runner: Option<TargetRunner>,
        musl_root: Option<PathBuf>,
    ) -> CrossEnv {
        let target = &toolchain.target;
        // CPython's own name for the folder: `python3.13t` for the free-threaded ABI.
        let header_dir_name = format!(
            "python{}{}",
            python.version_text(),
            python.target_abiflags()
        );
        CrossEnv {
            // Where CPython keeps `_sysconfigdata_*.py`: builds that are handed
            // PYO3_CROSS_LIB_DIR find the headers from it as `../../include/python3.11`
            // (cryptography's build script), as in a real installation.
            sysconfig_dir: root.join("lib").join(&header_dir_name),
            sysconfigdata_name: target.sysconfigdata_name(python.target_python()),
            python_include_dir: root.join("include").join(header_dir_name),
            meson_cross_file: root.join("meson-cross.ini"),
            meson_native_file: root.join("meson-native.ini"),
            cmake_toolchain_file: root.join("cmake-toolchain.cmake"),
            config_site: root.join("config.site"),
            pkgconfig_dir: root.join("lib").join("pkgconfig"),
            run_program: runner::run_program_path(&root),
            runner,
            musl_root,
            python: python.executable.clone(),
            target_python: python.target_python(),
            target: target.clone(),
            toolchain: toolchain.clone(),
            root,
        }
    }

    fn contents(&self, python: &BuildPython, flags: &UserFlags) -> Result<Contents, CrossEnvError> {
        let layout = sysconfigdata::EnvLayout {
            include_dir: &self.root.join("include"),
            python_include_dir: &self.python_include_dir,
            lib_dir: &self.root.join("lib"),
        };
        let vars = sysconfigdata::target_vars(python, &self.toolchain, &layout);
        let module = self
            .sysconfig_dir
            .join(format!("{}.py", self.sysconfigdata_name));
        let pkg_config = find_on_path("pkg-config").or_else(|| find_on_path("pkgconf"));
        let host_config = pyconfig::host_pyconfig(python)?;
        let host_config_text = std::fs::read_to_string(&host_config).map_err(|source| {
            CrossEnvError::Io(crate::io_error::IoError::new(
                "read",
                host_config.clone(),
                source,
            ))
        })?;
        // A macOS library cannot be loaded here by any interpreter; a Linux target's can,
        // by its own CPython under qemu.
        let bridge = self.runner.as_ref().filter(|_| !self.target.is_macos());
        let mut files = vec![
            (module, sysconfigdata::render_module(&vars)),
            (
                self.sysconfig_dir.join("sitecustomize.py"),
                sysconfigdata::render_sitecustomize(
                    &self.python_include_dir,
                    &self.target,
                    python,
                    bridge.is_some(),
                ),
            ),
            (
                self.python_include_dir.join("pyconfig.h"),
                pyconfig::for_target(
                    &host_config_text,
                    &self.target,
                    python.targets_free_threaded(),
                ),
            ),
            (
                self.meson_cross_file.clone(),
                files::meson_cross_file(
                    &self.toolchain,
                    &python.executable,
                    pkg_config.as_deref(),
                    // run-program runs the target's programs: under the runner's qemu,
                    // or as they are when this machine is the target's own.
                    (self.runner.is_some() || self.target.runs_natively_here())
                        .then_some(self.run_program.as_path()),
                    flags,
                ),
            ),
            (
                self.meson_native_file.clone(),
                files::meson_native_file(self.toolchain.compilers.languages(), &python.executable),
            ),
            (
                self.cmake_toolchain_file.clone(),
                files::cmake_toolchain_file(&self.toolchain, &self.run_program),
            ),
            (
                self.config_site.clone(),
                config_site::config_site(&self.target, self.toolchain.binutils.ld.as_deref()),
            ),
            (self.root.join("env.sh"), self.shell_exports()),
            (
                self.run_program.clone(),
                runner::run_program_script(
                    &self.target,
                    self.runner.as_ref(),
                    self.musl_root.as_deref(),
                ),
            ),
            (
                self.sysconfig_dir.join("_crosswheel_target_import.py"),
                target_import::render(
                    &self.target,
                    &self.run_program,
                    self.runner.as_ref(),
                    python.target_python(),
                ),
            ),
        ];
        if let Some(runner) = bridge {
            files.push((
                self.sysconfig_dir.join("_crosswheel_ctypes_bridge.py"),
                sysconfigdata::render_ctypes_bridge(&self.target, &self.run_program, runner),
            ));
        }
        let mut parts: Vec<&[u8]> = vec![
            python.include.as_os_str().as_encoded_bytes(),
            python.platinclude.as_os_str().as_encoded_bytes(),
        ];
        for (path, text) in &files {
            parts.push(path.as_os_str().as_encoded_bytes());
            parts.push(text.as_bytes());
        }
        Ok(Contents {
            stamp: cache_key(&parts),
            files,
        })
    }

    /// Builds the environment in a sibling temp folder and swaps it in, so a concurrent or
    /// interrupted run never sees half an environment.
    fn write(&self, python: &BuildPython, contents: &Contents) -> Result<(), CrossEnvError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| CrossEnvError::Io(crate::io_error::IoError::new("write", path, source))
        };
        let parent = self.root.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(io(parent))?;
        let staging = staging_in(parent, ".staging-").map_err(io(parent))?;
        let relocate = |path: &Path| {
            staging
                .path()
                .join(path.strip_prefix(&self.root).unwrap_or(path))
        };

        copy_headers(python, &relocate(&self.python_include_dir))?;
        std::fs::create_dir_all(relocate(&self.pkgconfig_dir)).map_err(io(&self.pkgconfig_dir))?;
        for (path, text) in &contents.files {
            let staged = relocate(path);
            if let Some(dir) = staged.parent() {
                std::fs::create_dir_all(dir).map_err(io(dir))?;
            }
            std::fs::write(&staged, text).map_err(io(path))?;
            if text.starts_with("#!") {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o755))
                    .map_err(io(path))?;
            }
        }
        std::fs::write(staging.path().join("stamp"), &contents.stamp).map_err(io(&self.root))?;

        // Another run may have made the same environment while this one staged it.
        let finished_elsewhere = || {
            std::fs::read_to_string(self.root.join("stamp"))
                .is_ok_and(|stamp| stamp == contents.stamp)
        };
        if finished_elsewhere() {
            return Ok(());
        }
        // An outdated environment is moved aside in one rename before it is deleted: two
        // runs replacing it at once must not delete each other's files half-way.
        if self.root.exists() {
            let outdated = staging_in(parent, ".outdated-").map_err(io(parent))?;
            match std::fs::rename(&self.root, outdated.path().join("env")) {
                Ok(()) => {}
                // Another run moved it first.
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(CrossEnvError::Io(crate::io_error::IoError::new(
                        "replace",
                        self.root.clone(),
                        source,
                    )));
                }
            }
        }
        let staged_root = staging.keep();
        if let Err(source) = std::fs::rename(&staged_root, &self.root) {
            let _ = std::fs::remove_dir_all(&staged_root);
            // Another run created it meanwhile: fine if it made the same thing. It may be
            // between its two renames, so its environment gets a moment to arrive.
            if !wait_for(finished_elsewhere, std::time::Duration::from_secs(5)) {
                return Err(CrossEnvError::Io(crate::io_error::IoError::new(
                    "replace",
                    self.root.clone(),
                    source,
                )));
            }
        }
        Ok(())
    }

    /// Variables that switch a process into the environment. `PYTHONPATH` keeps whatever
    /// the current process has after the sysconfig folder; user `CFLAGS`/`LDFLAGS` are left
    /// alone (setuptools and CMake read them).
    pub fn env_vars(&self) -> BTreeMap<String, String> {
        let mut vars = BTreeMap::new();
        let target = &self.target;
        let mut python_path = self.sysconfig_dir.to_string_lossy().into_owned();
        if let Some(existing) = std::env::var("PYTHONPATH")
            .ok()
            .filter(|value| !value.is_empty())
        {
            python_path = format!("{python_path}:{existing}");
        }
        vars.insert("PYTHONPATH".into(), python_path);
        vars.insert(
            "_PYTHON_HOST_PLATFORM".into(),
            target.python_host_platform(),
        );
        vars.insert(
            "_PYTHON_SYSCONFIGDATA_NAME".into(),
            self.sysconfigdata_name.clone(),
        );
        // Each language's compilers: the target's, and the build machine's for Makefiles
        // that build helper programs (`CC_FOR_BUILD`).
        for compiler in self.toolchain.compilers.iter() {
            vars.extend(compiler.variables());
            if let Some(name) = &compiler.language.names().build_variable {
                vars.insert(name.clone(), build_machine_program(compiler.language));
            }
        }
        if self.toolchain.compilers.get(Language::Rust).is_some() {
            vars.extend(self.pyo3_variables());
        }
        vars.insert(
            "AR".into(),
            self.toolchain.ar.to_string_lossy().into_owned(),
        );
        vars.insert(
            "RANLIB".into(),
            self.toolchain.ranlib.to_string_lossy().into_owned(),
        );
        vars.insert(
            "PKG_CONFIG_LIBDIR".into(),
            self.pkgconfig_dir.to_string_lossy().into_owned(),
        );
        vars.insert(
            "CMAKE_TOOLCHAIN_FILE".into(),
            self.cmake_toolchain_file.to_string_lossy().into_owned(),
        );
        // For configure scripts the project's build runs without --host.
        vars.insert(
            "CONFIG_SITE".into(),
            self.config_site.to_string_lossy().into_owned(),
        );
        // For build scripts that run a target program themselves.
        vars.insert(
            "CROSSWHEEL_RUN_PROGRAM".into(),
            self.run_program.to_string_lossy().into_owned(),
        );
        for (name, value) in self.runner.iter().flat_map(TargetRunner::env_vars) {
            vars.insert(name.into(), value);
        }
        if target.is_macos() {
            vars.insert("ARCHFLAGS".into(), format!("-arch {}", target.arch()));
            vars.insert(
                "MACOSX_DEPLOYMENT_TARGET".into(),
                target.os_version().to_string(),
            );
        }
        vars
    }

    /// What PyO3 (and maturin) read of the target interpreter in a cross build: its
    /// version and implementation, and the folder of its `_sysconfigdata` module, whose
    /// `Py_GIL_DISABLED` says the free-threaded ABI. An abi3 build reads none of it.
    fn pyo3_variables(&self) -> [(String, String); 3] {
        [
            (
                "PYO3_CROSS_LIB_DIR".into(),
                self.sysconfig_dir.to_string_lossy().into_owned(),
            ),
            (
                "PYO3_CROSS_PYTHON_VERSION".into(),
                self.target_python.version(),
            ),
            ("PYO3_CROSS_PYTHON_IMPLEMENTATION".into(), "CPython".into()),
        ]
    }

    /// `export NAME=value` lines for `crosswheel env` and `env.sh`.
    pub fn shell_exports(&self) -> String {
        let sysconfig_dir = shell_quote(&self.sysconfig_dir.to_string_lossy()).into_owned();
        self.env_vars()
            .iter()
            .map(|(name, value)| match name.as_str() {
                // The file is sourced later, under whatever PYTHONPATH the shell has then.
                "PYTHONPATH" => {
                    format!("export PYTHONPATH={sysconfig_dir}${{PYTHONPATH:+:$PYTHONPATH}}\n")
                }
                _ => format!("export {name}={}\n", shell_quote(value)),
            })
            .collect()
    }

    pub fn toolchain(&self) -> &Toolchain {
        &self.toolchain
    }
}

/// Copies the build python's headers but `pyconfig.h`, which is the target's (see
/// [`pyconfig`]) and written with the other generated files.
fn copy_headers(python: &BuildPython, dest: &Path) -> Result<(), CrossEnvError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| CrossEnvError::Io(crate::io_error::IoError::new("copy", path, source))
    };
    for entry in walkdir::WalkDir::new(&python.include).follow_links(true) {
        let entry = entry.map_err(|err| {
            CrossEnvError::Io(crate::io_error::IoError::new(
                "copy",
                python.include.clone(),
                std::io::Error::other(err.to_string()),
            ))
        })?;
        let relative = entry
            .path()
            .strip_prefix(&python.include)
            .unwrap_or(entry.path());
        let out = dest.join(relative);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&out).map_err(io(&out))?;
        } else if relative != Path::new("pyconfig.h") {
            std::fs::copy(entry.path(), &out).map_err(io(entry.path()))?;
        }
    }
    Ok(())
}

/// Whether `done` holds within `limit`, asked every 100 ms.
fn wait_for(done: impl Fn() -> bool, limit: std::time::Duration) -> bool {
    let started = std::time::Instant::now();
    loop {
        if done() {
            return true;
        }
        if started.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
