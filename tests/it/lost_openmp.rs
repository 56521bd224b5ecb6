//! A build that asks for OpenMP and goes without it says so in the summary: its wheel
//! passes every check, so the build log is the only witness (issue: OpenMP silently lost).

use crate::common;

#[test]
#[ignore = "slow: a meson-python build for aarch64 (zig)"]
fn a_build_without_the_openmp_it_asked_for_is_a_warning_in_the_summary() {
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
            (
                "src/_omp.c",
                "#include <Python.h>\n\
                 static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, \"_omp\", NULL, -1, NULL};\n\
                 PyMODINIT_FUNC PyInit__omp(void) { return PyModule_Create(&module); }\n",
            ),
            (
                "pyproject.toml",
                "[build-system]\nrequires = [\"meson-python>=0.15\"]\nbuild-backend = \"mesonpy\"\n\
                 [project]\nname = \"ompproj\"\nversion = \"0.1.0\"\n\
                 [tool.crosswheel]\npython = [\"cp311\"]\narchs = [\"manylinux_aarch64\"]\n",
            ),
        ],
    );
    let out = tempfile::tempdir().unwrap();
    let stdout = common::build_succeeds(project.path(), out.path());
    let warning = stdout
        .lines()
        .find(|line| line.trim_start().starts_with("warning: "))
        .unwrap_or_else(|| panic!("no warning in the summary:\n{stdout}"));
    assert!(
        warning.contains("the build asked for OpenMP and built without it"),
        "{warning}"
    );
}
