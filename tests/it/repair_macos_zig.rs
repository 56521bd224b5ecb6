//! The macOS repair end to end: extensions cross-compiled with zig against
//! the real scipy-openblas32 dylibs, wrapped in wheels, repaired, then read
//! back with our parser, LLVM's otool and the static load check.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use crosswheel::analysis::loadcheck::{LoadProblem, check_macos_wheel};
use crosswheel::formats::macho::{MachOFile, SignatureStatus, Version, is_macho, verify_signature};
use crosswheel::formats::wheel::WheelArchive;
use crosswheel::stages::repair::macos::{MacosRepairOptions, MacosRepairReport, repair};

const BLAS_SOURCE: &str = r#"
extern float scipy_cblas_sdot(int n, const float *x, int incx, const float *y, int incy);
extern char *scipy_openblas_get_corename(void);
extern void *PyModule_Create2(void *, int);
float blas_dot(void) { float a[2] = {1, 2}; return scipy_cblas_sdot(2, a, 1, a, 1); }
const char *corename(void) { return scipy_openblas_get_corename(); }
void *PyInit__blas(void) { return PyModule_Create2(0, 1013); }
"#;

const EXTENSION: &str = "_blas.cpython-311-darwin.so";

/// Runs `python3 -m ziglang cc` for arm64 macOS with the given target version.
fn zig_cc(dir: &Path, macos: &str, args: &[&str]) {
    let cache = std::env::var_os("ZIG_GLOBAL_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root/.cache/crosswheel/zig"));
    let target = format!("aarch64-macos.{macos}");
    let output = Command::new("python3")
        .args([
            "-m",
            "ziglang",
            "cc",
            "-target",
            &target,
            "-O2",
            "-shared",
            "-undefined",
            "dynamic_lookup",
        ])
        .args(args)
        .current_dir(dir)
        .env("ZIG_GLOBAL_CACHE_DIR", cache)
        .output()
        .expect("this test needs python3 with the ziglang package: pip install ziglang");
    assert!(
        output.status.success(),
        "zig cc {args:?} failed (install it with `pip install ziglang`): {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The `lib/` folder of an unpacked scipy-openblas32 macOS wheel.
fn openblas_lib_dir(fixture: &str, into: &Path) -> PathBuf {
    common::unzip_to(&common::fixture(fixture), into);
    into.join("scipy_openblas32/lib")
}

/// Builds the extension against the dylib in `lib_dir` for `macos`.
fn build_extension(dir: &Path, lib_dir: &Path, macos: &str, extra: &[&str]) -> Vec<u8> {
    std::fs::write(dir.join("blas.c"), BLAS_SOURCE).unwrap();
    let lib_flag = format!("-L{}", lib_dir.display());
    let mut args = vec!["-o", EXTENSION, "blas.c", &lib_flag, "-lscipy_openblas"];
    args.extend(extra);
    zig_cc(dir, macos, &args);
    std::fs::read(dir.join(EXTENSION)).unwrap()
}

/// A `blasext` wheel holding `extension` at `blasext/<subdir>/_blas...so`.
fn extension_wheel(dir: &Path, extension_path: &str, extension: &[u8]) -> PathBuf {
    let metadata = common::minimal_metadata("blasext", "1.0", "cp311-cp311-macosx_11_0_arm64");
    let mut files: Vec<(&str, &[u8])> = metadata
        .iter()
        .map(|(name, data)| (name.as_str(), data.as_slice()))
        .collect();
    files.push(("blasext/__init__.py", b""));
    files.push((extension_path, extension));
    common::make_wheel(dir, "blasext-1.0-cp311-cp311-macosx_11_0_arm64.whl", &files)
}

fn options(out: &Path, lib_dir: &Path) -> MacosRepairOptions {
    MacosRepairOptions {
        lib_paths: vec![lib_dir.to_path_buf()],
        out_dir: out.to_path_buf(),
        epoch: Some(1_700_000_000),
        macos_version: Some(crosswheel::target::OsVersion::new(11, 0)),
        ..Default::default()
    }
}

fn repair_wheel(wheel: &Path, options: &MacosRepairOptions) -> anyhow::Result<MacosRepairReport> {
    repair(&WheelArchive::open(wheel)?, options)
}

fn slice_of(data: &[u8]) -> MachOFile<'_> {
    MachOFile::parse(data).expect("output parses")
}

fn assert_every_signature_verifies(wheel: &WheelArchive) {
    for entry in wheel.entries() {
        let data = wheel.read(&entry.name).unwrap();
        if !is_macho(&data) {
            continue;
        }
        for slice in &slice_of(&data).slices {
            let status = verify_signature(slice);
            assert!(
                matches!(status, SignatureStatus::Valid { .. }),
                "{}: {status:?}",
                entry.name
            );
        }
    }
}

/// `llvm-otool-14 -L -l` must read every Mach-O of the output; returns its text.
fn otool(wheel: &Path, scratch: &Path) -> String {
    let otool = common::require_tool("llvm-otool-14", "apt-get install llvm-14");
    common::unzip_to(wheel, scratch);
    let mut text = String::new();
    for entry in walkdir::WalkDir::new(scratch)
        .into_iter()
        .filter_map(Result::ok)
    {
        let path = entry.path();
        if !path.is_file() || !is_macho(&std::fs::read(path).unwrap()) {
            continue;
        }
        let output = Command::new(&otool)
            .args(["-L", "-l"])
            .arg(path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success() && stderr.trim().is_empty(),
            "otool on {}: {stderr}",
            path.display()
        );
        text.push_str(&String::from_utf8_lossy(&output.stdout));
    }
    text
}

#[test]
#[ignore = "slow: zig-built Mach-O extensions"]
fn openblas_0_3_34_is_vendored_with_loader_path_references_and_no_absolute_rpaths() {
    let work = tempfile::tempdir().unwrap();
    let lib_dir = openblas_lib_dir(
        "scipy_openblas32-0.3.34.481.3-py3-none-macosx_11_0_arm64.whl",
        &work.path().join("blas"),
    );
    let extension = build_extension(
        work.path(),
        &lib_dir,
        "11.0",
        &["-Wl,-headerpad_max_install_names"],
    );
    assert!(
        slice_of(&extension).slices[0]
            .dependencies
            .iter()
            .any(|d| d.install_name == "@rpath/libscipy_openblas.dylib")
    );
    let wheel = extension_wheel(
        work.path(),
        "blasext/_blas.cpython-311-darwin.so",
        &extension,
    );

    let out = work.path().join("out");
    let report = repair_wheel(&wheel, &options(&out, &lib_dir)).unwrap();
    assert_eq!(report.platform_tags, ["macosx_11_0_arm64"]);
    let vendored = "blasext/.dylibs/libscipy_openblas.dylib";
    assert_eq!(
        report
            .grafted
            .iter()
            .map(|(_, path)| path.as_str())
            .collect::<Vec<_>>(),
        [vendored]
    );

    let output = WheelArchive::open(&report.output).unwrap();
    let ext = output.read("blasext/_blas.cpython-311-darwin.so").unwrap();
    let names: Vec<String> = slice_of(&ext).slices[0]
        .dependencies
        .iter()
        .map(|d| d.install_name.clone())
        .collect();
    assert!(
        names.contains(&"@loader_path/.dylibs/libscipy_openblas.dylib".to_string()),
        "{names:?}"
    );
    assert!(
        names
            .iter()
            .all(|name| name.starts_with("@loader_path/") || name.starts_with("/usr/lib/")),
        "{names:?}"
    );

    let dylib = output.read(vendored).unwrap();
    let dylib = slice_of(&dylib);
    assert_eq!(
        dylib.slices[0].install_id.as_deref(),
        Some("/DLC/blasext/.dylibs/libscipy_openblas.dylib")
    );
    assert_eq!(
        dylib.slices[0].rpaths,
        ["@loader_path"],
        "the three /opt/gfortran rpaths must be gone"
    );
    assert_every_signature_verifies(&output);

    let listing = otool(&report.output, &work.path().join("unpacked"));
    assert!(
        listing.contains("@loader_path/.dylibs/libscipy_openblas.dylib"),
        "{listing}"
    );
    assert!(!listing.contains("/opt/gfortran"), "{listing}");

    let check = check_macos_wheel(&output).unwrap();
    assert!(check.passed(), "{check}");
}

#[test]
#[ignore = "slow: zig-built Mach-O extensions"]
fn openblas_0_3_33_brings_its_gfortran_runtime_along_transitively() {
    let work = tempfile::tempdir().unwrap();
    let lib_dir = openblas_lib_dir(
        "scipy_openblas32-0.3.33.201.0-py3-none-macosx_11_0_arm64.whl",
        &work.path().join("blas"),
    );
    let extension = build_extension(
        work.path(),
        &lib_dir,
        "11.0",
        &["-Wl,-headerpad_max_install_names"],
    );
    let wheel = extension_wheel(
        work.path(),
        "blasext/sub/_blas.cpython-311-darwin.so",
        &extension,
    );

    let report = repair_wheel(&wheel, &options(&work.path().join("out"), &lib_dir)).unwrap();
    let mut grafted: Vec<&str> = report
        .grafted
        .iter()
        .map(|(_, path)| path.as_str())
        .collect();
    grafted.sort();
    assert_eq!(
        grafted,
        [
            "blasext/.dylibs/libgcc_s.1.1.dylib",
            "blasext/.dylibs/libgfortran.5.dylib",
            "blasext/.dylibs/libquadmath.0.dylib",
            "blasext/.dylibs/libscipy_openblas.dylib",
        ]
    );
    let output = WheelArchive::open(&report.output).unwrap();
    let ext = output
        .read("blasext/sub/_blas.cpython-311-darwin.so")
        .unwrap();
    assert!(
        slice_of(&ext).slices[0]
            .dependencies
            .iter()
            .any(|d| d.install_name == "@loader_path/../.dylibs/libscipy_openblas.dylib")
    );
    let openblas = output
        .read("blasext/.dylibs/libscipy_openblas.dylib")
        .unwrap();
    let openblas_names: Vec<String> = slice_of(&openblas).slices[0]
        .dependencies
        .iter()
        .map(|d| d.install_name.clone())
        .collect();
    assert!(
        openblas_names.contains(&"@loader_path/libgfortran.5.dylib".to_string()),
        "{openblas_names:?}"
    );
    assert_every_signature_verifies(&output);
    otool(&report.output, &work.path().join("unpacked"));
    let check = check_macos_wheel(&output).unwrap();
    assert!(check.passed(), "{check}");
}

#[test]
#[ignore = "slow: zig-built Mach-O extensions"]
fn extension_for_macos_12_is_rejected_without_retag_and_tagged_12_with_it() {
    let work = tempfile::tempdir().unwrap();
    let lib_dir = openblas_lib_dir(
        "scipy_openblas32-0.3.34.481.3-py3-none-macosx_11_0_arm64.whl",
        &work.path().join("blas"),
    );
    let extension = build_extension(
        work.path(),
        &lib_dir,
        "12.0",
        &["-Wl,-headerpad_max_install_names"],
    );
    let wheel = extension_wheel(
        work.path(),
        "blasext/_blas.cpython-311-darwin.so",
        &extension,
    );

    let out = work.path().join("out");
    let error = format!(
        "{:#}",
        repair_wheel(&wheel, &options(&out, &lib_dir)).unwrap_err()
    );
    assert!(
        error.contains("blasext/_blas.cpython-311-darwin.so")
            && error.contains("12.0")
            && error.contains("--retag"),
        "{error}"
    );
    assert!(
        !out.exists() || std::fs::read_dir(&out).unwrap().next().is_none(),
        "a failed repair left a file behind"
    );

    let retag = MacosRepairOptions {
        retag: true,
        ..options(&out, &lib_dir)
    };
    let report = repair_wheel(&wheel, &retag).unwrap();
    assert_eq!(report.platform_tags, ["macosx_12_0_arm64"]);
    assert!(
        report
            .output
            .file_name()
            .unwrap()
            .to_string_lossy()
            .ends_with("-macosx_12_0_arm64.whl")
    );
    let output = WheelArchive::open(&report.output).unwrap();
    let wheel_file =
        String::from_utf8(output.read("blasext-1.0.dist-info/WHEEL").unwrap()).unwrap();
    assert!(
        wheel_file.contains("Tag: cp311-cp311-macosx_12_0_arm64"),
        "{wheel_file}"
    );
    assert!(check_macos_wheel(&output).unwrap().passed());
}

#[test]
#[ignore = "slow: zig-built Mach-O extensions"]
fn extension_for_macos_10_15_is_raised_to_the_arm64_floor() {
    let work = tempfile::tempdir().unwrap();
    let lib_dir = openblas_lib_dir(
        "scipy_openblas32-0.3.34.481.3-py3-none-macosx_11_0_arm64.whl",
        &work.path().join("blas"),
    );
    let extension = build_extension(
        work.path(),
        &lib_dir,
        "10.15",
        &["-Wl,-headerpad_max_install_names"],
    );
    let minos = |data: &[u8]| slice_of(data).slices[0].deployment_target.unwrap().minos;
    assert_eq!(minos(&extension), Version::new(10, 15, 0));
    let wheel = extension_wheel(
        work.path(),
        "blasext/_blas.cpython-311-darwin.so",
        &extension,
    );

    let report = repair_wheel(&wheel, &options(&work.path().join("out"), &lib_dir)).unwrap();
    assert_eq!(report.platform_tags, ["macosx_11_0_arm64"]);
    let output = WheelArchive::open(&report.output).unwrap();
    assert_eq!(
        minos(&output.read("blasext/_blas.cpython-311-darwin.so").unwrap()),
        Version::new(11, 0, 0)
    );
    assert_every_signature_verifies(&output);
}

#[test]
#[ignore = "slow: zig-built Mach-O extensions"]
fn exhausted_header_padding_is_an_error_naming_the_file_and_the_linker_flag() {
    let work = tempfile::tempdir().unwrap();
    let lib_dir = openblas_lib_dir(
        "scipy_openblas32-0.3.34.481.3-py3-none-macosx_11_0_arm64.whl",
        &work.path().join("blas"),
    );
    let extension = build_extension(work.path(), &lib_dir, "11.0", &["-Wl,-headerpad,0"]);
    let path = "blasext/deep/er/still/_blas.cpython-311-darwin.so";
    let wheel = extension_wheel(work.path(), path, &extension);

    let out = work.path().join("out");
    let error = format!(
        "{:#}",
        repair_wheel(&wheel, &options(&out, &lib_dir)).unwrap_err()
    );
    assert!(
        error.contains(path) && error.contains("-headerpad_max_install_names"),
        "{error}"
    );
    assert!(!error.contains('\n'), "{error}");
    assert!(!out.exists() || std::fs::read_dir(&out).unwrap().next().is_none());
}

const STUB_FULL: &str = "int foo(void) { return 1; }\nint bar(void) { return 2; }\n";
const STUB_WITHOUT_FOO: &str = "int bar(void) { return 2; }\n";
const USES_FOO: &str = "extern int foo(void);\nextern int bar(void);\nint PyInit__use(void) { return foo() + bar(); }\n";

#[test]
#[ignore = "slow: zig-built Mach-O extensions"]
fn vendored_dylib_lacking_an_imported_symbol_fails_the_load_check_by_name() {
    let work = tempfile::tempdir().unwrap();
    let (full, partial) = (work.path().join("full"), work.path().join("partial"));
    for (dir, source) in [(&full, STUB_FULL), (&partial, STUB_WITHOUT_FOO)] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("stub.c"), source).unwrap();
        zig_cc(
            dir,
            "11.0",
            &[
                "-o",
                "libstub.dylib",
                "stub.c",
                "-Wl,-install_name,@rpath/libstub.dylib",
            ],
        );
    }
    std::fs::write(work.path().join("use.c"), USES_FOO).unwrap();
    let lib_flag = format!("-L{}", full.display());
    zig_cc(
        work.path(),
        "11.0",
        &[
            "-o",
            "_use.cpython-311-darwin.so",
            "use.c",
            &lib_flag,
            "-lstub",
            "-Wl,-headerpad_max_install_names",
        ],
    );
    let extension = std::fs::read(work.path().join("_use.cpython-311-darwin.so")).unwrap();
    let wheel = extension_wheel(
        work.path(),
        "blasext/_use.cpython-311-darwin.so",
        &extension,
    );

    // Vendoring the build with `foo` passes; the one without it must not.
    let good = repair_wheel(&wheel, &options(&work.path().join("good"), &full)).unwrap();
    assert!(
        check_macos_wheel(&WheelArchive::open(&good.output).unwrap())
            .unwrap()
            .passed()
    );

    let bad = repair_wheel(&wheel, &options(&work.path().join("bad"), &partial)).unwrap();
    let report = check_macos_wheel(&WheelArchive::open(&bad.output).unwrap()).unwrap();
    assert!(!report.passed());
    assert_eq!(
        report
            .failures
            .iter()
            .map(|failure| (&failure.file[..], &failure.problem))
            .collect::<Vec<_>>(),
        [(
            "blasext/_use.cpython-311-darwin.so",
            &LoadProblem::MissingSymbol {
                symbol: "_foo".into(),
                library: "blasext/.dylibs/libstub.dylib".into()
            }
        )]
    );
    assert!(report.to_string().contains("_foo"), "{report}");
}

#[test]
#[ignore = "slow: zig-built Mach-O extensions"]
fn extension_linked_in_a_build_tree_gets_its_file_name_as_install_id() {
    let work = tempfile::tempdir().unwrap();
    let build_path = format!("build/lib.macosx-11.0-arm64-cpython-311/blasext/{EXTENSION}");
    std::fs::create_dir_all(work.path().join(&build_path).parent().unwrap()).unwrap();
    std::fs::write(
        work.path().join("ext.c"),
        "extern void *PyModule_Create2(void *, int);\n\
         void *PyInit__blas(void) { return PyModule_Create2(0, 1013); }\n",
    )
    .unwrap();
    zig_cc(
        work.path(),
        "11.0",
        &[
            "-o",
            &build_path,
            "ext.c",
            "-Wl,-headerpad_max_install_names",
        ],
    );
    let extension = std::fs::read(work.path().join(&build_path)).unwrap();
    let linked_id = slice_of(&extension).slices[0].install_id.clone();
    assert_eq!(
        linked_id.as_deref(),
        Some(build_path.as_str()),
        "zig records the path the extension was linked at"
    );
    let wheel = extension_wheel(
        work.path(),
        "blasext/_blas.cpython-311-darwin.so",
        &extension,
    );

    let out = work.path().join("out");
    let report = repair_wheel(&wheel, &options(&out, work.path())).unwrap();
    assert!(report.grafted.is_empty());
    assert_eq!(report.edited, ["blasext/_blas.cpython-311-darwin.so"]);
    let output = WheelArchive::open(&report.output).unwrap();
    let repaired = output.read("blasext/_blas.cpython-311-darwin.so").unwrap();
    assert_eq!(
        slice_of(&repaired).slices[0].install_id.as_deref(),
        Some(EXTENSION)
    );
    assert_every_signature_verifies(&output);
    let listing = otool(&report.output, &work.path().join("unpacked"));
    assert!(!listing.contains("build/lib."), "{listing}");
    assert!(check_macos_wheel(&output).unwrap().passed());
}
