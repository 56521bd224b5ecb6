//! OpenBLAS from the catalogue, asked for the way a cibuildwheel configuration asks
//! (`yum install -y openblas-devel`), built with OpenBLAS's run-time kernel choice
//! (DYNAMIC_ARCH): one wheel computes with each CPU's kernels, on the CPU qemu emulates for
//! it. linux-ppc64le: POWER8, POWER9 and POWER10, whose kernels are GNU-as assembly LLVM's
//! assembler refuses, so the build goes through the target's GNU assembler behind zig.
//! linux-aarch64: Cortex-A72 and Neoverse N1, and ARMV8's for the CPUs left out.
//! linux-s390x: z13's and z14's kernels, and the generic ones before; linux-i686: Core 2's
//! and Nehalem's, and Prescott's before; on both, the `openblas` entry and the
//! scipy-openblas32 one (every name prefixed `scipy_`, as its wheels have them).
//!
//! The check is real BLAS and LAPACK work: double and single matrix products and a long dot
//! product, on integer-valued data whose exact results the check computes itself, so any
//! wrong kernel shows as a non-zero error; and a linear solve and a matrix inverse through
//! LAPACK's Fortran names (OpenBLAS's own getrf, netlib's getri).
//!
//! LAPACK is compiled from its Fortran where the target's libraries have gfortran and the
//! build's glibc fits its runtime: ppc64le and s390x are built here as in cibuildwheel's
//! manylinux_2_28 image, and their wheels vendor the runtime. aarch64 and i686 keep their
//! lowest glibc and OpenBLAS's C translation of LAPACK, and their manylinux2014 tags. The
//! SBOM says which LAPACK each wheel's OpenBLAS has.
//!
//! Real parts: Debian's OpenBLAS orig tarball, LAPACK's sources from the package index,
//! zig, Debian's cross gfortran, the target's GNU as, qemu-user with three or four CPU models
//! per target, Debian's CPythons.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

const SOURCE: &str = r#"#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <cblas.h>

/* The scipy-openblas32 entry names every symbol (and its cblas.h every prototype) with
   `scipy_` before it. */
#ifdef SCIPY_OPENBLAS
#define NAME(name) scipy_##name
#else
#define NAME(name) name
#endif

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
    NAME(cblas_dgemm)(CblasRowMajor, CblasNoTrans, CblasTrans, N, N, N, 1.0, da, N, db, N, 0.0, dc, N);
    NAME(cblas_sgemm)(CblasRowMajor, CblasNoTrans, CblasTrans, N, N, N, 1.0f, sa, N, sb, N, 0.0f, sc, N);
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
    return PyFloat_FromDouble(NAME(cblas_ddot)(N * N, da, 1, db, 1));
}

/* LAPACK by its Fortran names, as numpy and scipy call it: dgesv (OpenBLAS's own getrf
   and getrs) and dgetri (netlib's, from the C LAPACK), on a diagonally dominant integer
   matrix. Returns the largest error of the solution and of A times its inverse. */
extern void NAME(dgesv_)(int *n, int *nrhs, double *a, int *lda, int *ipiv, double *b, int *ldb, int *info);
extern void NAME(dgetrf_)(int *m, int *n, double *a, int *lda, int *ipiv, int *info);
extern void NAME(dgetri_)(int *n, double *a, int *lda, int *ipiv, double *work, int *lwork, int *info);

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
    NAME(dgesv_)(&n, &one, lu, &n, ipiv, x, &n, &info);
    if (info != 0) return PyErr_Format(PyExc_RuntimeError, "dgesv info %d", info);
    double worst_solve = 0, worst_inverse = 0;
    for (int i = 0; i < M; i++) worst_solve = fmax(worst_solve, fabs(x[i] - (double)(i % 5 - 2)));
    for (int k = 0; k < M * M; k++) inverse[k] = a[k];
    NAME(dgetrf_)(&n, &n, inverse, &n, ipiv, &info);
    if (info == 0) NAME(dgetri_)(&n, inverse, &n, ipiv, work, &lwork, &info);
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
    return Py_BuildValue("(ss)", NAME(openblas_get_corename)(), NAME(openblas_get_config)());
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

const CHECK: &str = r#"import platform
from blascheck import _blascheck as b
n = 160
exact = sum(float((i * 7) % 13 - 6) * float((i * 5) % 11 - 5) for i in range(n * n))
assert b.dot() == exact, (b.dot(), exact)
assert b.gemm_errors() == (0.0, 0.0), b.gemm_errors()
solve, inverse = b.lapack_errors()
assert solve < 1e-12 and inverse < 1e-12, (solve, inverse)
core, config = b.core()
# OpenBLAS 0.3.21 has no run-time kernel choice for armv7l and riscv64: their baseline alone.
if platform.machine() not in ("armv7l", "riscv64"):
    assert "DYNAMIC_ARCH" in config, config
print(f"openblas core: {core}; dgemm, sgemm and ddot exact; dgesv and dgetri right")
"#;

/// The catalogue entry a check links, and how its project asks for it.
#[derive(Clone, Copy)]
enum Entry {
    /// `openblas`: libopenblas with OpenBLAS's own names, asked for as a cibuildwheel
    /// configuration asks (`yum install -y openblas-devel`).
    Openblas,
    /// `scipy-openblas32`: libscipy_openblas with every name prefixed `scipy_`, asked for
    /// by name (`target-libraries`), as examples/blasdot does where no wheel has it.
    ScipyOpenblas32,
}

impl Entry {
    fn name(self) -> &'static str {
        match self {
            Entry::Openblas => "openblas",
            Entry::ScipyOpenblas32 => "scipy-openblas32",
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Entry::Openblas => "libraries=['openblas']",
            Entry::ScipyOpenblas32 => {
                "libraries=['scipy_openblas'], define_macros=[('SCIPY_OPENBLAS', None)]"
            }
        }
    }

    fn request(self) -> &'static str {
        match self {
            Entry::Openblas => "before-all = \"yum install -y openblas-devel\"",
            Entry::ScipyOpenblas32 => "target-libraries = [\"scipy-openblas32\"]",
        }
    }
}

/// Which LAPACK a build's OpenBLAS has, and the image (policy) the build asks for.
#[derive(Clone, Copy)]
enum Lapack {
    /// Compiled from Fortran: the target is built as in the `manylinux_2_28` image
    /// (armv7l's `manylinux_2_31`).
    Fortran,
    /// Compiled from Fortran with LLVM flang (macOS).
    Flang,
    /// OpenBLAS's C translation, and the reason the record gives: the target's lowest
    /// glibc is below what gfortran's runtime needs, or the target has no gfortran.
    CTranslation { why: &'static str },
}

fn blascheck_project(dir: &Path, entry: Entry, lapack: Lapack, arch: &str) -> PathBuf {
    let setup_py = format!(
        "from setuptools import setup, Extension\n\
         setup(packages=['blascheck'], ext_modules=[Extension('blascheck._blascheck', \
         ['blascheck/_blascheck.c'], {})])\n",
        entry.extension()
    );
    // The check lives in a folder of its own: run from the project root, Python would
    // import the source tree's `blascheck` (without the extension) instead of the wheel's.
    std::fs::create_dir_all(dir.join("blascheck/checks")).unwrap();
    let project = common::setuptools_project(
        dir,
        "blascheck",
        &setup_py,
        &[
            ("blascheck/_blascheck.c".to_string(), SOURCE.to_string()),
            ("checks/check_blas.py".to_string(), CHECK.to_string()),
        ],
    );
    let pyproject = project.join("pyproject.toml");
    let mut text = std::fs::read_to_string(&pyproject).unwrap();
    let image = match lapack {
        // armv7l's Fortran runtime (Debian's) needs glibc 2.29: its manylinux_2_31 image.
        Lapack::Fortran if arch == "armv7l" => {
            format!("manylinux-{arch}-image = \"manylinux_2_31\"\n")
        }
        Lapack::Fortran => format!("manylinux-{arch}-image = \"manylinux_2_28\"\n"),
        Lapack::Flang | Lapack::CTranslation { .. } => String::new(),
    };
    text.push_str(&format!(
        "\n[tool.crosswheel]\n{}\n{image}\
         test-command = \"python {{project}}/checks/check_blas.py\"\n",
        entry.request()
    ));
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

/// Builds blascheck for `identifier` in `dir` with the catalogue's `entry` (its tests
/// required); returns the project, the one wheel and the build's output.
fn build_blascheck(
    dir: &Path,
    identifier: &str,
    entry: Entry,
    lapack: Lapack,
) -> (PathBuf, PathBuf, String) {
    let arch = identifier.rsplit('_').next().unwrap();
    let project = blascheck_project(dir, entry, lapack, arch);
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

/// The names of `wheel`'s files whose paths start with `prefix`.
fn names_starting(wheel: &Path, prefix: &str) -> Vec<String> {
    let file = std::fs::File::open(wheel).unwrap();
    let archive = zip::ZipArchive::new(file).unwrap();
    archive
        .file_names()
        .map(|name| name.expect("a readable entry name").into_owned())
        .filter(|name| name.starts_with(prefix))
        .collect()
}

/// The bytes of the one library of `wheel` whose path starts with `prefix`.
fn vendored_library(wheel: &Path, prefix: &str) -> Vec<u8> {
    let vendored = names_starting(wheel, prefix);
    let file = std::fs::File::open(wheel).unwrap();
    let mut archive = zip::ZipArchive::new(file).unwrap();
    assert_eq!(vendored.len(), 1, "{vendored:?}");
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut archive.by_name(&vendored[0]).unwrap(), &mut bytes).unwrap();
    bytes
}

/// What the wheel's SBOM says of its vendored OpenBLAS's LAPACK (its pedigree's notes).
fn sbom_lapack_note(wheel: &Path, library: &str) -> String {
    let [path] = names_starting(wheel, "blascheck-")
        .into_iter()
        .filter(|name| name.ends_with(".dist-info/sboms/crosswheel.cdx.json"))
        .collect::<Vec<_>>()
        .try_into()
        .expect("one SBOM");
    let file = std::fs::File::open(wheel).unwrap();
    let mut archive = zip::ZipArchive::new(file).unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut archive.by_name(&path).unwrap(), &mut text).unwrap();
    let sbom: serde_json::Value = serde_json::from_str(&text).unwrap();
    let component = sbom["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|component| {
            component["name"]
                .as_str()
                .is_some_and(|name| name.starts_with(library))
        })
        .unwrap_or_else(|| panic!("no {library} in the SBOM: {text}"));
    component["pedigree"]["notes"]
        .as_str()
        .unwrap_or_else(|| panic!("no notes: {component}"))
        .to_string()
}

/// The wheel's OpenBLAS has the LAPACK `lapack` says, its SBOM says so, and it vendors the
/// gfortran runtime exactly when its LAPACK is Fortran.
fn assert_lapack(wheel: &Path, entry: Entry, lapack: Lapack) {
    let library = match entry {
        Entry::Openblas => "libopenblas",
        Entry::ScipyOpenblas32 => "libscipy_openblas",
    };
    let note = sbom_lapack_note(wheel, library);
    let runtime = names_starting(wheel, "blascheck.libs/libgfortran");
    match lapack {
        Lapack::Fortran => {
            assert!(
                note.starts_with("LAPACK compiled from its Fortran sources")
                    && note.contains("gfortran-9"),
                "{note}"
            );
            assert_eq!(runtime.len(), 1, "{runtime:?}");
        }
        Lapack::Flang => {
            assert!(note.contains("LLVM flang"), "{note}");
            assert!(runtime.is_empty(), "{runtime:?}");
        }
        Lapack::CTranslation { why } => {
            assert!(
                note.starts_with("LAPACK is OpenBLAS's C translation") && note.contains(why),
                "{note}"
            );
            assert!(runtime.is_empty(), "{runtime:?}");
        }
    }
}

/// The Fortran-style names (`dgesv_`) the scipy-openblas32 wheels export without their
/// `scipy_` prefix: OpenBLAS's own list leaves these out, in the wheels as here.
const BARE_IN_THE_WHEELS_TOO: &[&str] = &["blas_thread_shutdown_", "caxpyc_", "zaxpyc_"];

/// Every BLAS and LAPACK routine of the wheel's vendored libscipy_openblas has its `scipy_`
/// name, the newer netlib's LAPACK 3.11 and 3.12 routines (`scipy_dgelst_`) among them, and
/// the C translation's machine-constant helpers (`scipy_dlamc1_`) where it has them.
fn assert_names_are_scipy_openblas32s(wheel: &Path, lapack: Lapack) {
    let bytes = vendored_library(wheel, "blascheck.libs/libscipy_openblas");
    let exported = common::elf_exported_functions(&bytes);
    let has = |name: &str| exported.iter().any(|e| e == name);
    for name in ["scipy_cblas_dgemm", "scipy_dgesv_", "scipy_dgelst_"] {
        assert!(has(name), "{name} not exported");
    }
    match lapack {
        Lapack::CTranslation { .. } => assert!(has("scipy_dlamc1_"), "scipy_dlamc1_ not exported"),
        Lapack::Fortran | Lapack::Flang => {
            assert!(!has("scipy_dlamc1_"), "a C helper in a Fortran LAPACK")
        }
    }
    let bare: Vec<&String> = exported
        .iter()
        .filter(|name| name.ends_with('_') && !name.starts_with("scipy_"))
        .filter(|name| !BARE_IN_THE_WHEELS_TOO.contains(&name.as_str()))
        .collect();
    assert!(bare.is_empty(), "exported without scipy_: {bare:?}");
}

/// Builds blascheck for `identifier` with the catalogue's `entry`, then tests the one wheel
/// on each qemu CPU of `cpus`, where OpenBLAS must pick the kernels named beside it and
/// compute exactly with them. Returns the build's output.
fn blascheck_computes_on_each_cpu(
    entry: Entry,
    lapack: Lapack,
    identifier: &str,
    tag: &str,
    cpus: &[(&str, &str)],
) -> String {
    let dir = tempfile::tempdir().unwrap();
    let (project, wheel, text) = build_blascheck(dir.path(), identifier, entry, lapack);
    assert!(
        text.contains("dgemm, sgemm and ddot exact; dgesv and dgetri right"),
        "{text}"
    );
    let name = entry.name();
    assert!(
        text.contains(&format!("{name} 0.3.21 built in"))
            || text.contains(&format!("{name} 0.3.21 from the cache")),
        "{text}"
    );
    // Built with zig against the policy's glibc: the vendored OpenBLAS keeps the policy's
    // tag, or the gfortran runtime's (glibc 2.27).
    assert!(wheel.to_string_lossy().contains(tag), "{}", wheel.display());
    assert_lapack(&wheel, entry, lapack);
    if let Entry::ScipyOpenblas32 = entry {
        assert_names_are_scipy_openblas32s(&wheel, lapack);
    }
    for (cpu, core) in cpus {
        let mut command = Command::new(common::crosswheel_bin());
        common::without_option_variables(&mut command);
        // A core named in the caller's environment (a machine may set `OPENBLAS_CORETYPE`
        // for its own CPU) overrides OpenBLAS's choice, which is what this test checks.
        command.env_remove("OPENBLAS_CORETYPE");
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
#[ignore = "slow: OpenBLAS with three POWER kernel sets and LAPACK from Fortran, zig, gfortran, GNU as, qemu"]
fn openblas_for_ppc64le_picks_power8_power9_and_power10_kernels_and_computes_exactly_on_each() {
    // OpenBLAS tells POWER8 and POWER9 by the processor version register (which qemu-user
    // answers for its CPU model) and POWER10 by the kernel's HWCAP2 bits (ISA 3.1, MMA).
    // Built at all, it went through the target's GNU assembler: LLVM's refuses these
    // kernels (zig_wrappers' tests show the wrappers handing them over).
    // Built as in the manylinux_2_28 image: LAPACK from Fortran, and the wheel takes the
    // gfortran runtime's tag.
    blascheck_computes_on_each_cpu(
        Entry::Openblas,
        Lapack::Fortran,
        "cp311-manylinux_ppc64le",
        "manylinux_2_27_ppc64le",
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
    // model; a CPU whose kernels were not built (Cortex-A53) gets ARMV8's. At aarch64's
    // lowest glibc the LAPACK is the C translation, and the wheel keeps manylinux2014.
    blascheck_computes_on_each_cpu(
        Entry::Openblas,
        Lapack::CTranslation {
            why: "builds against glibc 2.17, below the glibc 2.27 its gfortran runtime needs",
        },
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
#[ignore = "slow: both OpenBLAS entries with three z kernel sets and LAPACK from Fortran, zig, gfortran, qemu"]
fn openblas_and_scipy_openblas32_for_s390x_pick_z13_and_z14_kernels_and_the_generic_ones_before() {
    // OpenBLAS tells z13 (vector facility) and z14 (vector enhancements 1) by the kernel's
    // HWCAP bits, which qemu-user sets from its CPU's facilities. qemu's named models
    // (z13, z14) ask for crypto functions its emulation lacks and do not start, so its
    // `max` CPU stands for each with the facilities taken away. The second entry has
    // scipy-openblas32's names, LAPACK's among them (`scipy_dgesv_`), renamed in its
    // Fortran objects too. Built as in the manylinux_2_28 image: LAPACK from Fortran.
    for entry in [Entry::Openblas, Entry::ScipyOpenblas32] {
        blascheck_computes_on_each_cpu(
            entry,
            Lapack::Fortran,
            "cp311-manylinux_s390x",
            "manylinux_2_27_s390x",
            &[
                ("max,vx=off,vxeh=off", "ZARCH_GENERIC"),
                ("max,vxeh=off", "Z13"),
                ("max", "Z14"),
            ],
        );
    }
}

#[test]
#[ignore = "slow: both OpenBLAS entries with three x86 kernel sets and C LAPACK from source, zig, qemu"]
fn openblas_and_scipy_openblas32_for_i686_pick_core2_and_nehalem_kernels_and_prescott_before() {
    // OpenBLAS tells an x86 CPU by CPUID, which qemu-user answers for its model. Kernels
    // after Nehalem's are not in OpenBLAS's 32-bit list: a Haswell gets Nehalem's. OpenBLAS
    // names Prescott's kernels "Katmai" here: the CPUs before Prescott share them, and its
    // name lookup asks for Katmai's first. The wheel keeps i686's lowest tag (manylinux2010):
    // i686's gfortran runtime (Debian's) needs glibc 2.29, so LAPACK is the C translation.
    for entry in [Entry::Openblas, Entry::ScipyOpenblas32] {
        blascheck_computes_on_each_cpu(
            entry,
            // Any reason: a record's reason is not part of its cache key, and a library
            // built before i686 had a gfortran says the older one (no gfortran for i686).
            Lapack::CTranslation { why: "" },
            "cp311-manylinux_i686",
            "manylinux_2_12_i686",
            &[
                ("coreduo", "Katmai"),
                ("core2duo", "Core2"),
                ("Nehalem", "Nehalem"),
                ("Haswell", "Nehalem"),
            ],
        );
    }
}

#[test]
#[ignore = "slow: scipy-openblas32 with LAPACK from Fortran against musl, zig, gfortran, qemu"]
fn scipy_openblas32_for_musllinux_aarch64_compiles_lapack_from_fortran_with_musls_runtime() {
    // Debian's gfortran compiles LAPACK, zig links it against musl with the runtime of
    // cibuildwheel's musllinux_1_2 image, which the wheel vendors (with its libgcc_s); the
    // check runs on crosswheel's musl CPython under qemu, in the build's own test stage and
    // then in `crosswheel test` alone, on the musl CPython the build made, for each CPU.
    let text = blascheck_computes_on_each_cpu(
        Entry::ScipyOpenblas32,
        Lapack::Fortran,
        "cp311-musllinux_aarch64",
        "musllinux_1_2_aarch64",
        &[("cortex-a53", "armv8"), ("neoverse-n1", "neoversen1")],
    );
    assert!(text.contains("passed (emulated)"), "{text}");
}

#[test]
#[ignore = "slow: OpenBLAS with LAPACK from Fortran for armv7l (Debian's runtime), zig, gfortran, qemu"]
fn openblas_for_armv7l_in_the_manylinux_2_31_image_compiles_lapack_from_fortran() {
    // armv7l's gfortran runtime is Debian bullseye's, which needs glibc 2.29: built as in
    // cibuildwheel's manylinux_2_31 image, LAPACK is compiled from its Fortran, and the
    // wheel vendors that runtime and keeps the image's tag.
    let text = blascheck_computes_on_each_cpu(
        Entry::Openblas,
        Lapack::Fortran,
        "cp311-manylinux_armv7l",
        "manylinux_2_31_armv7l",
        &[],
    );
    assert!(text.contains("passed (emulated)"), "{text}");
}

#[test]
#[ignore = "slow: OpenBLAS with LAPACK from Fortran (flang) for macOS, zig"]
fn openblas_for_macos_exports_blas_and_lapack_to_the_extension_and_passes_the_static_check() {
    // The static check proves every symbol the extension takes from the vendored
    // libopenblas (cblas_dgemm, dgesv_, dgetri_, ...) is exported there, and every symbol
    // libopenblas takes from flang's runtime is exported by the vendored runtime: an
    // OpenBLAS dylib linked without its archive's members (zig ignoring `-all_load`), or
    // LAPACK compiled against another runtime, fails it.
    let dir = tempfile::tempdir().unwrap();
    let (_, wheel, text) = build_blascheck(
        dir.path(),
        "cp311-macosx_arm64",
        Entry::Openblas,
        Lapack::Flang,
    );
    assert!(text.contains("static check (not executed)"), "{text}");
    let note = sbom_lapack_note(&wheel, "libopenblas");
    assert!(
        note.contains("compiled from its Fortran sources") && note.contains("LLVM flang"),
        "{note}"
    );
    let bytes = vendored_library(&wheel, "blascheck/.dylibs/libopenblas");
    let macho = goblin::mach::MachO::parse(&bytes, 0).unwrap();
    // LAPACK's Fortran calls flang's runtime, which the wheel vendors beside it.
    assert!(
        macho
            .libs
            .iter()
            .any(|lib| lib.ends_with("/libFortranRuntime.dylib")),
        "{:?}",
        macho.libs
    );
    let runtime_calls: Vec<String> = macho
        .imports()
        .unwrap()
        .into_iter()
        .filter(|import| import.name.starts_with("__Fortran"))
        .map(|import| import.name.to_string())
        .collect();
    assert!(
        !runtime_calls.is_empty(),
        "libopenblas calls no flang runtime"
    );
    vendored_library(&wheel, "blascheck/.dylibs/libFortranRuntime");
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
