//! The same project built twice gives the same bytes, and nothing of the build
//! host leaks into the wheels.
//!
//! Two full pipeline runs (build, repair, test) into different folders, with the same
//! SOURCE_DATE_EPOCH, must produce byte-identical wheels, each vendoring a library and
//! carrying the SBOM that names it; no file inside any wheel may mention the home folder,
//! crosswheel's cache, the project folder, the output folders or the build's temporary
//! folders. blasdot (OpenBLAS from scipy-openblas32's wheels) covers the targets that
//! wheel exists for; a libffi extension (libffi built here from Debian's source by the
//! target-libraries catalogue) covers the rest.
//!
//! Needs what `crosswheel build examples/blasdot` needs (python3.11, qemu for the
//! test stage, network access on the first run).

use crate::common;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The targets this test builds blasdot for, each
/// named once: `x86_64` alone would be Linux's and macOS's.
const BLASDOT_ARCHS: &str =
    "manylinux_aarch64 manylinux_ppc64le manylinux_x86_64 arm64 macosx_x86_64 universal2";
/// The targets no wheel of scipy-openblas32 serves: their vendored library is one
/// crosswheel built. musllinux wheels are tested on the musl CPython crosswheel builds.
const LIBFFI_ARCHS: &str = "manylinux_s390x manylinux_i686 manylinux_armv7l manylinux_riscv64 \
     musllinux_x86_64 musllinux_aarch64 musllinux_ppc64le musllinux_s390x musllinux_i686 \
     musllinux_armv7l musllinux_riscv64";
/// 2024-01-01T00:00:00Z.
const SOURCE_DATE_EPOCH: &str = "1704067200";

fn blasdot() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/blasdot")
}

/// A setuptools extension that calls `labs` through `ffi_call`, with libffi from the
/// target-libraries catalogue, which the repair vendors on every Linux target.
fn ffidemo(root: &Path) -> PathBuf {
    let setup_py = "from setuptools import setup, Extension\n\
        setup(ext_modules=[Extension('ffidemo._f', ['ffidemo/_f.c'], libraries=['ffi'])])\n";
    let source = r#"#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <ffi.h>

static PyObject *call_labs(PyObject *self, PyObject *arg) {
    long value = PyLong_AsLong(arg);
    if (value == -1 && PyErr_Occurred())
        return NULL;
    ffi_cif cif;
    ffi_type *types[1] = {&ffi_type_slong};
    void *values[1] = {&value};
    ffi_arg result;
    if (ffi_prep_cif(&cif, FFI_DEFAULT_ABI, 1, &ffi_type_slong, types) != FFI_OK)
        return PyErr_Format(PyExc_RuntimeError, "ffi_prep_cif failed");
    ffi_call(&cif, FFI_FN(labs), &result, values);
    return PyLong_FromLong((long)result);
}

static PyMethodDef methods[] = {{"call_labs", call_labs, METH_O, NULL}, {NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_f", NULL, -1, methods};
PyMODINIT_FUNC PyInit__f(void) { return PyModule_Create(&module); }
"#;
    let project = common::setuptools_project(
        root,
        "ffidemo",
        setup_py,
        &[("ffidemo/_f.c".to_string(), source.to_string())],
    );
    let pyproject = project.join("pyproject.toml");
    let mut text = std::fs::read_to_string(&pyproject).unwrap();
    text.push_str(concat!(
        "\n[tool.crosswheel]\npython = [\"cp311\"]\ntarget-libraries = [\"libffi\"]\n",
        "test-command = \"python -c \\\"from ffidemo import _f; assert _f.call_labs(-7) == 7\\\"\"\n",
    ));
    std::fs::write(&pyproject, text).unwrap();
    project
}

fn build_into(project: &Path, archs: &str, out_dir: &Path) {
    let output = Command::new(common::crosswheel_bin())
        .arg("build")
        .arg(project)
        .args(["--archs", archs, "-w"])
        .arg(out_dir)
        .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
        .output()
        .expect("run crosswheel build");
    assert!(
        output.status.success(),
        "crosswheel build failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// File name -> bytes of every wheel directly in `dir`.
fn wheels_in(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .expect("read the output folder")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "whl"))
        .map(|path| {
            let name = path
                .file_name()
                .expect("file name")
                .to_string_lossy()
                .into_owned();
            (name, std::fs::read(&path).expect("read wheel"))
        })
        .collect()
}

/// Entry name -> decompressed contents.
fn contents(wheel: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(wheel)).expect("a zip archive");
    (0..archive.len())
        .map(|index| {
            let mut entry = archive.by_index(index).expect("entry");
            let name = entry.name().expect("UTF-8 entry name").into_owned();
            let mut data = Vec::new();
            entry.read_to_end(&mut data).expect("decompress entry");
            (name, data)
        })
        .collect()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// Host paths that must never appear inside a wheel.
fn host_paths(project: &Path, work_dir: &Path) -> Vec<String> {
    let mut paths = vec![
        project.display().to_string(),
        env!("CARGO_MANIFEST_DIR").to_string(),
        work_dir.display().to_string(),
        // The build copies the project into `<temp>/crosswheel-build-XXXX`.
        std::env::temp_dir()
            .join("crosswheel-build-")
            .display()
            .to_string(),
    ];
    let cache = crosswheel::support::host::Cache::from_env().expect("crosswheel's cache folder");
    paths.push(cache.root().display().to_string());
    if let Some(home) = std::env::var_os("HOME").filter(|home| Path::new(home) != Path::new("/")) {
        // `/root/` with the slash: the bare word is too common in binaries.
        paths.push(format!("{}/", Path::new(&home).display()));
    }
    paths
}

/// Builds `project` for `archs` twice and holds the two runs' wheels to the promises of
/// this file.
fn two_builds_are_identical_vendor_with_an_sbom_and_leak_no_host_path(
    project: &Path,
    archs: &str,
    work: &Path,
) {
    let (first_dir, second_dir) = (work.join("a"), work.join("b"));
    build_into(project, archs, &first_dir);
    build_into(project, archs, &second_dir);

    let first = wheels_in(&first_dir);
    let second = wheels_in(&second_dir);
    let expected_count = archs.split_whitespace().count();
    assert_eq!(
        first.len(),
        expected_count,
        "one wheel per target expected: {:?}",
        first.keys()
    );
    assert_eq!(
        first.keys().collect::<Vec<_>>(),
        second.keys().collect::<Vec<_>>(),
        "the two runs named their wheels differently"
    );
    for (name, bytes) in &first {
        if second[name] != *bytes {
            let differing: Vec<String> = contents(bytes)
                .into_iter()
                .zip(contents(&second[name]))
                .filter(|(a, b)| a != b)
                .map(|((entry, _), _)| entry)
                .collect();
            panic!("{name} differs between the two runs; differing entries: {differing:?}");
        }
    }

    // Each wheel vendors a library, so each carries the SBOM the comparison above covered,
    // and that SBOM locates every vendored file.
    for (name, bytes) in &first {
        let entries = contents(bytes);
        let sbom = entries
            .iter()
            .find(|(entry, _)| entry.ends_with(".dist-info/sboms/crosswheel.cdx.json"))
            .map(|(_, data)| String::from_utf8_lossy(data).into_owned())
            .unwrap_or_else(|| panic!("{name} has no .dist-info/sboms/crosswheel.cdx.json"));
        let vendored: Vec<&String> = entries
            .iter()
            .map(|(entry, _)| entry)
            .filter(|entry| entry.contains(".libs/") || entry.contains(".dylibs/"))
            .collect();
        assert!(!vendored.is_empty(), "{name} vendors nothing");
        for file in vendored {
            assert!(
                sbom.contains(&format!("\"{file}\"")),
                "{name}: the SBOM does not locate {file}"
            );
        }
    }

    let needles = host_paths(project, work);
    let mut leaks = Vec::new();
    for (name, bytes) in &first {
        for (entry, data) in contents(bytes) {
            for needle in &needles {
                if contains(&data, needle.as_bytes()) {
                    leaks.push(format!("{name}: {entry} contains `{needle}`"));
                }
            }
        }
    }
    assert!(
        leaks.is_empty(),
        "host paths inside the wheels:\n{}",
        leaks.join("\n")
    );
}

#[test]
#[ignore = "slow: builds blasdot twice with zig"]
fn two_builds_give_identical_wheels_free_of_host_paths() {
    let work = tempfile::tempdir().expect("temp dir");
    two_builds_are_identical_vendor_with_an_sbom_and_leak_no_host_path(
        &blasdot(),
        BLASDOT_ARCHS,
        work.path(),
    );
}

/// s390x (big-endian), i686, armv7l, riscv64 and every musllinux target have no OpenBLAS
/// wheel to vendor: libffi, built here from Debian's source, is the vendored library whose bytes, SBOM component
/// and hash must come out the same twice.
#[test]
#[ignore = "slow: builds libffi and an extension for eleven targets, twice, with zig"]
fn a_wheel_vendoring_a_library_built_here_is_identical_twice_on_the_targets_blasdot_lacks() {
    let work = tempfile::tempdir().expect("temp dir");
    let project = ffidemo(work.path());
    two_builds_are_identical_vendor_with_an_sbom_and_leak_no_host_path(
        &project,
        LIBFFI_ARCHS,
        work.path(),
    );
}
