//! qemu-user: finding (or fetching) the emulator and checking the kernel's binfmt_misc
//! registration that lets programs started by an emulated process run too.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::python_tag::PythonTag;
use crate::support::host::Network;
use crate::support::sysroot::{self, LinuxArch, Sysroot, TreeSpec};

use super::TestError;

/// Written into a sysroot once its standard library is compiled to bytecode.
const BYTECODE_MARKER: &str = ".crosswheel-bytecode";

/// `compileall -x`: the stdlib's own tests and GUI tools, which test runs never import
/// (and some of whose files are deliberately invalid Python).
const STDLIB_NOT_COMPILED: &str = "/(test|tests|idlelib|tkinter|turtledemo|lib2to3)/";

/// Where the kernel exposes binfmt_misc handlers.
pub const BINFMT_MISC_DIR: &str = "/proc/sys/fs/binfmt_misc";

/// A target CPython runnable on this host through qemu-user.
#[derive(Debug, Clone)]
pub struct Emulator {
    qemu: PathBuf,
    sysroot: Sysroot,
    cpu: Option<String>,
}

impl Emulator {
    /// Provisions the target sysroot and finds qemu (fetching it into `cache` when it is
    /// not on PATH). `cpu` overrides the architecture's `qemu_cpu` in config/targets.toml.
    /// qemu-user for `arch` with a sysroot holding CPython `python_version`.
    pub fn new(
        cache: &Path,
        arch: LinuxArch,
        python_version: PythonTag,
        target_python: Option<&Path>,
        network: &Network,
        cpu: Option<String>,
    ) -> Result<Self, TestError> {
        let sysroot = match target_python {
            Some(folder) => Sysroot::user_supplied(cache, folder, arch, python_version, network)?,
            None => Sysroot::provision(cache, arch, python_version, network)?,
        };
        let qemu = find_qemu(arch, cache, network)?;
        let cpu = cpu.or_else(|| arch.qemu_cpu().map(str::to_string));
        let emulator = Emulator { qemu, sysroot, cpu };
        emulator.precompile_stdlib()?;
        Ok(emulator)
    }

    /// The same emulator on a tree that also holds Debian's `packages` for this CPython
    /// (`python3-numpy` and what it depends on), from the same Debian release. `None` for a
    /// user-supplied target CPython, which Debian's packages were not built for.
    pub fn with_debian_packages(
        &self,
        cache: &Path,
        packages: &[String],
        network: &Network,
    ) -> Result<Option<Self>, TestError> {
        if !self.sysroot.owned() {
            return Ok(None);
        }
        let sysroot = Sysroot::provision_with(
            cache,
            self.sysroot.arch(),
            self.sysroot.python_version(),
            network,
            packages,
        )?;
        let emulator = Emulator {
            qemu: self.qemu.clone(),
            sysroot,
            cpu: self.cpu.clone(),
        };
        emulator.precompile_stdlib()?;
        Ok(Some(emulator))
    }

    /// Compiles the target's standard library to bytecode once per sysroot. Debian ships
    /// it as source only (its postinst compiles it), so otherwise every test run compiles
    /// what it imports under emulation — or, with PYTHONDONTWRITEBYTECODE set, compiles it
    /// again each time: about 5 s of a small pytest run. Runs of several processes may
    /// overlap harmlessly: Python writes each `.pyc` atomically.
    fn precompile_stdlib(&self) -> Result<(), TestError> {
        let marker = self.sysroot.root().join(BYTECODE_MARKER);
        // A target CPython of the user's is never written to.
        if marker.exists() || !self.sysroot.owned() {
            return Ok(());
        }
        let stdlib = self.sysroot.root().join("usr/lib").join(format!(
            "python{}",
            self.sysroot.python_version().interpreter_version()
        ));
        tracing::info!(
            "compiling the {} standard library to bytecode under qemu (once per target CPython, ~10 s)",
            self.sysroot.arch()
        );
        let started = std::time::Instant::now();
        let output = self
            .python_command()
            .args(["-m", "compileall", "-q", "-x", STDLIB_NOT_COMPILED])
            .arg(&stdlib)
            .env_remove("PYTHONDONTWRITEBYTECODE")
            .env_remove("PYTHONPATH")
            .env_remove("PYTHONHOME")
            .env_remove("_PYTHON_HOST_PLATFORM")
            .env_remove("_PYTHON_SYSCONFIGDATA_NAME")
            .output()
            .map_err(TestError::io("run", &self.qemu))?;
        if !output.status.success() {
            // A file that does not compile is compiled (and fails) again when imported;
            // nothing is lost but time, so say so and go on.
            tracing::warn!(
                "compiling the target's standard library in {} reported errors: {}",
                stdlib.display(),
                String::from_utf8_lossy(&output.stdout)
                    .lines()
                    .next()
                    .unwrap_or_default()
            );
        }
        tracing::info!(
            "compiled the {} standard library to bytecode in {:.1} s",
            self.sysroot.arch(),
            started.elapsed().as_secs_f64()
        );
        fs::write(&marker, "").map_err(TestError::io("write", &marker))
    }

    pub fn qemu(&self) -> &Path {
        &self.qemu
    }

    pub fn sysroot(&self) -> &Sysroot {
        &self.sysroot
    }

    pub fn cpu(&self) -> Option<&str> {
        self.cpu.as_deref()
    }

    /// The variables qemu reads; exported so that binfmt-launched subprocesses of the
    /// emulated program find the same libraries and CPU.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let mut env = vec![(
            "QEMU_LD_PREFIX",
            self.sysroot.root().to_string_lossy().into_owned(),
        )];
        if let Some(cpu) = &self.cpu {
            env.push(("QEMU_CPU", cpu.clone()));
        }
        env
    }

    /// `program` (a target ELF file) run under qemu.
    pub fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(&self.qemu);
        command.envs(self.env()).arg(program);
        command
    }

    /// The target interpreter run under qemu.
    pub fn python_command(&self) -> Command {
        self.command(&self.sysroot.python())
    }
}

/// `qemu-<arch>-static` or `qemu-<arch>` from PATH, else Debian's static build fetched
/// into the cache (its binaries run from any folder) as `network` reaches Debian's archive.
pub fn find_qemu(arch: LinuxArch, cache: &Path, network: &Network) -> Result<PathBuf, TestError> {
    if let Some(found) = std::env::var_os("PATH").and_then(|path| find_qemu_on_path(arch, &path)) {
        return Ok(found);
    }
    let host = LinuxArch::host().ok_or(TestError::UnsupportedHost {
        arch: std::env::consts::ARCH,
    })?;
    let tree = sysroot::provision(cache, &TreeSpec::qemu_user(host, network))?;
    let qemu = tree
        .root()
        .join("usr/bin")
        .join(format!("qemu-{}-static", arch.qemu_name()));
    if qemu.is_file() {
        Ok(qemu)
    } else {
        Err(TestError::QemuMissing {
            arch,
            looked_in: qemu,
        })
    }
}

pub fn find_qemu_on_path(arch: LinuxArch, path_var: &OsStr) -> Option<PathBuf> {
    let names = [
        format!("qemu-{}-static", arch.qemu_name()),
        format!("qemu-{}", arch.qemu_name()),
    ];
    names
        .iter()
        .flat_map(|name| std::env::split_paths(path_var).map(move |dir| dir.join(name)))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// Whether the kernel hands `arch` ELF files to an emulator by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BinfmtStatus {
    Enabled { entry: String },
    Disabled { entry: String },
    NotRegistered,
    NotMounted,
}

impl BinfmtStatus {
    /// One line saying what is wrong and the commands that fix it; `None` when enabled.
    pub fn problem(&self, arch: LinuxArch) -> Option<String> {
        let why = "programs that the emulated interpreter starts (other than Python itself) fail with `Exec format error`";
        let machine = arch.machine();
        let qemu = arch.qemu_name();
        match self {
            BinfmtStatus::Enabled { .. } => None,
            // Debian registers no qemu-i386 on x86_64: the kernel runs i386 programs itself,
            // and they start only with the host's own i386 loader.
            BinfmtStatus::NotRegistered | BinfmtStatus::NotMounted
                if arch == LinuxArch::I686 && LinuxArch::host() == Some(LinuxArch::X86_64) =>
            {
                Some(
                    "i686 programs that the emulated interpreter starts (other than Python itself) run on this x86_64 kernel and fail with `No such file or directory` without an i386 loader: run `sudo dpkg --add-architecture i386; sudo apt-get update; sudo apt-get install libc6:i386`"
                        .to_string(),
                )
            }
            BinfmtStatus::Disabled { entry } => Some(format!(
                "the binfmt_misc handler `{entry}` for {machine} is disabled, so {why}: run \
                 `sudo update-binfmts --enable {entry}`"
            )),
            BinfmtStatus::NotRegistered => Some(format!(
                "no binfmt_misc handler for {machine} ELF files is registered, so {why}: run \
                 `sudo apt-get install qemu-user-static binfmt-support; sudo update-binfmts --enable qemu-{qemu}`"
            )),
            BinfmtStatus::NotMounted => Some(format!(
                "binfmt_misc is not mounted at {BINFMT_MISC_DIR}, so {why}: run `sudo mount -t \
                 binfmt_misc binfmt_misc {BINFMT_MISC_DIR}; sudo update-binfmts --enable qemu-{qemu}`"
            )),
        }
    }
}

/// Looks for a handler in `binfmt_dir` (normally [`BINFMT_MISC_DIR`]): the conventional
/// `qemu-<arch>` entry first, then any entry whose ELF magic names the architecture
/// (registrations from other tools use other names).
pub fn binfmt_status(arch: LinuxArch, binfmt_dir: &Path) -> BinfmtStatus {
    if !binfmt_dir.join("status").exists() {
        return BinfmtStatus::NotMounted;
    }
    let conventional = format!("qemu-{}", arch.qemu_name());
    let mut entries: Vec<(String, String)> = Vec::new();
    if let Ok(text) = fs::read_to_string(binfmt_dir.join(&conventional)) {
        entries.push((conventional, text));
    }
    if let Ok(dir) = fs::read_dir(binfmt_dir) {
        for entry in dir.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if matches!(name.as_str(), "register" | "status")
                || entries.iter().any(|(seen, _)| *seen == name)
            {
                continue;
            }
            if let Ok(text) = fs::read_to_string(entry.path()) {
                entries.push((name, text));
            }
        }
    }
    let handlers: Vec<(String, bool)> = entries
        .into_iter()
        .filter(|(_, text)| handles_elf_machine(text, arch))
        .map(|(name, text)| (name, text.lines().next().map(str::trim) == Some("enabled")))
        .collect();
    match handlers
        .iter()
        .find(|(_, enabled)| *enabled)
        .or(handlers.first())
    {
        Some((entry, true)) => BinfmtStatus::Enabled {
            entry: entry.clone(),
        },
        Some((entry, false)) => BinfmtStatus::Disabled {
            entry: entry.clone(),
        },
        None => BinfmtStatus::NotRegistered,
    }
}

/// Whether a binfmt_misc entry's magic matches the ELF files of `arch`: bytes 4–5 (class,
/// data) and 18–19 (e_machine, in the file's byte order) of the ELF header.
fn handles_elf_machine(entry: &str, arch: LinuxArch) -> bool {
    let Some(magic) = entry.lines().find_map(|line| line.strip_prefix("magic ")) else {
        return false;
    };
    let offset_zero = entry.lines().any(|line| line.trim() == "offset 0");
    let Some(bytes) = decode_hex(magic.trim()) else {
        return false;
    };
    offset_zero
        && bytes.get(..4) == Some(b"\x7fELF".as_slice())
        && bytes.get(4..6) == Some(arch.elf_ident().as_slice())
        && bytes.get(18..20) == Some(arch.elf_machine_bytes().as_slice())
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    let digits = text.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks(2)
        .map(|pair| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const AARCH64_ENTRY: &str = "enabled\ninterpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P\nflags: PF\noffset 0\nmagic 7f454c460201010000000000000000000200b700\nmask ffffffffffffff00fffffffffffffffffeffffff\n";

    /// Debian's qemu-user-static registration for s390x: big-endian e_machine 0x0016.
    const S390X_ENTRY: &str = "enabled\ninterpreter /usr/libexec/qemu-binfmt/s390x-binfmt-P\nflags: PF\noffset 0\nmagic 7f454c4602020100000000000000000000020016\nmask ffffffffffffff00fffffffffffffffffffeffff\n";

    #[test]
    fn binfmt_entries_are_matched_in_their_architectures_byte_order() {
        assert!(handles_elf_machine(S390X_ENTRY, LinuxArch::S390x));
        assert!(!handles_elf_machine(S390X_ENTRY, LinuxArch::Ppc64le));
        assert!(handles_elf_machine(AARCH64_ENTRY, LinuxArch::Aarch64));
        assert!(!handles_elf_machine(AARCH64_ENTRY, LinuxArch::S390x));
    }

    fn fake_binfmt(entries: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("status"), "enabled\n").unwrap();
        fs::write(dir.path().join("register"), "").unwrap();
        for (name, text) in entries {
            fs::write(dir.path().join(name), text).unwrap();
        }
        dir
    }

    #[test]
    fn enabled_handler_is_found_under_its_conventional_name() {
        let dir = fake_binfmt(&[("qemu-aarch64", AARCH64_ENTRY)]);
        assert_eq!(
            binfmt_status(LinuxArch::Aarch64, dir.path()),
            BinfmtStatus::Enabled {
                entry: "qemu-aarch64".into()
            }
        );
        assert_eq!(
            BinfmtStatus::Enabled { entry: "x".into() }.problem(LinuxArch::Aarch64),
            None
        );
    }

    #[test]
    fn handler_under_another_name_is_found_by_its_elf_magic() {
        let dir = fake_binfmt(&[("arm64-from-another-tool", AARCH64_ENTRY)]);
        assert_eq!(
            binfmt_status(LinuxArch::Aarch64, dir.path()),
            BinfmtStatus::Enabled {
                entry: "arm64-from-another-tool".into()
            }
        );
        assert_eq!(
            binfmt_status(LinuxArch::Ppc64le, dir.path()),
            BinfmtStatus::NotRegistered
        );
    }

    #[test]
    fn missing_registration_says_how_to_enable_it() {
        let dir = fake_binfmt(&[]);
        let status = binfmt_status(LinuxArch::Ppc64le, dir.path());
        assert_eq!(status, BinfmtStatus::NotRegistered);
        let message = status.problem(LinuxArch::Ppc64le).unwrap();
        assert!(
            message.contains("sudo update-binfmts --enable qemu-ppc64le"),
            "{message}"
        );
        assert!(!message.contains('\n'));
    }

    #[test]
    fn unmounted_binfmt_misc_says_how_to_mount_it() {
        let dir = tempfile::tempdir().unwrap();
        let status = binfmt_status(LinuxArch::Aarch64, &dir.path().join("binfmt_misc"));
        assert_eq!(status, BinfmtStatus::NotMounted);
        let message = status.problem(LinuxArch::Aarch64).unwrap();
        assert!(
            message.contains("sudo mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc"),
            "{message}"
        );
        assert!(
            message.contains("sudo update-binfmts --enable qemu-aarch64"),
            "{message}"
        );
    }

    #[test]
    fn disabled_handler_is_reported_with_its_name() {
        let disabled = AARCH64_ENTRY.replacen("enabled", "disabled", 1);
        let dir = fake_binfmt(&[("qemu-aarch64", &disabled)]);
        let status = binfmt_status(LinuxArch::Aarch64, dir.path());
        assert_eq!(
            status,
            BinfmtStatus::Disabled {
                entry: "qemu-aarch64".into()
            }
        );
        assert!(
            status
                .problem(LinuxArch::Aarch64)
                .unwrap()
                .contains("sudo update-binfmts --enable qemu-aarch64")
        );
    }

    #[test]
    fn qemu_is_found_on_path_static_build_first() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (first, second) = (dir.path().join("a"), dir.path().join("b"));
        fs::create_dir_all(&first).unwrap();
        fs::create_dir_all(&second).unwrap();
        for path in [
            first.join("qemu-ppc64le"),
            second.join("qemu-ppc64le-static"),
        ] {
            fs::write(&path, "").unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        }
        let path_var = std::env::join_paths([&first, &second]).unwrap();
        assert_eq!(
            find_qemu_on_path(LinuxArch::Ppc64le, &path_var),
            Some(second.join("qemu-ppc64le-static"))
        );
        assert_eq!(find_qemu_on_path(LinuxArch::Aarch64, &path_var), None);
    }

    #[test]
    fn aarch64_defaults_to_a_cpu_without_sme() {
        assert_eq!(LinuxArch::Aarch64.qemu_cpu(), Some("cortex-a72"));
        assert_eq!(LinuxArch::Ppc64le.qemu_cpu(), None);
    }
}
