//! The test stage provisions on a host that is not Debian 12: GitHub's `ubuntu-latest`
//! (Ubuntu 24.04), whose own archive has neither Debian's suites nor arm64/ppc64el
//! packages.
//!
//! In a private mount namespace (`unshare --mount`, root) the machine looks like Ubuntu
//! 24.04: a noble `/etc/os-release`, only an unreachable Ubuntu source in `/etc/apt`, no
//! Debian keyring in `/usr/share/keyrings` or `/etc/apt/trusted.gpg.d`, no qemu-user on
//! PATH (GitHub's runners have none). With a fresh
//! cache, `crosswheel build examples/blasdot` must fetch the target CPythons from
//! Debian's archive with Debian's keys (config/debian/) and pass the example's tests
//! under qemu on both Linux targets. Needs root, unshare, network access.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::crosswheel_bin;
use crosswheel::stages::toolchain::ensure_zig;
use crosswheel::support::host::Cache;

const OS_RELEASE: &str = "PRETTY_NAME=\"Ubuntu 24.04.3 LTS\"\nNAME=\"Ubuntu\"\nVERSION_ID=\"24.04\"\n\
    VERSION_CODENAME=noble\nID=ubuntu\nID_LIKE=debian\nUBUNTU_CODENAME=noble\n";
const UBUNTU_SOURCES: &str = "Types: deb\nURIs: http://ubuntu-mirror.invalid/ubuntu/\n\
    Suites: noble noble-updates\nComponents: main universe\n\
    Signed-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg\n";

/// Files and folders that replace the host's in the namespace.
pub(crate) struct UbuntuLook {
    dir: tempfile::TempDir,
}

impl UbuntuLook {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["sources", "keyrings", "trusted"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
        }
        std::fs::write(dir.path().join("os-release"), OS_RELEASE).unwrap();
        std::fs::write(dir.path().join("sources/ubuntu.sources"), UBUNTU_SOURCES).unwrap();
        std::fs::write(dir.path().join("keyrings/ubuntu-archive-keyring.gpg"), "").unwrap();
        UbuntuLook { dir }
    }

    /// A shell script that mounts the look over the host's files, then runs `command`.
    pub(crate) fn script(&self, command: &str) -> String {
        let at = |name: &str| self.dir.path().join(name).display().to_string();
        format!(
            "set -e\n\
             mount --bind '{}' /etc/os-release\n\
             mount --bind '{}' /etc/apt/sources.list.d\n\
             mount --bind '{}' /usr/share/keyrings\n\
             mount --bind '{}' /etc/apt/trusted.gpg.d\n\
             if [ -e /etc/apt/sources.list ]; then mount --bind /dev/null /etc/apt/sources.list; fi\n\
             for q in /usr/bin/qemu-aarch64 /usr/bin/qemu-ppc64le; do\n\
               for f in $q $q-static; do if [ -e $f ]; then mount --bind /dev/null $f; fi; done\n\
             done\n\
             grep -q noble /etc/os-release\n\
             ! ls /usr/share/keyrings | grep -qi debian\n\
             exec {command}\n",
            at("os-release"),
            at("sources"),
            at("keyrings"),
            at("trusted")
        )
    }
}

pub(crate) fn require_root_and_unshare() {
    let uid = Command::new("id").arg("-u").output().expect("run id -u");
    assert_eq!(
        String::from_utf8_lossy(&uid.stdout).trim(),
        "0",
        "this test makes a private mount namespace and needs root (run the suite as root)"
    );
    common::require_tool("unshare", "apt-get install util-linux");
}

/// zig from the usual cache, so the fresh cache of the test only has to fetch what the
/// test is about (the target trees).
pub(crate) fn zig() -> PathBuf {
    let cache = Cache::from_env().expect("a cache directory");
    let python = common::require_tool("python3", "apt-get install python3");
    ensure_zig(&cache, &python, false)
        .unwrap_or_else(|err| panic!("zig: {err}"))
        .exe
}

#[test]
#[ignore = "slow: a real build on an emulated Ubuntu host"]
fn an_ubuntu_host_with_a_fresh_cache_builds_and_tests_blasdot_on_both_linux_targets() {
    require_root_and_unshare();
    let look = UbuntuLook::new();
    let cache = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/blasdot");
    let command = format!(
        "'{}' build '{}' --output-dir '{}' --archs 'manylinux_aarch64 manylinux_ppc64le'",
        crosswheel_bin().display(),
        project.display(),
        out.path().display()
    );
    let output = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "bash", "-c"])
        .arg(look.script(&command))
        .env("CROSSWHEEL_CACHE", cache.path())
        .env("CROSSWHEEL_ZIG", zig())
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .expect("run unshare");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for identifier in ["cp311-manylinux_aarch64", "cp311-manylinux_ppc64le"] {
        let row = stdout
            .lines()
            .find(|line| line.starts_with(identifier))
            .unwrap_or_else(|| panic!("no summary row for {identifier}:\n{stdout}\n{stderr}"));
        assert!(row.contains("passed (emulated)"), "{row}");
    }
    assert!(
        cache.path().join("sysroots/arm64-py3.11").is_dir()
            && cache.path().join("sysroots/ppc64el-py3.11").is_dir(),
        "the target CPythons were not provisioned into the fresh cache"
    );
    let qemu_tree = std::fs::read_dir(cache.path().join("tools"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .starts_with("qemu-user-static-amd64-")
                && entry.path().is_dir()
        });
    assert!(qemu_tree, "qemu-user was not fetched into the fresh cache");
}
