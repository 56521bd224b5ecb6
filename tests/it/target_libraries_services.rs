//! The catalogue's compression, database, cryptography and data-format libraries (bzip2,
//! sqlite, openssl, libpq, hdf5) named the way cibuildwheel configurations name them, on
//! one `yum install` line, and each one doing real work from an extension under qemu:
//! bzip2 round-trips data, SQLite runs SQL in memory, OpenSSL hashes and makes a TLS context, libpq parses a
//! connection string, HDF5 writes and reads a dataset in an in-memory file. Each also
//! reports its version, so the test proves the wheel loads the library crosswheel built
//! (vendored by the repair), not one the target system might have. The project's setup.py
//! finds libpq as psycopg2's does, by asking `pg_config`, which answers for the target.
//!
//! Real parts: the libraries' Debian orig tarballs, zig, qemu-user, Debian's CPython for
//! the target. The first run builds the five libraries per target (OpenSSL and HDF5 take
//! minutes each); later runs take them from the cache.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

const BEFORE_ALL: &str =
    "yum install -y bzip2-devel sqlite-devel openssl-devel libpq-devel hdf5-devel";

const SOURCE: &str = r#"#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <bzlib.h>
#include <sqlite3.h>
#include <openssl/evp.h>
#include <openssl/crypto.h>
#include <openssl/ssl.h>
#include <libpq-fe.h>
#include <hdf5.h>

static PyObject *bzip2_roundtrip(PyObject *self, PyObject *args) {
    char text[] = "crosswheel crosswheel crosswheel crosswheel";
    char packed[256], unpacked[256];
    unsigned int packed_size = sizeof packed, unpacked_size = sizeof unpacked;
    if (BZ2_bzBuffToBuffCompress(packed, &packed_size, text, sizeof text, 9, 0, 0) != BZ_OK ||
        BZ2_bzBuffToBuffDecompress(unpacked, &unpacked_size, packed, packed_size, 0, 0) != BZ_OK)
        return PyErr_Format(PyExc_RuntimeError, "bzip2 failed");
    return Py_BuildValue("(sy)", BZ2_bzlibVersion(), unpacked);
}

static PyObject *sqlite_sum(PyObject *self, PyObject *args) {
    sqlite3 *db;
    sqlite3_stmt *statement;
    long long sum = -1;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK ||
        sqlite3_exec(db, "CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (20), (22);",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT sum(x) FROM t", -1, &statement, NULL) != SQLITE_OK)
        return PyErr_Format(PyExc_RuntimeError, "sqlite: %s", sqlite3_errmsg(db));
    if (sqlite3_step(statement) == SQLITE_ROW)
        sum = sqlite3_column_int64(statement, 0);
    sqlite3_finalize(statement);
    sqlite3_close(db);
    return Py_BuildValue("(sL)", sqlite3_libversion(), sum);
}

static PyObject *openssl_sha256(PyObject *self, PyObject *args) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    if (!EVP_Digest("abc", 3, digest, &size, EVP_sha256(), NULL))
        return PyErr_Format(PyExc_RuntimeError, "openssl: EVP_Digest failed");
    SSL_CTX *context = SSL_CTX_new(TLS_client_method());
    if (context == NULL)
        return PyErr_Format(PyExc_RuntimeError, "openssl: SSL_CTX_new failed");
    SSL_CTX_free(context);
    return Py_BuildValue("(sy#)", OpenSSL_version(OPENSSL_VERSION), digest, (Py_ssize_t)size);
}

static PyObject *libpq_parse(PyObject *self, PyObject *args) {
    char *error = NULL;
    PQconninfoOption *options = PQconninfoParse("host=db.example dbname=wheels", &error);
    const char *dbname = "";
    if (options == NULL)
        return PyErr_Format(PyExc_RuntimeError, "libpq: %s", error ? error : "out of memory");
    for (PQconninfoOption *option = options; option->keyword; option++)
        if (strcmp(option->keyword, "dbname") == 0 && option->val)
            dbname = option->val;
    PyObject *result = Py_BuildValue("(is)", PQlibVersion(), dbname);
    PQconninfoFree(options);
    return result;
}

static PyObject *hdf5_roundtrip(PyObject *self, PyObject *args) {
    unsigned major, minor, release;
    int written[4] = {1, 2, 3, 5}, read[4] = {0};
    hsize_t dims[1] = {4};
    H5get_libversion(&major, &minor, &release);
    hid_t access = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_core(access, 4096, 0); /* in memory, never written to disk */
    hid_t file = H5Fcreate("crosswheel.h5", H5F_ACC_TRUNC, H5P_DEFAULT, access);
    hid_t space = H5Screate_simple(1, dims, NULL);
    hid_t set = H5Dcreate2(file, "numbers", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT,
                           H5P_DEFAULT);
    if (set < 0 || H5Dwrite(set, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, written) < 0 ||
        H5Dread(set, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, read) < 0)
        return PyErr_Format(PyExc_RuntimeError, "hdf5 failed");
    H5Dclose(set);
    H5Sclose(space);
    H5Fclose(file);
    H5Pclose(access);
    return Py_BuildValue("(IIIiiii)", major, minor, release, read[0], read[1], read[2], read[3]);
}

static PyMethodDef methods[] = {
    {"bzip2_roundtrip", bzip2_roundtrip, METH_NOARGS, NULL},
    {"sqlite_sum", sqlite_sum, METH_NOARGS, NULL},
    {"openssl_sha256", openssl_sha256, METH_NOARGS, NULL},
    {"libpq_parse", libpq_parse, METH_NOARGS, NULL},
    {"hdf5_roundtrip", hdf5_roundtrip, METH_NOARGS, NULL},
    {NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_services", NULL, -1, methods};
PyMODINIT_FUNC PyInit__services(void) { return PyModule_Create(&module); }
"#;

/// What the test command checks under qemu: each library's work and version.
const CHECK: &str = r#"
import hashlib
from services import _services as s

version, data = s.bzip2_roundtrip()
assert version.startswith("1.0.8") and data == b"crosswheel crosswheel crosswheel crosswheel", (version, data)
version, total = s.sqlite_sum()
assert (version, total) == ("3.40.1", 42), (version, total)
version, digest = s.openssl_sha256()
assert version.startswith("OpenSSL 3.0.20") and digest == hashlib.sha256(b"abc").digest(), version
version, dbname = s.libpq_parse()
assert (version, dbname) == (150018, "wheels"), (version, dbname)
assert s.hdf5_roundtrip() == (1, 14, 5, 1, 2, 3, 5), s.hdf5_roundtrip()
print("bzip2, sqlite, openssl, libpq and hdf5 from the catalogue: ok")
"#;

fn services_project(dir: &Path) -> PathBuf {
    // As psycopg2's setup.py does, it asks pg_config where libpq is: the answer must be the
    // target's libpq, which the build machine's /usr/bin/pg_config does not know of.
    let setup_py = "import subprocess\n\
        from setuptools import setup, Extension\n\
        def pg_config(what):\n    return subprocess.check_output(['pg_config', '--' + what], text=True).strip()\n\
        libdir, server = pg_config('libdir'), pg_config('includedir-server')\n\
        assert '/libpq-15.18-' in libdir and pg_config('version') == 'PostgreSQL 15.18', (libdir, pg_config('version'))\n\
        setup(packages=['services'], ext_modules=[Extension('services._services', ['services/_services.c'], \
        include_dirs=[server], library_dirs=[libdir], \
        libraries=['bz2', 'sqlite3', 'ssl', 'crypto', 'pq', 'hdf5'])])\n";
    // The check lives in a folder of its own: run from the project root, Python would
    // import the source tree's `services` (without the extension) instead of the wheel's.
    std::fs::create_dir_all(dir.join("services/checks")).unwrap();
    let project = common::setuptools_project(
        dir,
        "services",
        setup_py,
        &[
            ("services/_services.c".to_string(), SOURCE.to_string()),
            ("checks/check_services.py".to_string(), CHECK.to_string()),
        ],
    );
    let pyproject = project.join("pyproject.toml");
    let mut text = std::fs::read_to_string(&pyproject).unwrap();
    text.push_str(&format!(
        "\n[tool.crosswheel]\nbefore-all = \"{BEFORE_ALL}\"\n\
         test-command = \"python {{project}}/checks/check_services.py\"\n"
    ));
    std::fs::write(&pyproject, text).unwrap();
    project
}

/// Builds the project for `identifier` and returns the build's output and the wheel's
/// file names.
fn build(identifier: &str) -> (String, Vec<String>, String) {
    let dir = tempfile::tempdir().unwrap();
    let project = services_project(dir.path());
    let out = dir.path().join("wheelhouse");
    let mut command = Command::new(common::crosswheel_bin());
    common::without_option_variables(&mut command);
    let output = command
        .arg("build")
        .arg(&project)
        .args(["--only", identifier, "--require-tests", "-w"])
        .arg(&out)
        .output()
        .expect("crosswheel runs");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{text}");
    let names = common::wheel_names_in(&out);
    assert_eq!(names.len(), 1, "{names:?}");
    let file = std::fs::File::open(out.join(&names[0])).unwrap();
    let files = zip::ZipArchive::new(file)
        .unwrap()
        .file_names()
        .map(|name| name.expect("a readable entry name").into_owned())
        .collect();
    (text, files, names[0].clone())
}

/// The shared libraries the five catalogue entries install, each vendored into the wheel.
const VENDORED: &[&str] = &[
    "libbz2",
    "libsqlite3",
    "libcrypto",
    "libssl",
    "libpq",
    "libhdf5",
];

fn assert_vendors(files: &[String], folder: &str, libraries: &[&str]) {
    for library in libraries {
        assert!(
            files
                .iter()
                .any(|file| file.starts_with(folder) && file.contains(library)),
            "the wheel vendors {library} under {folder}: {files:?}"
        );
    }
}

#[test]
#[ignore = "slow: five libraries built from Debian sources, zig, qemu"]
fn bzip2_sqlite_openssl_libpq_and_hdf5_do_real_work_in_a_linux_aarch64_wheel_under_qemu() {
    let (text, files, name) = build("cp311-manylinux_aarch64");
    assert!(
        text.contains("bzip2, sqlite, openssl, libpq and hdf5 from the catalogue: ok"),
        "{text}"
    );
    // Built with zig against the policy's glibc: the vendored libraries keep the lowest tag.
    assert!(name.contains("manylinux_2_17_aarch64"), "{name}");
    assert_vendors(&files, "services.libs/", VENDORED);
}

#[test]
#[ignore = "slow: five libraries built from Debian sources, zig"]
fn bzip2_sqlite_openssl_libpq_and_hdf5_are_vendored_into_a_macos_wheel_that_passes_the_static_check()
 {
    let (text, files, name) = build("cp311-macosx_arm64");
    assert!(text.contains("static check (not executed)"), "{text}");
    assert!(name.ends_with("macosx_11_0_arm64.whl"), "{name}");
    assert_vendors(&files, "services/.dylibs/", VENDORED);
}
