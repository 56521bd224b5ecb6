//! OpenBLAS from the catalogue where no wheel of it is used: linux-ppc64le, asked for the
//! way a cibuildwheel configuration asks (`yum install -y openblas-devel`). Its POWER
//! kernels are GNU-as assembly LLVM's assembler refuses, so the build goes through the
//! target's GNU assembler behind zig; and it is built with OpenBLAS's run-time kernel choice
//! (DYNAMIC_ARCH), so one wheel computes with POWER8's, POWER9's and POWER10's kernels, each
//! on the CPU qemu emulates for it.
//!
//! The check is real BLAS work: double and single matrix products and a long dot product,
//! on integer-valued data whose exact results the check computes itself, so any wrong
//! kernel shows as a non-zero error.
//!
//! Real parts: Debian's OpenBLAS orig tarball, zig, the target's GNU as, qemu-user with
//! three POWER CPU models, Debian's CPython for ppc64le.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

const SOURCE: &str = r#"#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <cblas.h>

enum { N = 160 };
static double da[N * N], db[N * N], dc[N * N];
static float sa[N * N], sb[N * N], sc[N * N];

static void fill(void) {
    for (int i = 0; i < N * N; i++) {
        da[i] = sa[i] = (float)((i * 7) % 13) - 6;
        db[i] = sb[i] = (float)((i * 5) % 11) - 5;
    }
}

/* The largest difference between OpenBLAS's product and the exact one (integer data,
   small enough for every sum to be exact in single precision too). */
static PyObject *gemm_errors(PyObject *self, PyObject *args) {
    fill();
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, N, N, 1.0, da, N, db, N, 0.0, dc, N);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, N, N, 1.0f, sa, N, sb, N, 0.0f, sc, N);
    double worst_d = 0, worst_s = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double exact = 0;
            for (int k = 0; k < N; k++) exact += da[i * N + k] * db[j * N + k];
            worst_d = fmax(worst_d, fabs(exact - dc[i * N + j]));
            worst_s = fmax(worst_s, fabs(exact - (double)sc[i * N + j]));
        }
    return Py_BuildValue("(dd)", worst_d, worst_s);
}

static PyObject *dot(PyObject *self, PyObject *args) {
    fill();
    return PyFloat_FromDouble(cblas_ddot(N * N, da, 1, db, 1));
}

static PyObject *core(PyObject *self, PyObject *args) {
    return Py_BuildValue("(ss)", openblas_get_corename(), openblas_get_config());
}

static PyMethodDef methods[] = {
    {"gemm_errors", gemm_errors, METH_NOARGS, NULL},
    {"dot", dot, METH_NOARGS, NULL},
    {"core", core, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_blascheck", NULL, -1, methods};
PyMODINIT_FUNC PyInit__blascheck(void) { return PyModule_Create(&module); }
"#;

const CHECK: &str = r#"import os, sys
if len(sys.argv) > 1:
    # OpenBLAS reads it when the library loads, which the import below does.
    os.environ["OPENBLAS_CORETYPE"] = sys.argv[1]
from blascheck import _blascheck as b
n = 160
exact = sum(float((i * 7) % 13 - 6) * float((i * 5) % 11 - 5) for i in range(n * n))
assert b.dot() == exact, (b.dot(), exact)
assert b.gemm_errors() == (0.0, 0.0), b.gemm_errors()
core, config = b.core()
assert "DYNAMIC_ARCH" in config, config
print(f"openblas core: {core}; dgemm, sgemm and ddot exact")
"#;

fn blascheck_project(dir: &Path) -> PathBuf {
    let setup_py = "from setuptools import setup, Extension\n\
        setup(packages=['blascheck'], ext_modules=[Extension('blascheck._blascheck', \
        ['blascheck/_blascheck.c'], libraries=['openblas'])])\n";
    // The check lives in a folder of its own: run from the project root, Python would
    // import the source tree's `blascheck` (without the extension) instead of the wheel's.
    std::fs::create_dir_all(dir.join("blascheck/checks")).unwrap();
    let project = common::setuptools_project(
        dir,
        "blascheck",
        setup_py,
        &[
            ("blascheck/_blascheck.c".to_string(), SOURCE.to_string()),
            ("checks/check_blas.py".to_string(), CHECK.to_string()),
        ],
    );
    let pyproject = project.join("pyproject.toml");
    let mut text = std::fs::read_to_string(&pyproject).unwrap();
    text.push_str(
        "\n[tool.crosswheel]\nbefore-all = \"yum install -y openblas-devel\"\n\
         test-command = \"python {project}/checks/check_blas.py\"\n",
    );
    std::fs::write(&pyproject, text).unwrap();
    project
}

fn output_text(output: &std::process::Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
#[ignore = "slow: OpenBLAS with three POWER kernel sets from Debian's source, zig, GNU as, qemu"]
fn openblas_for_ppc64le_picks_power8_power9_and_power10_kernels_and_computes_exactly_on_each() {
    let dir = tempfile::tempdir().unwrap();
    let project = blascheck_project(dir.path());
    let out = dir.path().join("wheelhouse");
    let mut command = Command::new(common::crosswheel_bin());
    common::without_option_variables(&mut command);
    let output = command
        .current_dir(dir.path())
        .arg("build")
        .arg(&project)
        .args(["--only", "cp311-manylinux_ppc64le", "--require-tests", "-w"])
        .arg(&out)
        .output()
        .expect("crosswheel runs");
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("dgemm, sgemm and ddot exact"), "{text}");
    if text.contains("openblas 0.3.21 built in") {
        assert!(
            text.contains(
                "openblas: linux-ppc64le: -fno-integrated-as: assembled by powerpc64le-linux-gnu-as"
            ),
            "OpenBLAS's POWER kernels went through the target's GNU assembler:\n{text}"
        );
    } else {
        assert!(text.contains("openblas 0.3.21 from the cache"), "{text}");
    }
    let names = common::wheel_names_in(&out);
    assert_eq!(names.len(), 1, "{names:?}");
    // Built with zig against the policy's glibc: the vendored OpenBLAS keeps the lowest tag.
    assert!(names[0].contains("manylinux_2_17_ppc64le"), "{names:?}");
    let wheel = out.join(&names[0]);
    // OpenBLAS tells POWER10 by the kernel's HWCAP2 bits (ISA 3.1, MMA), which qemu-user
    // sets for its CPU model; POWER9 it tells by AT_PLATFORM, which qemu-user leaves out,
    // so on an emulated POWER9 OpenBLAS falls back to POWER8's kernels unless told.
    for (cpu, forced, core) in [
        ("power8", "", "POWER8"),
        ("power9", " POWER9", "POWER9"),
        ("power10", "", "POWER10"),
    ] {
        let mut command = Command::new(common::crosswheel_bin());
        common::without_option_variables(&mut command);
        let output = command
            .current_dir(dir.path())
            .arg("test")
            .arg(&wheel)
            .arg("--project")
            .arg(&project)
            .arg("--test-command")
            .arg(format!("python {{project}}/checks/check_blas.py{forced}"))
            .args(["--qemu-cpu", cpu])
            .output()
            .expect("crosswheel runs");
        let text = output_text(&output);
        assert!(output.status.success(), "{cpu}: {text}");
        assert!(
            text.contains(&format!(
                "openblas core: {core}; dgemm, sgemm and ddot exact"
            )),
            "{cpu}: {text}"
        );
    }
}
