//! `toolchain = "gcc"`: Debian's cross gcc builds the example for both Linux
//! targets; the wheel's manylinux tag is whatever its symbols allow (gcc links
//! against the cross libc's glibc 2.36, so nothing is assumed).

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{crosswheel_bin, require_tool};

fn build_with_gcc(identifier: &str, compiler: &str, apt: &str) {
    require_tool(compiler, apt);
    let out = tempfile::tempdir().expect("tempdir");
    let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/blasdot");
    let output = Command::new(crosswheel_bin())
        .arg("build")
        .arg(&project)
        .args(["--only", identifier, "--toolchain", "gcc", "-w"])
        .arg(out.path())
        .output()
        .expect("run crosswheel build");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "gcc build failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let wheel = std::fs::read_dir(out.path())
        .expect("wheelhouse")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .expect("a wheel");
    let inspected = Command::new(crosswheel_bin())
        .args(["inspect", "--json"])
        .arg(&wheel)
        .output()
        .expect("inspect");
    let report: serde_json::Value = serde_json::from_slice(&inspected.stdout).expect("JSON");
    let policy = report["manylinux"]["policy"]
        .as_str()
        .expect("policy")
        .to_string();
    let file_name = wheel.file_name().and_then(|n| n.to_str()).expect("name");
    assert!(
        policy.starts_with("manylinux_") && file_name.contains(&policy),
        "the file name {file_name} must carry the policy {policy} the symbols allow"
    );
    let row = stdout
        .lines()
        .find(|l| l.starts_with(identifier))
        .expect("summary row");
    assert!(row.contains("passed (emulated)"), "{row}");
}

#[test]
#[ignore = "slow: the whole pipeline with cross gcc and qemu"]
fn cross_gcc_builds_an_aarch64_wheel_tagged_by_its_symbols() {
    build_with_gcc(
        "cp311-manylinux_aarch64",
        "aarch64-linux-gnu-gcc",
        "apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross",
    );
}

#[test]
#[ignore = "slow: the whole pipeline with cross gcc and qemu"]
fn cross_gcc_builds_a_ppc64le_wheel_tagged_by_its_symbols() {
    build_with_gcc(
        "cp311-manylinux_ppc64le",
        "powerpc64le-linux-gnu-gcc",
        "apt-get install gcc-powerpc64le-linux-gnu libc6-dev-ppc64el-cross",
    );
}
