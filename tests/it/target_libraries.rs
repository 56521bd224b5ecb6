//! Target C libraries: a project whose extension links a system library builds when its
//! configuration names the library the way cibuildwheel users do (`before-all = "yum
//! install -y libffi-devel"`), with the library built by crosswheel from Debian's source
//! package for the target, vendored by the repair, recorded in the wheel's SBOM, and
//! working under qemu with the target's CPython.
//!
//! Real parts: cffi 2.1.1's sdist (pinned in tests/fixtures.lock), libffi 3.4.4 from
//! Debian's orig tarball, zig, qemu-user. The first run builds libffi per target (~20-60 s);
//! later runs take it from the cache.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;

/// An ABI-mode call into the C library and a Python callback called from C (`qsort`),
/// which needs libffi's closures.
const CFFI_CHECK: &str = r#"
import cffi

ffi = cffi.FFI()
ffi.cdef("""
    int abs(int);
    void qsort(void *base, size_t nmemb, size_t size,
               int (*compar)(const void *, const void *));
""")
libc = ffi.dlopen(None)
assert libc.abs(-7) == 7

@ffi.callback("int(const void *, const void *)")
def compare(a, b):
    x = ffi.cast("int *", a)[0]
    y = ffi.cast("int *", b)[0]
    return (x > y) - (x < y)

numbers = ffi.new("int[]", [5, 1, 4, 2, 3])
libc.qsort(numbers, 5, ffi.sizeof("int"), compare)
assert list(numbers) == [1, 2, 3, 4, 5], list(numbers)
print("cffi", cffi.__version__, "ABI call and callback ok")
"#;

/// cffi's sdist unpacked into `root`, with `table` as its `[tool.crosswheel]` and the
/// check script beside it.
fn cffi_project(root: &Path, table: &str) -> PathBuf {
    let sdist = common::fixture("cffi-2.1.1.tar.gz");
    let status = Command::new("tar")
        .arg("-xzf")
        .arg(&sdist)
        .arg("-C")
        .arg(root)
        .status()
        .expect("tar runs");
    assert!(status.success(), "unpacking {}", sdist.display());
    let project = root.join("cffi-2.1.1");
    let pyproject = project.join("pyproject.toml");
    let mut text = std::fs::read_to_string(&pyproject).unwrap();
    text.push_str("\n[tool.crosswheel]\n");
    text.push_str(table);
    std::fs::write(&pyproject, text).unwrap();
    std::fs::write(project.join("check_cffi.py"), CFFI_CHECK).unwrap();
    project
}

const CFFI_TABLE: &str = r#"before-all = "yum install -y libffi-devel"
test-requires = ["pycparser"]
test-command = "python {project}/check_cffi.py"
"#;

pub(crate) fn build(project: &Path, identifier: &str, out: &Path) -> Output {
    let mut command = Command::new(common::crosswheel_bin());
    common::without_option_variables(&mut command);
    command
        .arg("build")
        .arg(project)
        .args(["--only", identifier, "--require-tests", "-w"])
        .arg(out)
        .output()
        .expect("crosswheel runs")
}

pub(crate) fn text_of(output: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The one wheel in `out` and the names of its files.
pub(crate) fn wheel_in(out: &Path) -> (PathBuf, Vec<String>) {
    let names = common::wheel_names_in(out);
    assert_eq!(names.len(), 1, "{names:?}");
    let wheel = out.join(&names[0]);
    let file = std::fs::File::open(&wheel).unwrap();
    let archive = zip::ZipArchive::new(file).unwrap();
    let files = archive
        .file_names()
        .map(|name| name.expect("a readable entry name").into_owned())
        .collect();
    (wheel, files)
}

pub(crate) fn read_bytes(wheel: &Path, name: &str) -> Vec<u8> {
    use std::io::Read;
    let file = std::fs::File::open(wheel).unwrap();
    let mut archive = zip::ZipArchive::new(file).unwrap();
    let mut bytes = Vec::new();
    archive
        .by_name(name)
        .unwrap()
        .read_to_end(&mut bytes)
        .unwrap();
    bytes
}

fn read_member(wheel: &Path, name: &str) -> String {
    use std::io::Read;
    let file = std::fs::File::open(wheel).unwrap();
    let mut archive = zip::ZipArchive::new(file).unwrap();
    let mut text = String::new();
    archive
        .by_name(name)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    text
}

/// No binary of the wheel names a library prefix in crosswheel's cache.
fn assert_no_prefix_path(wheel: &Path, files: &[String]) {
    for binary in files
        .iter()
        .filter(|file| file.contains(".so") || file.ends_with(".dylib"))
    {
        let bytes = read_bytes(wheel, binary);
        let leaked = bytes
            .windows(b"target-libraries/".len())
            .any(|w| w == b"target-libraries/");
        assert!(
            !leaked,
            "{binary} still names the library's prefix in the cache"
        );
    }
}

/// Builds cffi for `identifier`, checks what the wheel vendors and records, and returns
/// the build's output.
fn cffi_builds_with_crosswheels_libffi(identifier: &str, vendored: &str, tag: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let project = cffi_project(dir.path(), CFFI_TABLE);
    let out = dir.path().join("wheelhouse");
    let output = build(&project, identifier, &out);
    let text = text_of(&output);
    assert!(output.status.success(), "{text}");
    let (wheel, files) = wheel_in(&out);
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.contains(tag), "{name}");
    let libffi: Vec<&String> = files
        .iter()
        .filter(|file| file.starts_with(vendored) && file.contains("libffi"))
        .collect();
    assert_eq!(libffi.len(), 1, "one vendored libffi in {files:?}");
    assert_no_prefix_path(&wheel, &files);
    let sbom = read_member(&wheel, "cffi-2.1.1.dist-info/sboms/crosswheel.cdx.json");
    assert!(
        sbom.contains("pkg:deb/debian/libffi@3.4.4-1?arch=source&checksum=sha256:d66c56ad259a82cf2a9dfc408b32bf5da52371500b84745f7fb8b645712df676"),
        "the SBOM names the Debian source libffi was built from:\n{sbom}"
    );
    assert!(sbom.contains("\"MIT\""), "libffi's licence:\n{sbom}");
    text
}

#[test]
#[ignore = "slow: libraries built from Debian sources, zig, qemu"]
fn cffi_for_linux_aarch64_calls_into_libc_and_back_into_python_under_qemu() {
    let text = cffi_builds_with_crosswheels_libffi(
        "cp311-manylinux_aarch64",
        "cffi.libs/libffi-",
        "manylinux_2_17_aarch64.manylinux2014_aarch64",
    );
    assert!(
        text.contains("cffi 2.1.1 ABI call and callback ok"),
        "the check ran under qemu:\n{text}"
    );
    assert!(text.contains("passed (emulated)"), "{text}");
}

#[test]
#[ignore = "slow: libraries built from Debian sources, zig, qemu"]
fn cffi_for_linux_ppc64le_calls_into_libc_and_back_into_python_under_qemu() {
    let text = cffi_builds_with_crosswheels_libffi(
        "cp311-manylinux_ppc64le",
        "cffi.libs/libffi-",
        "_ppc64le",
    );
    assert!(
        text.contains("cffi 2.1.1 ABI call and callback ok"),
        "the check ran under qemu:\n{text}"
    );
}

#[test]
#[ignore = "slow: libraries built from Debian sources, zig, qemu"]
fn cffi_for_macos_vendors_libffi_with_a_relative_install_name_and_passes_the_static_check() {
    let text = cffi_builds_with_crosswheels_libffi(
        "cp311-macosx_arm64",
        "cffi/.dylibs/libffi",
        "macosx_11_0_arm64",
    );
    assert!(text.contains("static check (not executed)"), "{text}");
    assert!(
        text.contains("as cffi/.dylibs/libffi.8.dylib"),
        "libffi vendored from its prefix:\n{text}"
    );
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn a_package_the_catalogue_lacks_stops_the_run_before_any_build_naming_the_ways_out() {
    let dir = tempfile::tempdir().unwrap();
    let project = cffi_project(
        dir.path(),
        "before-all = \"yum install -y cmake libfoo-devel && echo prepared\"\n",
    );
    let output = build(&project, "cp311-manylinux_aarch64", &dir.path().join("out"));
    let text = text_of(&output);
    assert!(!output.status.success(), "{text}");
    let error = text
        .lines()
        .find(|line| line.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line:\n{text}"));
    assert!(
        error.contains(
            "before-all in pyproject.toml: `yum install -y cmake libfoo-devel` installs libfoo-devel, which crosswheel cannot build for the target: build it into $CROSSWHEEL_PREFIX"
        ),
        "{error}"
    );
    assert!(error.contains("config/target-libraries.toml"), "{error}");
    assert!(
        !text.contains("cp311-manylinux_aarch64: build"),
        "nothing was built:\n{text}"
    );
}

/// A `before-all` from `CIBW_BEFORE_ALL` is said to come from that variable, not from the
/// project's pyproject.toml.
#[test]
fn a_before_all_variable_is_named_as_the_origin_of_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("demo");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(
        project.join("pyproject.toml"),
        "[project]\nname = \"demo\"\nversion = \"1.0\"\n[tool.cibuildwheel]\nbuild = \"cp311-*\"\n",
    )
    .unwrap();
    let mut command = Command::new(common::crosswheel_bin());
    common::without_option_variables(&mut command);
    let output = command
        .arg("build")
        .arg(&project)
        .args(["--only", "cp311-manylinux_aarch64", "-w"])
        .arg(dir.path().join("out"))
        .env("CIBW_BEFORE_ALL", "yum install -y libfoo-devel")
        .output()
        .expect("crosswheel runs");
    let text = text_of(&output);
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains(
            "before-all in environment variable CIBW_BEFORE_ALL: `yum install -y libfoo-devel` installs libfoo-devel"
        ),
        "{text}"
    );
    assert!(!text.contains("before-all in pyproject.toml"), "{text}");
}

/// PyYAML's optional extension, with the line its cibuildwheel users write for manylinux.
/// PyYAML's sdist built for `identifier` with its libyaml extension, libyaml coming from
/// a `before-all` package line; returns the build's output, the wheel's files and its SBOM.
fn pyyaml_builds_with_libyaml(identifier: &str) -> (String, Vec<String>, String) {
    let dir = tempfile::tempdir().unwrap();
    let sdist = common::fixture("pyyaml-6.0.3.tar.gz");
    let status = Command::new("tar")
        .arg("-xzf")
        .arg(&sdist)
        .arg("-C")
        .arg(dir.path())
        .status()
        .expect("tar runs");
    assert!(status.success());
    let project = dir.path().join("pyyaml-6.0.3");
    let pyproject = project.join("pyproject.toml");
    let mut text = std::fs::read_to_string(&pyproject).unwrap();
    text.push_str(concat!(
        "\n[tool.crosswheel]\n",
        "before-all = \"yum install -y libyaml-devel\"\n",
        "test-command = \"python -c \\\"import yaml; print('with libyaml:', yaml.__with_libyaml__); ",
        "assert yaml.load('a: [1, 2]', Loader=yaml.CSafeLoader) == {'a': [1, 2]}\\\"\"\n",
    ));
    std::fs::write(&pyproject, text).unwrap();
    let out = dir.path().join("wheelhouse");
    let output = build(&project, identifier, &out);
    let text = text_of(&output);
    assert!(output.status.success(), "{text}");
    let (wheel, files) = wheel_in(&out);
    let sbom = read_member(&wheel, "pyyaml-6.0.3.dist-info/sboms/crosswheel.cdx.json");
    assert!(
        sbom.contains("pkg:deb/debian/libyaml@0.2.5-1?arch=source"),
        "{sbom}"
    );
    (text, files, sbom)
}

#[test]
#[ignore = "slow: libraries built from Debian sources, zig, qemu"]
fn pyyaml_for_linux_aarch64_builds_its_libyaml_extension_and_reports_it_under_qemu() {
    let (text, files, _) = pyyaml_builds_with_libyaml("cp311-manylinux_aarch64");
    assert!(text.contains("with libyaml: True"), "{text}");
    assert!(
        files
            .iter()
            .any(|file| file.starts_with("pyyaml.libs/libyaml-0-")),
        "libyaml vendored: {files:?}"
    );
}

#[test]
#[ignore = "slow: libraries built from Debian sources, zig, qemu"]
fn pyyaml_for_linux_ppc64le_builds_its_libyaml_extension_and_reports_it_under_qemu() {
    let (text, files, _) = pyyaml_builds_with_libyaml("cp311-manylinux_ppc64le");
    assert!(text.contains("with libyaml: True"), "{text}");
    assert!(
        files
            .iter()
            .any(|file| file.starts_with("pyyaml.libs/libyaml-0-")),
        "libyaml vendored: {files:?}"
    );
}

#[test]
#[ignore = "slow: libraries built from Debian sources, zig"]
fn pyyaml_for_macos_vendors_libyaml_beside_its_extension_and_passes_the_static_check() {
    let (text, files, _) = pyyaml_builds_with_libyaml("cp311-macosx_arm64");
    assert!(text.contains("static check (not executed)"), "{text}");
    assert!(
        files.iter().any(|file| file.contains(".dylibs/libyaml")),
        "libyaml vendored: {files:?}"
    );
}

/// A small extension that links zlib through `target-libraries` and whose test round-trips
/// data through it.
pub(crate) fn zdemo_project(dir: &Path) -> PathBuf {
    let setup_py = "from setuptools import setup, Extension\n\
        setup(ext_modules=[Extension('zdemo._z', ['zdemo/_z.c'], libraries=['z'])])\n";
    let source = r#"#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <zlib.h>

static PyObject *roundtrip(PyObject *self, PyObject *args) {
    const char *text = "crosswheel crosswheel crosswheel crosswheel";
    unsigned char packed[256], unpacked[256];
    uLongf packed_size = sizeof packed, unpacked_size = sizeof unpacked;
    if (compress(packed, &packed_size, (const Bytef *)text, strlen(text)) != Z_OK ||
        uncompress(unpacked, &unpacked_size, packed, packed_size) != Z_OK)
        return PyErr_Format(PyExc_RuntimeError, "zlib failed");
    return Py_BuildValue("(sy#k)", zlibVersion(), unpacked, (Py_ssize_t)unpacked_size,
                         (unsigned long)packed_size);
}

static PyMethodDef methods[] = {{"roundtrip", roundtrip, METH_NOARGS, NULL}, {NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_z", NULL, -1, methods};
PyMODINIT_FUNC PyInit__z(void) { return PyModule_Create(&module); }
"#;
    let project = common::setuptools_project(
        dir,
        "zdemo",
        setup_py,
        &[("zdemo/_z.c".to_string(), source.to_string())],
    );
    let pyproject = project.join("pyproject.toml");
    let mut text = std::fs::read_to_string(&pyproject).unwrap();
    text.push_str(concat!(
        "\n[tool.crosswheel]\ntarget-libraries = [\"zlib>=1.2\"]\n",
        "test-command = \"python -c \\\"from zdemo import _z; v, data, n = _z.roundtrip(); ",
        "print('zlib', v, n); assert data == b'crosswheel crosswheel crosswheel crosswheel'\\\"\"\n",
    ));
    std::fs::write(&pyproject, text).unwrap();
    project
}

/// zlib through `target-libraries` is linked and round-trips data under qemu.
#[test]
#[ignore = "slow: libraries built from Debian sources, zig, qemu"]
fn zlib_from_target_libraries_is_linked_and_works_under_qemu() {
    let dir = tempfile::tempdir().unwrap();
    let project = zdemo_project(dir.path());
    let out = dir.path().join("wheelhouse");
    let output = build(&project, "cp311-manylinux_aarch64", &out);
    let text = text_of(&output);
    if !output.status.success() {
        let kept = common::failed_folder(&text, "cp311-manylinux_aarch64");
        for entry in std::fs::read_dir(&kept).into_iter().flatten().flatten() {
            if entry.path().extension().is_some_and(|ext| ext == "log") {
                eprintln!(
                    "{}",
                    std::fs::read_to_string(entry.path()).unwrap_or_default()
                );
            }
        }
    }
    assert!(output.status.success(), "{text}");
    assert!(text.contains("zlib 1.3.1"), "{text}");
    // libz.so.1 is on every manylinux policy's list of system libraries: linked against
    // the catalogue's headers and library, and left to the system, as auditwheel does.
    let (_, files) = wheel_in(&out);
    assert!(
        !files.iter().any(|file| file.contains(".libs/")),
        "{files:?}"
    );
}

/// The catalogue's zlib builds for macOS too (1.2.13 did not: its `zutil.h` and the macOS
/// headers' `TARGET_OS_MAC`), and the wheel carries no path of the library's prefix.
#[test]
#[ignore = "slow: libraries built from Debian sources, zig"]
fn zlib_from_target_libraries_builds_for_macos_and_the_wheel_passes_the_static_check() {
    let dir = tempfile::tempdir().unwrap();
    let project = zdemo_project(dir.path());
    let out = dir.path().join("wheelhouse");
    let output = build(&project, "cp311-macosx_arm64", &out);
    let text = text_of(&output);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("zlib 1.3.1"), "{text}");
    assert!(text.contains("static check (not executed)"), "{text}");
    let (wheel, files) = wheel_in(&out);
    assert_no_prefix_path(&wheel, &files);
}

/// A meson project that finds its library the way many do without pkg-config
/// (`cc.find_library()` with `has_headers`): meson takes no `CPPFLAGS`/`LDFLAGS` for the
/// target of a cross build, so the prefix reaches it through a cross file of its own.
#[test]
#[ignore = "slow: libraries built from Debian sources, zig, meson, qemu"]
fn a_meson_project_finds_a_target_library_without_pkg_config_and_links_it() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("ymeson");
    std::fs::create_dir_all(project.join("ymeson")).unwrap();
    let files = [
        (
            "pyproject.toml",
            concat!(
                "[build-system]\nrequires = [\"meson-python>=0.15\"]\nbuild-backend = \"mesonpy\"\n\n",
                "[project]\nname = \"ymeson\"\nversion = \"1.0\"\n\n",
                "[tool.crosswheel]\ntarget-libraries = [\"libyaml\"]\n",
                "test-command = \"python -c \\\"from ymeson import _y; print('libyaml', _y.version())\\\"\"\n",
            ),
        ),
        (
            "meson.build",
            concat!(
                "project('ymeson', 'c')\n",
                "py = import('python').find_installation(pure: false)\n",
                "yaml = meson.get_compiler('c').find_library('yaml', has_headers: ['yaml.h'])\n",
                "py.extension_module('_y', '_y.c', dependencies: yaml, install: true, subdir: 'ymeson')\n",
                "py.install_sources('ymeson/__init__.py', subdir: 'ymeson')\n",
            ),
        ),
        (
            "_y.c",
            concat!(
                "#include <Python.h>\n#include <yaml.h>\n",
                "static PyObject *version(PyObject *self, PyObject *args) {\n",
                "    return PyUnicode_FromString(yaml_get_version_string());\n}\n",
                "static PyMethodDef methods[] = {{\"version\", version, METH_NOARGS, NULL}, {NULL}};\n",
                "static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, \"_y\", NULL, -1, methods};\n",
                "PyMODINIT_FUNC PyInit__y(void) { return PyModule_Create(&module); }\n",
            ),
        ),
        ("ymeson/__init__.py", ""),
    ];
    for (path, text) in files {
        std::fs::write(project.join(path), text).unwrap();
    }
    let out = dir.path().join("wheelhouse");
    let output = build(&project, "cp311-manylinux_aarch64", &out);
    let text = text_of(&output);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("libyaml 0.2.5"),
        "the test ran under qemu:\n{text}"
    );
    let (_, files) = wheel_in(&out);
    assert!(
        files
            .iter()
            .any(|file| file.starts_with("ymeson.libs/libyaml-0-")),
        "libyaml vendored: {files:?}"
    );
}

/// `--offline` covers Debian's archive too: a library whose source package the cache does
/// not hold stops the run in one line before anything announces a download, and nothing
/// is fetched. The cache here is a fresh one that shares the real cache's zig and build
/// environments, so everything but Debian's sources is at hand.
#[test]
#[ignore = "slow: zig"]
fn offline_refuses_to_fetch_a_source_package_the_cache_lacks() {
    use crosswheel::stages::toolchain::resolve_toolchain;
    use crosswheel::support::host::Cache;
    use crosswheel::target::{Target, ToolchainKind};
    let real = Cache::from_env().expect("a cache directory");
    let target = Target::parse("linux-aarch64").unwrap();
    resolve_toolchain(
        ToolchainKind::Zig,
        &target,
        &real,
        Path::new("python3"),
        &crosswheel::support::host::Network::default(),
        &[],
        None,
    )
    .unwrap_or_else(|err| panic!("{err}"));
    let cache = tempfile::tempdir().unwrap();
    for shared in [
        "ziglang-venv",
        "zig",
        "toolchains",
        "crossenv",
        "build-env",
        "uv-venv",
    ] {
        let from = real.root().join(shared);
        if from.exists() {
            std::os::unix::fs::symlink(&from, cache.path().join(shared)).unwrap();
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let project = zdemo_project(dir.path());
    let mut command = Command::new(common::crosswheel_bin());
    common::without_option_variables(&mut command);
    let output = command
        .env("CROSSWHEEL_CACHE", cache.path())
        .arg("build")
        .arg(&project)
        .args(["--only", "cp311-manylinux_aarch64", "--offline", "-w"])
        .arg(dir.path().join("out"))
        .output()
        .expect("crosswheel runs");
    let text = text_of(&output);
    assert!(!output.status.success(), "{text}");
    assert_eq!(
        text.matches("--offline forbids downloading the source package zlib from Debian ")
            .count(),
        1,
        "{text}"
    );
    assert!(
        text.contains(
            "which crosswheel's cache does not hold: run once without --offline to fill the cache"
        ),
        "{text}"
    );
    for announced in ["fetching Debian source", "building zlib"] {
        assert!(!text.contains(announced), "{text}");
    }
    let sources = cache.path().join("debian-sources");
    let fetched = std::fs::read_dir(&sources).map_or(0, |entries| entries.count());
    assert_eq!(
        fetched,
        0,
        "nothing is downloaded into {}",
        sources.display()
    );
}
