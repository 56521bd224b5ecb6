//! The free-threaded target CPython fixture (`scripts/build-target-cpython`): a real
//! `python3.13t` for linux aarch64, run under qemu-user with the Debian arm64 root
//! crosswheel provisions for its default target Python (bookworm, glibc 2.36), as the
//! test stage runs a user-supplied target interpreter. Debian ships no such build, so
//! this is what proves cp313t wheels really work.

use crate::common;

use std::path::Path;
use std::process::Command;

use crosswheel::target::LinuxArch;

/// `program` (an aarch64 executable) under qemu with Debian's arm64 root.
fn under_qemu(program: &Path) -> Command {
    let cache = crosswheel::support::host::Cache::from_env().expect("a cache directory");
    let runner = common::target_runner(&cache, LinuxArch::Aarch64);
    let mut command = Command::new(&runner.qemu);
    command.envs(runner.env_vars()).arg(program);
    command
}

/// Runs `command`, panicking with its output unless it succeeds; returns its stdout.
fn succeed(command: &mut Command) -> String {
    let output = command
        .output()
        .unwrap_or_else(|err| panic!("cannot run {command:?}: {err}"));
    assert!(
        output.status.success(),
        "{command:?} failed ({}):\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

#[test]
#[ignore = "slow: the built free-threaded target CPython under qemu"]
fn it_is_a_free_threaded_cpython_313_for_aarch64_with_the_gil_off() {
    let tree = common::free_threaded_target_python();
    let report = succeed(under_qemu(&tree.join("bin/python3.13t")).args([
        "-c",
        "import platform, sys, sysconfig\n\
         print(sysconfig.get_config_var('Py_GIL_DISABLED'))\n\
         print(sys._is_gil_enabled())\n\
         print(sys.abiflags)\n\
         print('%d.%d' % sys.version_info[:2])\n\
         print(platform.machine())\n\
         print(sysconfig.get_config_var('SOABI'))\n\
         print(sysconfig._get_sysconfigdata_name())\n\
         print(sys.prefix)",
    ]));
    let lines: Vec<&str> = report.lines().collect();
    assert_eq!(
        lines,
        [
            "1",
            "False",
            "t",
            "3.13",
            "aarch64",
            "cpython-313t-aarch64-linux-gnu",
            "_sysconfigdata_t_linux_aarch64-linux-gnu",
            tree.to_str().unwrap(),
        ],
        "{report}"
    );
}

#[test]
#[ignore = "slow: the built free-threaded target CPython under qemu"]
fn its_sysconfig_gives_extensions_no_flags_into_the_deleted_build_folder() {
    let tree = common::free_threaded_target_python();
    // What setuptools and meson read to compile and link an extension for it: every
    // -I/-L folder they name must exist once the scratch folder of the build is gone.
    let missing = succeed(under_qemu(&tree.join("bin/python3.13t")).args([
        "-c",
        "import os, sysconfig\n\
         for name in ('CC', 'CXX', 'CFLAGS', 'CCSHARED', 'LDFLAGS', 'LDSHARED', 'LDCXXSHARED'):\n\
         \x20   for word in (sysconfig.get_config_var(name) or '').split():\n\
         \x20       if word[:2] in ('-I', '-L') and not os.path.isdir(word[2:]):\n\
         \x20           print(name, word)",
    ]));
    assert_eq!(missing, "", "flags naming folders that do not exist");
}

#[test]
#[ignore = "slow: the built free-threaded target CPython under qemu"]
fn a_venv_it_makes_installs_a_wheel_and_runs_code_needing_zlib_ssl_and_ctypes() {
    let tree = common::free_threaded_target_python();
    let work = tempfile::tempdir().unwrap();
    let venv = work.path().join("venv");
    succeed(
        under_qemu(&tree.join("bin/python3.13t"))
            .args(["-m", "venv", "--without-pip"])
            .arg(&venv),
    );
    let python = venv.join("bin/python");

    // pip runs from the wheel the stdlib bundles for ensurepip, as `python pip.whl/pip`
    // is documented to; the wheel is deflated, so installing it needs zlib.
    let bundled = std::fs::read_dir(tree.join("lib/python3.13t/ensurepip/_bundled"))
        .expect("ensurepip's bundled wheels")
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|ext| ext == "whl"))
        .expect("a bundled pip wheel");
    let mut files: Vec<(String, Vec<u8>)> =
        common::minimal_metadata("ftprobe", "1.0", "cp313-cp313t-linux_aarch64");
    files.push((
        "ftprobe.py".into(),
        b"import ctypes, os, ssl, sys, zlib\n\
          def report():\n\
          \x20   assert zlib.decompress(zlib.compress(b'x' * 100)) == b'x' * 100\n\
          \x20   ssl.create_default_context()\n\
          \x20   assert ctypes.CDLL(None).getpid() == os.getpid()\n\
          \x20   return f'{sys.prefix} {sys._is_gil_enabled()} {ssl.OPENSSL_VERSION.split()[1][:2]}'\n"
            .to_vec(),
    ));
    let borrowed: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(name, data)| (name.as_str(), data.as_slice()))
        .collect();
    let wheel = common::make_wheel(
        work.path(),
        "ftprobe-1.0-cp313-cp313t-linux_aarch64.whl",
        &borrowed,
    );
    succeed(
        under_qemu(&python)
            .arg(bundled.join("pip"))
            .args([
                "install",
                "--no-index",
                "--no-deps",
                "--disable-pip-version-check",
            ])
            .arg(&wheel),
    );

    let report =
        succeed(under_qemu(&python).args(["-c", "import ftprobe; print(ftprobe.report())"]));
    assert_eq!(
        report.trim(),
        format!("{} False 3.", venv.display()),
        "the venv's interpreter, the GIL still off, OpenSSL 3"
    );
}
