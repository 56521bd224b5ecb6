//! Free-threaded CPython (`cp313t`, PEP 703): a wheel is built for the free-threaded ABI with
//! the host's ordinary CPython 3.13, the cross environment describing the `t` target — tag
//! `cp313-cp313t`, suffix `.cpython-313t-...`, and code compiled with `Py_GIL_DISABLED`,
//! which shows in the interpreter functions it imports. Debian ships no free-threaded
//! CPython, so without `target-python` the wheel is kept `not tested`, saying why; with it
//! (the free-threaded CPython `scripts/build-target-cpython` builds) the wheel runs without
//! the GIL under qemu.
//!
//! They need a host CPython 3.13 (pyenv or uv); CI has it and fails without it, elsewhere
//! they say so and skip.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::crosswheel_bin;

/// What `Py_DECREF` calls only in the free-threaded build (shared reference counts).
const FREE_THREADED_IMPORTS: [&str; 2] = ["_Py_DecRefShared", "_Py_MergeZeroLocalRefcount"];

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
}

/// `crosswheel build PROJECT -w OUT` with `env` on top of a clean option environment;
/// returns its stdout and stderr once it has succeeded.
fn build_ok(project: &Path, out: &Path, env: &[(&str, &str)]) -> (String, String) {
    let mut command = Command::new(crosswheel_bin());
    command.arg("build").arg(project).arg("-w").arg(out);
    common::without_option_variables(&mut command);
    command.envs(env.iter().copied());
    let output = command.output().expect("run crosswheel build");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stdout}\n{stderr}");
    (stdout, stderr)
}

/// Builds `identifiers` (space-separated) of the CPythons `pythons` of `project`.
fn build(project: &Path, out: &Path, pythons: &str, identifiers: &str) -> (String, String) {
    build_ok(
        project,
        out,
        &[
            ("CROSSWHEEL_PYTHON", pythons),
            ("CROSSWHEEL_BUILD", identifiers),
        ],
    )
}

fn wheels_in(dir: &Path) -> Vec<PathBuf> {
    common::wheel_names_in(dir)
        .into_iter()
        .map(|name| dir.join(name))
        .collect()
}

/// The wheel's one extension module: its path inside the wheel and its bytes.
fn extension_of(wheel: &Path) -> (String, Vec<u8>) {
    let archive = crosswheel::formats::wheel::WheelArchive::open(wheel)
        .unwrap_or_else(|err| panic!("{}: {err}", wheel.display()));
    let modules: Vec<&str> = archive
        .entries()
        .iter()
        .map(|entry| entry.name.as_str())
        .filter(|name| name.ends_with(".so"))
        .collect();
    assert_eq!(modules.len(), 1, "{}: {modules:?}", wheel.display());
    (modules[0].to_string(), archive.read(modules[0]).unwrap())
}

fn elf_imports(bytes: &[u8]) -> BTreeSet<String> {
    crosswheel::formats::elf::facts::ElfFacts::parse(bytes)
        .expect("an ELF extension")
        .undefined_symbols
        .into_iter()
        .map(|symbol| symbol.name)
        .collect()
}

fn macho_imports(bytes: &[u8]) -> BTreeSet<String> {
    let file = crosswheel::formats::macho::MachOFile::parse(bytes).expect("a Mach-O extension");
    file.slices[0]
        .imported_symbols
        .iter()
        // Mach-O names carry one more leading underscore than the C name.
        .map(|symbol| {
            let name = &symbol.name;
            name.strip_prefix('_').unwrap_or(name).to_string()
        })
        .collect()
}

fn is_free_threaded_code(imports: &BTreeSet<String>) -> bool {
    FREE_THREADED_IMPORTS
        .iter()
        .all(|name| imports.contains(*name))
}

#[test]
#[ignore = "slow: free-threaded builds with zig, tested under qemu"]
fn meson_python_builds_the_free_threaded_abi_for_linux_and_macos() {
    common::host_python("3.13");
    let out = tempfile::tempdir().unwrap();
    let (_, stderr) = build(
        &example("mesonproj"),
        out.path(),
        "cp313t",
        "cp313t-manylinux_aarch64 cp313t-macosx_arm64",
    );

    let wheels = wheels_in(out.path());
    let names: Vec<String> = wheels
        .iter()
        .map(|wheel| wheel.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "mesonproj-0.1.0-cp313-cp313t-macosx_11_0_arm64.whl",
            "mesonproj-0.1.0-cp313-cp313t-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
        ]
    );
    let (macos_module, macos_code) = extension_of(&wheels[0]);
    assert_eq!(macos_module, "mesonproj/_fib.cpython-313t-darwin.so");
    assert!(
        is_free_threaded_code(&macho_imports(&macos_code)),
        "{:?}",
        macho_imports(&macos_code)
    );
    let (linux_module, linux_code) = extension_of(&wheels[1]);
    assert_eq!(
        linux_module,
        "mesonproj/_fib.cpython-313t-aarch64-linux-gnu.so"
    );
    assert!(
        is_free_threaded_code(&elf_imports(&linux_code)),
        "{:?}",
        elf_imports(&linux_code)
    );

    // What an index would accept: file name and WHEEL tags agree (meson-python's WHEEL
    // ends without a newline; the repaired one lists each tag on a line of its own).
    let check = Command::new(crosswheel_bin())
        .arg("check")
        .args(&wheels)
        .output()
        .expect("run crosswheel check");
    assert!(
        check.status.success(),
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );

    // Debian has no free-threaded CPython to test on: said, not hidden.
    assert!(
        stderr.contains(
            "cp313t-manylinux_aarch64: not tested: no aarch64 free-threaded CPython 3.13t (Debian ships none; set target-python)"
        ),
        "{stderr}"
    );
}

#[test]
#[ignore = "slow: free-threaded builds with zig, tested under qemu"]
fn the_same_host_cpython_builds_the_gil_abi_beside_it() {
    common::host_python("3.13");
    let out = tempfile::tempdir().unwrap();
    let (stdout, _) = build(
        &example("cmakeproj"),
        out.path(),
        "cp313 cp313t",
        "cp313*-manylinux_aarch64",
    );
    let wheels = wheels_in(out.path());
    assert_eq!(wheels.len(), 2, "{wheels:?}");
    let (gil, free_threaded): (Vec<&PathBuf>, Vec<&PathBuf>) = wheels
        .iter()
        .partition(|wheel| wheel.to_string_lossy().contains("-cp313-cp313-"));
    assert_eq!((gil.len(), free_threaded.len()), (1, 1), "{wheels:?}");

    // scikit-build-core takes the ABI from sysconfig, CMake's FindPython from the
    // interpreter: each build has its own and they do not leak into each other.
    let (gil_module, gil_code) = extension_of(gil[0]);
    assert!(
        gil_module.ends_with(".cpython-313-aarch64-linux-gnu.so"),
        "{gil_module}"
    );
    let gil_imports = elf_imports(&gil_code);
    assert!(
        FREE_THREADED_IMPORTS
            .iter()
            .all(|name| !gil_imports.contains(*name)),
        "{gil_imports:?}"
    );
    let (free_threaded_module, free_threaded_code) = extension_of(free_threaded[0]);
    assert!(
        free_threaded_module.ends_with(".cpython-313t-aarch64-linux-gnu.so"),
        "{free_threaded_module}"
    );
    assert!(is_free_threaded_code(&elf_imports(&free_threaded_code)));
    // The GIL wheel is tested on Debian 13's CPython 3.13 as before.
    assert!(
        stdout
            .lines()
            .any(|line| line.starts_with("cp313-manylinux_aarch64") && line.contains("passed")),
        "{stdout}"
    );
}

/// A C extension that says it runs without the GIL (`Py_mod_gil`), as free-threading-ready
/// projects do, and a self-check that hammers its reference counting from eight threads.
fn gil_free_project(root: &Path) -> PathBuf {
    let source = r#"#include <Python.h>

static PyObject *numbers(PyObject *self, PyObject *count) {
    long n = PyLong_AsLong(count);
    if (n < 0 && PyErr_Occurred()) return NULL;
    PyObject *list = PyList_New(0);
    for (long i = 0; list != NULL && i < n; i++) {
        PyObject *item = PyLong_FromLong(i);
        if (item == NULL || PyList_Append(list, item) < 0) Py_CLEAR(list);
        Py_XDECREF(item);
    }
    return list;
}

static PyObject *built_free_threaded(PyObject *self, PyObject *unused) {
#ifdef Py_GIL_DISABLED
    Py_RETURN_TRUE;
#else
    Py_RETURN_FALSE;
#endif
}

static PyMethodDef methods[] = {
    {"numbers", numbers, METH_O, NULL},
    {"built_free_threaded", built_free_threaded, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot slots[] = {
#ifdef Py_GIL_DISABLED
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "gilfree._core", NULL, 0, methods, slots};

PyMODINIT_FUNC PyInit__core(void) { return PyModuleDef_Init(&module); }
"#;
    let selfcheck = r#"import sys
import sysconfig
import threading

from gilfree import _core

free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
assert _core.built_free_threaded() == free_threaded, "extension and interpreter ABIs differ"
if free_threaded:
    assert not sys._is_gil_enabled(), "importing the extension turned the GIL on"

totals = []

def work():
    totals.append(sum(sum(_core.numbers(100)) for _ in range(2000)))

threads = [threading.Thread(target=work) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
assert totals == [2000 * 4950] * 8, totals
print(f"gilfree: {sys.version.split()[0]}{sys.abiflags} free-threaded={free_threaded} "
      f"gil-enabled={getattr(sys, '_is_gil_enabled', lambda: True)()} 8 threads ok")
"#;
    common::setuptools_project(
        root,
        "gilfree",
        "from setuptools import Extension, setup\n\nsetup(packages=['gilfree'], ext_modules=[Extension('gilfree._core', ['gilfree/_core.c'])])\n",
        &[
            ("gilfree/_core.c".to_string(), source.to_string()),
            ("gilfree/selfcheck.py".to_string(), selfcheck.to_string()),
        ],
    )
}

#[test]
#[ignore = "slow: free-threaded builds with zig, tested under qemu"]
fn a_free_threaded_wheel_runs_without_the_gil_on_a_real_free_threaded_cpython_under_qemu() {
    common::host_python("3.13");
    let target_python = common::free_threaded_target_python();
    let root = tempfile::tempdir().unwrap();
    let project = gil_free_project(root.path());
    // As a user would: the free-threaded builds are tested on their own target CPython, the
    // GIL build on Debian 13's.
    let table = format!(
        "\n[tool.crosswheel]\npython = [\"cp313\", \"cp313t\"]\narchs = [\"manylinux_aarch64\"]\n\
         test-command = \"python -m gilfree.selfcheck\"\n\n\
         [[tool.crosswheel.overrides]]\nselect = \"cp313t-*\"\ntarget-python = {:?}\n",
        target_python.display().to_string()
    );
    let pyproject = project.join("pyproject.toml");
    let text = std::fs::read_to_string(&pyproject).unwrap() + &table;
    std::fs::write(&pyproject, text).unwrap();

    let out = tempfile::tempdir().unwrap();
    let (stdout, stderr) = build_ok(&project, out.path(), &[]);
    for identifier in ["cp313-manylinux_aarch64", "cp313t-manylinux_aarch64"] {
        assert!(
            stdout
                .lines()
                .any(|line| line.starts_with(identifier) && line.contains("passed (emulated)")),
            "{identifier}: {stdout}"
        );
    }
    let all = format!("{stdout}{stderr}");
    assert!(
        all.contains("t free-threaded=True gil-enabled=False 8 threads ok"),
        "the free-threaded wheel's own output: {all}"
    );
    assert!(
        all.contains(" free-threaded=False gil-enabled=True 8 threads ok"),
        "the GIL wheel's own output: {all}"
    );
}
