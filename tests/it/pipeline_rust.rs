//! examples/rustproj (setuptools-rust, a Rust extension with no crates) through the whole
//! pipeline: the build gets Rust because the project asks for setuptools-rust, cargo
//! cross-compiles it with the toolchain's C compiler as linker, and its pytest suite runs
//! on Debian's target CPython under qemu-user, a panic unwinding through the target's
//! `libgcc_s.so.1` included.

use std::path::Path;
use std::process::Command;

use crate::common::{self, crosswheel_bin};

#[test]
#[ignore = "slow: the whole pipeline on examples/rustproj (Rust for two targets, zig, qemu)"]
fn setuptools_rust_example_passes_its_suite_on_aarch64_and_ppc64le() {
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(crosswheel_bin())
        .arg("build")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/rustproj"))
        .arg("-w")
        .arg(out.path())
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .expect("run crosswheel build");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "build of rustproj failed:\n{stdout}\n{stderr}"
    );
    assert!(stderr.contains("Rust for linux-aarch64: "), "{stderr}");
    assert_eq!(
        common::wheel_names_in(out.path()),
        [
            "rustproj-0.1.0-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
            // Rust's standard library refers weakly to glibc 2.18's
            // `__cxa_thread_atexit_impl`, and zig's oldest ppc64le glibc (2.19) defines it,
            // so the reference carries its version: the next policy is 2_24.
            "rustproj-0.1.0-cp311-cp311-manylinux_2_24_ppc64le.whl",
        ]
    );
    for identifier in ["cp311-manylinux_aarch64", "cp311-manylinux_ppc64le"] {
        let row = stdout
            .lines()
            .find(|line| line.starts_with(identifier))
            .unwrap_or_else(|| panic!("no summary row for {identifier}:\n{stdout}"));
        assert!(row.contains("passed (emulated)"), "{row}");
    }
    assert_eq!(
        stdout
            .lines()
            .filter(|line| line.contains("4 passed in "))
            .count(),
        2,
        "pytest's result lines missing:\n{stdout}"
    );
}

/// cryptography from its sdist (maturin, PyO3), with the line a cibuildwheel user adds for
/// OpenSSL: openssl-sys finds the OpenSSL crosswheel builds for the target through
/// pkg-config, its cffi build script finds the target's Python headers from
/// PYO3_CROSS_LIB_DIR, the repair vendors libssl and libcrypto, and under qemu the wheel
/// encrypts with the target's OpenSSL, its legacy provider (Blowfish) included.
#[test]
#[ignore = "slow: cryptography from its sdist (Rust crates, OpenSSL for aarch64, qemu)"]
fn cryptography_links_the_targets_openssl_through_openssl_sys() {
    let sdist = common::fixture("cryptography-50.0.2.tar.gz");
    let out = tempfile::tempdir().unwrap();
    let check = "from cryptography.fernet import Fernet; \
        from cryptography.hazmat.backends.openssl import backend; \
        from cryptography.hazmat.decrepit.ciphers.algorithms import Blowfish; \
        from cryptography.hazmat.primitives.ciphers import Cipher, modes; \
        f = Fernet(Fernet.generate_key()); assert f.decrypt(f.encrypt(b'x')) == b'x'; \
        e = Cipher(Blowfish(b'k' * 16), modes.ECB()).encryptor(); \
        assert len(e.update(b'8 bytes!') + e.finalize()) == 8; \
        print('openssl', backend.openssl_version_text())";
    let output = Command::new(crosswheel_bin())
        .arg("build")
        .arg(&sdist)
        .args(["--only", "cp311-manylinux_aarch64", "-w"])
        .arg(out.path())
        .env("CIBW_BEFORE_ALL_LINUX", "yum install -y openssl-devel")
        .env("CIBW_TEST_COMMAND", format!("python -c \"{check}\""))
        .output()
        .expect("run crosswheel build");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "build of cryptography failed:\n{stdout}\n{stderr}"
    );
    let wheel = "cryptography-50.0.2-cp311-abi3-manylinux_2_17_aarch64.manylinux2014_aarch64.whl";
    assert_eq!(common::wheel_names_in(out.path()), [wheel]);
    assert!(
        stdout.contains("openssl OpenSSL 3.0.20 "),
        "the wheel runs the target's OpenSSL:\n{stdout}"
    );
    assert!(
        !format!("{stdout}{stderr}").contains("legacy provider failed to load"),
        "{stdout}\n{stderr}"
    );
    let archive = zip::ZipArchive::new(std::fs::File::open(out.path().join(wheel)).unwrap())
        .expect("a zip archive");
    let members: Vec<String> = archive
        .file_names()
        .map(|name| name.expect("a member name").into_owned())
        .collect();
    for library in ["libssl-", "libcrypto-"] {
        assert!(
            members
                .iter()
                .any(|name| name.starts_with(&format!("cryptography.libs/{library}"))),
            "{library} vendored: {members:?}"
        );
    }
}

/// `crosswheel build examples/rustproj --only <identifier>` with no rustc or cargo on
/// PATH, which must succeed: its output folder, stdout and stderr.
fn build_rustproj_without_rustup(identifier: &str) -> (tempfile::TempDir, String, String) {
    let out = tempfile::tempdir().unwrap();
    let path: Vec<std::path::PathBuf> = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .filter(|dir| !dir.join("rustc").exists() && !dir.join("cargo").exists())
        .collect();
    let output = Command::new(crosswheel_bin())
        .arg("build")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/rustproj"))
        .args(["--only", identifier, "-w"])
        .arg(out.path())
        .env("PATH", std::env::join_paths(path).unwrap())
        .output()
        .expect("run crosswheel build");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stdout}\n{stderr}");
    (out, stdout, stderr)
}

/// A macOS target on a machine whose PATH has no rustc: Debian's rustc compiles the
/// target's standard library from Debian's `rust-src` in the build (cargo's build-std), the
/// extension links libSystem alone, for macOS 11, signed, as a rustup-built one is, and the
/// wheel passes the static check.
#[test]
#[ignore = "slow: Debian's Rust and its source, the standard library built for macOS"]
fn a_macos_wheel_builds_its_standard_library_from_debians_source() {
    let (out, stdout, stderr) = build_rustproj_without_rustup("cp311-macosx_arm64");
    assert!(
        stderr.contains("the standard library for aarch64-apple-darwin built from its source"),
        "{stderr}"
    );
    let wheel = "rustproj-0.1.0-cp311-cp311-macosx_11_0_arm64.whl";
    assert_eq!(common::wheel_names_in(out.path()), [wheel]);
    assert!(stdout.contains("static check"), "{stdout}");
    let inspect = Command::new(crosswheel_bin())
        .arg("inspect")
        .arg(out.path().join(wheel))
        .output()
        .expect("run crosswheel inspect");
    let shown = String::from_utf8_lossy(&inspect.stdout);
    for line in [
        "dylib      /usr/lib/libSystem.B.dylib (system)",
        "minos      11.0",
        "signature  valid",
    ] {
        assert!(shown.contains(line), "{line} in:\n{shown}");
    }
}

/// A musllinux target, for which Debian builds no standard library, on a machine whose PATH
/// has no rustc: the library is built from Debian's `rust-src` as for macOS, the extension
/// links musl's C library alone (Rust's unwinder is zig's, linked in), and its tests pass
/// under qemu on the musl CPython crosswheel builds.
#[test]
#[ignore = "slow: Debian's Rust and its source, the standard library built for musl, qemu"]
fn a_musllinux_wheel_builds_its_standard_library_from_debians_source() {
    let (out, stdout, stderr) = build_rustproj_without_rustup("cp311-musllinux_aarch64");
    assert!(
        stderr
            .contains("the standard library for aarch64-unknown-linux-musl built from its source"),
        "{stderr}"
    );
    assert!(
        stdout.contains("passed (emulated)"),
        "the wheel was not tested under qemu:\n{stdout}"
    );
    let wheel = "rustproj-0.1.0-cp311-cp311-musllinux_1_2_aarch64.whl";
    assert_eq!(common::wheel_names_in(out.path()), [wheel]);
    let unpacked = tempfile::tempdir().unwrap();
    common::unzip_to(&out.path().join(wheel), unpacked.path());
    assert!(
        !unpacked.path().join("rustproj.libs").exists(),
        "nothing is vendored beside musl's C library"
    );
    let module = std::fs::read_dir(unpacked.path().join("rustproj"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|x| x == "so"))
        .expect("an extension module");
    let bytes = std::fs::read(&module).unwrap();
    let elf = goblin::elf::Elf::parse(&bytes).unwrap();
    assert_eq!(
        elf.libraries,
        ["libc.musl-aarch64.so.1"],
        "{}",
        module.display()
    );
}
