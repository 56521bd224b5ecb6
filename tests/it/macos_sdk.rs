//! A user-supplied macOS SDK: zig ships no Apple frameworks, so an extension linking
//! `-framework CoreFoundation` builds only with the SDK the `macos-sdk` option names (or
//! SDKROOT), and without one the build fails naming the framework and the option. The SDK
//! here is a small one of text stubs for x86_64 and arm64, laid out as Apple's are.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::crosswheel_bin;
use crosswheel::analysis::loadcheck::check_macos_wheel;
use crosswheel::formats::macho::MachOFile;
use crosswheel::formats::wheel::WheelArchive;

const CORE_FOUNDATION: &str =
    "/System/Library/Frameworks/CoreFoundation.framework/Versions/A/CoreFoundation";

const TBD: &str = "--- !tapi-tbd
tbd-version:     4
targets:         [ x86_64-macos, arm64-macos ]
install-name:    '/System/Library/Frameworks/CoreFoundation.framework/Versions/A/CoreFoundation'
current-version: 1953.255
exports:
  - targets:         [ x86_64-macos, arm64-macos ]
    symbols:         [ _CFRelease, _CFStringCreateWithCString ]
...
";

const HEADER: &str = "typedef const void *CFTypeRef;
typedef const struct __CFString *CFStringRef;
typedef const struct __CFAllocator *CFAllocatorRef;
typedef unsigned int CFStringEncoding;
#define kCFStringEncodingUTF8 0x08000100
CFStringRef CFStringCreateWithCString(CFAllocatorRef alloc, const char *cStr, CFStringEncoding encoding);
void CFRelease(CFTypeRef cf);
";

/// `SDK/System/Library/Frameworks/CoreFoundation.framework`, versioned with symlinks as
/// in Xcode's SDKs, and an empty `usr/lib`.
fn make_sdk(root: &Path) -> PathBuf {
    let sdk = root.join("MacOSX.sdk");
    let framework = sdk.join("System/Library/Frameworks/CoreFoundation.framework");
    let version = framework.join("Versions/A");
    std::fs::create_dir_all(version.join("Headers")).unwrap();
    std::fs::create_dir_all(sdk.join("usr/lib")).unwrap();
    std::fs::write(version.join("CoreFoundation.tbd"), TBD).unwrap();
    std::fs::write(version.join("Headers/CoreFoundation.h"), HEADER).unwrap();
    let link = |target: &str, name: &str| std::os::unix::fs::symlink(target, framework.join(name));
    link("A", "Versions/Current").unwrap();
    link("Versions/Current/Headers", "Headers").unwrap();
    link("Versions/Current/CoreFoundation.tbd", "CoreFoundation.tbd").unwrap();
    sdk
}

/// A setuptools project whose extension calls CoreFoundation, linked as projects do it.
/// Without the SDK's header it declares the functions itself, so that the link, not the
/// compile, is what fails.
fn make_project(root: &Path) -> PathBuf {
    let mut source = String::from(
        "#include <Python.h>\n\
         #if __has_include(<CoreFoundation/CoreFoundation.h>)\n\
         #include <CoreFoundation/CoreFoundation.h>\n#else\n",
    );
    source.push_str(HEADER);
    source.push_str(
        "#endif\n\
         static PyObject *roundtrip(PyObject *self, PyObject *args) {\n    \
         CFStringRef s = CFStringCreateWithCString(NULL, \"hi\", kCFStringEncodingUTF8);\n    \
         CFRelease(s);\n    Py_RETURN_NONE;\n}\n\
         static PyMethodDef methods[] = {{\"roundtrip\", roundtrip, METH_NOARGS, NULL}, {NULL}};\n\
         static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, \"_cf\", NULL, -1, methods};\n\
         PyMODINIT_FUNC PyInit__cf(void) { return PyModule_Create(&module); }\n",
    );
    common::setuptools_project(
        root,
        "cfdemo",
        "from setuptools import Extension, setup\n\
         setup(packages=['cfdemo'], ext_modules=[Extension('cfdemo._cf', ['cf.c'],\n    \
         extra_link_args=['-framework', 'CoreFoundation'])])\n",
        &[("cf.c".to_string(), source)],
    )
}

/// `crosswheel build` of the project's cp311 macOS arm64 wheel into `out`, with `SDKROOT`
/// removed from the environment and `extra` variables set.
fn build(project: &Path, out: &Path, extra: &[(&str, &str)]) -> Output {
    build_identifier(project, out, "cp311-macosx_arm64", extra)
}

fn build_identifier(
    project: &Path,
    out: &Path,
    identifier: &str,
    extra: &[(&str, &str)],
) -> Output {
    Command::new(crosswheel_bin())
        .arg("build")
        .arg(project)
        .args(["--only", identifier, "-w"])
        .arg(out)
        .env_remove("SDKROOT")
        .env_remove("CROSSWHEEL_MACOS_SDK")
        .envs(extra.iter().copied())
        .output()
        .expect("run crosswheel build")
}

fn text(output: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
#[ignore = "slow: builds with zig against a macOS SDK"]
fn extension_links_core_foundation_from_the_sdk_the_option_names() {
    let work = tempfile::tempdir().unwrap();
    let sdk = make_sdk(work.path());
    let project = make_project(work.path());
    let out = work.path().join("wheelhouse");

    let output = build(
        &project,
        &out,
        &[("CROSSWHEEL_MACOS_SDK", &sdk.to_string_lossy())],
    );
    assert!(output.status.success(), "{}", text(&output));

    let wheel = out.join("cfdemo-1.0-cp311-cp311-macosx_11_0_arm64.whl");
    let archive =
        WheelArchive::open(&wheel).unwrap_or_else(|err| panic!("{err}: {}", text(&output)));
    let extension = archive.read("cfdemo/_cf.cpython-311-darwin.so").unwrap();
    let parsed = MachOFile::parse(&extension).unwrap();
    let dependencies: Vec<&str> = parsed.slices[0]
        .dependencies
        .iter()
        .map(|dependency| dependency.install_name.as_str())
        .collect();
    assert!(dependencies.contains(&CORE_FOUNDATION), "{dependencies:?}");
    let check = check_macos_wheel(&archive).unwrap();
    assert!(check.passed(), "{check}");
}

/// The SDK's stubs serve x86_64 as they serve arm64: a universal2 build links each slice
/// against the framework.
#[test]
#[ignore = "slow: builds with zig against a macOS SDK"]
fn both_slices_of_a_universal2_build_link_the_sdks_framework() {
    let work = tempfile::tempdir().unwrap();
    let sdk = make_sdk(work.path());
    let project = make_project(work.path());
    let out = work.path().join("wheelhouse");

    let output = build_identifier(
        &project,
        &out,
        "cp311-macosx_universal2",
        &[("CROSSWHEEL_MACOS_SDK", &sdk.to_string_lossy())],
    );
    assert!(output.status.success(), "{}", text(&output));
    let wheel = out.join("cfdemo-1.0-cp311-cp311-macosx_10_13_universal2.whl");
    let archive =
        WheelArchive::open(&wheel).unwrap_or_else(|err| panic!("{err}: {}", text(&output)));
    let extension = archive.read("cfdemo/_cf.cpython-311-darwin.so").unwrap();
    let parsed = MachOFile::parse(&extension).unwrap();
    assert_eq!(parsed.slices.len(), 2);
    for slice in &parsed.slices {
        assert!(
            slice
                .dependencies
                .iter()
                .any(|dependency| dependency.install_name == CORE_FOUNDATION),
            "{}: {:?}",
            slice.arch,
            slice.dependencies
        );
    }
    let check = check_macos_wheel(&archive).unwrap();
    assert!(check.passed(), "{check}");
}

#[test]
#[ignore = "slow: builds with zig against a macOS SDK"]
fn sdkroot_names_the_sdk_too() {
    let work = tempfile::tempdir().unwrap();
    let sdk = make_sdk(work.path());
    let project = make_project(work.path());
    let out = work.path().join("wheelhouse");

    let output = build(&project, &out, &[("SDKROOT", &sdk.to_string_lossy())]);
    assert!(output.status.success(), "{}", text(&output));
}

#[test]
#[ignore = "slow: builds with zig against a macOS SDK"]
fn without_an_sdk_the_failure_names_the_framework_and_the_option() {
    let work = tempfile::tempdir().unwrap();
    let project = make_project(work.path());
    let out = work.path().join("wheelhouse");

    let output = build(&project, &out, &[]);
    assert!(!output.status.success(), "{}", text(&output));
    let said = text(&output);
    let line = said
        .lines()
        .find(|line| line.contains("-framework CoreFoundation"))
        .unwrap_or_else(|| panic!("no line names the framework:\n{said}"));
    assert!(
        line.contains("macos-sdk") && line.contains("SDKROOT"),
        "{line}"
    );
}

#[test]
#[ignore = "slow: builds with zig against a macOS SDK"]
fn a_folder_that_is_no_sdk_is_refused_in_one_line() {
    let work = tempfile::tempdir().unwrap();
    let project = make_project(work.path());
    let out = work.path().join("wheelhouse");
    let not_sdk = work.path().join("empty");
    std::fs::create_dir_all(&not_sdk).unwrap();

    let output = build(
        &project,
        &out,
        &[("CROSSWHEEL_MACOS_SDK", &not_sdk.to_string_lossy())],
    );
    assert!(!output.status.success());
    let said = text(&output);
    assert!(
        said.contains(&format!(
            "the macos-sdk option = {}: not a macOS SDK",
            not_sdk.display()
        )),
        "{said}"
    );
}
