//! Provisioning real target sysroots from the host's Debian mirrors (network on first
//! use of a fresh cache). Needs apt-get, dpkg-deb and qemu-user on a Debian host.

use crosswheel::support::host::Network;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crosswheel::stages::testing::{Emulator, find_qemu};
use crosswheel::support::host::Cache;
use crosswheel::support::sysroot::{self, LinuxArch, PackageTree, Sysroot, TreeSpec};

/// crosswheel's shared cache, so these tests reuse (or warm) what the tool itself uses.
/// The CPython bookworm ships.
fn py311() -> crosswheel::python_tag::PythonTag {
    crosswheel::python_tag::PythonTag::parse("cp311").unwrap()
}

fn cache_root() -> PathBuf {
    Cache::from_env()
        .unwrap_or_else(|err| panic!("{err}"))
        .root()
        .to_path_buf()
}

/// Two racing cold provisionings into a fresh cache, then a warm one; returns the
/// sysroot and prints the timings.
fn provision_cold_then_warm(arch: LinuxArch) -> (tempfile::TempDir, Sysroot) {
    let cache = tempfile::tempdir().expect("temporary cache");
    let cold_started = Instant::now();
    let racers: Vec<Sysroot> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| Sysroot::provision(cache.path(), arch, py311(), &Network::default()))
            })
            .collect();
        handles
            .into_iter()
            .map(
                |handle| match handle.join().expect("provisioning thread panicked") {
                    Ok(sysroot) => sysroot,
                    Err(err) => panic!("cold provisioning of {arch} failed: {err}"),
                },
            )
            .collect()
    });
    let cold = cold_started.elapsed();
    let downloads = racers
        .iter()
        .filter(|s| s.tree().is_some_and(|tree| tree.downloaded()))
        .count();
    assert_eq!(
        downloads, 1,
        "two processes sharing a cache must fetch the tree once"
    );

    let warm_started = Instant::now();
    let warm = Sysroot::provision(cache.path(), arch, py311(), &Network::default())
        .unwrap_or_else(|err| panic!("warm provisioning failed: {err}"));
    let warm_time = warm_started.elapsed();
    assert!(
        !warm.tree().expect("crosswheel's own tree").downloaded(),
        "the second run must download nothing"
    );
    assert_eq!(warm.root(), racers[0].root());
    eprintln!(
        "[timing] {arch} sysroot: cold {:.2} s ({} packages), warm {:.4} s",
        cold.as_secs_f64(),
        warm.tree()
            .expect("crosswheel's own tree")
            .manifest()
            .packages
            .len(),
        warm_time.as_secs_f64()
    );

    let leftovers: Vec<String> = std::fs::read_dir(cache.path().join("sysroots"))
        .expect("sysroots folder")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.starts_with('.'))
        .collect();
    assert!(
        leftovers.is_empty(),
        "lock or temporary folders left behind: {leftovers:?}"
    );
    (cache, warm)
}

fn assert_no_absolute_symlinks(root: &Path) {
    for entry in walkdir::WalkDir::new(root) {
        let entry = entry.expect("walk the sysroot");
        if entry.path_is_symlink() {
            let target = std::fs::read_link(entry.path()).expect("read link");
            assert!(
                target.is_relative(),
                "{} -> {} is still absolute",
                entry.path().display(),
                target.display()
            );
        }
    }
}

fn emulated_machine(cache: &Path, arch: LinuxArch) -> String {
    let emulator = Emulator::new(cache, arch, py311(), None, &Network::default(), None)
        .unwrap_or_else(|err| panic!("{err}"));
    // The stdlib is compiled once, under emulation, so test runs do not compile it again.
    let stdlib = emulator.sysroot().root().join("usr/lib/python3.11");
    for module in [
        "json/__pycache__/__init__.cpython-311.pyc",
        "__pycache__/argparse.cpython-311.pyc",
    ] {
        assert!(
            stdlib.join(module).is_file(),
            "{module} not precompiled in {}",
            stdlib.display()
        );
    }
    let output = emulator
        .python_command()
        .args(["-c", "import platform, sys; print(platform.machine())"])
        .output()
        .expect("run qemu");
    assert!(
        output.status.success(),
        "emulated python failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

#[test]
#[ignore = "slow: Debian downloads, qemu"]
fn arm64_sysroot_is_fetched_once_and_runs_python_as_aarch64() {
    let (cache, sysroot) = provision_cold_then_warm(LinuxArch::Aarch64);
    assert!(
        sysroot.python().is_file(),
        "{} missing",
        sysroot.python().display()
    );
    assert_eq!(sysroot.python_version().version(), "3.11");
    assert!(
        sysroot
            .glibc_version()
            .is_some_and(|glibc| glibc.major == 2 && glibc.minor >= 17)
    );
    assert_no_absolute_symlinks(sysroot.root());
    assert!(
        !sysroot.root().join("usr/share/doc").exists(),
        "documentation is pruned"
    );
    assert_eq!(
        emulated_machine(cache.path(), LinuxArch::Aarch64),
        "aarch64"
    );
}

#[test]
#[ignore = "slow: Debian downloads, qemu"]
fn ppc64el_sysroot_is_fetched_once_and_runs_python_as_ppc64le() {
    let (cache, sysroot) = provision_cold_then_warm(LinuxArch::Ppc64le);
    // The loader is reached through lib64/ld64.so.2, an absolute link in the package.
    let loader = sysroot.root().join("lib64/ld64.so.2");
    assert!(
        std::fs::read_link(&loader)
            .expect("lib64/ld64.so.2 is a symlink")
            .is_relative()
    );
    assert!(
        loader.is_file(),
        "lib64/ld64.so.2 must resolve inside the sysroot"
    );
    assert!(
        sysroot
            .root()
            .join("usr/lib/powerpc64le-linux-gnu")
            .is_dir()
    );
    assert_no_absolute_symlinks(sysroot.root());
    assert_eq!(
        emulated_machine(cache.path(), LinuxArch::Ppc64le),
        "ppc64le"
    );
}

#[test]
#[ignore = "slow: Debian downloads, qemu"]
fn emulated_python_has_the_stdlib_extension_modules_wheels_use() {
    let cache = cache_root();
    let emulator = Emulator::new(
        &cache,
        LinuxArch::Aarch64,
        py311(),
        None,
        &Network::default(),
        None,
    )
    .unwrap_or_else(|err| panic!("{err}"));
    let output = emulator
        .python_command()
        .args([
            "-c",
            "import ssl, sqlite3, ctypes, uuid, lzma, bz2, zlib, readline, venv; print('ok')",
        ])
        .output()
        .expect("run qemu");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "ok",
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
#[ignore = "slow: Debian downloads, qemu"]
fn static_qemu_is_fetched_from_the_host_archive_and_runs() {
    let cache = cache_root();
    let host = LinuxArch::host().expect("a supported host");
    let started = Instant::now();
    let tree: PackageTree =
        sysroot::provision(&cache, &TreeSpec::qemu_user(host, &Network::default()))
            .unwrap_or_else(|err| panic!("{err}"));
    eprintln!(
        "[timing] qemu-user-static tree: {:.2} s (downloaded: {})",
        started.elapsed().as_secs_f64(),
        tree.downloaded()
    );
    for arch in LinuxArch::ALL
        .into_iter()
        .filter(|a| *a != LinuxArch::X86_64)
    {
        let qemu = tree
            .root()
            .join(format!("usr/bin/qemu-{}-static", arch.qemu_name()));
        let output = Command::new(&qemu)
            .arg("--version")
            .output()
            .unwrap_or_else(|err| panic!("{}: {err}", qemu.display()));
        let version = String::from_utf8_lossy(&output.stdout);
        assert!(
            version.starts_with(&format!("qemu-{} version", arch.qemu_name())),
            "{version}"
        );
    }
    assert!(
        !tree.root().join("usr/bin/qemu-mips-static").exists(),
        "only crosswheel's emulators are kept"
    );
    // PATH wins over the cache when it has one.
    let found = find_qemu(LinuxArch::Aarch64, &cache, &Network::default())
        .unwrap_or_else(|err| panic!("{err}"));
    assert!(found.is_file());
}

/// cp315 is a default identifier because its target interpreter exists: Debian forky's
/// python3.15 (3.15.0) for both default Linux targets, fetched into crosswheel's cache and
/// run under qemu as the test stage runs it.
#[test]
#[ignore = "slow: Debian downloads, qemu"]
fn debian_forkys_cpython_3_15_runs_under_qemu_for_aarch64_and_ppc64le() {
    let cp315 = crosswheel::python_tag::PythonTag::parse("cp315").unwrap();
    for (arch, machine) in [
        (LinuxArch::Aarch64, "aarch64"),
        (LinuxArch::Ppc64le, "ppc64le"),
    ] {
        let emulator = Emulator::new(&cache_root(), arch, cp315, None, &Network::default(), None)
            .unwrap_or_else(|err| panic!("{arch}: {err}"));
        let output = emulator
            .python_command()
            .args([
                "-c",
                "import platform, sys; print(platform.machine(), sys.version.split()[0])",
            ])
            .output()
            .expect("run qemu");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{arch}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let (seen, version) = stdout.trim().split_once(' ').unwrap();
        assert_eq!(seen, machine);
        assert!(version.starts_with("3.15."), "{arch}: {version}");
    }
}
