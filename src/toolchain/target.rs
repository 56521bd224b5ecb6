//! The platforms crosswheel builds for, with the facts each stage needs about them.
//!
//! The per-target data lives in `config/targets.toml`; this module only parses it and fills
//! the templates (`{py}`, `{version}`) for one target and one CPython ABI.

use std::fmt;
use std::sync::OnceLock;

use serde::Deserialize;

const TARGETS_TOML: &str = include_str!("../../config/targets.toml");

#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("unknown target `{name}`: use one of {known}")]
    Unknown { name: String, known: String },
    #[error(
        "invalid OS version `{version}` for {target}: expected MAJOR.MINOR such as `{example}`"
    )]
    BadVersion {
        target: String,
        version: String,
        example: String,
    },
    #[error("{target} cannot target OS version {version}: the lowest supported is {min}")]
    BelowFloor {
        target: String,
        version: String,
        min: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Os {
    Linux,
    Macos,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct TargetData {
    pub id: String,
    pub aliases: Vec<String>,
    pub arch: String,
    pub os: Os,
    pub min_os_version: String,
    pub default_os_version: String,
    pub zig_triple: String,
    pub gnu_triple: String,
    pub host_gnu_type: String,
    pub python_host_platform: String,
    pub platform_tag: String,
    pub multiarch: String,
    pub machdep: String,
    pub sysconfigdata_name: String,
    pub ext_suffix: String,
    pub soabi: String,
    pub meson_system: String,
    pub meson_cpu_family: String,
    pub meson_cpu: String,
    pub cmake_system_name: String,
    pub cmake_system_processor: String,
    pub elf_machine: u16,
    pub zig_extra_cflags: Vec<String>,
    /// `pyconfig.h` macros to leave undefined / to define for this target.
    pub pyconfig_undef: Vec<String>,
    pub pyconfig_define: std::collections::BTreeMap<String, String>,
    pub gcc_packages: Vec<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct HostCflags {
    pub drop_exact: Vec<String>,
    pub drop_prefixes: Vec<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Tools {
    pub ziglang: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct TargetsConfig {
    pub target: Vec<TargetData>,
    pub host_cflags: HostCflags,
    pub tools: Tools,
}

pub(crate) fn config() -> &'static TargetsConfig {
    static CONFIG: OnceLock<TargetsConfig> = OnceLock::new();
    CONFIG.get_or_init(|| match toml::from_str(TARGETS_TOML) {
        Ok(config) => config,
        // The file is compiled in; the unit test `bundled_config_parses` guards it.
        Err(err) => panic!("config/targets.toml is invalid: {err}"),
    })
}

/// An OS version as `MAJOR.MINOR`: glibc for Linux, the deployment target for macOS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct OsVersion {
    pub major: u32,
    pub minor: u32,
}

impl OsVersion {
    pub fn parse(text: &str) -> Option<Self> {
        let (major, minor) = text.split_once('.').unwrap_or((text, "0"));
        Some(Self {
            major: major.parse().ok()?,
            minor: minor.parse().ok()?,
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

    fn with_default_version(data: &'static TargetData) -> Target {
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
    pub fn with_os_version(&self, version: &str) -> Result<Target, TargetError> {
        let parsed = OsVersion::parse(version).ok_or_else(|| TargetError::BadVersion {
            target: self.id().to_string(),
            version: version.to_string(),
            example: self.data.default_os_version.clone(),
        })?;
        let floor = OsVersion::parse(&self.data.min_os_version).unwrap_or_else(|| {
            panic!(
                "config/targets.toml: bad min_os_version for {}",
                self.data.id
            )
        });
        if parsed < floor {
            return Err(TargetError::BelowFloor {
                target: self.id().to_string(),
                version: parsed.to_string(),
                min: floor.to_string(),
            });
        }
        Ok(Target {
            data: self.data,
            os_version: parsed,
        })
    }

    pub(crate) fn data(&self) -> &'static TargetData {
        self.data
    }

    /// Stable identifier such as `linux-aarch64`.
    pub fn id(&self) -> &str {
        &self.data.id
    }

    pub fn os(&self) -> Os {
        self.data.os
    }

    /// Architecture as the platform names it: `aarch64`, `ppc64le`, `arm64`.
    pub fn arch(&self) -> &str {
        &self.data.arch
    }

    pub fn os_version(&self) -> OsVersion {
        self.os_version
    }

    pub fn is_macos(&self) -> bool {
        self.data.os == Os::Macos
    }

    /// The `-target` zig understands, OS version included.
    pub fn zig_triple(&self) -> String {
        self.fill(&self.data.zig_triple, "")
    }

    /// The GNU triple system cross compilers are prefixed with.
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

    pub fn multiarch(&self) -> &str {
        &self.data.multiarch
    }

    /// `EXT_SUFFIX` for a CPython ABI name like `311` or `313t`.
    pub fn ext_suffix(&self, py_abi: &str) -> String {
        self.fill(&self.data.ext_suffix, py_abi)
    }

    pub fn soabi(&self, py_abi: &str) -> String {
        self.fill(&self.data.soabi, py_abi)
    }

    /// Module name of the target's `_sysconfigdata` for the given ABI flags (`""`, `"t"`).
    pub fn sysconfigdata_name(&self, abiflags: &str) -> String {
        self.data.sysconfigdata_name.replace("{abiflags}", abiflags)
    }

    /// ELF `e_machine` of the target (0 for Mach-O targets).
    pub fn elf_machine(&self) -> u16 {
        self.data.elf_machine
    }

    /// `manylinux_2_17_aarch64` ... up to the target's glibc: the platforms a target-arch
    /// wheel may carry to be usable by what we build. Empty for macOS.
    pub fn compatible_manylinux_platforms(&self) -> Vec<String> {
        if self.is_macos() || self.os_version.major != 2 {
            return Vec::new();
        }
        let mut platforms: Vec<String> = (17..=self.os_version.minor)
            .map(|minor| format!("manylinux_2_{minor}_{}", self.data.arch))
            .collect();
        platforms.push(format!("manylinux2014_{}", self.data.arch));
        platforms
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
        if self.is_macos() {
            write!(f, "{} (macOS {})", self.data.id, self.os_version)
        } else {
            write!(f, "{} (glibc {})", self.data.id, self.os_version)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_config_parses() {
        assert_eq!(config().target.len(), 3);
    }

    #[test]
    fn linux_aarch64_facts_match_debian_cpython() {
        let target = Target::parse("manylinux-aarch64").unwrap();
        assert_eq!(target.zig_triple(), "aarch64-linux-gnu.2.17");
        assert_eq!(
            target.ext_suffix("311"),
            ".cpython-311-aarch64-linux-gnu.so"
        );
        assert_eq!(
            target.sysconfigdata_name(""),
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
            target.compatible_manylinux_platforms(),
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
            .with_os_version("12.3")
            .unwrap();
        assert_eq!(target.zig_triple(), "aarch64-macos.12.3");
        assert_eq!(target.platform_tag(), "macosx_12_3_arm64");
        assert_eq!(target.python_host_platform(), "macosx-12.3-arm64");
        assert_eq!(target.ext_suffix("313t"), ".cpython-313t-darwin.so");
    }

    #[test]
    fn refuses_macos_below_arm64_floor() {
        let target = Target::parse("macos-arm64").unwrap();
        let err = target.with_os_version("10.15").unwrap_err();
        assert!(
            err.to_string().contains("lowest supported is 11.0"),
            "{err}"
        );
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
