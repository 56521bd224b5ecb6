//! examples/fortranproj (meson-python, a C extension whose numerics are Fortran) through
//! the whole pipeline: the build gets Fortran because its meson files add the language,
//! Debian's cross gfortran compiles, zig links against the target's glibc floor, the
//! repair vendors the manylinux_2_28 image's libgfortran (and libquadmath on ppc64le and
//! x86_64), and the suite runs on Debian's target CPython under qemu-user (x86_64's
//! natively). For macOS arm64 LLVM flang compiles, zig links, and the repair vendors
//! flang's runtime built for the target; the wheel is checked statically. A target without
//! a Fortran stops in one line before its build.

use std::path::Path;
use std::process::Command;

use crate::common::{self, crosswheel_bin};

fn build(only: Option<&str>, out: &Path) -> std::process::Output {
    let mut command = Command::new(crosswheel_bin());
    command
        .arg("build")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fortranproj"))
        .arg("-w")
        .arg(out)
        .env("SOURCE_DATE_EPOCH", "1700000000");
    if let Some(only) = only {
        command.args(["--only", only]);
    }
    command.output().expect("run crosswheel build")
}

#[test]
#[ignore = "slow: the whole pipeline on examples/fortranproj (gfortran for four targets, zig, qemu)"]
fn fortran_example_passes_its_suite_on_aarch64_ppc64le_s390x_and_x86_64() {
    let out = tempfile::tempdir().unwrap();
    let output = build(None, out.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "build of fortranproj failed:\n{stdout}\n{stderr}"
    );
    assert!(stderr.contains("Fortran for linux-s390x: "), "{stderr}");
    // The vendored libgfortran calls glibc 2.27's expf and logf, as in scipy's own
    // manylinux_2_28 wheels; the extension itself needs no more than glibc 2.17.
    assert_eq!(
        common::wheel_names_in(out.path()),
        [
            "fortranproj-0.1.0-cp311-cp311-manylinux_2_27_aarch64.whl",
            "fortranproj-0.1.0-cp311-cp311-manylinux_2_27_ppc64le.whl",
            "fortranproj-0.1.0-cp311-cp311-manylinux_2_27_s390x.whl",
            "fortranproj-0.1.0-cp311-cp311-manylinux_2_27_x86_64.whl",
        ]
    );
    for wheel in common::wheel_names_in(out.path()) {
        let dir = tempfile::tempdir().unwrap();
        common::unzip_to(&out.path().join(&wheel), dir.path());
        let libs: Vec<String> = std::fs::read_dir(dir.path().join("fortranproj.libs"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            libs.iter().any(|name| name.starts_with("libgfortran-")),
            "{wheel}: {libs:?}"
        );
        assert_eq!(
            libs.iter().any(|name| name.starts_with("libquadmath-")),
            wheel.contains("ppc64le") || wheel.contains("x86_64"),
            "{wheel}: {libs:?}"
        );
        let sbom = std::fs::read_to_string(
            dir.path()
                .join("fortranproj-0.1.0.dist-info/sboms/crosswheel.cdx.json"),
        )
        .unwrap();
        assert!(
            sbom.contains("pkg:pypi/scipy-openblas32@0.3.33.201.0")
                && sbom.contains("GPL-3.0-or-later WITH GCC-exception-3.1"),
            "{wheel}: {sbom}"
        );
    }
    assert_eq!(
        stdout
            .lines()
            .filter(|line| line.contains("3 passed in "))
            .count(),
        4,
        "pytest's result lines missing:\n{stdout}"
    );
}

#[test]
#[ignore = "slow: flang for macOS arm64 (Debian's flang-19) and its runtime built from LLVM's source with zig"]
fn fortran_example_builds_for_macos_arm64_with_flang_and_vendors_its_runtime() {
    use crate::common::macho::{llvm_tool, otool_thin, run};
    let out = tempfile::tempdir().unwrap();
    let output = build(Some("cp311-macosx_arm64"), out.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "build of fortranproj for macOS failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains("Fortran for macos-arm64: Debian's flang-19 from bookworm"),
        "{stderr}"
    );
    let wheel = "fortranproj-0.1.0-cp311-cp311-macosx_11_0_arm64.whl";
    assert_eq!(common::wheel_names_in(out.path()), [wheel]);
    let dir = tempfile::tempdir().unwrap();
    common::unzip_to(&out.path().join(wheel), dir.path());
    // As delocate leaves a vendored library: in the package's .dylibs folder, under
    // delocate's install name, signed.
    let runtime = dir
        .path()
        .join("fortranproj/.dylibs/libFortranRuntime.dylib");
    let vendored = otool_thin(&runtime);
    assert_eq!(
        vendored.install_id.as_deref(),
        Some("/DLC/fortranproj/.dylibs/libFortranRuntime.dylib")
    );
    assert!(vendored.code_signature.is_some(), "{vendored:?}");
    assert_eq!(vendored.minos.as_deref(), Some("11.0"));
    let extension = std::fs::read_dir(dir.path().join("fortranproj"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.to_string_lossy().ends_with(".so"))
        .expect("the extension module");
    let reading = otool_thin(&extension);
    assert!(
        reading
            .dependencies
            .iter()
            .any(|(_, name)| name == "@loader_path/.dylibs/libFortranRuntime.dylib"),
        "{reading:?}"
    );
    assert!(reading.code_signature.is_some(), "{reading:?}");
    // Every runtime entry point the Fortran code calls is one the vendored runtime
    // exports: formatted I/O into a string, ALLOCATE's bookkeeping, SUM.
    let nm = |args: &[&str], path: &std::path::Path| {
        run(std::process::Command::new(llvm_tool("llvm-nm"))
            .args(args)
            .arg(path))
    };
    let called: Vec<String> = nm(&["-u"], &extension)
        .lines()
        .map(|line| line.trim().to_string())
        .filter(|name| name.starts_with("__Fortran"))
        .collect();
    assert!(
        called.iter().any(|name| name.starts_with("__FortranAio")),
        "{called:?}"
    );
    let exported = nm(&["-gU", "--format=just-symbols"], &runtime);
    let exported: std::collections::BTreeSet<&str> = exported.lines().collect();
    for name in &called {
        assert!(
            exported.contains(name.as_str()),
            "{name} is not in the runtime"
        );
    }
    let sbom = std::fs::read_to_string(
        dir.path()
            .join("fortranproj-0.1.0.dist-info/sboms/crosswheel.cdx.json"),
    )
    .unwrap();
    assert!(
        sbom.contains("llvm-toolchain-19") && sbom.contains("Apache-2.0 WITH LLVM-exception"),
        "{sbom}"
    );
}

/// musllinux aarch64 and x86_64, and riscv64: the same Debian gfortran compiles, zig links against musl
/// or riscv64's glibc, and the runtime is the one cibuildwheel's musllinux_1_2 and
/// manylinux_2_39 images give (scipy-openblas32's wheels of those tags), and armv7l and
/// i686 with Debian bullseye's runtime. The musl runtime
/// makes meson's sanity-check program a dynamic musl one, which runs on Debian's musl
/// loader under qemu; riscv64's runtime needs glibc 2.38, which tags the wheel.
#[test]
#[ignore = "slow: gfortran for musllinux aarch64 and x86_64, riscv64, armv7l and i686, zig, qemu"]
fn fortran_example_passes_its_suite_on_musllinux_aarch64_x86_64_riscv64_armv7l_and_i686() {
    for (only, wheel, libs) in [
        (
            "cp311-musllinux_aarch64",
            "fortranproj-0.1.0-cp311-cp311-musllinux_1_2_aarch64.whl",
            &["libgcc_s-", "libgfortran-"][..],
        ),
        // The build machine's own architecture: meson's sanity-check program runs on
        // Debian's musl loader as a command, not under qemu.
        (
            "cp311-musllinux_x86_64",
            "fortranproj-0.1.0-cp311-cp311-musllinux_1_2_x86_64.whl",
            &["libgcc_s-", "libgfortran-", "libquadmath-"][..],
        ),
        (
            "cp313-manylinux_riscv64",
            "fortranproj-0.1.0-cp313-cp313-manylinux_2_38_riscv64.whl",
            &["libgfortran-"][..],
        ),
        // Debian bullseye's runtime, which needs glibc 2.29: auditwheel's next policy is 2.31.
        (
            "cp311-manylinux_armv7l",
            "fortranproj-0.1.0-cp311-cp311-manylinux_2_31_armv7l.whl",
            &["libgfortran-"][..],
        ),
        (
            "cp311-manylinux_i686",
            "fortranproj-0.1.0-cp311-cp311-manylinux_2_31_i686.whl",
            &["libgfortran-", "libquadmath-"][..],
        ),
    ] {
        let out = tempfile::tempdir().unwrap();
        let output = build(Some(only), out.path());
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{only}:\n{stdout}\n{stderr}");
        assert!(stdout.contains("3 passed in "), "{only}: {stdout}");
        assert_eq!(common::wheel_names_in(out.path()), [wheel]);
        let dir = tempfile::tempdir().unwrap();
        common::unzip_to(&out.path().join(wheel), dir.path());
        let mut vendored: Vec<String> = std::fs::read_dir(dir.path().join("fortranproj.libs"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        vendored.sort();
        assert_eq!(vendored.len(), libs.len(), "{only}: {vendored:?}");
        for (name, prefix) in vendored.iter().zip(libs) {
            assert!(name.starts_with(prefix), "{only}: {vendored:?}");
        }
    }
}

#[test]
#[ignore = "slow: resolves the musllinux armv7l toolchain (zig) before refusing Fortran"]
fn a_target_without_fortran_stops_in_one_line_before_its_build() {
    let out = tempfile::tempdir().unwrap();
    let output = build(Some("cp311-musllinux_armv7l"), out.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    let cause =
        "no Fortran for musllinux-armv7l: crosswheel has Fortran only for manylinux targets";
    // On stderr when it happens, as cibuildwheel says errors, and on the summary's line.
    assert_eq!(stderr.matches(cause).count(), 1, "{stderr}");
    assert!(
        stdout.contains(&format!("error: build failed: {cause}")),
        "{stdout}"
    );
    assert!(!stderr.contains("building fortranproj"), "{stderr}");
    assert!(common::wheel_names_in(out.path()).is_empty());
}

/// examples/fortranproj's sources built by scikit-build-core: CMake's Fortran detection
/// (`project(... LANGUAGES C Fortran)`, its compiler identification and ABI checks) sees
/// the same compiler through `CMAKE_Fortran_COMPILER`.
#[test]
#[ignore = "slow: a scikit-build-core Fortran build for aarch64 (gfortran, zig, CMake, qemu)"]
fn a_cmake_fortran_project_builds_and_passes_on_aarch64() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fortranproj");
    let read = |file: &str| std::fs::read_to_string(example.join(file)).unwrap();
    let project = tempfile::tempdir().unwrap();
    common::write_project(
        project.path(),
        &[
            ("src/numerics.f90", &read("src/numerics.f90")),
            ("src/_flib.c", &read("src/_flib.c")),
            (
                "src/cmakef/__init__.py",
                "from ._flib import format_e, series\n",
            ),
            (
                "tests/test_flib.py",
                &read("tests/test_flib.py").replace("fortranproj", "cmakef"),
            ),
            (
                "CMakeLists.txt",
                "cmake_minimum_required(VERSION 3.15...3.31)\n\
                 project(${SKBUILD_PROJECT_NAME} VERSION ${SKBUILD_PROJECT_VERSION} LANGUAGES C Fortran)\n\
                 find_package(Python REQUIRED COMPONENTS Interpreter Development.Module)\n\
                 python_add_library(_flib MODULE src/_flib.c src/numerics.f90 WITH_SOABI)\n\
                 install(TARGETS _flib DESTINATION cmakef)\n",
            ),
            (
                "pyproject.toml",
                "[build-system]\nrequires = [\"scikit-build-core>=0.10\"]\n\
                 build-backend = \"scikit_build_core.build\"\n\
                 [project]\nname = \"cmakef\"\nversion = \"0.1.0\"\n\
                 [tool.scikit-build]\nwheel.packages = [\"src/cmakef\"]\n\
                 [tool.crosswheel]\npython = [\"cp311\"]\narchs = [\"manylinux_aarch64\"]\n\
                 test-requires = [\"pytest\"]\ntest-sources = [\"tests\"]\n\
                 test-command = \"python -m pytest -q tests\"\n",
            ),
        ],
    );
    let out = tempfile::tempdir().unwrap();
    let stdout = common::build_succeeds(project.path(), out.path());
    assert_eq!(
        common::wheel_names_in(out.path()),
        ["cmakef-0.1.0-cp311-cp311-manylinux_2_27_aarch64.whl"]
    );
    assert!(stdout.contains("3 passed in "), "{stdout}");
}
