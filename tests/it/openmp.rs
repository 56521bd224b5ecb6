//! OpenMP for every target (issue: OpenMP silently lost). A project that asks for OpenMP
//! gets LLVM's runtime, built for the target from Debian's source (glibc, musl, macOS),
//! and its wheel vendors it; its parallel code runs on several threads under qemu. A build that asks for OpenMP
//! where crosswheel does not read it, and goes without, says so in the summary: its wheel
//! passes every check, so the build log is the only witness.

use std::path::Path;

use crate::common;

/// A module whose `threads()` is the size of an OpenMP team and `total(n)` is the sum of
/// 0..n as a parallel reduction; without OpenMP, `threads()` is 1.
const MODULE: &str = r#"#include <Python.h>
#ifdef _OPENMP
#include <omp.h>
#endif
static PyObject *threads(PyObject *self, PyObject *args) {
    int n = 1;
#ifdef _OPENMP
#pragma omp parallel
    {
#pragma omp single
        n = omp_get_num_threads();
    }
#endif
    return PyLong_FromLong(n);
}
static PyObject *total(PyObject *self, PyObject *arg) {
    long long limit = PyLong_AsLongLong(arg), sum = 0;
#pragma omp parallel for reduction(+:sum)
    for (long long i = 0; i < limit; i++) sum += i;
    return PyLong_FromLongLong(sum);
}
static PyMethodDef methods[] = {
    {"threads", threads, METH_NOARGS, NULL},
    {"total", total, METH_O, NULL},
    {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_omp", NULL, -1, methods};
PyMODINIT_FUNC PyInit__omp(void) { return PyModule_Create(&module); }
"#;

/// The crosswheel table of a project built for `archs` whose test runs the module on
/// `threads` threads under qemu.
fn crosswheel_table(archs: &[&str], threads: u32) -> String {
    let archs: Vec<String> = archs.iter().map(|arch| format!("\"{arch}\"")).collect();
    format!(
        "[tool.crosswheel]\npython = [\"cp311\"]\narchs = [{}]\n\
         test-command = \"OMP_NUM_THREADS={threads} python -c \\\"import _omp; \
         assert _omp.threads() == {threads}, _omp.threads(); \
         assert _omp.total(1000000) == 499999500000\\\"\"\n",
        archs.join(", ")
    )
}

/// The vendored files (in `*.libs/` or `*.dylibs/`) of the wheel in `out` whose name
/// holds `tag`.
fn vendored_libraries(out: &Path, tag: &str) -> Vec<String> {
    let wheels: Vec<String> = common::wheel_names_in(out)
        .into_iter()
        .filter(|name| name.contains(tag))
        .collect();
    assert_eq!(wheels.len(), 1, "one {tag} wheel: {wheels:?}");
    let unpacked = tempfile::tempdir().unwrap();
    common::unzip_to(&out.join(&wheels[0]), unpacked.path());
    let mut found = Vec::new();
    for entry in std::fs::read_dir(unpacked.path()).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".libs") || name.ends_with(".dylibs") {
            for lib in std::fs::read_dir(entry.path()).unwrap().flatten() {
                found.push(lib.file_name().to_string_lossy().into_owned());
            }
        }
    }
    found
}

#[test]
#[ignore = "slow: LLVM's OpenMP runtime and a meson-python build for three targets (zig), run under qemu"]
fn a_meson_openmp_dependency_gets_llvms_runtime_on_glibc_musl_and_macos() {
    let project = tempfile::tempdir().unwrap();
    common::write_project(
        project.path(),
        &[
            (
                "meson.build",
                "project('ompproj', 'c', version: '0.1.0')\n\
                 py = import('python').find_installation(pure: false)\n\
                 omp = dependency('openmp', required: false)\n\
                 py.extension_module('_omp', 'src/_omp.c', dependencies: omp, install: true)\n",
            ),
            ("src/_omp.c", MODULE),
            (
                "pyproject.toml",
                &format!(
                    "[build-system]\nrequires = [\"meson-python>=0.15\"]\nbuild-backend = \"mesonpy\"\n\
                     [project]\nname = \"ompproj\"\nversion = \"0.1.0\"\n{}",
                    crosswheel_table(&["linux-aarch64", "musllinux-aarch64", "macos-arm64"], 4)
                ),
            ),
        ],
    );
    let out = tempfile::tempdir().unwrap();
    let stdout = common::build_succeeds(project.path(), out.path());
    // Both Linux wheels ran on four threads; the macOS one is checked statically.
    assert_eq!(stdout.matches("passed (emulated)").count(), 2, "{stdout}");
    assert!(!stdout.contains("warning: "), "{stdout}");
    for tag in ["manylinux_2_17_aarch64", "musllinux_1_2_aarch64"] {
        let vendored = vendored_libraries(out.path(), tag);
        assert!(
            vendored.iter().any(|lib| lib.starts_with("libomp-")),
            "{tag}: {vendored:?}"
        );
    }
    // As delocate leaves it: in the package's .dylibs folder, under its own name.
    let macos = vendored_libraries(out.path(), "macosx_11_0_arm64");
    assert_eq!(macos, ["libomp.dylib"]);
}

/// A scikit-build-core project of the module whose CMakeLists.txt has `before` ahead of
/// the module's target and `after` behind it, with `files` beside it and `table` as its
/// crosswheel configuration.
fn cmake_project(
    before: &str,
    after: &str,
    files: &[(&str, &str)],
    table: &str,
) -> tempfile::TempDir {
    let project = tempfile::tempdir().unwrap();
    let cmake = format!(
        "cmake_minimum_required(VERSION 3.18)\nproject(ompcmake LANGUAGES C)\n\
         find_package(Python COMPONENTS Interpreter Development.Module REQUIRED)\n{before}\
         python_add_library(_omp MODULE src/_omp.c WITH_SOABI)\n{after}\
         install(TARGETS _omp DESTINATION .)\n"
    );
    let pyproject = format!(
        "[build-system]\nrequires = [\"scikit-build-core>=0.10\"]\n\
         build-backend = \"scikit_build_core.build\"\n\
         [project]\nname = \"ompcmake\"\nversion = \"0.1.0\"\n{table}"
    );
    let mut all = vec![
        ("CMakeLists.txt", cmake.as_str()),
        ("src/_omp.c", MODULE),
        ("pyproject.toml", pyproject.as_str()),
    ];
    all.extend_from_slice(files);
    common::write_project(project.path(), &all);
    project
}

#[test]
#[ignore = "slow: LLVM's OpenMP runtime and a scikit-build-core build for s390x (zig), run under qemu"]
fn cmakes_find_openmp_finds_llvms_runtime_for_big_endian_s390x() {
    let project = cmake_project(
        "find_package(OpenMP REQUIRED)\n",
        "target_link_libraries(_omp PRIVATE OpenMP::OpenMP_C)\n",
        &[],
        &crosswheel_table(&["manylinux_s390x"], 3),
    );
    let out = tempfile::tempdir().unwrap();
    let stdout = common::build_succeeds(project.path(), out.path());
    assert!(stdout.contains("passed (emulated)"), "{stdout}");
    assert!(stdout.contains("manylinux_2_17_s390x"), "{stdout}");
    let vendored = vendored_libraries(out.path(), "manylinux_2_17_s390x");
    assert!(
        vendored.iter().any(|lib| lib.starts_with("libomp-")),
        "{vendored:?}"
    );
}

#[test]
#[ignore = "slow: a scikit-build-core build for aarch64 (zig)"]
fn openmp_asked_for_where_crosswheel_does_not_read_is_a_warning_naming_the_remedy() {
    // find_package(OpenMP) in a CMake module the top file includes: crosswheel reads
    // CMakeLists.txt files only, so the build gets no runtime and CMake goes without.
    let project = cmake_project(
        "include(cmake/parallel.cmake)\n",
        "if(OpenMP_C_FOUND)\n  target_link_libraries(_omp PRIVATE OpenMP::OpenMP_C)\nendif()\n",
        &[("cmake/parallel.cmake", "find_package(OpenMP)\n")],
        "[tool.crosswheel]\npython = [\"cp311\"]\narchs = [\"manylinux_aarch64\"]\n",
    );
    let out = tempfile::tempdir().unwrap();
    let stdout = common::build_succeeds(project.path(), out.path());
    let warning = stdout
        .lines()
        .find(|line| line.trim_start().starts_with("warning: "))
        .unwrap_or_else(|| panic!("no warning in the summary:\n{stdout}"));
    assert!(
        warning.contains("the build asked for OpenMP and built without it")
            && warning.contains("target-libraries = [\"libomp\"]"),
        "{warning}"
    );
}
