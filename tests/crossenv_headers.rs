//! The cross environment's headers describe the target, whatever CPython builds.
//!
//! For every target and every kind of build interpreter on this machine — the
//! distribution's CPython, whose `pyconfig.h` is a multiarch wrapper that dispatches on
//! the compiler's target, and a CPython with a plain header (pyenv or uv) — the target's
//! cross compiler compiles `tests/support/pyconfig_probe.c` against the environment's
//! headers: `static_assert`s that every size, alignment and byte-order answer of
//! `pyconfig.h` is the target's. Needs zig (installed into crosswheel's cache on first
//! use) and network access on the first run.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use crosswheel::crossenv::{BuildPython, CrossEnv};
use crosswheel::target::Target;
use crosswheel::toolchain::{Cache, ToolchainKind, resolve_toolchain};

const TARGETS: [&str; 3] = ["linux-aarch64", "linux-ppc64le", "macos-arm64"];

/// The distribution's CPython 3.11 (Debian 12's own), which every user of a Debian or
/// Ubuntu machine has.
fn distribution_python() -> BuildPython {
    let path = Path::new("/usr/bin/python3.11");
    assert!(
        path.is_file(),
        "this test needs the distribution's CPython at {}: apt-get install python3.11-dev",
        path.display()
    );
    BuildPython::probe(path).unwrap_or_else(|err| panic!("{err}"))
}

/// A CPython 3.11 that is not the distribution's (plain `pyconfig.h`): pyenv's or uv's.
fn plain_header_python() -> Option<BuildPython> {
    let pyenv_root = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".pyenv")));
    let from_pyenv = pyenv_root.and_then(|root| {
        let mut found: Vec<PathBuf> = std::fs::read_dir(root.join("versions"))
            .ok()?
            .filter_map(Result::ok)
            .filter(|entry| entry.file_name().to_string_lossy().starts_with("3.11."))
            .map(|entry| entry.path().join("bin/python3.11"))
            .filter(|path| path.is_file())
            .collect();
        found.sort();
        found.pop()
    });
    let from_uv = || {
        let output = Command::new("uv")
            .args(["python", "find", "--no-project", "3.11"])
            .output()
            .ok()?;
        let path = PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
        (output.status.success() && !path.starts_with("/usr/")).then_some(path)
    };
    let path = from_pyenv.or_else(from_uv)?;
    Some(BuildPython::probe(&path).unwrap_or_else(|err| panic!("{err}")))
}

fn build_pythons() -> Vec<BuildPython> {
    let mut pythons = vec![distribution_python()];
    match plain_header_python() {
        Some(python) => pythons.push(python),
        // CI has pyenv's CPythons; a user's machine running the suite may only have the
        // distribution's, whose path is the one that used to fail.
        None if std::env::var_os("CI").is_some() => {
            panic!("CI must have a CPython 3.11 with a plain header (pyenv or uv) for this test")
        }
        None => {
            eprintln!("note: no pyenv or uv CPython 3.11 here; only the distribution's was probed")
        }
    }
    pythons
}

fn compile_probe(python: &BuildPython, target_name: &str, out_dir: &Path) -> Result<(), String> {
    let target = Target::parse(target_name).unwrap();
    let cache = Cache::from_env().expect("a cache directory");
    let toolchain = resolve_toolchain(
        ToolchainKind::Zig,
        &target,
        &cache,
        &python.executable,
        false,
    )
    .unwrap_or_else(|err| panic!("zig toolchain for {target_name}: {err}"));
    let env = CrossEnv::create(&cache, python, &toolchain)
        .unwrap_or_else(|err| panic!("cross environment for {target_name}: {err}"));
    let probe = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/pyconfig_probe.c");
    let object = out_dir.join(format!("{target_name}.o"));
    let output = Command::new(&toolchain.cc)
        .arg("-c")
        .arg(format!("-I{}", env.python_include_dir.display()))
        .arg(&probe)
        .arg("-o")
        .arg(&object)
        .output()
        .unwrap_or_else(|err| panic!("cannot run {}: {err}", toolchain.cc.display()));
    if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

#[test]
fn every_target_compiles_the_pyconfig_probe_with_every_kind_of_build_python() {
    let out = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for python in build_pythons() {
        for target in TARGETS {
            if let Err(stderr) = compile_probe(&python, target, out.path()) {
                failures.push(format!(
                    "{target} with {}:\n{stderr}",
                    python.executable.display()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_distribution_pythons_multiarch_wrapper_never_reaches_the_target() {
    let python = distribution_python();
    let cache = Cache::from_env().expect("a cache directory");
    for target_name in TARGETS {
        let target = Target::parse(target_name).unwrap();
        let toolchain = resolve_toolchain(
            ToolchainKind::Zig,
            &target,
            &cache,
            &python.executable,
            false,
        )
        .unwrap_or_else(|err| panic!("zig toolchain for {target_name}: {err}"));
        let env = CrossEnv::create(&cache, &python, &toolchain).unwrap();
        let header = std::fs::read_to_string(env.python_include_dir.join("pyconfig.h")).unwrap();
        assert!(
            !header.contains("multiarch location"),
            "{target_name}: the wrapper was copied"
        );
        assert!(
            header.contains("#define SIZEOF_LONG 8"),
            "{target_name}: not a real pyconfig.h"
        );
        assert!(
            header.contains("/* #undef HAVE_GCC_ASM_FOR_X64 */"),
            "{target_name}: x86_64's answer kept"
        );
    }
}
