//! The catalogue's `openblas` with OpenBLAS's run-time kernel choice (DYNAMIC_ARCH): one
//! wheel, tested under qemu on two CPUs of its architecture, computes right on both and
//! reports the kernels of the CPU it runs on, as the scipy-openblas wheels do.
//!
//! Real parts: OpenBLAS 0.3.21 from Debian's orig tarball, built with the target's
//! toolchain (gcc for ppc64le), qemu-user with its CPU chosen by `qemu-cpu`, Debian's
//! CPython for the target. The first run builds OpenBLAS with every POWER kernel set it has
//! (minutes); later runs take it from the cache.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

const SOURCE: &str = r#"#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <cblas.h>

/* A (2x3) times B (3x2), row-major, the dot product of two vectors, and y += 2x: the
   level-3, level-1 and level-1 update kernels of whichever CPU OpenBLAS chose. */
static PyObject *compute(PyObject *self, PyObject *args) {
    double a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {7, 8, 9, 10, 11, 12}, c[4] = {0};
    double x[5] = {1, 2, 3, 4, 5}, y[5] = {5, 4, 3, 2, 1};
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 2, 2, 3, 1.0, a, 3, b, 2, 0.0, c, 2);
    double dot = cblas_ddot(5, x, 1, y, 1);
    cblas_daxpy(5, 2.0, x, 1, y, 1);
    return Py_BuildValue("((dddd)d(ddddd))", c[0], c[1], c[2], c[3], dot,
                         y[0], y[1], y[2], y[3], y[4]);
}

static PyObject *kernels(PyObject *self, PyObject *args) {
    return Py_BuildValue("(ss)", openblas_get_corename(), openblas_get_config());
}

static PyMethodDef methods[] = {
    {"compute", compute, METH_NOARGS, NULL},
    {"kernels", kernels, METH_NOARGS, NULL},
    {NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_blas", NULL, -1, methods};
PyMODINIT_FUNC PyInit__blas(void) { return PyModule_Create(&module); }
"#;

const CHECK: &str = r#"
from dynblas import _blas

product, dot, updated = _blas.compute()
assert product == (58.0, 64.0, 139.0, 154.0), product
assert dot == 35.0, dot
assert updated == (7.0, 8.0, 9.0, 10.0, 11.0), updated
core, config = _blas.kernels()
assert "DYNAMIC_ARCH" in config, config
print(f"openblas kernels: {core} ({config})")
"#;

fn dynblas_project(dir: &Path) -> PathBuf {
    let setup_py = "from setuptools import setup, Extension\n\
        setup(packages=['dynblas'], ext_modules=[Extension('dynblas._blas', \
        ['dynblas/_blas.c'], libraries=['openblas'])])\n";
    // The check lives in a folder of its own: run from the project root, Python would
    // import the source tree's `dynblas` (without the extension) instead of the wheel's.
    std::fs::create_dir_all(dir.join("dynblas/checks")).unwrap();
    let project = common::setuptools_project(
        dir,
        "dynblas",
        setup_py,
        &[
            ("dynblas/_blas.c".to_string(), SOURCE.to_string()),
            ("checks/check_blas.py".to_string(), CHECK.to_string()),
        ],
    );
    let pyproject = project.join("pyproject.toml");
    let mut text = std::fs::read_to_string(&pyproject).unwrap();
    text.push_str(
        "\n[tool.crosswheel]\ntarget-libraries = [\"openblas\"]\n\
         test-command = \"python {project}/checks/check_blas.py\"\n",
    );
    std::fs::write(&pyproject, text).unwrap();
    project
}

/// Builds and tests the project for `identifier` with qemu emulating `cpu`; returns the
/// kernels line the check printed.
fn kernels_under(project: &Path, identifier: &str, cpu: &str) -> String {
    let out = tempfile::tempdir().unwrap();
    let mut command = Command::new(common::crosswheel_bin());
    common::without_option_variables(&mut command);
    let output = command
        .arg("build")
        .arg(project)
        .args(["--only", identifier, "--require-tests", "-w"])
        .arg(out.path())
        .env("CROSSWHEEL_QEMU_CPU", cpu)
        .output()
        .expect("crosswheel runs");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{text}");
    text.lines()
        .find_map(|line| line.split_once("openblas kernels: ").map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("the check names OpenBLAS's kernels:\n{text}"))
        .to_string()
}

#[test]
#[ignore = "slow: OpenBLAS built from Debian's source with every POWER kernel, qemu"]
fn openblas_for_linux_ppc64le_picks_power8_or_power9_kernels_at_run_time_and_computes_right() {
    let dir = tempfile::tempdir().unwrap();
    let project = dynblas_project(dir.path());
    let on_power8 = kernels_under(&project, "cp311-manylinux_ppc64le", "power8");
    assert!(on_power8.starts_with("POWER8 "), "{on_power8}");
    let on_power9 = kernels_under(&project, "cp311-manylinux_ppc64le", "power9");
    assert!(on_power9.starts_with("POWER9 "), "{on_power9}");
}
