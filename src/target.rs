//! The one model of what crosswheel builds for: a [`Platform`] (the operating-system
//! family, cibuildwheel's `linux`/`macos`) and a [`Target`] (platform + architecture + OS
//! version), with the facts every stage needs about them.
//!
//! The per-target data lives in `config/targets.toml`, parsed once here; this module fills
//! the templates (`{py}`, `{version}`) for one target and one CPython ABI. Options,
//! toolchain, cross environment, repair and test stage all read targets from here.

use std::fmt;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::python_tag::PythonTag;

const TARGETS_TOML: &str =
    include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/config/targets.toml"));

#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("unknown target `{name}`: use one of {known}")]
    Unknown { name: String, known: String },
    #[error("{target} cannot target OS version {version}: the lowest supported is {min}")]
    BelowFloor {
        target: String,
        version: String,
        min: String,
    },
}

/// The operating-system family of a target; each has its own `[tool.crosswheel.<platform>]`
/// table and `CROSSWHEEL_*_<PLATFORM>` variables, its repair (auditwheel's or delocate's
/// job) and its wheel tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    Linux,
    Macos,
}

impl Platform {
    pub const ALL: [Platform; 2] = [Platform::Linux, Platform::Macos];

    /// `linux`, `macos`: the table name and (upper-cased) the variable suffix.
    pub fn name(self) -> &'static str {
        match self {
            Platform::Linux => "linux",
            Platform::Macos => "macos",
        }
    }

    pub fn from_name(name: &str) -> Option<Platform> {
        Platform::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The platform part of a macOS identifier before the architecture (`macosx`); a Linux
    /// identifier's is its C library's ([`Libc::identifier_prefix`]).
    pub fn identifier_prefix(self) -> &'static str {
        match self {
            Platform::Linux => Libc::Glibc.identifier_prefix(),
            Platform::Macos => "macosx",
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The C library a Linux target's programs link against: what its wheels are tagged for
/// (`manylinux_*` promises glibc, `musllinux_*` musl), which policies judge them and what
/// its CPython calls itself (`x86_64-linux-gnu`, `x86_64-linux-musl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Libc {
    Glibc,
    Musl,
}

impl Libc {
    /// `glibc`, `musl`.
    pub fn name(self) -> &'static str {
        match self {
            Libc::Glibc => "glibc",
            Libc::Musl => "musl",
        }
    }

    /// The platform part of a build identifier before the architecture, and the stem of
    /// the wheel tags: `manylinux`, `musllinux`.
    pub fn identifier_prefix(self) -> &'static str {
        match self {
            Libc::Glibc => "manylinux",
            Libc::Musl => "musllinux",
        }
    }
}

/// The compiler family that builds for a target (the `toolchain` option).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolchainKind {
    /// zig from the `ziglang` package: every target, glibc version chosen per build.
    #[default]
    Zig,
    /// A system cross gcc (Linux targets only).
    Gcc,
}

impl ToolchainKind {
    pub fn from_name(name: &str) -> Option<ToolchainKind> {
        match name {
            "zig" => Some(ToolchainKind::Zig),
            "gcc" => Some(ToolchainKind::Gcc),
            _ => None,
        }
    }
}

impl std::str::FromStr for ToolchainKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        ToolchainKind::from_name(text)
            .ok_or_else(|| format!("unknown toolchain `{text}`: use `zig` or `gcc`"))
    }
}

/// The Linux architectures crosswheel builds for or runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinuxArch {
    X86_64,
    Aarch64,
    Ppc64le,
    S390x,
    I686,
    Armv7l,
    Riscv64,
}

impl LinuxArch {
    pub const ALL: [LinuxArch; 7] = [
        Self::X86_64,
        Self::Aarch64,
        Self::Ppc64le,
        Self::S390x,
        Self::I686,
        Self::Armv7l,
        Self::Riscv64,
    ];

    /// Accepts the kernel/wheel-tag name (`aarch64`) and the other names `names` of
    /// `[[linux_arch]]` lists (Debian's `arm64`, `powerpc64le`).
    pub fn parse(name: &str) -> Option<Self> {
        let name = name.trim().to_ascii_lowercase();
        Self::ALL.into_iter().find(|arch| {
            let data = arch.data();
            data.name == name || data.names.contains(&name)
        })
    }

    /// The architecture whose `uname -m` (and wheel-tag suffix) is exactly `machine`.
    pub fn from_machine(machine: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|arch| arch.machine() == machine)
    }

    /// The architecture of ELF files with this header: `e_machine`, 64-bit or not, and
    /// byte order. `None` for one crosswheel does not know (big-endian POWER, riscv32).
    pub fn of_elf(machine: u16, is_64: bool, little_endian: bool) -> Option<Self> {
        Self::ALL.into_iter().find(|arch| {
            arch.elf_machine() == machine
                && arch.is_32_bit() != is_64
                && arch.big_endian() != little_endian
        })
    }

    /// The architecture this crosswheel binary runs on, if it is one of ours.
    pub fn host() -> Option<Self> {
        Self::from_rust_arch(std::env::consts::ARCH, cfg!(target_endian = "little"))
    }

    /// From Rust's name for an architecture (`std::env::consts::ARCH`).
    pub fn from_rust_arch(arch: &str, little_endian: bool) -> Option<Self> {
        Self::ALL.into_iter().find(|candidate| {
            candidate.data().rust_arch == arch && candidate.big_endian() != little_endian
        })
    }

    /// What `config/targets.toml` says of the architecture (`[[linux_arch]]`).
    pub fn data(self) -> &'static LinuxArchData {
        config()
            .linux_arch
            .iter()
            .find(|data| data.name == self.machine())
            .unwrap_or_else(|| panic!("config/targets.toml has no [[linux_arch]] {self}"))
    }

    /// What `uname -m` and `platform.machine()` report; also the wheel-tag suffix.
    pub fn machine(self) -> &'static str {
        match self {
            Self::X86_64 => "x86_64",
            Self::Aarch64 => "aarch64",
            Self::Ppc64le => "ppc64le",
            Self::S390x => "s390x",
            Self::I686 => "i686",
            Self::Armv7l => "armv7l",
            Self::Riscv64 => "riscv64",
        }
    }

    /// qemu-user's name for the architecture (`qemu-<name>-static`, the binfmt_misc entry
    /// `qemu-<name>`): the machine name, but for the 32-bit x86 and Arm emulators.
    pub fn qemu_name(self) -> &'static str {
        &self.data().qemu
    }

    /// The CPU qemu emulates unless the user picks one (`None`: qemu's default).
    pub fn qemu_cpu(self) -> Option<&'static str> {
        self.data().qemu_cpu.as_deref()
    }

    /// Debian's architecture name, as APT and dpkg spell it.
    pub fn debian(self) -> &'static str {
        &self.data().debian
    }

    /// The library folders of a Debian tree for the architecture (`usr/lib/<name>`,
    /// `lib/<name>`), which are also the roots of Debian's cross packages (`/usr/<name>`).
    pub fn debian_multiarch(self) -> &'static [String] {
        &self.data().debian_multiarch
    }

    /// Where a glibc root filesystem of the architecture keeps its dynamic loader,
    /// relative to the root.
    pub fn glibc_loaders(self) -> &'static [String] {
        &self.data().glibc_loaders
    }

    /// Whether the architecture's ELF files are ELFCLASS32 (i686, armv7l).
    pub fn is_32_bit(self) -> bool {
        self.data().elf_class == 32
    }

    /// Whether the architecture stores words most significant byte first (s390x).
    pub fn big_endian(self) -> bool {
        self.data().endian == "big"
    }

    /// `EI_CLASS` and `EI_DATA` of the architecture's ELF files (1 = 32-, 2 = 64-bit;
    /// 1 = little-, 2 = big-endian).
    pub fn elf_ident(self) -> [u8; 2] {
        [
            if self.is_32_bit() { 1 } else { 2 },
            if self.big_endian() { 2 } else { 1 },
        ]
    }

    /// `e_machine` as the architecture's ELF files store it, in their byte order.
    pub fn elf_machine_bytes(self) -> [u8; 2] {
        if self.big_endian() {
            self.elf_machine().to_be_bytes()
        } else {
            self.elf_machine().to_le_bytes()
        }
    }

    /// `e_machine` of the architecture's ELF files (EM_X86_64, EM_AARCH64, EM_PPC64,
    /// EM_S390, EM_386, EM_ARM, EM_RISCV).
    pub fn elf_machine(self) -> u16 {
        self.data().elf_machine
    }
}

/// What `config/targets.toml` says of one Linux architecture (`[[linux_arch]]`); the file's
/// comment says what each field is.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct LinuxArchData {
    pub name: String,
    pub names: Vec<String>,
    pub rust_arch: String,
    pub debian: String,
    pub debian_multiarch: Vec<String>,
    pub glibc_loaders: Vec<String>,
    pub qemu: String,
    #[serde(default)]
    pub qemu_cpu: Option<String>,
    pub elf_machine: u16,
    pub elf_class: u8,
    pub endian: String,
}

impl fmt::Display for LinuxArch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.machine())
    }
}

/// What `config/targets.toml` says of one target.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TargetData {
    /// `linux-aarch64`: what [`Target::parse`] accepts.
    pub id: String,
    pub aliases: Vec<String>,
    /// `aarch64`, `ppc64le`, `arm64`.
    pub arch: String,
    #[serde(rename = "os")]
    pub platform: Platform,
    /// The C library of a Linux target; `None` for macOS.
    #[serde(default)]
    pub libc: Option<Libc>,
    pub min_os_version: String,
    pub default_os_version: String,
    pub zig_triple: String,
    /// Rust's name of the target (`aarch64-unknown-linux-gnu`); `None` for a fused target.
    #[serde(default)]
    pub rust_triple: Option<String>,
    pub gnu_triple: String,
    pub host_gnu_type: String,
    pub python_host_platform: String,
    pub platform_tag: String,
    /// CPython's `MULTIARCH` on the target (`x86_64-linux-musl`); `{multiarch}` in the
    /// name templates is this, or for older CPythons `multiarch_before`'s.
    pub multiarch: String,
    /// The multiarch name CPythons before a version used on this target (3.10 said
    /// `-linux-gnu` on musl).
    #[serde(default)]
    pub multiarch_before: Option<MultiarchBefore>,
    /// `sys.platform` on the target: `linux`, `darwin`.
    pub machdep: String,
    /// `os.uname().sysname` on the target: `Linux`, `Darwin`.
    pub uname_sysname: String,
    /// `platform.processor()` on the target (empty on Linux, as CPython reports there).
    pub uname_processor: String,
    pub sysconfigdata_name: String,
    pub ext_suffix: String,
    pub soabi: String,
    pub meson_system: String,
    pub meson_cpu_family: String,
    pub meson_cpu: String,
    /// `little` or `big`, as meson's `[host_machine] endian` spells it.
    pub endian: String,
    /// What the meson cross file's `[properties]` say of the target, for builds that cannot
    /// run a target program to find out (`longdouble_format` for numpy).
    pub meson_properties: std::collections::BTreeMap<String, MesonValue>,
    pub cmake_system_name: String,
    pub cmake_system_processor: String,
    pub zig_extra_cflags: Vec<String>,
    /// Flags the zig wrappers add to C++ compiles only, after the command's own.
    #[serde(default)]
    pub zig_cxx_flags: Vec<String>,
    /// Members of the target's libgcc that zig's own runtime lacks, linked into every link.
    #[serde(default)]
    pub zig_runtime: Option<ZigRuntime>,
    /// The C++ standard library C++ code compiles and links against in place of zig's
    /// libc++; `None` keeps zig's.
    #[serde(default)]
    pub cxx_runtime: Option<CxxRuntime>,
    /// Why zig cannot do link-time optimisation for this target (empty: it can); the
    /// wrappers then drop the [`LtoFlags`] and say this once per build.
    pub zig_lto_broken: String,
    /// `pyconfig.h` macros to leave undefined / to define for this target.
    pub pyconfig_undef: Vec<String>,
    pub pyconfig_define: std::collections::BTreeMap<String, String>,
    pub gcc_packages: Vec<String>,
    /// The target's GNU assembler, for builds that ask clang for an external one; `None`
    /// for macOS, whose assembler is clang's.
    #[serde(default)]
    pub gnu_assembler: Option<GnuAssembler>,
    /// The targets whose thin wheels are fused into this one's (universal2: x86_64 and
    /// arm64); empty for a target that is compiled itself.
    #[serde(default)]
    pub fuses: Vec<String>,
}

/// A GNU assembler for the target, as a cross binutils package installs it on the build
/// machine (`powerpc64le-linux-gnu-as` from `binutils-powerpc64le-linux-gnu`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct GnuAssembler {
    /// The program's name, looked up on PATH when a build runs.
    pub program: String,
    /// The Debian/Ubuntu package that installs it.
    pub package: String,
    /// Options given to it with every call (`-Wa,<flag>`).
    #[serde(default)]
    pub flags: Vec<String>,
}

/// The multiarch name of CPythons older than `python` (`"3.11"`) on a target.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct MultiarchBefore {
    #[serde(deserialize_with = "crate::python_tag::deserialize_version")]
    pub python: PythonTag,
    pub multiarch: String,
}

/// Object files of a Debian package's static archive that the zig wrappers link.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ZigRuntime {
    /// The Debian package holding the archive, e.g. `libgcc-12-dev`.
    pub package: String,
    /// The archive's path inside the package.
    pub archive: String,
    /// The archive members to take.
    pub members: Vec<String>,
}

/// A C++ standard library from Debian packages: its headers, the static archives that
/// stand for `-l<name>`, linked with their symbols hidden, and the shared libraries they
/// need at run time.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CxxRuntime {
    /// What the toolchain's description says of it (it keys the target libraries' cache).
    pub name: String,
    /// The Debian release the packages come from.
    pub release: String,
    /// The packages (only these, no dependencies), for the build machine's architecture.
    pub packages: Vec<String>,
    /// Header folders in the packages, searched in this order before the C library's.
    pub include: Vec<String>,
    /// `-l` names and the archive in the packages that replaces each.
    pub archives: std::collections::BTreeMap<String, String>,
    /// Shared libraries in the packages that every link using the archives names.
    pub shared: Vec<String>,
}

/// A value of a meson machine file: meson's own types a TOML value can name.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum MesonValue {
    Bool(bool),
    Int(i64),
    Text(String),
}

#[derive(Debug, Deserialize)]
pub(crate) struct HostCflags {
    pub drop_exact: Vec<String>,
    pub drop_prefixes: Vec<String>,
}

/// The link-time optimisation flags of compilers (`[lto_flags]`).
#[derive(Debug, Deserialize)]
pub(crate) struct LtoFlags {
    pub exact: Vec<String>,
    pub prefixes: Vec<String>,
}

/// GCC-only optimisation options zig's clang refuses (`[gcc_only_flags]`).
#[derive(Debug, Deserialize)]
pub(crate) struct GccOnlyFlags {
    /// Spellings under `prefixes` that clang accepts; they are kept.
    pub keep: Vec<String>,
    pub exact: Vec<String>,
    pub prefixes: Vec<String>,
}

/// Options asking clang for an external assembler (`[external_assembler_flags]`), which a
/// zig toolchain does not have for the target.
#[derive(Debug, Deserialize)]
pub(crate) struct ExternalAssemblerFlags {
    pub exact: Vec<String>,
}

/// How the zig wrappers translate one architecture's CPU options (`[cpu_flags.<arch>]`).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct CpuFlags {
    /// `-march` architecture names (`armv8.2-a`) and the zig CPU that means.
    pub march: std::collections::BTreeMap<String, String>,
    /// `-mcpu` CPU names (`power9`) zig spells otherwise (`pwr9`).
    pub cpus: std::collections::BTreeMap<String, String>,
    /// `+feature` names (`fp16`) zig spells otherwise (`fullfp16`).
    pub features: std::collections::BTreeMap<String, String>,
    /// Features no Apple CPU has, which the macOS wrappers refuse (`sve`).
    #[serde(default)]
    pub not_on_apple: Vec<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Tools {
    pub ziglang: String,
    pub uv: String,
}

/// The SHA-256 of every wheel of each [`Tools`] release that may be installed.
#[derive(Debug, Deserialize)]
pub(crate) struct ToolHashes {
    pub ziglang: Vec<String>,
    pub uv: Vec<String>,
}

/// A tool crosswheel installs from the package index into a venv of its own, pinned by
/// version in `[tools]` and by hash in `[tool_hashes]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    /// zig, from the `ziglang` wheel.
    Ziglang,
    /// uv, which installs host CPythons.
    Uv,
}

impl Tool {
    pub const ALL: [Tool; 2] = [Tool::Ziglang, Tool::Uv];

    /// The pinned requirement, `ziglang==0.17.1`.
    pub fn requirement(self) -> &'static str {
        let tools = &config().tools;
        match self {
            Tool::Ziglang => &tools.ziglang,
            Tool::Uv => &tools.uv,
        }
    }

    /// The SHA-256 of every wheel of that release that may be installed.
    pub fn hashes(self) -> &'static [String] {
        let hashes = &config().tool_hashes;
        match self {
            Tool::Ziglang => &hashes.ziglang,
            Tool::Uv => &hashes.uv,
        }
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct TargetsConfig {
    pub target: Vec<TargetData>,
    pub linux_arch: Vec<LinuxArchData>,
    pub host_cflags: HostCflags,
    pub lto_flags: LtoFlags,
    pub gcc_only_flags: GccOnlyFlags,
    pub external_assembler_flags: ExternalAssemblerFlags,
    /// Keyed by the architecture of the zig triple (`aarch64`, `powerpc64le`).
    pub cpu_flags: std::collections::BTreeMap<String, CpuFlags>,
    pub tools: Tools,
    pub tool_hashes: ToolHashes,
}

/// All targets, in the order of `config/targets.toml` (the order builds are listed in).
pub fn targets() -> &'static [TargetData] {
    &config().target
}

impl TargetData {
    /// `manylinux_aarch64`, `musllinux_x86_64`, `macosx_arm64`: the platform part of a
    /// build identifier.
    pub fn identifier_platform(&self) -> String {
        let prefix = match self.libc {
            Some(libc) => libc.identifier_prefix(),
            None => self.platform.identifier_prefix(),
        };
        format!("{prefix}_{}", self.arch)
    }

    /// Whether an `archs` value names this target: its id, an alias, its architecture or its
    /// identifier platform.
    pub fn is_named(&self, name: &str) -> bool {
        let name = name.trim().to_ascii_lowercase();
        self.id == name
            || self.arch == name
            || self.aliases.contains(&name)
            || self.identifier_platform() == name
    }

    /// `min_os_version`: the oldest OS version (glibc, macOS) the target runs.
    pub fn min_os(&self) -> OsVersion {
        OsVersion::parse(&self.min_os_version)
            .unwrap_or_else(|| panic!("config/targets.toml: bad min_os_version for {}", self.id))
    }
}

/// The oldest macOS that runs on Apple silicon (11.0): `min_os_version` of the macOS arm64
/// target. Tag rules, deployment targets and pip's platform list all floor at it.
pub fn macos_arm64_floor() -> OsVersion {
    config()
        .target
        .iter()
        .find(|data| data.platform == Platform::Macos && data.arch == "arm64")
        .expect("config/targets.toml has a macos arm64 target")
        .min_os()
}

/// The oldest macOS any macOS target builds for (x86_64's 10.13): the floor of the
/// `macos-deployment-target` option, which each target raises to its own floor.
pub fn macos_floor() -> OsVersion {
    config()
        .target
        .iter()
        .filter(|data| data.platform == Platform::Macos)
        .map(TargetData::min_os)
        .min()
        .expect("config/targets.toml has macOS targets")
}

pub(crate) fn config() -> &'static TargetsConfig {
    static CONFIG: OnceLock<TargetsConfig> = OnceLock::new();
    CONFIG.get_or_init(|| match toml::from_str(TARGETS_TOML) {
        Ok(config) => config,
        // The file is compiled in; the unit test `bundled_config_parses` guards it.
        Err(err) => panic!("config/targets.toml is invalid: {err}"),
    })
}

/// An OS version as `MAJOR.MINOR`: glibc for Linux, the deployment target for macOS. The
/// one type for both, from `config/targets.toml` and the `macos-deployment-target` option to
/// the repair stage's request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OsVersion {
    pub major: u32,
    pub minor: u32,
}

impl OsVersion {
    pub const fn new(major: u32, minor: u32) -> Self {
        Self { major, minor }
    }

    /// `11` (11.0) or `14.2`: the form options and `config/targets.toml` write.
    pub fn parse(text: &str) -> Option<Self> {
        let (major, minor) = text.split_once('.').unwrap_or((text, "0"));
        Some(Self {
            major: major.parse().ok()?,
            minor: minor.parse().ok()?,
        })
    }

    /// As [`OsVersion::parse`], also taking a release with a patch level (`2.36.1`,
    /// `10.15.4`), as C libraries and macOS report themselves; the patch is dropped, as no
    /// wheel tag or deployment target carries one.
    pub fn parse_release(text: &str) -> Option<Self> {
        let text = text.trim();
        match text.splitn(3, '.').collect::<Vec<_>>()[..] {
            [major, minor, patch]
                if patch.bytes().all(|b| b.is_ascii_digit()) && !patch.is_empty() =>
            {
                Self::parse(&format!("{major}.{minor}"))
            }
            [_, _, _] => None,
            _ => Self::parse(text),
        }
    }
}

impl std::str::FromStr for OsVersion {
    type Err = String;

    /// [`OsVersion::parse`], with the error a user reads.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        OsVersion::parse(text).ok_or_else(|| {
            format!(
                "`{}` is not a version such as `11.0` or `14.2`",
                text.trim()
            )
        })
    }
}

impl fmt::Display for OsVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// A target platform plus the OS version to build for.
#[derive(Debug, Clone)]
pub struct Target {
    data: &'static TargetData,
    os_version: OsVersion,
}

impl PartialEq for Target {
    fn eq(&self, other: &Self) -> bool {
        self.data.id == other.data.id && self.os_version == other.os_version
    }
}

impl Eq for Target {}

impl Target {
    /// All known targets at their default OS version.
    pub fn all() -> Vec<Target> {
        config()
            .target
            .iter()
            .map(Target::with_default_version)
            .collect()
    }

    /// Parses `linux-aarch64`, `linux-ppc64le`, `macos-arm64` or an alias such as
    /// `macosx_11_0_arm64` or `manylinux-aarch64`.
    pub fn parse(name: &str) -> Result<Target, TargetError> {
        let wanted = name.trim().to_ascii_lowercase();
        config()
            .target
            .iter()
            .find(|data| data.id == wanted || data.aliases.contains(&wanted))
            .map(Target::with_default_version)
            .ok_or_else(|| TargetError::Unknown {
                name: name.to_string(),
                known: config()
                    .target
                    .iter()
                    .map(|t| t.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// The Linux target of `arch` with `libc`, at its default OS version.
    pub fn linux(arch: LinuxArch, libc: Libc) -> Option<Target> {
        config()
            .target
            .iter()
            .find(|data| {
                data.platform == Platform::Linux
                    && data.libc == Some(libc)
                    && LinuxArch::parse(&data.arch) == Some(arch)
            })
            .map(Target::with_default_version)
    }

    /// The target `data` describes, at its default OS version.
    pub fn with_default_version(data: &'static TargetData) -> Target {
        let os_version = OsVersion::parse(&data.default_os_version).unwrap_or_else(|| {
            panic!(
                "config/targets.toml: bad default_os_version for {}",
                data.id
            )
        });
        Target { data, os_version }
    }

    /// Same target for another OS version (macOS deployment target, glibc for zig);
    /// versions below the platform's floor are refused rather than silently stamped.
    pub fn with_os_version(&self, version: OsVersion) -> Result<Target, TargetError> {
        let floor = self.data.min_os();
        if version < floor {
            return Err(TargetError::BelowFloor {
                target: self.id().to_string(),
                version: version.to_string(),
                min: floor.to_string(),
            });
        }
        Ok(Target {
            data: self.data,
            os_version: version,
        })
    }

    pub fn data(&self) -> &'static TargetData {
        self.data
    }

    /// This target's deployment target or, when that is below the target's own floor (a
    /// macOS arm64 build of a project whose deployment target serves x86_64 too), that
    /// floor, as cibuildwheel and delocate raise arm64 to 11.0.
    pub fn at_least(data: &'static TargetData, version: OsVersion) -> Target {
        let os_version = version.max(data.min_os());
        Target { data, os_version }
    }

    /// The thin targets a fused target (universal2) is built as, each at this target's OS
    /// version raised to its own floor; empty for a target compiled itself.
    pub fn fused_slices(&self) -> Vec<Target> {
        self.data
            .fuses
            .iter()
            .map(|id| {
                let data = config()
                    .target
                    .iter()
                    .find(|data| &data.id == id)
                    .unwrap_or_else(|| {
                        panic!("config/targets.toml: {} fuses unknown {id}", self.data.id)
                    });
                Target::at_least(data, self.os_version)
            })
            .collect()
    }

    /// Stable identifier such as `linux-aarch64`.
    pub fn id(&self) -> &str {
        &self.data.id
    }

    pub fn platform(&self) -> Platform {
        self.data.platform
    }

    /// Architecture as the platform names it: `aarch64`, `ppc64le`, `arm64`.
    pub fn arch(&self) -> &str {
        &self.data.arch
    }

    pub fn os_version(&self) -> OsVersion {
        self.os_version
    }

    /// The Linux architecture of a Linux target; `None` for macOS.
    pub fn linux_arch(&self) -> Option<LinuxArch> {
        match self.data.platform {
            Platform::Linux => LinuxArch::parse(&self.data.arch),
            Platform::Macos => None,
        }
    }

    pub fn is_macos(&self) -> bool {
        self.data.platform == Platform::Macos
    }

    /// The C library of a Linux target; `None` for macOS.
    pub fn libc(&self) -> Option<Libc> {
        self.data.libc
    }

    /// Whether this machine executes the target's programs itself: a Linux target of the
    /// architecture crosswheel runs on (x86_64 here), whose programs need no qemu-user.
    pub fn runs_natively_here(&self) -> bool {
        cfg!(target_os = "linux")
            && self
                .linux_arch()
                .is_some_and(|arch| Some(arch) == LinuxArch::host())
    }

    /// The `-target` zig understands, OS version included.
    pub fn zig_triple(&self) -> String {
        self.fill(&self.data.zig_triple, "")
    }

    /// The architecture of the zig triple: `aarch64`, `powerpc64le`.
    pub fn zig_arch(&self) -> &str {
        let triple = &self.data.zig_triple;
        triple.split('-').next().unwrap_or(triple)
    }

    /// The GNU triple system cross compilers are prefixed with.
    /// Rust's name of the target (`aarch64-unknown-linux-gnu`); `None` for a fused target,
    /// which is never compiled itself.
    pub fn rust_triple(&self) -> Option<&str> {
        self.data.rust_triple.as_deref()
    }

    pub fn gnu_triple(&self) -> &str {
        &self.data.gnu_triple
    }

    /// Platform tag a freshly built (unrepaired) wheel carries: `linux_aarch64`,
    /// `macosx_11_0_arm64`.
    pub fn platform_tag(&self) -> String {
        self.fill(&self.data.platform_tag, "")
    }

    /// Value of `_PYTHON_HOST_PLATFORM`, i.e. what `sysconfig.get_platform()` reports.
    pub fn python_host_platform(&self) -> String {
        self.fill(&self.data.python_host_platform, "")
    }

    /// CPython's `MULTIARCH` on the target for `python` (`cp311`).
    pub fn multiarch(&self, python: PythonTag) -> &str {
        match &self.data.multiarch_before {
            Some(before) if python.minor() < before.python.minor() => &before.multiarch,
            _ => &self.data.multiarch,
        }
    }

    /// `os.uname().release` of the target's oldest supported OS, where it says something
    /// about the target: macOS 11 and later are Darwin `major + 9` (11.0 → `20.0.0`), 10.x
    /// is Darwin `x + 4` (10.13 → `17.0.0`). For
    /// Linux the kernel release says nothing about the wheel, so `None` (the host's stays).
    pub fn kernel_release(&self) -> Option<String> {
        match self.data.platform {
            Platform::Macos if self.os_version.major == 10 => {
                Some(format!("{}.0.0", self.os_version.minor + 4))
            }
            Platform::Macos => Some(format!("{}.0.0", self.os_version.major + 9)),
            Platform::Linux => None,
        }
    }

    /// `EXT_SUFFIX` for `python` (`cp311`, `cp313t`): `.cpython-313t-aarch64-linux-gnu.so`.
    pub fn ext_suffix(&self, python: PythonTag) -> String {
        self.fill_python(&self.data.ext_suffix, python)
    }

    pub fn soabi(&self, python: PythonTag) -> String {
        self.fill_python(&self.data.soabi, python)
    }

    /// Module name of the target's `_sysconfigdata` for `python`.
    pub fn sysconfigdata_name(&self, python: PythonTag) -> String {
        self.fill_python(&self.data.sysconfigdata_name, python)
    }

    /// A name template filled for one CPython: `{py}` (`311`, `313t`), `{abiflags}` and
    /// `{multiarch}`.
    fn fill_python(&self, template: &str, python: PythonTag) -> String {
        let abiflags = python.abiflags();
        let py = format!("3{}{abiflags}", python.minor());
        self.fill(template, &py)
            .replace("{abiflags}", abiflags)
            .replace("{multiarch}", self.multiarch(python))
    }

    /// ELF `e_machine` of the target (0 for Mach-O targets).
    pub fn elf_machine(&self) -> u16 {
        self.linux_arch().map_or(0, LinuxArch::elf_machine)
    }

    /// The platform tags a target-arch wheel may carry to be usable by what we build:
    /// `manylinux_2_17_aarch64` ... up to the target's glibc, or `musllinux_1_1_x86_64` ...
    /// up to its musl. Empty for macOS.
    pub fn compatible_linux_platforms(&self) -> Vec<String> {
        self.linux_platforms_through(self.os_version.minor)
    }

    /// The platform tags a wheel of the target's libraries can load with (macOS: its own
    /// tag; pip widens neither a manylinux tag to older glibc nor a musllinux one to older
    /// musl, so every one the target's C library can load).
    pub fn compatible_platforms(&self) -> Vec<String> {
        if self.is_macos() {
            vec![self.platform_tag()]
        } else {
            self.compatible_linux_platforms()
        }
    }

    /// The platform tags of every wheel of the target's architecture and C library, for
    /// whatever glibc or musl it was built: what carries headers, which do not depend on
    /// the C library's version (glibc through 2.45, musl through 1.9).
    pub fn every_platform_of_its_arch(&self) -> Vec<String> {
        if self.is_macos() {
            return vec![self.platform_tag()];
        }
        let newest = match self.data.libc {
            Some(Libc::Musl) => 9,
            _ => 45,
        };
        self.linux_platforms_through(self.os_version.minor.max(newest))
    }

    fn linux_platforms_through(&self, newest_minor: u32) -> Vec<String> {
        let arch = &self.data.arch;
        match self.data.libc {
            Some(Libc::Glibc) if self.os_version.major == 2 => {
                let mut platforms: Vec<String> = (17..=newest_minor)
                    .map(|minor| format!("manylinux_2_{minor}_{arch}"))
                    .collect();
                platforms.push(format!("manylinux2014_{arch}"));
                platforms
            }
            // PEP 656's first tag is musllinux_1_1.
            Some(Libc::Musl) if self.os_version.major == 1 => (1..=newest_minor)
                .map(|minor| format!("musllinux_1_{minor}_{arch}"))
                .collect(),
            _ => Vec::new(),
        }
    }

    fn fill(&self, template: &str, py_abi: &str) -> String {
        let version = self.os_version.to_string();
        let version_underscored = format!("{}_{}", self.os_version.major, self.os_version.minor);
        template
            .replace("{version_}", &version_underscored)
            .replace("{version}", &version)
            .replace("{py}", py_abi)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.data.libc {
            Some(libc) => write!(f, "{} ({} {})", self.data.id, libc.name(), self.os_version),
            None => write!(f, "{} (macOS {})", self.data.id, self.os_version),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn py(tag: &str) -> PythonTag {
        PythonTag::parse(tag).unwrap()
    }

    /// Every Linux architecture has a manylinux and a musllinux target, which a requirement
    /// built for a test or for its headers is built as.
    #[test]
    fn each_linux_architecture_has_a_target_of_each_c_library() {
        for arch in LinuxArch::ALL {
            let glibc = Target::linux(arch, Libc::Glibc).expect("a glibc target");
            let musl = Target::linux(arch, Libc::Musl).expect("a musl target");
            assert_eq!(glibc.id(), format!("linux-{}", arch.machine()));
            assert_eq!(musl.id(), format!("musllinux-{}", arch.machine()));
            assert_eq!(musl.linux_arch(), Some(arch));
            assert_eq!(musl.libc(), Some(Libc::Musl));
        }
    }

    #[test]
    fn bundled_config_parses() {
        let ids: Vec<&str> = config().target.iter().map(|t| t.id.as_str()).collect();
        for id in [
            "linux-aarch64",
            "linux-ppc64le",
            "linux-x86_64",
            "linux-s390x",
            "linux-i686",
            "linux-armv7l",
            "linux-riscv64",
            "musllinux-x86_64",
            "musllinux-aarch64",
            "musllinux-ppc64le",
            "musllinux-s390x",
            "musllinux-i686",
            "musllinux-armv7l",
            "musllinux-riscv64",
            "macos-arm64",
            "macos-x86_64",
            "macos-universal2",
        ] {
            assert!(ids.contains(&id), "{id} missing from {ids:?}");
        }
        for data in targets() {
            for id in &data.fuses {
                let slice = Target::parse(id).unwrap();
                assert!(
                    slice.data().fuses.is_empty(),
                    "{} fuses a fused target",
                    data.id
                );
                assert_eq!(slice.platform(), data.platform);
            }
        }
    }

    #[test]
    fn every_linux_target_is_a_known_architecture_with_its_elf_machine() {
        for data in targets().iter().filter(|t| t.platform == Platform::Linux) {
            let arch = LinuxArch::parse(&data.arch)
                .unwrap_or_else(|| panic!("{}: `{}` is no LinuxArch", data.id, data.arch));
            assert_eq!(arch.machine(), data.arch, "{}", data.id);
            assert_eq!(data.platform_tag, format!("linux_{}", data.arch));
            let libc = data
                .libc
                .unwrap_or_else(|| panic!("{}: a Linux target names its libc", data.id));
            assert_eq!(
                data.identifier_platform(),
                format!("{}_{}", libc.identifier_prefix(), data.arch)
            );
            assert!(
                data.zig_triple
                    .contains(&format!("-linux-{}", libc_abi(libc))),
                "{}: zig must link {}: {}",
                data.id,
                libc.name(),
                data.zig_triple
            );
        }
        for data in targets().iter().filter(|t| t.platform == Platform::Macos) {
            assert_eq!(data.libc, None, "{}", data.id);
        }
    }

    /// Every `LinuxArch` has one `[[linux_arch]]` row and every row is a `LinuxArch`; the
    /// ELF facts name the architecture back, and a Debian tree's folder of it is its GNU
    /// multiarch name.
    #[test]
    fn every_linux_arch_has_one_row_of_facts() {
        let rows = &config().linux_arch;
        assert_eq!(rows.len(), LinuxArch::ALL.len());
        for arch in LinuxArch::ALL {
            let data = arch.data();
            assert_eq!(
                rows.iter().filter(|row| row.name == data.name).count(),
                1,
                "{arch}"
            );
            assert!(matches!(data.elf_class, 32 | 64), "{arch}");
            assert!(matches!(data.endian.as_str(), "little" | "big"), "{arch}");
            assert_eq!(
                LinuxArch::of_elf(arch.elf_machine(), !arch.is_32_bit(), !arch.big_endian()),
                Some(arch)
            );
            assert_eq!(LinuxArch::parse(arch.debian()), Some(arch));
            assert_eq!(LinuxArch::from_machine(arch.machine()), Some(arch));
            assert!(!arch.debian_multiarch().is_empty(), "{arch}");
            assert!(!arch.glibc_loaders().is_empty(), "{arch}");
        }
        assert_eq!(LinuxArch::Riscv64.debian_multiarch(), ["riscv64-linux-gnu"]);
        assert_eq!(LinuxArch::of_elf(21, true, false), None, "big-endian POWER");
        assert_eq!(LinuxArch::from_rust_arch("powerpc64", false), None);
        assert_eq!(LinuxArch::parse("x86"), Some(LinuxArch::I686));
        assert_eq!(LinuxArch::parse(" PowerPC64LE"), Some(LinuxArch::Ppc64le));
    }

    /// `./configure --host=$CROSSWHEEL_HOST` hands the GNU triple to config.sub and to the
    /// project's own checks (libffi's configure.host knows `i?86-*-linux*`, not zig's `x86`):
    /// its CPU is the GNU name of the architecture, and its system names the C library.
    #[test]
    fn every_linux_gnu_triple_names_the_cpu_and_libc_as_autoconf_does() {
        for data in targets().iter().filter(|t| t.platform == Platform::Linux) {
            let gnu_cpu = match data.arch.as_str() {
                "ppc64le" => "powerpc64le",
                "armv7l" => "arm",
                arch => arch,
            };
            let libc = data.libc.expect("a Linux target names its libc");
            assert!(
                data.gnu_triple
                    .starts_with(&format!("{gnu_cpu}-linux-{}", libc_abi(libc))),
                "{}: {}",
                data.id,
                data.gnu_triple
            );
            assert!(
                data.host_gnu_type.starts_with(&format!("{gnu_cpu}-"))
                    && data
                        .host_gnu_type
                        .contains(&format!("-linux-{}", libc_abi(libc))),
                "{}: {}",
                data.id,
                data.host_gnu_type
            );
        }
    }

    /// The ABI part of a zig triple that links the C library (`-linux-gnueabihf` is glibc).
    fn libc_abi(libc: Libc) -> &'static str {
        match libc {
            Libc::Glibc => "gnu",
            Libc::Musl => "musl",
        }
    }

    #[test]
    fn musllinux_targets_link_zigs_musl_and_name_it_from_cpython_3_11_on() {
        let target = Target::parse("musllinux-x86_64").unwrap();
        assert_eq!(target.libc(), Some(Libc::Musl));
        assert_eq!(target.zig_triple(), "x86_64-linux-musl");
        assert_eq!(target.to_string(), "musllinux-x86_64 (musl 1.2)");
        assert_eq!(target.data().identifier_platform(), "musllinux_x86_64");
        assert_eq!(target.platform_tag(), "linux_x86_64");
        // What markupsafe 3.0.3's own musllinux_1_2_x86_64 wheels hold.
        assert_eq!(
            target.ext_suffix(py("cp310")),
            ".cpython-310-x86_64-linux-gnu.so"
        );
        assert_eq!(
            target.ext_suffix(py("cp311")),
            ".cpython-311-x86_64-linux-musl.so"
        );
        assert_eq!(target.soabi(py("cp314t")), "cpython-314t-x86_64-linux-musl");
        assert_eq!(
            target.sysconfigdata_name(py("cp313t")),
            "_sysconfigdata_t_linux_x86_64-linux-musl"
        );
        assert_eq!(
            target.compatible_linux_platforms(),
            ["musllinux_1_1_x86_64", "musllinux_1_2_x86_64"]
        );
        assert_eq!(
            Target::parse("aarch64").unwrap().id(),
            "linux-aarch64",
            "a bare architecture still parses to the manylinux target"
        );
        assert_eq!(
            Target::parse("linux-musl-aarch64").unwrap().zig_triple(),
            "aarch64-linux-musl"
        );
    }

    /// The extension suffixes musllinux_1_2 wheels of the package index carry for cp311
    /// (charset-normalizer 3.5.3, msgpack 1.1.1), and 3.10's glibc-like spelling.
    #[test]
    fn every_musl_target_names_itself_as_cpython_does_on_musl() {
        for (id, cp311, cp310) in [
            ("musllinux-i686", "i386-linux-musl", "i386-linux-gnu"),
            (
                "musllinux-armv7l",
                "arm-linux-musleabihf",
                "arm-linux-gnueabihf",
            ),
            (
                "musllinux-ppc64le",
                "powerpc64le-linux-musl",
                "powerpc64le-linux-gnu",
            ),
            ("musllinux-s390x", "s390x-linux-musl", "s390x-linux-gnu"),
            (
                "musllinux-riscv64",
                "riscv64-linux-musl",
                "riscv64-linux-gnu",
            ),
        ] {
            let target = Target::parse(id).unwrap();
            assert_eq!(
                target.ext_suffix(py("cp311")),
                format!(".cpython-311-{cp311}.so")
            );
            assert_eq!(
                target.ext_suffix(py("cp310")),
                format!(".cpython-310-{cp310}.so")
            );
        }
        // musl 1.2's time_t is 64-bit on the 32-bit architectures too.
        for id in ["musllinux-i686", "musllinux-armv7l"] {
            let target = Target::parse(id).unwrap();
            assert_eq!(target.data().pyconfig_define["SIZEOF_TIME_T"], "8", "{id}");
        }
    }

    #[test]
    fn linux_x86_64_builds_against_manylinux2014s_glibc() {
        let target = Target::parse("manylinux-x86_64").unwrap();
        assert_eq!(target.zig_triple(), "x86_64-linux-gnu.2.17");
        assert_eq!(
            target.ext_suffix(py("cp311")),
            ".cpython-311-x86_64-linux-gnu.so"
        );
        assert_eq!(
            target.sysconfigdata_name(py("cp311")),
            "_sysconfigdata__linux_x86_64-linux-gnu"
        );
        assert_eq!(target.linux_arch(), Some(LinuxArch::X86_64));
        assert_eq!(target.compatible_linux_platforms().len(), 2);
    }

    #[test]
    fn thirty_two_bit_targets_are_elfclass32_with_ilp32_headers() {
        for (name, qemu, ident) in [
            ("linux-i686", "i386", [1, 1]),
            ("linux-armv7l", "arm", [1, 1]),
        ] {
            let target = Target::parse(name).unwrap();
            let arch = target.linux_arch().unwrap();
            assert_eq!(arch.qemu_name(), qemu);
            assert_eq!(arch.elf_ident(), ident);
            assert_eq!(target.data().pyconfig_define["SIZEOF_VOID_P"], "4");
        }
        assert_eq!(
            Target::parse("i686").unwrap().zig_triple(),
            "x86-linux-gnu.2.17"
        );
        assert_eq!(
            Target::parse("armv7l").unwrap().zig_triple(),
            "arm-linux-gnueabihf.2.17"
        );
        assert_eq!(LinuxArch::Riscv64.elf_ident(), [2, 1]);
    }

    #[test]
    fn riscv64_refuses_a_glibc_below_its_floor() {
        let target = Target::parse("linux-riscv64").unwrap();
        assert_eq!(target.zig_triple(), "riscv64-linux-gnu.2.31");
        assert!(
            target
                .with_os_version(OsVersion::new(2, 27))
                .unwrap_err()
                .to_string()
                .contains("lowest supported is 2.31")
        );
    }

    #[test]
    fn macos_x86_64_starts_at_cibuildwheels_floor() {
        let target = Target::parse("macosx_10_13_x86_64").unwrap();
        assert_eq!(target.zig_triple(), "x86_64-macos.10.13");
        assert_eq!(target.platform_tag(), "macosx_10_13_x86_64");
        assert_eq!(target.python_host_platform(), "macosx-10.13-x86_64");
        assert_eq!(target.kernel_release().as_deref(), Some("17.0.0"));
        assert_eq!(macos_floor(), OsVersion::new(10, 13));
    }

    #[test]
    fn universal2_is_built_as_an_x86_64_and_an_arm64_slice() {
        let universal2 = Target::parse("macos-universal2").unwrap();
        assert_eq!(universal2.platform_tag(), "macosx_10_13_universal2");
        let slices = universal2.fused_slices();
        let named: Vec<String> = slices.iter().map(ToString::to_string).collect();
        assert_eq!(
            named,
            ["macos-x86_64 (macOS 10.13)", "macos-arm64 (macOS 11.0)"]
        );
        let later = universal2.with_os_version(OsVersion::new(12, 0)).unwrap();
        assert!(
            later
                .fused_slices()
                .iter()
                .all(|slice| slice.os_version() == OsVersion::new(12, 0))
        );
        assert!(
            Target::parse("macos-arm64")
                .unwrap()
                .fused_slices()
                .is_empty()
        );
    }

    #[test]
    fn linux_aarch64_facts_match_debian_cpython() {
        let target = Target::parse("manylinux-aarch64").unwrap();
        assert_eq!(target.zig_triple(), "aarch64-linux-gnu.2.17");
        assert_eq!(
            target.ext_suffix(py("cp311")),
            ".cpython-311-aarch64-linux-gnu.so"
        );
        assert_eq!(
            target.sysconfigdata_name(py("cp311")),
            "_sysconfigdata__linux_aarch64-linux-gnu"
        );
        assert_eq!(target.python_host_platform(), "linux-aarch64");
        assert_eq!(target.platform_tag(), "linux_aarch64");
    }

    #[test]
    fn ppc64le_uses_lowest_glibc_zig_accepts() {
        let target = Target::parse("linux-ppc64le").unwrap();
        assert_eq!(target.zig_triple(), "powerpc64le-linux-gnu.2.19");
        assert_eq!(
            target.compatible_linux_platforms(),
            [
                "manylinux_2_17_ppc64le",
                "manylinux_2_18_ppc64le",
                "manylinux_2_19_ppc64le",
                "manylinux2014_ppc64le"
            ]
        );
    }

    #[test]
    fn macos_deployment_target_goes_into_triple_and_tag() {
        let target = Target::parse("macosx_11_0_arm64")
            .unwrap()
            .with_os_version("12.3".parse().unwrap())
            .unwrap();
        assert_eq!(target.zig_triple(), "aarch64-macos.12.3");
        assert_eq!(target.platform_tag(), "macosx_12_3_arm64");
        assert_eq!(target.python_host_platform(), "macosx-12.3-arm64");
        assert_eq!(target.ext_suffix(py("cp313t")), ".cpython-313t-darwin.so");
    }

    #[test]
    fn refuses_macos_below_arm64_floor() {
        let target = Target::parse("macos-arm64").unwrap();
        let err = target
            .with_os_version("10.15".parse().unwrap())
            .unwrap_err();
        assert!(
            err.to_string().contains("lowest supported is 11.0"),
            "{err}"
        );
    }

    #[test]
    fn os_versions_read_options_and_releases() {
        let version = |text: &str| OsVersion::parse(text).map(|v| v.to_string());
        assert_eq!(version("12").as_deref(), Some("12.0"));
        assert_eq!(version("14.2").as_deref(), Some("14.2"));
        assert_eq!(version("10.15.4"), None, "options take MAJOR.MINOR");
        assert_eq!(version("eleven"), None);
        let release = |text: &str| OsVersion::parse_release(text).map(|v| v.to_string());
        assert_eq!(release("2.36.1").as_deref(), Some("2.36"));
        assert_eq!(release("10.15.4").as_deref(), Some("10.15"));
        assert_eq!(release("11").as_deref(), Some("11.0"));
        assert_eq!(release("2.36.x"), None);
        assert_eq!(release("1.2.3.4"), None);
        assert_eq!(release(""), None);
        assert!(OsVersion::new(10, 15) < OsVersion::new(11, 0));
    }

    #[test]
    fn unknown_target_lists_known_ones() {
        let err = Target::parse("windows-arm64").unwrap_err().to_string();
        assert!(
            err.contains("linux-aarch64") && err.contains("macos-arm64"),
            "{err}"
        );
    }
}
