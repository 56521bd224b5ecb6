//! A build's Python program that imports the extension module the build just compiled (a
//! stub generator: nanobind's `nanobind_add_stub`, pybind11-stubgen) runs again in the
//! target's CPython under qemu, where the module loads, and writes what it would write on
//! the target. For macOS, where nothing here loads the module, the import stops in one
//! line that says so. The build's own driver (setup.py, pip, meson) never restarts.
//! Needs zig, qemu-user and a Debian target tree (fetched into the cache on the first run).

use crate::common;

use std::path::Path;
use std::process::Command;

const SETUP_PY: &str = r#"import os, subprocess, sys
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class build_ext_with_stubs(build_ext):
    """Builds the extension, then writes its stub as a stub generator does: in a program
    of its own that imports the module just built."""

    def run(self):
        super().run()
        folder = os.path.join(self.build_lib, "stubbed")
        subprocess.check_call([sys.executable, os.path.join("tools", "stub.py"), folder])


setup(ext_modules=[Extension("stubbed._mod", ["src/mod.c"])],
      cmdclass={"build_ext": build_ext_with_stubs})
"#;

const STUB_PY: &str = r##"import importlib, os, platform, sys

folder = sys.argv[1]
sys.path.insert(0, folder)
module = importlib.import_module("_mod")
with open(os.path.join(folder, "_mod.pyi"), "w") as stub:
    stub.write(f"# written in a {platform.machine()} interpreter\n")
    for name in sorted(name for name in dir(module) if not name.startswith("_")):
        stub.write(f"def {name}() -> int: ...  # {getattr(module, name).__doc__}\n")
"##;

const MOD_C: &str = r#"#include <Python.h>

static PyObject *answer(PyObject *self, PyObject *args) { return PyLong_FromLong(42); }

static PyMethodDef methods[] = {
    {"answer", answer, METH_NOARGS, "answer() -> int: the answer."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "stubbed._mod", NULL, -1, methods};

PyMODINIT_FUNC PyInit__mod(void) { return PyModule_Create(&module); }
"#;

/// A setuptools project whose build writes its extension's stub by importing it.
fn stubbed_project(root: &Path) -> std::path::PathBuf {
    let project = root.join("stubbed");
    common::write_project(
        &project,
        &[
            (
                "pyproject.toml",
                "[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"setuptools.build_meta\"\n\n\
                 [project]\nname = \"stubbed\"\nversion = \"1.0\"\n\n\
                 [tool.crosswheel]\npython = [\"cp311\"]\n\
                 test-command = \"python -c \\\"import stubbed._mod as m; assert m.answer() == 42\\\"\"\n",
            ),
            ("setup.py", SETUP_PY),
            ("tools/stub.py", STUB_PY),
            ("src/mod.c", MOD_C),
            ("stubbed/__init__.py", ""),
        ],
    );
    project
}

fn build(project: &Path, out: &Path, archs: &str) -> (bool, String, String) {
    let output = Command::new(common::crosswheel_bin())
        .arg("build")
        .arg(project)
        .arg("-w")
        .arg(out)
        .args(["--archs", archs])
        .output()
        .expect("run crosswheel build");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
#[ignore = "slow: zig builds, the target's CPython runs under qemu"]
fn a_build_step_that_imports_the_extension_it_built_runs_in_the_targets_cpython() {
    let dir = tempfile::tempdir().unwrap();
    let project = stubbed_project(dir.path());
    let out = dir.path().join("wheelhouse");
    // Big-endian s390x too: the module and its interpreter are the target's.
    let (ok, stdout, stderr) = build(&project, &out, "manylinux_aarch64 manylinux_s390x");
    assert!(ok, "{stdout}\n{stderr}");
    let wheels = common::wheel_names_in(&out);
    assert_eq!(wheels.len(), 2, "{wheels:?}");
    for (wheel, machine) in wheels.iter().zip(["aarch64", "s390x"]) {
        assert!(wheel.contains(machine), "{wheel}");
        let unpacked = dir.path().join(machine);
        common::unzip_to(&out.join(wheel), &unpacked);
        let stub = std::fs::read_to_string(unpacked.join("stubbed/_mod.pyi"))
            .unwrap_or_else(|error| panic!("{wheel} has no stub: {error}"));
        assert_eq!(
            stub,
            format!(
                "# written in a {machine} interpreter\n\
                 def answer() -> int: ...  # answer() -> int: the answer.\n"
            )
        );
    }
}

#[test]
#[ignore = "slow: zig builds the extension for macOS"]
fn for_macos_the_import_stops_the_build_in_one_line_that_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let project = stubbed_project(dir.path());
    let out = dir.path().join("wheelhouse");
    let (ok, stdout, stderr) = build(&project, &out, "arm64");
    assert!(!ok, "{stdout}\n{stderr}");
    let first_error = stdout
        .lines()
        .find_map(|line| line.trim().strip_prefix("first error: "))
        .unwrap_or_else(|| panic!("no first error in the summary:\n{stdout}\n{stderr}"));
    assert!(
        first_error.starts_with("ImportError: crosswheel: the build imports _mod (")
            && first_error.contains("_mod.cpython-311-darwin.so), a module built for macos-arm64: no interpreter on this Linux build machine loads a macOS module"),
        "{first_error}"
    );
}

/// The build's own driver keeps the build machine's answer: a setup.py that tries a
/// freshly built target module and falls back when it does not load goes on as written.
/// Any other program restarts in the target's interpreter, where this module (a header
/// and nothing else) fails to load as the target's error.
#[test]
#[ignore = "slow: the target's CPython runs under qemu"]
fn only_programs_other_than_the_builds_driver_restart_in_the_targets_interpreter() {
    let python = common::distribution_python();
    let env = common::zig_cross_env(&python, "linux-aarch64");
    let dir = tempfile::tempdir().unwrap();
    // An ELF header for aarch64 (e_machine 183), little-endian, 64-bit.
    let mut header = b"\x7fELF\x02\x01\x01".to_vec();
    header.resize(18, 0);
    header.extend_from_slice(&183u16.to_le_bytes());
    header.resize(64, 0);
    let suffix = crosswheel::target::Target::parse("linux-aarch64")
        .unwrap()
        .ext_suffix(python.target_python());
    std::fs::write(dir.path().join(format!("_mod{suffix}")), &header).unwrap();
    // Which interpreter runs it: the build python (named by the first argument) or another.
    let script = "import os, sys\n\
                  here = os.path.realpath(sys.executable) == os.path.realpath(sys.argv[1])\n\
                  try:\n    import _mod\nexcept ImportError as error:\n    \
                  print('fallback', 'build python' if here else 'target', type(error).__name__)\n";
    for program in ["setup.py", "stubgen.py"] {
        std::fs::write(dir.path().join(program), script).unwrap();
    }
    // The program's own arguments (`-m _mod`, as nanobind's stubgen takes) name no module
    // the interpreter runs: the program is still the script.
    let run = |program: &str| {
        let output = Command::new(&python.executable)
            .arg(program)
            .arg(&python.executable)
            .args(["-m", "_mod"])
            .current_dir(dir.path())
            .envs(env.env_vars())
            .output()
            .expect("the build python runs");
        (
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (stdout, stderr) = run("setup.py");
    assert_eq!(
        stdout, "fallback build python ModuleNotFoundError\n",
        "{stderr}"
    );
    assert!(!stderr.contains("crosswheel:"), "{stderr}");
    let (stdout, stderr) = run("stubgen.py");
    assert_eq!(stdout, "fallback target ImportError\n", "{stderr}");
    assert_eq!(
        stderr.matches("crosswheel: stubgen imports ").count(),
        1,
        "one line says where the program runs: {stderr}"
    );
    assert!(
        stderr.contains("built for linux-aarch64: it runs again, from its start, in the linux-aarch64 interpreter under qemu"),
        "{stderr}"
    );
}
