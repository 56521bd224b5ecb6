//! OpenBLAS from the catalogue, asked for the way a cibuildwheel configuration asks
//! (`yum install -y openblas-devel`), built with OpenBLAS's run-time kernel choice
//! (DYNAMIC_ARCH): one wheel computes with each CPU's kernels, on the CPU qemu emulates for
//! it. linux-ppc64le: POWER8, POWER9 and POWER10, whose kernels are GNU-as assembly LLVM's
//! assembler refuses, so the build goes through the target's GNU assembler behind zig.
//! linux-aarch64: Cortex-A72 and Neoverse N1, and ARMV8's for the CPUs left out.
//!
//! The check is real BLAS and LAPACK work: double and single matrix products and a long dot
//! product, on integer-valued data whose exact results the check computes itself, so any
//! wrong kernel shows as a non-zero error; and a linear solve and a matrix inverse through
//! LAPACK's Fortran names (OpenBLAS's own getrf, the C LAPACK's getri), no Fortran anywhere.
//!
//! Real parts: Debian's OpenBLAS orig tarball, the C LAPACK sources from the package index,
//! zig, the target's GNU as, qemu-user with three CPU models per target, Debian's CPythons.

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

/* LAPACK by its Fortran names, as numpy and scipy call it: dgesv (OpenBLAS's own getrf
   and getrs) and dgetri (netlib's, from the C LAPACK), on a diagonally dominant integer
   matrix. Returns the largest error of the solution and of A times its inverse. */
extern void dgesv_(int *n, int *nrhs, double *a, int *lda, int *ipiv, double *b, int *ldb, int *info);
extern void dgetrf_(int *m, int *n, double *a, int *lda, int *ipiv, int *info);
extern void dgetri_(int *n, double *a, int *lda, int *ipiv, double *work, int *lwork, int *info);

enum { M = 48 };
static PyObject *lapack_errors(PyObject *self, PyObject *args) {
    static double a[M * M], lu[M * M], inverse[M * M], x[M], work[M * 64];
    int ipiv[M], n = M, one = 1, lwork = M * 64, info = 0;
    for (int j = 0; j < M; j++)
        for (int i = 0; i < M; i++)
            a[j * M + i] = i == j ? 4.0 * M : (double)((i * 3 + j * 5) % 7) - 3;
    for (int i = 0; i < M; i++) {
        x[i] = 0;
        for (int j = 0; j < M; j++) x[i] += a[j * M + i] * (double)(j % 5 - 2);
    }
    for (int k = 0; k < M * M; k++) lu[k] = a[k];
    dgesv_(&n, &one, lu, &n, ipiv, x, &n, &info);
    if (info != 0) return PyErr_Format(PyExc_RuntimeError, "dgesv info %d", info);
    double worst_solve = 0, worst_inverse = 0;
    for (int i = 0; i < M; i++) worst_solve = fmax(worst_solve, fabs(x[i] - (double)(i % 5 - 2)));
    for (int k = 0; k < M * M; k++) inverse[k] = a[k];
    dgetrf_(&n, &n, inverse, &n, ipiv, &info);
    if (info == 0) dgetri_(&n, inverse, &n, ipiv, work, &lwork, &info);
    if (info != 0) return PyErr_Format(PyExc_RuntimeError, "dgetrf/dgetri info %d", info);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < M; j++) {
            double sum = 0;
            for (int k = 0; k < M; k++) sum += a[k * M + i] * inverse[j * M + k];
            worst_inverse = fmax(worst_inverse, fabs(sum - (i == j ? 1.0 : 0.0)));
        }
    return Py_BuildValue("(dd)", worst_solve, worst_inverse);
}

static PyObject *core(PyObject *self, PyObject *args) {
    return Py_BuildValue("(ss)", openblas_get_corename(), openblas_get_config());
}

static PyMethodDef methods[] = {
    {"gemm_errors", gemm_errors, METH_NOARGS, NULL},
    {"dot", dot, METH_NOARGS, NULL},
    {"lapack_errors", lapack_errors, METH_NOARGS, NULL},
    {"core", core, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_blascheck", NULL, -1, methods};
PyMODINIT_FUNC PyInit__blascheck(void) { return PyModule_Create(&module); }
"#;

const CHECK: &str = r#"from blascheck import _blascheck as b
n = 160
exact = sum(float((i * 7) % 13 - 6) * float((i * 5) % 11 - 5) for i in range(n * n))
assert b.dot() == exact, (b.dot(), exact)
assert b.gemm_errors() == (0.0, 0.0), b.gemm_errors()
solve, inverse = b.lapack_errors()
assert solve < 1e-12 and inverse < 1e-12, (solve, inverse)
core, config = b.core()
assert "DYNAMIC_ARCH" in config, config
print(f"openblas core: {core}; dgemm, sgemm and ddot exact; dgesv and dgetri right")
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

/// Builds blascheck for `identifier` in `dir` with the catalogue's OpenBLAS (its tests
/// required); returns the project, the one wheel and the build's output.
fn build_blascheck(dir: &Path, identifier: &str) -> (PathBuf, PathBuf, String) {
    let project = blascheck_project(dir);
    let out = dir.join("wheelhouse");
    let mut command = Command::new(common::crosswheel_bin());
    common::without_option_variables(&mut command);
    let output = command
        .current_dir(dir)
        .arg("build")
        .arg(&project)
        .args(["--only", identifier, "--require-tests", "-w"])
        .arg(&out)
        .output()
        .expect("crosswheel runs");
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    let names = common::wheel_names_in(&out);
    assert_eq!(names.len(), 1, "{names:?}");
    (project, out.join(&names[0]), text)
}

/// Builds blascheck for `identifier` with the catalogue's OpenBLAS, then tests the one wheel
/// on each qemu CPU of `cpus`, where OpenBLAS must pick the kernels named beside it and
/// compute exactly with them. Returns the build's output.
fn blascheck_computes_on_each_cpu(identifier: &str, tag: &str, cpus: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let (project, wheel, text) = build_blascheck(dir.path(), identifier);
    assert!(
        text.contains("dgemm, sgemm and ddot exact; dgesv and dgetri right"),
        "{text}"
    );
    assert!(
        text.contains("openblas 0.3.21 built in")
            || text.contains("openblas 0.3.21 from the cache"),
        "{text}"
    );
    // Built with zig against the policy's glibc: the vendored OpenBLAS keeps the lowest tag.
    assert!(wheel.to_string_lossy().contains(tag), "{}", wheel.display());
    for (cpu, core) in cpus {
        let mut command = Command::new(common::crosswheel_bin());
        common::without_option_variables(&mut command);
        let output = command
            .current_dir(dir.path())
            .arg("test")
            .arg(&wheel)
            .arg("--project")
            .arg(&project)
            .args([
                "--test-command",
                "python {project}/checks/check_blas.py",
                "--qemu-cpu",
                cpu,
            ])
            .output()
            .expect("crosswheel runs");
        let text = output_text(&output);
        assert!(output.status.success(), "{cpu}: {text}");
        assert!(
            text.contains(&format!(
                "openblas core: {core}; dgemm, sgemm and ddot exact; dgesv and dgetri right"
            )),
            "{cpu}: {text}"
        );
    }
    text
}

#[test]
#[ignore = "slow: OpenBLAS with three POWER kernel sets and C LAPACK from source, zig, GNU as, qemu"]
fn openblas_for_ppc64le_picks_power8_power9_and_power10_kernels_and_computes_exactly_on_each() {
    // OpenBLAS tells POWER8 and POWER9 by the processor version register (which qemu-user
    // answers for its CPU model) and POWER10 by the kernel's HWCAP2 bits (ISA 3.1, MMA).
    // Built at all, it went through the target's GNU assembler: LLVM's refuses these
    // kernels (zig_wrappers' tests show the wrappers handing them over).
    blascheck_computes_on_each_cpu(
        "cp311-manylinux_ppc64le",
        "manylinux_2_17_ppc64le",
        &[
            ("power8", "POWER8"),
            ("power9", "POWER9"),
            ("power10", "POWER10"),
        ],
    );
}

#[test]
#[ignore = "slow: OpenBLAS with four aarch64 kernel sets and C LAPACK from source, zig, qemu"]
fn openblas_for_aarch64_picks_cortex_a72_and_neoverse_n1_kernels_and_armv8_elsewhere() {
    // OpenBLAS tells an aarch64 CPU by its MIDR register, which qemu-user answers for its
    // model; a CPU whose kernels were not built (Cortex-A53) gets ARMV8's.
    blascheck_computes_on_each_cpu(
        "cp311-manylinux_aarch64",
        "manylinux_2_17_aarch64",
        &[
            ("cortex-a53", "armv8"),
            ("cortex-a72", "cortexa72"),
            ("neoverse-n1", "neoversen1"),
        ],
    );
}

#[test]
#[ignore = "slow: OpenBLAS with C LAPACK from source for macOS, zig"]
fn openblas_for_macos_exports_blas_and_lapack_to_the_extension_and_passes_the_static_check() {
    // The static check proves every symbol the extension takes from the vendored
    // libopenblas (cblas_dgemm, dgesv_, dgetri_, ...) is exported there: an OpenBLAS dylib
    // linked without its archive's members (zig ignoring `-all_load`) fails it.
    let dir = tempfile::tempdir().unwrap();
    let (_, wheel, text) = build_blascheck(dir.path(), "cp311-macosx_arm64");
    assert!(text.contains("static check (not executed)"), "{text}");
    let file = std::fs::File::open(&wheel).unwrap();
    let mut archive = zip::ZipArchive::new(file).unwrap();
    let vendored: Vec<String> = archive
        .file_names()
        .map(|name| name.expect("a readable entry name").into_owned())
        .filter(|name| name.starts_with("blascheck/.dylibs/libopenblas"))
        .collect();
    assert_eq!(vendored.len(), 1, "{vendored:?}");
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut archive.by_name(&vendored[0]).unwrap(), &mut bytes).unwrap();
    let macho = goblin::mach::MachO::parse(&bytes, 0).unwrap();
    let exported: Vec<String> = macho
        .exports()
        .unwrap()
        .into_iter()
        .map(|export| export.name)
        .collect();
    for symbol in [
        "_cblas_dgemm",
        "_dgesv_",
        "_dgetri_",
        "_openblas_get_corename",
    ] {
        assert!(
            exported.iter().any(|name| name == symbol),
            "{symbol} not exported"
        );
    }
    // Its install name is the repair's (delocate's `/DLC/<package>/.dylibs/`), not the
    // build folder OpenBLAS gave it.
    assert!(
        macho
            .name
            .is_some_and(|name| name.starts_with("/DLC/blascheck/.dylibs/libopenblas")),
        "install name {:?}",
        macho.name
    );
}
