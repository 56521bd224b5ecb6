//! A wheel for a CPython version the build machine lacks, on a machine where uv cannot
//! install one: crosswheel builds that CPython for the build machine from Debian's source
//! (config/host-cpython.toml), keeps it in its cache, and builds the wheel with it.
//!
//! crosswheel runs with CPython 3.13 hidden — an empty `PYENV_ROOT` and uv install folder,
//! no folder of PATH holding `python3.13` — and uv offline, so `uv python install` fails as
//! it does without network access to uv's Python builds. 3.13, whose source comes from
//! Debian's stable release (trixie), whose pool keeps it; a testing release's source (3.14
//! in forky) leaves the pool once the release moves on. Needs cc, make and xz, and the
//! development packages config/host-cpython.toml names (crosswheel's error names the
//! missing ones). The first run builds CPython (about 4 minutes on 2 cores); later runs
//! take it from crosswheel's cache.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::crosswheel_bin;

/// PATH without the folders holding `python3.13` (pyenv's shims, a venv's bin); panics
/// when the system's own folder has one, which no test can hide.
fn path_without_python_313() -> String {
    let path = std::env::var_os("PATH").expect("PATH is set");
    let kept: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|dir| {
            let has = dir.join("python3.13").exists();
            assert!(
                !(has && (dir == Path::new("/usr/bin") || dir == Path::new("/bin"))),
                "this test needs a machine whose system has no CPython 3.13 ({} has python3.13)",
                dir.display()
            );
            !has
        })
        .collect();
    std::env::join_paths(kept)
        .expect("PATH folders join")
        .into_string()
        .expect("PATH is UTF-8")
}

#[test]
#[ignore = "slow: builds CPython 3.13 from Debian's source once (minutes), then the whole pipeline (zig, qemu)"]
fn a_cpython_the_machine_lacks_is_built_from_debian_source_and_builds_the_wheel() {
    for (tool, hint) in [
        ("cc", "apt-get install gcc"),
        ("make", "apt-get install make"),
        ("xz", "apt-get install xz-utils"),
        ("uv", "pip install uv"),
    ] {
        common::require_tool(tool, hint);
    }
    let hidden = tempfile::tempdir().expect("tempdir");
    let out = tempfile::tempdir().expect("tempdir");
    let output = Command::new(crosswheel_bin())
        .args(["-v", "build"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mesonproj"))
        .arg("-w")
        .arg(out.path())
        .args(["--only", "cp313-manylinux_aarch64"])
        .env("PATH", path_without_python_313())
        .env("PYENV_ROOT", hidden.path().join("pyenv"))
        .env("UV_PYTHON_INSTALL_DIR", hidden.path().join("uv-pythons"))
        .env("UV_OFFLINE", "1")
        .output()
        .expect("run crosswheel build");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");

    // The build ran on the CPython crosswheel built, not on one it found.
    let used = stderr
        .lines()
        .find_map(|line| line.split("build python for 3.13: ").nth(1))
        .unwrap_or_else(|| panic!("no `build python for 3.13` line:\n{stderr}"));
    let python = PathBuf::from(used.trim());
    let prefix = python
        .parent()
        .and_then(Path::parent)
        .expect("<prefix>/bin/python3.13");
    assert!(
        prefix
            .parent()
            .is_some_and(|folder| folder.ends_with("host-cpython")),
        "{}",
        python.display()
    );
    assert!(prefix.join(".crosswheel-library.json").is_file());
    if stderr.contains("building CPython 3.13.5 for the build machine from Debian's source") {
        assert!(
            stderr.contains("checked the built CPython: 3.13.5"),
            "{stderr}"
        );
    }
    let imports = Command::new(&python)
        .args(["-I", "-c", "import ssl, zlib, ctypes, venv, pip"])
        .status()
        .expect("run the built CPython");
    assert!(imports.success());

    assert!(
        stdout
            .lines()
            .any(|line| line.starts_with("cp313-manylinux_aarch64") && line.contains("passed")),
        "{stdout}"
    );
    assert!(
        out.path()
            .join("mesonproj-0.1.0-cp313-cp313-manylinux_2_17_aarch64.manylinux2014_aarch64.whl")
            .is_file(),
        "{stdout}"
    );
}
