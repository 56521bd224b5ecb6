//! The README's main job: `crosswheel build examples/blasdot` builds,
//! repairs and tests the example for all three targets from its
//! pyproject.toml alone; a failing test or a wheel dyld would refuse keeps
//! that wheel out of the wheelhouse, fails the run and says why.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::crosswheel_bin;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/blasdot")
}

fn build(project: &Path, out: &Path, env: &[(&str, &str)], extra: &[&str]) -> Output {
    let mut command = Command::new(crosswheel_bin());
    command
        .arg("build")
        .arg(project)
        .arg("-w")
        .arg(out)
        .args(extra)
        .env("SOURCE_DATE_EPOCH", "1700000000");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("run crosswheel build")
}

fn wheels_in(dir: &Path) -> Vec<String> {
    common::wheel_names_in(dir)
}

fn inspect_json(wheel: &Path) -> serde_json::Value {
    let output = Command::new(crosswheel_bin())
        .args(["inspect", "--json"])
        .arg(wheel)
        .output()
        .expect("inspect");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("inspect JSON")
}

#[test]
#[ignore = "slow: the whole pipeline on blasdot (zig, qemu)"]
fn blasdot_builds_repairs_and_tests_for_all_three_targets() {
    let out = tempfile::tempdir().expect("tempdir");
    let output = build(&example(), out.path(), &[], &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "build failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        wheels_in(out.path()),
        [
            "blasdot-0.1.0-cp311-cp311-macosx_11_0_arm64.whl",
            "blasdot-0.1.0-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
            "blasdot-0.1.0-cp311-cp311-manylinux_2_17_ppc64le.manylinux2014_ppc64le.whl",
        ]
    );
    // Both Linux suites ran under emulation; macOS was only checked, and says so.
    for line in ["cp311-manylinux_aarch64", "cp311-manylinux_ppc64le"] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(line))
            .unwrap_or_else(|| panic!("no summary row for {line}:\n{stdout}"));
        assert!(row.contains("passed (emulated)"), "{row}");
    }
    let mac_row = stdout
        .lines()
        .find(|l| l.starts_with("cp311-macosx_arm64"))
        .expect("macOS row");
    assert!(
        mac_row.contains("static check (not executed)") && !mac_row.contains("passed"),
        "{mac_row}"
    );

    for (wheel, machine, suffix) in [
        (
            "blasdot-0.1.0-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
            "aarch64",
            ".cpython-311-aarch64-linux-gnu.so",
        ),
        (
            "blasdot-0.1.0-cp311-cp311-manylinux_2_17_ppc64le.manylinux2014_ppc64le.whl",
            "ppc64le",
            ".cpython-311-powerpc64le-linux-gnu.so",
        ),
    ] {
        let report = inspect_json(&out.path().join(wheel));
        let binaries = report["binaries"].as_array().expect("binaries");
        assert!(binaries.iter().all(|b| b["machine"] == machine), "{report}");
        assert!(
            binaries.iter().any(|b| b["path"]
                .as_str()
                .is_some_and(|p| p == format!("blasdot/_core{suffix}"))),
            "{report}"
        );
        assert!(
            binaries.iter().any(|b| b["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("blasdot.libs/libscipy_openblas-"))),
            "OpenBLAS not vendored: {report}"
        );
        let unresolved: Vec<_> = binaries
            .iter()
            .flat_map(|b| b["needed"].as_array().cloned().unwrap_or_default())
            .filter(|n| n["resolution"] == "external")
            .collect();
        assert!(unresolved.is_empty(), "{unresolved:?}");
        assert_eq!(
            report["manylinux"]["policy"],
            format!("manylinux_2_17_{machine}")
        );
    }

    let mac = inspect_json(
        &out.path()
            .join("blasdot-0.1.0-cp311-cp311-macosx_11_0_arm64.whl"),
    );
    let text = mac.to_string();
    assert!(
        text.contains("blasdot/.dylibs/libscipy_openblas.dylib"),
        "{text}"
    );
    assert!(text.contains("_core.cpython-311-darwin.so"), "{text}");
    assert!(
        !text.contains("/opt/gfortran"),
        "absolute LC_RPATH left: {text}"
    );
}

/// Where the index has no scipy-openblas32 wheel for the target's policy (armv7l; i686,
/// s390x and riscv64 under manylinux2014), blasdot's override asks for
/// `target-libraries = ["scipy-openblas32"]`: OpenBLAS built by
/// crosswheel from Debian's source with scipy-openblas32's names, vendored, and computing
/// right under qemu (blasdot's suite: long dot products against Python's exact sums).
#[test]
#[ignore = "slow: builds OpenBLAS from Debian's source for four targets, tests under qemu"]
fn blasdot_passes_on_i686_s390x_armv7l_and_riscv64_with_openblas_built_from_source() {
    let out = tempfile::tempdir().expect("tempdir");
    let output = build(
        &example(),
        out.path(),
        &[("CIBW_BUILD", "cp311-manylinux_*")],
        &["--archs", "i686,s390x,armv7l,riscv64", "--require-tests"],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "build failed:\n{stdout}\n{stderr}");
    for arch in ["i686", "s390x", "armv7l", "riscv64"] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("cp311-manylinux_{arch}")))
            .unwrap_or_else(|| panic!("no summary row for {arch}:\n{stdout}"));
        assert!(row.contains("passed"), "{row}");
        assert!(
            stderr.contains("scipy-openblas32 0.3.21 built in")
                || stderr.contains("scipy-openblas32 0.3.21 from the cache"),
            "OpenBLAS came from the catalogue:\n{stderr}"
        );
        let wheel = wheels_in(out.path())
            .into_iter()
            .find(|name| name.ends_with(&format!("_{arch}.whl")))
            .unwrap_or_else(|| panic!("no {arch} wheel in {:?}", wheels_in(out.path())));
        let report = inspect_json(&out.path().join(&wheel));
        let binaries = report["binaries"].as_array().expect("binaries");
        assert!(
            binaries.iter().any(|b| b["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("blasdot.libs/libscipy_openblas"))),
            "OpenBLAS not vendored into {wheel}: {report}"
        );
        let external: Vec<_> = binaries
            .iter()
            .flat_map(|b| b["needed"].as_array().cloned().unwrap_or_default())
            .filter(|n| n["resolution"] == "external")
            .collect();
        assert!(external.is_empty(), "{wheel}: {external:?}");
    }
}

#[test]
#[ignore = "slow: the whole pipeline on blasdot (zig, qemu)"]
fn a_failing_test_keeps_the_wheel_out_of_the_wheelhouse() {
    let out = tempfile::tempdir().expect("tempdir");
    let failing =
        "python -c \"import blasdot, sys; sys.exit(0 if blasdot.dot([1.0], [2.0]) == 3.0 else 1)\"";
    let output = build(
        &example(),
        out.path(),
        &[("CROSSWHEEL_TEST_COMMAND", failing)],
        &["--only", "cp311-manylinux_aarch64"],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        !output.status.success(),
        "a failing test must fail the run:\n{stdout}"
    );
    assert!(
        std::fs::read_dir(out.path()).map_or(true, |mut entries| entries.next().is_none()),
        "the output folder must stay empty, as cibuildwheel leaves it: {:?}",
        wheels_in(out.path())
    );
    let row = stdout
        .lines()
        .find(|l| l.starts_with("cp311-manylinux_aarch64"))
        .expect("summary row");
    assert!(row.contains("FAILED"), "{row}");
    assert!(
        stdout.contains("tests failed"),
        "the summary should say why:\n{stdout}"
    );
    // Kept in the run's log folder; the output folder holds finished wheels only.
    let stderr = String::from_utf8_lossy(&output.stderr);
    let kept = common::failed_folder(&format!("{stdout}{stderr}"), "cp311-manylinux_aarch64");
    assert!(
        wheels_in(&kept).len() == 1,
        "failed wheel not kept apart in {}",
        kept.display()
    );
}

#[test]
#[ignore = "slow: the whole pipeline on blasdot (zig, qemu)"]
fn a_macos_wheel_dyld_would_refuse_fails_the_static_check() {
    // The extension imports a symbol its vendored OpenBLAS does not export.
    let project = tempfile::tempdir().expect("tempdir");
    copy_tree(&example(), project.path());
    let source = project.path().join("csrc/_core.c");
    let mut text = std::fs::read_to_string(&source).expect("read _core.c");
    text.push_str("\nextern double scipy_cblas_not_in_openblas(void);\ndouble blasdot_broken(void) { return scipy_cblas_not_in_openblas(); }\n");
    std::fs::write(&source, text).expect("write _core.c");
    let out = tempfile::tempdir().expect("tempdir");
    let output = build(
        project.path(),
        out.path(),
        &[],
        &["--only", "cp311-macosx_arm64"],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        !output.status.success(),
        "the static check must fail the run:\n{stdout}"
    );
    assert!(wheels_in(out.path()).is_empty());
    assert!(
        stdout.contains("static load check failed")
            && stdout.contains("scipy_cblas_not_in_openblas"),
        "{stdout}"
    );
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from)
        .into_iter()
        .filter_map(Result::ok)
    {
        let relative = entry.path().strip_prefix(from).expect("inside");
        if relative
            .components()
            .any(|c| c.as_os_str() == "wheelhouse" || c.as_os_str() == "build")
        {
            continue;
        }
        let target = to.join(relative);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}
