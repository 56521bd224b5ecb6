//! Several CPython versions through the whole pipeline: the build runs on the host's
//! CPython of the identifier's version and the test stage on the target CPython of the
//! same version — 3.13 from Debian 13 — while a version with no target CPython (3.12)
//! is built, repaired and kept with a `not tested` line, or fails with `--require-tests`.
//!
//! They need host CPythons 3.12 and 3.13 (`python3.X` on PATH, from `uv python find` or
//! among pyenv's versions). CI has them and fails without them; a machine with only its
//! distribution's Python says so and skips (see [`host_python`]).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::crosswheel_bin;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mesonproj")
}

fn build(out: &Path, identifier: &str, env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(crosswheel_bin());
    command
        .arg("build")
        .arg(example())
        .arg("-w")
        .arg(out)
        .args(["--only", identifier]);
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("run crosswheel build")
}

fn summary_row<'a>(stdout: &'a str, identifier: &str) -> &'a str {
    stdout
        .lines()
        .find(|line| line.starts_with(identifier))
        .unwrap_or_else(|| panic!("no summary row for {identifier}:\n{stdout}"))
}

#[test]
#[ignore = "slow: the whole pipeline for several CPythons (zig, qemu)"]
fn a_cp313_wheel_is_built_with_cpython_313_and_tested_on_debian_13s() {
    common::host_python("3.13");
    let out = tempfile::tempdir().expect("tempdir");
    let output = build(out.path(), "cp313-manylinux_aarch64", &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        summary_row(&stdout, "cp313-manylinux_aarch64").contains("passed (emulated)"),
        "{stdout}"
    );
    assert!(
        out.path()
            .join("mesonproj-0.1.0-cp313-cp313-manylinux_2_17_aarch64.manylinux2014_aarch64.whl")
            .is_file()
    );
    // pytest's own report: a test command's output is on stdout, as under cibuildwheel.
    assert!(
        stdout.lines().any(|line| line.contains("4 passed in ")),
        "{stdout}"
    );
}

#[test]
#[ignore = "slow: the whole pipeline for several CPythons (zig, qemu)"]
fn a_version_without_a_target_cpython_is_kept_untested_with_a_line_saying_so() {
    common::host_python("3.12");
    let out = tempfile::tempdir().expect("tempdir");
    let output = build(out.path(), "cp312-manylinux_ppc64le", &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let row = summary_row(&stdout, "cp312-manylinux_ppc64le");
    assert!(row.contains("NOT TESTED"), "{row}");
    assert!(
        stdout.contains(
            "not tested: no ppc64le CPython 3.12 (Debian ships 3.11, 3.13, 3.14, 3.15; set target-python)"
        ),
        "{stdout}"
    );
    assert!(
        stderr.contains("not tested: no ppc64le CPython 3.12"),
        "{stderr}"
    );
    assert!(
        out.path()
            .join("mesonproj-0.1.0-cp312-cp312-manylinux_2_17_ppc64le.manylinux2014_ppc64le.whl")
            .is_file(),
        "the built and repaired wheel is kept"
    );

    let strict = tempfile::tempdir().expect("tempdir");
    let output = build(
        strict.path(),
        "cp312-manylinux_ppc64le",
        &[("CROSSWHEEL_REQUIRE_TESTS", "1")],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success(), "{stdout}");
    assert!(
        stdout.contains("--require-tests makes that a failure"),
        "{stdout}"
    );
    let wheels = std::fs::read_dir(strict.path())
        .map(|dir| {
            dir.filter_map(Result::ok)
                .filter(|e| e.path().extension().is_some_and(|x| x == "whl"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(
        wheels, 0,
        "an untested wheel reached the wheelhouse under --require-tests"
    );
}

/// examples/blasdot end to end for two CPython versions on both Linux targets: each built
/// on the host CPython of its version, repaired, and tested on Debian's CPython of the
/// same version (bookworm's 3.11, trixie's 3.13) under qemu.
#[test]
#[ignore = "slow: the whole pipeline for several CPythons (zig, qemu)"]
fn blasdot_is_built_and_tested_for_two_cpython_versions_on_both_linux_targets() {
    common::host_python("3.13");
    let out = tempfile::tempdir().expect("tempdir");
    let output = Command::new(crosswheel_bin())
        .arg("build")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/blasdot"))
        .arg("-w")
        .arg(out.path())
        .args([
            "--archs",
            "manylinux_aarch64,manylinux_ppc64le",
            "--jobs",
            "2",
        ])
        .env("CROSSWHEEL_PYTHON", "cp311 cp313")
        .output()
        .expect("run crosswheel build");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for identifier in [
        "cp311-manylinux_aarch64",
        "cp311-manylinux_ppc64le",
        "cp313-manylinux_aarch64",
        "cp313-manylinux_ppc64le",
    ] {
        assert!(
            summary_row(&stdout, identifier).contains("passed (emulated)"),
            "{stdout}"
        );
    }
    let wheels = std::fs::read_dir(out.path())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "whl"))
        .count();
    assert_eq!(wheels, 4);
}

/// An abi3 project builds once per target, at its lowest CPython, like cibuildwheel: the
/// wheel serves the later versions, which are not built again but test it on their own
/// CPythons where the target has one (Debian 12's 3.11 and Debian 13's 3.13 here; Debian
/// ships no arm64 3.12, so cp312 says why it was not tested).
#[test]
#[ignore = "slow: the whole pipeline for several CPythons (zig, qemu)"]
fn an_abi3_wheel_is_built_once_per_target_and_tested_on_every_cpython_it_serves() {
    let project = abi3_project("");
    let out = tempfile::tempdir().expect("tempdir");
    let stdout = common::build_succeeds(project.path(), out.path());
    assert!(
        summary_row(&stdout, "cp311-manylinux_aarch64").contains("passed (emulated)"),
        "{stdout}"
    );
    let served = |identifier: &str| {
        let row = summary_row(&stdout, identifier);
        assert!(
            row.contains("abi3 wheel of cp311-manylinux_aarch64"),
            "{stdout}"
        );
        assert!(
            row.contains("0.0s"),
            "{identifier} was built again:\n{stdout}"
        );
        row
    };
    assert!(
        served("cp313-manylinux_aarch64").contains("passed (emulated)"),
        "{stdout}"
    );
    assert!(
        !served("cp312-manylinux_aarch64").contains("passed"),
        "{stdout}"
    );
    assert!(
        stdout.contains("not tested: no aarch64 CPython 3.12"),
        "{stdout}"
    );
    for version in ["(3, 11)", "(3, 13)"] {
        assert!(
            stdout.contains(&format!("limited 42 {version}")),
            "the abi3 wheel was not tested on CPython {version}:\n{stdout}"
        );
    }
    let wheels = common::wheel_names_in(out.path());
    assert_eq!(wheels.len(), 1, "{wheels:?}");
    assert!(wheels[0].contains("-cp311-abi3-manylinux"), "{wheels:?}");
}

/// A cp311-abi3 project for aarch64 CPython 3.11 to 3.13 whose test prints the CPython it
/// runs on, then runs `python -c <extra>` too where `extra` is not empty.
fn abi3_project(extra: &str) -> tempfile::TempDir {
    let project = tempfile::tempdir().expect("tempdir");
    let mut test = "python -c 'import sys, limited; print(\\\"limited\\\", limited.answer(), sys.version_info[:2])'".to_string();
    if !extra.is_empty() {
        test.push_str(&format!(" && python -c '{extra}'"));
    }
    let pyproject = format!(
        "[build-system]\nrequires = [\"setuptools>=68\"]\nbuild-backend = \"setuptools.build_meta\"\n\
         [project]\nname = \"limited\"\nversion = \"1.0\"\nrequires-python = \">=3.11\"\n\
         [tool.crosswheel]\npython = [\"cp311\", \"cp312\", \"cp313\"]\narchs = \"manylinux_aarch64\"\n\
         test-command = \"{test}\"\n"
    );
    common::write_project(
        project.path(),
        &[
            ("pyproject.toml", &pyproject),
            (
                "setup.py",
                "from setuptools import setup, Extension\n\
                 setup(ext_modules=[Extension('limited', ['limited.c'], py_limited_api=True,\n\
                       define_macros=[('Py_LIMITED_API', '0x030B0000')])],\n\
                       options={'bdist_wheel': {'py_limited_api': 'cp311'}})\n",
            ),
            (
                "limited.c",
                "#include <Python.h>\n\
                 static PyObject *answer(PyObject *self, PyObject *args) { return PyLong_FromLong(42); }\n\
                 static PyMethodDef methods[] = {{\"answer\", answer, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};\n\
                 static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, \"limited\", NULL, -1, methods};\n\
                 PyMODINIT_FUNC PyInit_limited(void) { return PyModule_Create(&module); }\n",
            ),
        ],
    );
    project
}

/// A served wheel is one file for every version it serves: when a later CPython's test
/// fails it, it leaves the wheelhouse (kept apart with that test's log), and every
/// identifier that finished with it fails, the one that built it first in the summary.
#[test]
#[ignore = "slow: the whole pipeline for several CPythons (zig, qemu)"]
fn an_abi3_wheel_that_fails_a_later_cpythons_test_leaves_the_wheelhouse() {
    let project = abi3_project("import sys; assert sys.version_info[:2] != (3, 13), 3.13");
    let out = tempfile::tempdir().expect("tempdir");
    let output = common::build(project.path(), out.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(common::wheel_names_in(out.path()).is_empty(), "{stdout}");
    let why = "its abi3 wheel failed the tests of cp313-manylinux_aarch64, which it serves; the wheel, its logs and the reason are kept in ";
    let first_error = stdout
        .lines()
        .find_map(|line| line.trim().strip_prefix("error: "))
        .unwrap_or_else(|| panic!("no error in the summary:\n{stdout}"));
    assert!(first_error.contains(why), "{stdout}");
    let kept = first_error.split(why).nth(1).unwrap().trim();
    let kept = std::path::Path::new(kept);
    assert!(
        kept.join("limited-1.0-cp311-abi3-manylinux_2_17_aarch64.manylinux2014_aarch64.whl")
            .is_file(),
        "{stdout}"
    );
    assert!(
        kept.join("cp313-manylinux_aarch64-test.log").is_file(),
        "{stdout}"
    );
    for identifier in [
        "cp311-manylinux_aarch64",
        "cp312-manylinux_aarch64",
        "cp313-manylinux_aarch64",
    ] {
        assert!(
            summary_row(&stdout, identifier).contains("FAILED"),
            "{stdout}"
        );
    }
}

/// A build whose CPython the machine lacks gets it from `uv python install` (uv itself
/// installed from PyPI into crosswheel's cache), or — where that cannot download, as on a
/// machine without access to uv's Python builds — one error naming the commands that
/// install it. Here the only CPythons are the distribution's (fresh HOME, no pyenv).
#[test]
#[ignore = "slow: the whole pipeline for several CPythons (zig, qemu)"]
fn a_missing_host_cpython_is_installed_with_uv_or_named_in_one_error() {
    let home = tempfile::tempdir().expect("tempdir");
    let out = tempfile::tempdir().expect("tempdir");
    let output = Command::new(crosswheel_bin())
        .arg("build")
        .arg(example())
        .arg("-w")
        .arg(out.path())
        .args(["--only", "cp312-macosx_arm64"])
        .env_clear()
        .env(
            "PATH",
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        )
        .env("HOME", home.path())
        .env("CROSSWHEEL_ZIG", zig())
        .output()
        .expect("run crosswheel build");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        home.path()
            .join(".cache/crosswheel/uv-venv/bin/uv")
            .is_file(),
        "uv was not installed into the cache:\n{stdout}\n{stderr}"
    );
    if output.status.success() {
        assert!(stderr.contains("uv python install 3.12"), "{stderr}");
    } else {
        assert!(
            stdout.contains("`uv python install 3.12` failed")
                && stdout.contains("pyenv install 3.12"),
            "{stdout}\n{stderr}"
        );
    }
}

/// zig from the usual cache, so the fresh HOME only has to fetch what the test is about.
fn zig() -> PathBuf {
    let cache = crosswheel::support::host::Cache::from_env().expect("a cache directory");
    let python = common::require_tool("python3", "apt-get install python3");
    crosswheel::stages::toolchain::ensure_zig(&cache, &python, false)
        .unwrap_or_else(|err| panic!("zig: {err}"))
        .exe
}
