//! The grafting repair, end to end with real parts: zig cross-compiles an
//! extension that links libscipy_openblas from the real scipy-openblas32
//! wheels, `crosswheel repair` vendors OpenBLAS (and, transitively, the
//! libgfortran it needs), and the repaired files load and compute under
//! qemu-user with the target's glibc.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{crosswheel_bin, fixture, make_wheel, minimal_metadata, require_tool, unzip_to};

struct Arch {
    name: &'static str,
    zig_target: &'static str,
    qemu: &'static str,
    openblas: &'static str,
    ext_suffix: &'static str,
    extra_cflags: &'static [&'static str],
}

const AARCH64: Arch = Arch {
    name: "aarch64",
    zig_target: "aarch64-linux-gnu.2.17",
    qemu: "qemu-aarch64-static",
    openblas: "scipy_openblas32-0.3.31.188.0-py3-none-manylinux2014_aarch64.manylinux_2_17_aarch64.whl",
    ext_suffix: ".cpython-311-aarch64-linux-gnu.so",
    extra_cflags: &[],
};

const PPC64LE: Arch = Arch {
    name: "ppc64le",
    zig_target: "powerpc64le-linux-gnu.2.19",
    qemu: "qemu-ppc64le-static",
    openblas: "scipy_openblas32-0.3.31.188.0-py3-none-manylinux2014_ppc64le.manylinux_2_17_ppc64le.whl",
    ext_suffix: ".cpython-311-powerpc64le-linux-gnu.so",
    extra_cflags: &["-mabi=ibmlongdouble"],
};

const EXTENSION: &str = r#"
double scipy_cblas_ddot(int n, const double *x, int incx, const double *y, int incy);
const char *scipy_openblas_get_corename(void);

/* Called by the test loader: the dot product of (1,2,3,4) and (5,6,7,8). */
double blasdot_check(void) {
    const double x[] = {1, 2, 3, 4};
    const double y[] = {5, 6, 7, 8};
    return scipy_cblas_ddot(4, x, 1, y, 1);
}
"#;

fn zig(arch: &Arch, args: &[&str], cwd: &Path) {
    let output = Command::new("python3")
        .args(["-m", "ziglang", "cc", "-target", arch.zig_target, "-O2"])
        .args(arch.extra_cflags)
        .args(args)
        .current_dir(cwd)
        .env("ZIG_GLOBAL_CACHE_DIR", zig_cache())
        .output()
        .expect("run zig (pip install ziglang)");
    assert!(
        output.status.success(),
        "zig cc {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn zig_cache() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
        .join(".cache/crosswheel/zig")
}

fn target_libc(arch: &Arch) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/common/target-libc.sh");
    let output = Command::new("bash")
        .arg(script)
        .arg(arch.name)
        .output()
        .expect("run target-libc.sh");
    assert!(
        output.status.success(),
        "target glibc for {}: {}",
        arch.name,
        String::from_utf8_lossy(&output.stderr)
    );
    PathBuf::from(String::from_utf8(output.stdout).expect("utf-8").trim())
}

/// Builds `demo-1.0-cp311-cp311-linux_<arch>.whl` with an extension linked
/// against the wheel's OpenBLAS; returns (wheel, folder holding the library).
fn unrepaired_wheel(arch: &Arch, work: &Path) -> (PathBuf, PathBuf) {
    let openblas = work.join("openblas");
    unzip_to(&fixture(arch.openblas), &openblas);
    let lib_dir = openblas.join("scipy_openblas32/lib");
    std::fs::write(work.join("ext.c"), EXTENSION).expect("write source");
    let ext_name = format!("_blas{}", arch.ext_suffix);
    zig(
        arch,
        &[
            "-shared",
            "-fPIC",
            "ext.c",
            "-L",
            lib_dir.to_str().expect("utf-8"),
            "-lscipy_openblas",
            "-o",
            &ext_name,
        ],
        work,
    );
    let extension = std::fs::read(work.join(&ext_name)).expect("read extension");
    let mut files: Vec<(String, Vec<u8>)> = vec![
        ("demo/__init__.py".into(), b"".to_vec()),
        (format!("demo/{ext_name}"), extension),
    ];
    files.extend(minimal_metadata(
        "demo",
        "1.0",
        &format!("cp311-cp311-linux_{}", arch.name),
    ));
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_slice()))
        .collect();
    let wheels = work.join("dist");
    std::fs::create_dir_all(&wheels).expect("mkdir");
    (
        make_wheel(
            &wheels,
            &format!("demo-1.0-cp311-cp311-linux_{}.whl", arch.name),
            &refs,
        ),
        lib_dir,
    )
}

fn readelf_dynamic(path: &Path) -> String {
    let readelf = require_tool("readelf", "apt-get install binutils");
    let output = Command::new(readelf)
        .args(["-dW"])
        .arg(path)
        .output()
        .expect("readelf");
    assert!(output.status.success());
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn graft_and_run(arch: &Arch) {
    require_tool(arch.qemu, "apt-get install qemu-user-static");
    let work = tempfile::tempdir().expect("tempdir");
    let (wheel, lib_dir) = unrepaired_wheel(arch, work.path());
    let out = work.path().join("wheelhouse");
    let output = Command::new(crosswheel_bin())
        .args(["repair", "-w"])
        .arg(&out)
        .arg("--lib-path")
        .arg(&lib_dir)
        .arg(&wheel)
        .output()
        .expect("run crosswheel");
    assert!(
        output.status.success(),
        "repair failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let repaired = PathBuf::from(String::from_utf8(output.stdout).expect("utf-8").trim());
    let expected = format!(
        "demo-1.0-cp311-cp311-manylinux_2_17_{0}.manylinux2014_{0}.whl",
        arch.name
    );
    assert_eq!(
        repaired.file_name().and_then(|n| n.to_str()),
        Some(expected.as_str())
    );

    let unpacked = work.path().join("installed");
    unzip_to(&repaired, &unpacked);
    let libs: Vec<String> = std::fs::read_dir(unpacked.join("demo.libs"))
        .expect("demo.libs exists")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    let openblas = libs
        .iter()
        .find(|n| n.starts_with("libscipy_openblas-") && n.ends_with(".so"))
        .unwrap_or_else(|| panic!("OpenBLAS not vendored: {libs:?}"));
    assert!(
        libs.iter().any(|n| n.starts_with("libgfortran-")),
        "libgfortran (needed by OpenBLAS) not vendored: {libs:?}"
    );

    // An independent reading of what the loader will see.
    let extension = unpacked.join(format!("demo/_blas{}", arch.ext_suffix));
    let dynamic = readelf_dynamic(&extension);
    assert!(
        dynamic.contains(&format!("Shared library: [{openblas}]")),
        "{dynamic}"
    );
    assert!(
        dynamic.contains("(RUNPATH)") && dynamic.contains("[$ORIGIN/../demo.libs]"),
        "{dynamic}"
    );
    let vendored = readelf_dynamic(&unpacked.join("demo.libs").join(openblas));
    assert!(
        vendored.contains(&format!("Library soname: [{openblas}]")),
        "{vendored}"
    );

    // The proof: load everything under qemu with the target's glibc and compute.
    let sysroot = target_libc(arch);
    let loader_source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/common/loader.c");
    zig(
        arch,
        &[
            loader_source.to_str().expect("utf-8"),
            "-o",
            "loader",
            "-ldl",
        ],
        work.path(),
    );
    let run = Command::new(arch.qemu)
        .arg("-L")
        .arg(&sysroot)
        .arg(work.path().join("loader"))
        .args(["--call", "blasdot_check"])
        .arg(&extension)
        .env(
            "QEMU_CPU",
            if arch.name == "aarch64" {
                "cortex-a72"
            } else {
                "power8"
            },
        )
        .output()
        .expect("run loader under qemu");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "loading the repaired extension failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        stdout.contains("blasdot_check=70.000000"),
        "wrong dot product: {stdout}"
    );
}

#[test]
#[ignore = "slow: zig-built libraries loaded under qemu"]
fn aarch64_extension_linking_openblas_is_grafted_and_computes_under_qemu() {
    graft_and_run(&AARCH64);
}

#[test]
#[ignore = "slow: zig-built libraries loaded under qemu"]
fn ppc64le_extension_linking_openblas_is_grafted_and_computes_under_qemu() {
    graft_and_run(&PPC64LE);
}
