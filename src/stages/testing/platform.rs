//! Where a wheel's tests can run: natively, under qemu-user, or — for macOS wheels on a
//! machine that is not a Mac of their architecture — nowhere, so that only a static load
//! check remains.

use std::fmt;

use crate::formats::wheel::PlatformTag;
use crate::target::{Libc, LinuxArch, Platform, Target};

use super::TestError;

/// The platform a wheel was built for, as far as running its tests is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestPlatform {
    Linux(LinuxArch),
    /// musl Linux (`musllinux_*`): tested on a musl CPython, never the host's glibc one.
    MuslLinux(LinuxArch),
    MacosArm64,
    MacosX86_64,
}

impl TestPlatform {
    /// The platform a build `target`'s wheels are tested as (universal2: its arm64 half,
    /// as for its tag). `None` for a target whose wheels no test runner serves.
    pub fn of_target(target: &Target) -> Option<Self> {
        if target.is_macos() {
            return match target.arch() {
                "arm64" | "universal2" => Some(Self::MacosArm64),
                "x86_64" => Some(Self::MacosX86_64),
                _ => None,
            };
        }
        let arch = target.linux_arch()?;
        Some(match target.libc() {
            Some(Libc::Musl) => Self::MuslLinux(arch),
            _ => Self::Linux(arch),
        })
    }

    /// From a wheel's platform tag: `manylinux_2_17_aarch64`, `manylinux2014_ppc64le`,
    /// `linux_x86_64`, `macosx_11_0_arm64`, `macosx_10_9_universal2` (which holds arm64),
    /// `macosx_10_13_x86_64`, `musllinux_1_2_aarch64`.
    pub fn of_platform_tag(tag: &PlatformTag) -> Option<Self> {
        if let Some((_, _, binary_format)) = tag.macos() {
            return match binary_format {
                "arm64" | "universal2" => Some(Self::MacosArm64),
                "x86_64" => Some(Self::MacosX86_64),
                _ => None,
            };
        }
        tag.musllinux_arch()
            .map(Self::MuslLinux)
            .or_else(|| tag.linux_arch().map(Self::Linux))
    }
}

impl fmt::Display for TestPlatform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Linux(arch) => write!(f, "linux {arch}"),
            Self::MuslLinux(arch) => write!(f, "musl linux {arch}"),
            Self::MacosArm64 => f.write_str("macOS arm64"),
            Self::MacosX86_64 => f.write_str("macOS x86_64"),
        }
    }
}

/// The machine crosswheel runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Host {
    /// `None` for an operating system crosswheel builds nothing for.
    pub os: Option<Platform>,
    /// Rust's name for the architecture (`x86_64`, `aarch64`, `powerpc64`).
    pub arch: &'static str,
    pub little_endian: bool,
}

impl Host {
    pub fn current() -> Self {
        let os = match std::env::consts::OS {
            "linux" => Some(Platform::Linux),
            "macos" => Some(Platform::Macos),
            _ => None,
        };
        Host {
            os,
            arch: std::env::consts::ARCH,
            little_endian: cfg!(target_endian = "little"),
        }
    }

    fn linux_arch(self) -> Option<LinuxArch> {
        LinuxArch::from_rust_arch(self.arch, self.little_endian)
    }
}

/// How the test stage treats one wheel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestPlan {
    /// A venv on the host's own CPython of the wheel's version.
    Native,
    /// A venv on the target's Debian CPython under qemu-user.
    Emulated(LinuxArch),
    /// Nothing here can execute the wheel: check statically what the loader would do.
    StaticLoadCheck,
}

/// Native when the host runs the wheel's platform, qemu-user for another Linux
/// architecture on a Linux host, and a static check for macOS wheels anywhere but on a
/// Mac of their architecture.
pub fn plan(platform: TestPlatform, host: Host) -> Result<TestPlan, TestError> {
    match (platform, host.os) {
        (TestPlatform::MacosArm64, Some(Platform::Macos)) if host.arch == "aarch64" => {
            Ok(TestPlan::Native)
        }
        (TestPlatform::MacosX86_64, Some(Platform::Macos)) if host.arch == "x86_64" => {
            Ok(TestPlan::Native)
        }
        (TestPlatform::MacosArm64 | TestPlatform::MacosX86_64, _) => Ok(TestPlan::StaticLoadCheck),
        (TestPlatform::Linux(arch), Some(Platform::Linux)) => match host.linux_arch() {
            Some(native) if native == arch => Ok(TestPlan::Native),
            Some(_) => Ok(TestPlan::Emulated(arch)),
            None => Err(TestError::UnsupportedHost { arch: host.arch }),
        },
        // The host's own CPython links glibc: a musl one runs under qemu even on the same
        // architecture.
        (TestPlatform::MuslLinux(arch), Some(Platform::Linux)) => match host.linux_arch() {
            Some(_) => Ok(TestPlan::Emulated(arch)),
            None => Err(TestError::UnsupportedHost { arch: host.arch }),
        },
        (TestPlatform::Linux(arch) | TestPlatform::MuslLinux(arch), _) => {
            Err(TestError::LinuxWheelOnForeignHost { arch })
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_build_targets_wheels_are_tested_as_its_platform() {
        let of = |id: &str| TestPlatform::of_target(&Target::parse(id).unwrap());
        assert_eq!(
            of("linux-aarch64"),
            Some(TestPlatform::Linux(LinuxArch::Aarch64))
        );
        assert_eq!(
            of("linux-riscv64"),
            Some(TestPlatform::Linux(LinuxArch::Riscv64))
        );
        assert_eq!(
            of("musllinux-x86_64"),
            Some(TestPlatform::MuslLinux(LinuxArch::X86_64))
        );
        assert_eq!(of("macos-arm64"), Some(TestPlatform::MacosArm64));
        assert_eq!(of("macos-x86_64"), Some(TestPlatform::MacosX86_64));
        // As its tag is tested: the arm64 half.
        assert_eq!(of("macos-universal2"), Some(TestPlatform::MacosArm64));
    }

    use super::*;

    const LINUX_X86_64: Host = Host {
        os: Some(Platform::Linux),
        arch: "x86_64",
        little_endian: true,
    };
    const LINUX_AARCH64: Host = Host {
        os: Some(Platform::Linux),
        arch: "aarch64",
        little_endian: true,
    };
    const MAC_ARM64: Host = Host {
        os: Some(Platform::Macos),
        arch: "aarch64",
        little_endian: true,
    };
    const MAC_X86_64: Host = Host {
        os: Some(Platform::Macos),
        arch: "x86_64",
        little_endian: true,
    };

    #[test]
    fn wheel_tags_name_their_test_platform() {
        let cases = [
            (
                "manylinux_2_17_aarch64",
                Some(TestPlatform::Linux(LinuxArch::Aarch64)),
            ),
            (
                "manylinux2014_ppc64le",
                Some(TestPlatform::Linux(LinuxArch::Ppc64le)),
            ),
            ("linux_x86_64", Some(TestPlatform::Linux(LinuxArch::X86_64))),
            (
                "musllinux_1_2_aarch64",
                Some(TestPlatform::MuslLinux(LinuxArch::Aarch64)),
            ),
            (
                "musllinux_1_1_x86_64",
                Some(TestPlatform::MuslLinux(LinuxArch::X86_64)),
            ),
            ("musllinux_1_2", None),
            ("macosx_11_0_arm64", Some(TestPlatform::MacosArm64)),
            ("macosx_10_9_universal2", Some(TestPlatform::MacosArm64)),
            ("macosx_10_13_x86_64", Some(TestPlatform::MacosX86_64)),
            ("win_arm64", None),
        ];
        for (tag, expected) in cases {
            assert_eq!(
                TestPlatform::of_platform_tag(&PlatformTag::parse(tag)),
                expected,
                "{tag}"
            );
        }
    }

    #[test]
    fn an_arm64_mac_runs_macos_wheels_natively() {
        assert_eq!(
            plan(TestPlatform::MacosArm64, MAC_ARM64).unwrap(),
            TestPlan::Native
        );
    }

    #[test]
    fn an_intel_mac_runs_x86_64_wheels_natively_and_checks_the_rest() {
        assert_eq!(
            plan(TestPlatform::MacosX86_64, MAC_X86_64).unwrap(),
            TestPlan::Native
        );
        for host in [LINUX_X86_64, MAC_ARM64] {
            assert_eq!(
                plan(TestPlatform::MacosX86_64, host).unwrap(),
                TestPlan::StaticLoadCheck,
                "{host:?}"
            );
        }
    }

    #[test]
    fn macos_wheels_are_only_checked_statically_elsewhere() {
        for host in [LINUX_X86_64, LINUX_AARCH64, MAC_X86_64] {
            assert_eq!(
                plan(TestPlatform::MacosArm64, host).unwrap(),
                TestPlan::StaticLoadCheck,
                "{host:?}"
            );
        }
    }

    #[test]
    fn linux_hosts_run_their_own_architecture_natively_and_emulate_the_others() {
        let aarch64 = TestPlatform::Linux(LinuxArch::Aarch64);
        let ppc64le = TestPlatform::Linux(LinuxArch::Ppc64le);
        assert_eq!(
            plan(aarch64, LINUX_X86_64).unwrap(),
            TestPlan::Emulated(LinuxArch::Aarch64)
        );
        assert_eq!(
            plan(ppc64le, LINUX_X86_64).unwrap(),
            TestPlan::Emulated(LinuxArch::Ppc64le)
        );
        assert_eq!(plan(aarch64, LINUX_AARCH64).unwrap(), TestPlan::Native);
        assert_eq!(
            plan(TestPlatform::Linux(LinuxArch::X86_64), LINUX_X86_64).unwrap(),
            TestPlan::Native
        );
    }

    #[test]
    fn linux_wheels_on_a_mac_or_an_unknown_cpu_are_errors_not_silent_skips() {
        let aarch64 = TestPlatform::Linux(LinuxArch::Aarch64);
        let on_mac = plan(aarch64, MAC_ARM64).unwrap_err().to_string();
        assert!(on_mac.contains("Linux host"), "{on_mac}");
        let loongarch = Host {
            os: Some(Platform::Linux),
            arch: "loongarch64",
            little_endian: true,
        };
        let on_loongarch = plan(aarch64, loongarch).unwrap_err().to_string();
        assert!(on_loongarch.contains("loongarch64"), "{on_loongarch}");
    }

    #[test]
    fn the_current_host_is_described_consistently() {
        let host = Host::current();
        if cfg!(target_os = "linux") {
            assert_eq!(host.os, Some(Platform::Linux));
            assert_eq!(host.linux_arch(), LinuxArch::host());
        }
    }
}
