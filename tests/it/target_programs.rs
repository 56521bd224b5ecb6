//! Programs a cross build runs, and builds that must not pass for what they are not.
//!
//! The cross environment's `run-program` (CMake's CROSSCOMPILING_EMULATOR, meson's
//! exe_wrapper) runs the build python as it is and the target's programs under qemu-user
//! with the target's root; a macOS program cannot run here and is named. A platform build
//! whose extension failed and fell back to a wheel without it fails with the compiler's
//! error.
//! Needs zig, qemu-user (fetched into the cache when not on PATH) and network access on
//! the first run.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use crosswheel::stages::backend::BuildError;
use crosswheel::stages::crossenv::CrossEnv;

const UNAME_MACHINE: &str = "#include <stdio.h>\n#include <sys/utsname.h>\nint main(void) { struct utsname u; if (uname(&u) != 0) return 1; puts(u.machine); return 0; }\n";

/// Compiles the uname program with the environment's cross compiler.
fn target_program(env: &CrossEnv, dir: &Path) -> PathBuf {
    let source = dir.join("uname_machine.c");
    std::fs::write(&source, UNAME_MACHINE).unwrap();
    let program = dir.join("uname_machine");
    let status = Command::new(common::c_compiler(env))
        .arg(&source)
        .arg("-o")
        .arg(&program)
        .status()
        .expect("the cross compiler runs");
    assert!(status.success(), "compiling for {} failed", env.target);
    program
}

fn run_program(env: &CrossEnv, args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(&env.run_program)
        .args(args)
        .output()
        .expect("run-program runs")
}

#[test]
#[ignore = "slow: zig builds run under qemu"]
fn target_programs_run_under_qemu_and_report_the_targets_machine() {
    for (target, machine) in [("linux-aarch64", "aarch64"), ("linux-ppc64le", "ppc64le")] {
        let env = common::zig_cross_env(&common::distribution_python(), target);
        let dir = tempfile::tempdir().unwrap();
        let program = target_program(&env, dir.path());
        let output = run_program(&env, &[program.as_os_str()]);
        assert!(
            output.status.success(),
            "{target}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), machine);
    }
}

#[test]
#[ignore = "slow: zig builds run under qemu"]
fn the_build_python_runs_as_it_is() {
    let python = common::distribution_python();
    let env = common::zig_cross_env(&python, "linux-aarch64");
    let output = run_program(
        &env,
        &[
            python.executable.as_os_str(),
            "-c".as_ref(),
            "import platform; print(platform.machine())".as_ref(),
        ],
    );
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        std::env::consts::ARCH
    );
}

#[test]
#[ignore = "slow: zig builds run under qemu"]
fn a_macos_program_is_named_and_refused() {
    let env = common::zig_cross_env(&common::distribution_python(), "macos-arm64");
    let dir = tempfile::tempdir().unwrap();
    let program = target_program(&env, dir.path());
    let output = run_program(&env, &[program.as_os_str()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(126), "{stderr}");
    assert!(
        stderr.contains(&program.display().to_string())
            && stderr.contains("macos-arm64 program")
            && stderr.contains("cannot run"),
        "{stderr}"
    );
}

/// A setuptools project whose optional extension fails to compile, falling back to pure
/// Python modules — the pattern real projects use where cibuildwheel's `CIBUILDWHEEL` is
/// unset. setuptools still tags the wheel for the platform.
fn optional_extension_project(dir: &Path) {
    std::fs::create_dir_all(dir.join("fallback")).unwrap();
    std::fs::write(dir.join("fallback/__init__.py"), "").unwrap();
    std::fs::write(
        dir.join("fallback/_speedups.c"),
        "#error the speedups need a feature this platform lacks\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("pyproject.toml"),
        "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"fallback\"\nversion = \"1.0\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("setup.py"),
        r#"from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class optional_build_ext(build_ext):
    def run(self):
        try:
            super().run()
        except Exception as error:
            print(f"building the speedups failed ({error}); installing the pure Python version")
            self.extensions = []


setup(
    packages=["fallback"],
    ext_modules=[Extension("fallback._speedups", ["fallback/_speedups.c"])],
    cmdclass={"build_ext": optional_build_ext},
)
"#,
    )
    .unwrap();
}

#[test]
#[ignore = "slow: zig builds run under qemu"]
fn a_build_that_falls_back_to_a_wheel_without_its_extension_fails_with_the_compiler_error() {
    let python = common::distribution_python();
    let env = common::zig_cross_env(&python, "linux-aarch64");
    let project = tempfile::tempdir().unwrap();
    optional_extension_project(project.path());
    let out = tempfile::tempdir().unwrap();
    let error = common::build_in(&env, &python, project.path(), out.path())
        .expect_err("a wheel without its extension is not a linux-aarch64 build");
    assert!(matches!(error, BuildError::NoExtension { .. }), "{error}");
    let message = error.to_string();
    assert!(
        message.contains("without its extensions")
            && message.contains("holds no compiled module")
            && message.contains("error: the speedups need a feature this platform lacks"),
        "{message}"
    );
    assert!(
        common::wheel_names_in(out.path()).is_empty(),
        "the wheel must not be left in the output folder"
    );
}

/// Two extensions; `_fast` does not compile for ppc64le, and the project's build_ext
/// tolerates that, as projects with optional accelerators do.
fn optional_accelerator_project(dir: &Path) {
    std::fs::create_dir_all(dir.join("accel")).unwrap();
    std::fs::write(dir.join("accel/__init__.py"), "").unwrap();
    let module = |name: &str, body: &str| {
        format!(
            "#include <Python.h>\n{body}\nstatic struct PyModuleDef m = {{PyModuleDef_HEAD_INIT, \"accel.{name}\", NULL, -1, NULL}};\nPyMODINIT_FUNC PyInit_{name}(void) {{ return PyModule_Create(&m); }}\n"
        )
    };
    std::fs::write(dir.join("accel/_core.c"), module("_core", "")).unwrap();
    std::fs::write(
        dir.join("accel/_fast.c"),
        module(
            "_fast",
            "#ifdef __powerpc64__\n#error no vector kernels for this architecture\n#endif",
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("pyproject.toml"),
        "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"accel\"\nversion = \"1.0\"\n\n[tool.crosswheel]\npython = [\"cp311\"]\narchs = [\"manylinux_aarch64\", \"manylinux_ppc64le\"]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("setup.py"),
        r#"from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class optional_build_ext(build_ext):
    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as error:
            print(f"{ext.name} not built ({error}); using the pure Python fallback")


setup(
    packages=["accel"],
    ext_modules=[Extension(f"accel.{name}", [f"accel/{name}.c"]) for name in ("_core", "_fast")],
    cmdclass={"build_ext": optional_build_ext},
)
"#,
    )
    .unwrap();
}

#[test]
#[ignore = "slow: zig builds run under qemu"]
fn a_wheel_without_an_extension_the_other_linux_wheel_has_is_failed_and_kept_apart() {
    let project = tempfile::tempdir().unwrap();
    optional_accelerator_project(project.path());
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(common::crosswheel_bin())
        .arg("build")
        .arg(project.path())
        .arg("--output-dir")
        .arg(out.path())
        .output()
        .expect("crosswheel runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("lacks `accel/_fast` that the cp311-manylinux_aarch64 wheel has"),
        "{stdout}\n{stderr}"
    );
    let wheels = common::wheel_names_in(out.path());
    assert_eq!(wheels.len(), 1, "{wheels:?}");
    assert!(wheels[0].contains("aarch64"), "{wheels:?}");
    assert!(
        common::failed_folder(&format!("{stdout}{stderr}"), "cp311-manylinux_ppc64le").is_dir()
    );
}
