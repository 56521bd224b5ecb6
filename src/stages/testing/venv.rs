//! The virtual environment a test suite runs in, laid out by hand and filled by the
//! host's pip.
//!
//! Writing the layout ourselves (pyvenv.cfg, bin/, site-packages) costs nothing, whereas
//! `python -m venv` under qemu costs a second or more; and Debian's python has no
//! ensurepip anyway. The host pip installs for the target (`--platform ... --target`),
//! about ten times faster than pip under emulation, which remains the fallback for
//! requirements published only as source.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::python_tag::PythonTag;
use crate::support::sysroot::LinuxArch;
use crate::target::OsVersion;

use super::TestPlatform;

use super::TestError;
use super::debian::{DebianPython, remove_placeholders};
use super::emulator::Emulator;
use super::host_python::HostPython;
use super::requirement_build::BuiltRequirement;
use super::run::{Echo, Finished, Log};
use crate::support::host::shell_quote;

/// Who installed the requirements of a test venv.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InstalledBy {
    /// The host pip, from target wheels on the index (or Debian's placeholders).
    HostPip,
    /// pip under the test interpreter; `built` names what it built from source.
    InterpreterPip { built: Vec<String> },
}

/// The interpreter running pip for the target; any Python 3 with pip will do.
const HOST_PIP_PYTHON: &str = "python3";

/// The oldest manylinux glibc for aarch64 and ppc64le (and the floor we offer pip).
const MANYLINUX_FLOOR_MINOR: u32 = 17;

/// The wheels pip may pick for the environment's interpreter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PipPlatform {
    /// glibc Linux: every manylinux tag up to this glibc.
    Manylinux { arch: LinuxArch, glibc: OsVersion },
    /// musl Linux: every musllinux tag up to this musl.
    Musllinux { arch: LinuxArch, musl: OsVersion },
    /// macOS on Apple silicon of this major version (11, 12, ...).
    MacosArm64 { major: u32 },
    /// macOS on an Intel Mac of this version (10.15, 14.0, ...).
    MacosX86_64 { version: OsVersion },
}

impl PipPlatform {
    fn test_platform(self) -> TestPlatform {
        match self {
            Self::Manylinux { arch, .. } => TestPlatform::Linux(arch),
            Self::Musllinux { arch, .. } => TestPlatform::MuslLinux(arch),
            Self::MacosArm64 { .. } => TestPlatform::MacosArm64,
            Self::MacosX86_64 { .. } => TestPlatform::MacosX86_64,
        }
    }
}

#[derive(Debug)]
pub(crate) struct TargetEnv {
    root: PathBuf,
    platform: PipPlatform,
    python: PythonTag,
    /// Variables the interpreter needs in every process that may start it.
    interpreter_env: Vec<(&'static str, String)>,
    /// The emulated architecture; `None` when the interpreter runs natively.
    emulated: Option<LinuxArch>,
    /// Debian's Python packages the venv sees, when the index lacked target wheels.
    debian: Option<DebianPython>,
    /// Test requirements built here from their sdists, offered to pip with `--find-links`.
    built: Vec<BuiltRequirement>,
}

impl TargetEnv {
    /// A venv whose `bin/python` is a small script running the target CPython under
    /// qemu. Being a script rather than a symlink, it keeps `sys.executable` pointing at
    /// itself, so Python subprocesses (`[sys.executable, ...]`, console scripts,
    /// multiprocessing) go through qemu even without binfmt_misc.
    pub fn emulated(root: &Path, emulator: &Emulator) -> Result<Self, TestError> {
        let sysroot = emulator.sysroot();
        let arch = sysroot.arch();
        let platform = match (sysroot.musl_version(), sysroot.glibc_version()) {
            (Some(musl), _) => PipPlatform::Musllinux { arch, musl },
            (None, Some(glibc)) => PipPlatform::Manylinux { arch, glibc },
            (None, None) => {
                return Err(TestError::BrokenSysroot {
                    path: sysroot.root().to_path_buf(),
                    detail: "its manifest names no libc6 or musl version".into(),
                });
            }
        };
        let env = TargetEnv {
            root: root.to_path_buf(),
            platform,
            python: sysroot.python_version(),
            interpreter_env: emulator.env(),
            emulated: Some(arch),
            debian: None,
            built: Vec::new(),
        };
        let home = sysroot
            .python()
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let version = sysroot.python_version().interpreter_version();
        env.create_layout(&home, sysroot.python_full_version().unwrap_or(&version))?;

        let mut script = format!(
            "#!{}\n# crosswheel: the target CPython under qemu-user\n",
            interpreter_shell()
        );
        for (name, value) in &env.interpreter_env {
            script.push_str(&format!("export {name}={}\n", shell_quote(value)));
        }
        script.push_str(&format!(
            "exec {} -0 \"$0\" {} \"$@\"\n",
            shell_quote(&emulator.qemu().to_string_lossy()),
            shell_quote(&sysroot.python().to_string_lossy()),
        ));
        let python = env.bin().join("python");
        write_executable(&python, &script)?;
        env.link_versioned_names()?;
        env.write_pip_shims()?;
        Ok(env)
    }

    /// A venv on the host's own interpreter, for targets the host runs natively: Linux
    /// on its own architecture, macOS arm64 on an arm64 Mac.
    pub fn native(
        root: &Path,
        platform: TestPlatform,
        python: PythonTag,
    ) -> Result<Self, TestError> {
        let host = HostPython::find(python)?;
        let platform = host.pip_platform(platform)?;
        let env = TargetEnv {
            root: root.to_path_buf(),
            platform,
            python,
            interpreter_env: Vec::new(),
            emulated: None,
            debian: None,
            built: Vec::new(),
        };
        let home = host
            .executable
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        env.create_layout(&home, &host.full_version)?;
        let python = env.bin().join("python");
        std::os::unix::fs::symlink(&host.executable, &python)
            .map_err(TestError::io("create", &python))?;
        env.link_versioned_names()?;
        Ok(env)
    }

    pub fn bin(&self) -> PathBuf {
        self.root.join("bin")
    }

    pub fn python(&self) -> PathBuf {
        self.bin().join("python")
    }

    pub fn site_packages(&self) -> PathBuf {
        self.root
            .join("lib")
            .join(format!("python{}", self.python.interpreter_version()))
            .join("site-packages")
    }

    /// What a command needs to find this environment's `python` and scripts first.
    pub fn command_env(&self) -> Vec<(OsString, OsString)> {
        self.command_env_over(std::env::var_os("PATH"))
    }

    /// [`TargetEnv::command_env`] over a given `PATH` (the user's `environment` may set it).
    pub fn command_env_over(&self, inherited: Option<OsString>) -> Vec<(OsString, OsString)> {
        let mut path = vec![self.bin()];
        if let Some(inherited) = inherited {
            path.extend(std::env::split_paths(&inherited));
        }
        let mut env: Vec<(OsString, OsString)> = vec![
            (
                "PATH".into(),
                std::env::join_paths(path).unwrap_or_default(),
            ),
            ("VIRTUAL_ENV".into(), self.root.clone().into_os_string()),
        ];
        env.extend(
            self.interpreter_env
                .iter()
                .map(|(name, value)| ((*name).into(), value.into())),
        );
        env
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn emulated_arch(&self) -> Option<LinuxArch> {
        self.emulated
    }

    pub fn debian(&self) -> Option<&DebianPython> {
        self.debian.as_ref()
    }

    /// Makes Debian's Python packages importable here (after the venv's own).
    pub fn use_debian(&mut self, debian: DebianPython) -> Result<(), TestError> {
        debian.link_into(&self.site_packages())?;
        self.debian = Some(debian);
        Ok(())
    }

    /// The test requirements built here for this venv.
    pub fn built(&self) -> &[BuiltRequirement] {
        &self.built
    }

    /// The folder pip finds the wheels built here in, beside the venv.
    fn built_dir(&self) -> PathBuf {
        self.root.with_file_name("built-requirements")
    }

    /// Offers `built` (a wheel in the cache) to pip: a copy in [`TargetEnv::built_dir`], so
    /// that pip sees only the wheels this test asked for, not every wheel in the cache.
    pub fn add_built(&mut self, built: BuiltRequirement) -> Result<(), TestError> {
        let dir = self.built_dir();
        fs::create_dir_all(&dir).map_err(TestError::io("create", &dir))?;
        if let Some(name) = built.wheel.file_name() {
            fs::copy(&built.wheel, dir.join(name)).map_err(TestError::io("copy", &built.wheel))?;
        }
        self.built.push(built);
        Ok(())
    }

    /// `--find-links` to Debian's placeholder wheels and the wheels built here, when there
    /// are any.
    pub fn find_links_args(&self) -> Vec<OsString> {
        let mut args = Vec::new();
        if let Some(debian) = &self.debian {
            args.extend(["--find-links".into(), debian.placeholders.clone().into()]);
        }
        if !self.built.is_empty() {
            args.extend(["--find-links".into(), self.built_dir().into_os_string()]);
        }
        args
    }

    /// The host pip installing for the target into this venv; `--dry-run` only resolves.
    fn host_pip_for_target(
        &self,
        requirements: &[String],
        vars: &std::collections::BTreeMap<String, String>,
        dry_run: bool,
    ) -> Command {
        let mut command = host_pip();
        command.envs(vars);
        if dry_run {
            command.arg("--dry-run");
        }
        command
            .arg("--target")
            .arg(self.site_packages())
            .args(self.platform_args())
            .args(self.find_links_args())
            .args(requirements);
        command
    }

    /// Whether the host pip finds target wheels (or Debian's placeholders) for
    /// everything: a resolution without installing.
    pub fn probe(
        &self,
        requirements: &[String],
        vars: &std::collections::BTreeMap<String, String>,
        log: &mut Log,
    ) -> Result<Finished, TestError> {
        log.run(self.host_pip_for_target(requirements, vars, true), Echo::No)
    }

    /// `python -m pip` under this venv's interpreter with a cache of its own in `cache`.
    pub fn interpreter_pip(
        &self,
        vars: &std::collections::BTreeMap<String, String>,
        cache: &Path,
    ) -> Command {
        let mut command = Command::new(self.python());
        command
            .envs(vars)
            .envs(self.command_env())
            .env("PIP_CACHE_DIR", cache)
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
            .env("PIP_NO_INPUT", "1")
            .env("PIP_ROOT_USER_ACTION", "ignore")
            .args(["-m", "pip"]);
        command
    }

    /// Installs `requirements` (wheel paths or requirement specifiers) for the target, with
    /// `vars` (the user's variables) set for pip.
    pub fn install(
        &self,
        requirements: &[String],
        vars: &std::collections::BTreeMap<String, String>,
        log: &mut Log,
    ) -> Result<InstalledBy, TestError> {
        let host_attempt = log.run(
            self.host_pip_for_target(requirements, vars, false),
            Echo::No,
        )?;
        if host_attempt.status.success() {
            self.adopt_scripts()?;
            remove_placeholders(&self.site_packages())?;
            return Ok(InstalledBy::HostPip);
        }
        log.note(&format!(
            "the host pip found no {} wheel for something above ({}); retrying with pip under the target interpreter",
            self.platform.test_platform(),
            host_attempt.reason()
        ))?;
        // The real pip replaces the stand-in that hands `python -m pip` to the shim.
        let stand_in = self.site_packages().join("pip");
        if fs::read_to_string(stand_in.join("__init__.py"))
            .is_ok_and(|text| text == super::pip_shim::MODULE_INIT)
        {
            fs::remove_dir_all(&stand_in).map_err(TestError::io("remove", &stand_in))?;
        }
        let mut command = host_pip();
        command
            .envs(vars)
            .arg("--target")
            .arg(self.site_packages())
            .args(self.platform_args())
            .arg("pip");
        let pip_install = log.run(command, Echo::No)?;
        if !pip_install.status.success() {
            return Err(self.install_error(requirements, host_attempt.reason(), log));
        }
        let built = super::source_build::install_from_source(
            self,
            requirements,
            vars,
            log,
            &host_attempt.reason(),
        )?;
        remove_placeholders(&self.site_packages())?;
        Ok(InstalledBy::InterpreterPip { built })
    }

    /// The requirements as an error names them: wheels by file name, without extras.
    pub fn named(&self, requirements: &[String]) -> String {
        requirements
            .iter()
            .map(|requirement| {
                // A wheel with extras (`x.whl[test]`) is named without them.
                let requirement = match requirement.split_once(".whl[") {
                    Some((stem, _)) if requirement.ends_with(']') => {
                        requirement.get(..stem.len() + 4).unwrap_or(requirement)
                    }
                    _ => requirement.as_str(),
                };
                let path = Path::new(requirement);
                match (path.extension(), path.file_name()) {
                    (Some(ext), Some(name)) if ext == "whl" => name.to_str().unwrap_or(requirement),
                    _ => requirement,
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    pub fn install_error(&self, requirements: &[String], reason: String, log: &Log) -> TestError {
        // The wheel's full path would drown the message; its name says enough.
        TestError::Install {
            what: self.named(requirements),
            platform: self.platform.test_platform(),
            reason,
            log: log.path().to_path_buf(),
        }
    }

    /// pip's target-platform options: every tag the target accepts, since pip does not
    /// widen one `--platform` to older glibc or macOS versions.
    fn platform_args(&self) -> Vec<String> {
        let mut args = vec!["--only-binary=:all:".to_string()];
        match self.platform {
            PipPlatform::Manylinux { arch, glibc } => {
                let machine = arch.machine();
                for glibc_minor in (MANYLINUX_FLOOR_MINOR..=glibc.minor).rev() {
                    args.push(format!(
                        "--platform=manylinux_{}_{glibc_minor}_{machine}",
                        glibc.major
                    ));
                }
                args.push(format!("--platform=manylinux2014_{machine}"));
                args.push(format!("--platform=linux_{machine}"));
            }
            // PEP 656's tags start at musllinux_1_1; pip does not widen one either.
            PipPlatform::Musllinux { arch, musl } => {
                let machine = arch.machine();
                for musl_minor in (1..=musl.minor).rev() {
                    args.push(format!(
                        "--platform=musllinux_{}_{musl_minor}_{machine}",
                        musl.major
                    ));
                }
                args.push(format!("--platform=linux_{machine}"));
            }
            // What pip's own tag list holds for an arm64 interpreter: arm64 and
            // universal2 for every macOS from 11 up to the host's, and universal2 for
            // the 10.x versions (a universal2 wheel built for 10.9 carries arm64 code).
            PipPlatform::MacosArm64 { major } => {
                for version in (crate::target::macos_arm64_floor().major..=major).rev() {
                    args.push(format!("--platform=macosx_{version}_0_arm64"));
                    args.push(format!("--platform=macosx_{version}_0_universal2"));
                }
                for minor in (4..=16).rev() {
                    args.push(format!("--platform=macosx_10_{minor}_universal2"));
                }
            }
            // pip's list for an x86_64 interpreter: each macOS from the host's down to
            // 10.4, each with the formats that hold x86_64 code.
            PipPlatform::MacosX86_64 { version } => {
                let formats = ["x86_64", "intel", "fat64", "universal2", "universal"];
                let mut versions: Vec<(u32, u32)> =
                    (11..=version.major).rev().map(|major| (major, 0)).collect();
                let newest_ten = if version.major == 10 {
                    version.minor
                } else {
                    16
                };
                versions.extend((4..=newest_ten).rev().map(|minor| (10, minor)));
                for (major, minor) in versions {
                    for format in formats {
                        args.push(format!("--platform=macosx_{major}_{minor}_{format}"));
                    }
                }
            }
        }
        args.extend([
            format!("--python-version={}", self.python.version()),
            "--implementation=cp".to_string(),
            format!("--abi={}", self.python),
        ]);
        args
    }

    fn create_layout(&self, home: &Path, full_version: &str) -> Result<(), TestError> {
        for dir in [self.bin(), self.site_packages()] {
            fs::create_dir_all(&dir).map_err(TestError::io("create", &dir))?;
        }
        let config = self.root.join("pyvenv.cfg");
        let text = format!(
            "home = {}\ninclude-system-site-packages = false\nversion = {full_version}\n",
            home.display()
        );
        fs::write(&config, text).map_err(TestError::io("write", &config))
    }

    fn link_versioned_names(&self) -> Result<(), TestError> {
        for name in [
            "python3".to_string(),
            format!("python{}", self.python.interpreter_version()),
        ] {
            let link = self.bin().join(name);
            std::os::unix::fs::symlink("python", &link).map_err(TestError::io("create", &link))?;
        }
        Ok(())
    }

    /// `pip` in the emulated environment's bin/, so `pip install` in `before-test` and the
    /// test command reaches this environment, not the host's (see [`super::pip_shim`]).
    fn write_pip_shims(&self) -> Result<(), TestError> {
        // Absolute: inside the environment, `python3` on PATH is the target's.
        let host = crate::support::host::find_on_path(HOST_PIP_PYTHON)
            .unwrap_or_else(|| PathBuf::from(HOST_PIP_PYTHON));
        let text = super::pip_shim::script(
            &host,
            &self.python(),
            &self.site_packages(),
            &self.platform_args(),
        );
        for name in super::pip_shim::names(self.python) {
            write_executable(&self.bin().join(name), &text)?;
        }
        let module = self.site_packages().join("pip");
        fs::create_dir_all(&module).map_err(TestError::io("create", &module))?;
        for (file, text) in [
            ("__init__.py", super::pip_shim::MODULE_INIT),
            ("__main__.py", super::pip_shim::MODULE_MAIN),
        ] {
            let path = module.join(file);
            fs::write(&path, text).map_err(TestError::io("write", &path))?;
        }
        Ok(())
    }

    /// pip `--target` leaves console scripts in `<target>/bin` with the host
    /// interpreter in their shebang: move them to the venv's bin/ and point them at its
    /// python.
    fn adopt_scripts(&self) -> Result<(), TestError> {
        let scripts = self.site_packages().join("bin");
        let Ok(entries) = fs::read_dir(&scripts) else {
            return Ok(());
        };
        let shebang = format!("#!{}\n", self.python().display());
        for entry in entries {
            let from = entry.map_err(TestError::io("list", &scripts))?.path();
            let Some(name) = from.file_name() else {
                continue;
            };
            let to = self.bin().join(name);
            match fs::read_to_string(&from) {
                Ok(text) if text.starts_with("#!") => {
                    write_executable(&to, &format!("{shebang}{}", script_body(&text)))?
                }
                // Binary or unreadable: not a script pip wrote; keep it as it is.
                _ => {
                    fs::rename(&from, &to).map_err(TestError::io("move", &from))?;
                }
            }
        }
        fs::remove_dir_all(&scripts).map_err(TestError::io("remove", &scripts))
    }
}

/// The shell of the emulated interpreter's launcher. bash where the machine has it: dash,
/// Debian's and Ubuntu's `/bin/sh`, drops every environment entry whose name is not a
/// shell identifier on its way to the program it runs, and tests use such names (h5py's
/// `IN_SUBPROCESS_<test file path>`, which tells a test it already runs in its own
/// subprocess: without it, each one started another, without end).
fn interpreter_shell() -> &'static str {
    if Path::new("/bin/bash").is_file() {
        "/bin/bash"
    } else {
        "/bin/sh"
    }
}

/// A pip-written script without its launcher lines: the shebang, and for long
/// interpreter paths the `/bin/sh` trampoline (`'''exec' ... "$0" "$@"` / `' '''`).
fn script_body(text: &str) -> &str {
    let body = after_first_line(text);
    if text.starts_with("#!/bin/sh\n") && body.starts_with("'''exec'") {
        let body = after_first_line(body);
        if body.starts_with("' '''") {
            return after_first_line(body);
        }
    }
    body
}

fn after_first_line(text: &str) -> &str {
    text.split_once('\n').map_or("", |(_, rest)| rest)
}

/// `python -m pip install` as the host pip runs it.
const PIP_INSTALL: [&str; 5] = [
    "-m",
    "pip",
    "install",
    "--disable-pip-version-check",
    "--no-input",
];

fn host_pip() -> Command {
    let mut command = Command::new(HOST_PIP_PYTHON);
    command
        .args(PIP_INSTALL)
        .arg("--no-compile")
        // Cross-build settings leak into pip and would make it resolve for the wrong
        // platform: `_PYTHON_HOST_PLATFORM` makes pip resolve for the target's.
        .env_remove("_PYTHON_HOST_PLATFORM")
        .env_remove("_PYTHON_SYSCONFIGDATA_NAME")
        .env_remove("PYTHONPATH")
        // The warning about running as root concerns the host's site-packages, which a
        // `--target` install never touches.
        .env("PIP_ROOT_USER_ACTION", "ignore");
    command
}

pub(crate) fn write_executable(path: &Path, text: &str) -> Result<(), TestError> {
    use std::os::unix::fs::PermissionsExt;
    fs::write(path, text).map_err(TestError::io("write", path))?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
        .map_err(TestError::io("make executable", path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_for(arch: LinuxArch, (major, minor): (u32, u32)) -> TargetEnv {
        let glibc = OsVersion { major, minor };
        env_on(PipPlatform::Manylinux { arch, glibc })
    }

    fn env_on(platform: PipPlatform) -> TargetEnv {
        TargetEnv {
            root: "/tmp/venv".into(),
            platform,
            python: PythonTag::parse("cp311").unwrap(),
            interpreter_env: Vec::new(),
            emulated: None,
            debian: None,
            built: Vec::new(),
        }
    }

    #[test]
    fn platform_args_on_an_arm64_mac_cover_every_macos_since_11_and_universal2() {
        let args = env_on(PipPlatform::MacosArm64 { major: 14 }).platform_args();
        for tag in [
            "macosx_14_0_arm64",
            "macosx_11_0_arm64",
            "macosx_12_0_universal2",
            "macosx_10_9_universal2",
        ] {
            assert!(
                args.contains(&format!("--platform={tag}")),
                "{tag} missing: {args:?}"
            );
        }
        assert!(
            !args.iter().any(|a| a.contains("macosx_15")
                || a.contains("x86_64")
                || a.contains("10_9_arm64")),
            "{args:?}"
        );
        assert!(args.contains(&"--abi=cp311".to_string()));
    }

    #[test]
    fn platform_args_cover_every_manylinux_glibc_up_to_the_targets() {
        let args = env_for(LinuxArch::Ppc64le, (2, 36)).platform_args();
        assert!(args.contains(&"--platform=manylinux_2_36_ppc64le".to_string()));
        assert!(args.contains(&"--platform=manylinux_2_17_ppc64le".to_string()));
        assert!(args.contains(&"--platform=manylinux2014_ppc64le".to_string()));
        assert!(
            !args
                .iter()
                .any(|a| a.contains("manylinux_2_37") || a.contains("manylinux_2_16"))
        );
        assert!(args.contains(&"--abi=cp311".to_string()));
        assert_eq!(
            args.iter()
                .filter(|a| a.starts_with("--platform=manylinux_2_"))
                .count(),
            20
        );
    }

    #[test]
    fn platform_args_of_a_musl_cpython_cover_every_musllinux_tag_and_no_manylinux_one() {
        let args = env_on(PipPlatform::Musllinux {
            arch: LinuxArch::Aarch64,
            musl: OsVersion { major: 1, minor: 2 },
        })
        .platform_args();
        let platforms: Vec<&str> = args
            .iter()
            .filter_map(|arg| arg.strip_prefix("--platform="))
            .collect();
        assert_eq!(
            platforms,
            [
                "musllinux_1_2_aarch64",
                "musllinux_1_1_aarch64",
                "linux_aarch64"
            ]
        );
    }

    #[test]
    fn script_body_drops_plain_and_trampoline_launchers() {
        let plain = "#!/usr/bin/python3\n# -*- coding: utf-8 -*-\nimport sys\n";
        assert_eq!(script_body(plain), "# -*- coding: utf-8 -*-\nimport sys\n");
        let trampoline =
            "#!/bin/sh\n'''exec' \"/very/long/python\" \"$0\" \"$@\"\n' '''\nimport sys\n";
        assert_eq!(script_body(trampoline), "import sys\n");
        assert_eq!(script_body("#!/bin/sh\necho hi\n"), "echo hi\n");
    }

    #[test]
    fn emulated_pip_scripts_are_pointed_at_the_venv_python() {
        let dir = tempfile::tempdir().unwrap();
        let mut env = env_for(LinuxArch::Aarch64, (2, 36));
        env.root = dir.path().to_path_buf();
        env.create_layout(Path::new("/sysroot/usr/bin"), "3.11.2")
            .unwrap();
        let scripts = env.site_packages().join("bin");
        fs::create_dir_all(&scripts).unwrap();
        fs::write(scripts.join("pytest"), "#!/usr/bin/python3\nimport sys\n").unwrap();
        env.adopt_scripts().unwrap();
        let adopted = fs::read_to_string(env.bin().join("pytest")).unwrap();
        assert_eq!(
            adopted,
            format!("#!{}\nimport sys\n", env.python().display())
        );
        assert!(!scripts.exists());
        let config = fs::read_to_string(dir.path().join("pyvenv.cfg")).unwrap();
        assert!(config.starts_with("home = /sysroot/usr/bin\n"), "{config}");
    }
}
