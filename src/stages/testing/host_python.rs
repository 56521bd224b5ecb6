//! The host's own CPython for native test runs: where it is and what it runs on.

use std::path::PathBuf;
use std::process::Command;

use crate::python_tag::PythonTag;
use crate::target::OsVersion;

use super::venv::PipPlatform;
use super::{TestError, TestPlatform};

pub(crate) struct HostPython {
    name: String,
    pub executable: PathBuf,
    pub full_version: String,
    /// `platform.libc_ver()`: empty on macOS.
    libc_version: String,
    /// `platform.mac_ver()`: empty on Linux.
    macos_version: String,
}

impl HostPython {
    pub fn find(python: PythonTag) -> Result<Self, TestError> {
        let name = format!("python{}", python.interpreter_version());
        let probe = "import os, platform, sys\n\
                     print(os.path.realpath(sys.executable))\n\
                     print(platform.python_version())\n\
                     print(platform.libc_ver()[1])\n\
                     print(platform.mac_ver()[0])";
        let missing = |detail: String| TestError::NoHostPython {
            name: name.clone(),
            detail,
        };
        // The interpreter the build stage would use for this version (PATH, uv, pyenv).
        let executable = crate::support::host::BuildPython::find(python)
            .map_err(|err| missing(err.to_string()))?
            .executable;
        let output = Command::new(&executable)
            .args(["-c", probe])
            .output()
            .map_err(|err| missing(err.to_string()))?;
        if !output.status.success() {
            return Err(missing(
                String::from_utf8_lossy(&output.stderr).trim().to_string(),
            ));
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        let mut lines = stdout.lines();
        let (Some(executable), Some(full_version), Some(libc), Some(macos)) =
            (lines.next(), lines.next(), lines.next(), lines.next())
        else {
            return Err(missing(format!("unexpected answer `{stdout}`")));
        };
        Ok(HostPython {
            executable: executable.into(),
            full_version: full_version.to_string(),
            libc_version: libc.to_string(),
            macos_version: macos.to_string(),
            name,
        })
    }

    /// What pip may install for this interpreter, which runs `platform` natively.
    pub fn pip_platform(&self, platform: TestPlatform) -> Result<PipPlatform, TestError> {
        let unreadable = |what: &str, answer: &str| TestError::NoHostPython {
            name: self.name.clone(),
            detail: format!("no {what} version in `{answer}`"),
        };
        match platform {
            TestPlatform::Linux(arch) => OsVersion::parse_release(&self.libc_version)
                .map(|glibc| PipPlatform::Manylinux { arch, glibc })
                .ok_or_else(|| unreadable("glibc", &self.libc_version)),
            // The host's CPython is a glibc one; musl wheels run on a musl CPython only.
            TestPlatform::MuslLinux(arch) => Err(TestError::NoMuslPython { arch }),
            TestPlatform::MacosArm64 => OsVersion::parse_release(&self.macos_version)
                .map(|macos| PipPlatform::MacosArm64 { major: macos.major })
                .ok_or_else(|| unreadable("macOS", &self.macos_version)),
            TestPlatform::MacosX86_64 => OsVersion::parse_release(&self.macos_version)
                .map(|version| PipPlatform::MacosX86_64 { version })
                .ok_or_else(|| unreadable("macOS", &self.macos_version)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::sysroot::LinuxArch;

    #[test]
    fn a_host_python_names_its_native_platform() {
        let mac = HostPython {
            name: "python3.11".into(),
            executable: "/usr/local/bin/python3.11".into(),
            full_version: "3.11.9".into(),
            libc_version: String::new(),
            macos_version: "14.5".into(),
        };
        assert_eq!(
            mac.pip_platform(TestPlatform::MacosArm64).unwrap(),
            PipPlatform::MacosArm64 { major: 14 }
        );
        let err = mac
            .pip_platform(TestPlatform::Linux(LinuxArch::Aarch64))
            .unwrap_err()
            .to_string();
        assert!(err.contains("no glibc version"), "{err}");
        let big_sur = HostPython {
            macos_version: "11".into(),
            ..mac
        };
        assert_eq!(
            big_sur.pip_platform(TestPlatform::MacosArm64).unwrap(),
            PipPlatform::MacosArm64 { major: 11 }
        );
    }
}
