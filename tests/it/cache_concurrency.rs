//! Two crosswheel processes filling one fresh cache at the same time.
//!
//! Both runs start from an empty `CROSSWHEEL_CACHE`, so both do every first-use
//! installation at once (zig, the build environment, the target's wheels, the
//! cross environment, zig's libc stubs). Both must succeed and produce the same
//! wheel, byte for byte; a third run afterwards must reuse the cache, and a run
//! with crosswheel's usual cache elsewhere must give the same bytes again (the
//! cache's location must not leak into the wheel).
//!
//! Needs python3.11 and pip able to fetch `ziglang`, setuptools and
//! scipy-openblas32 (pip's own cache makes repeated runs cheap).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const IDENTIFIER: &str = "cp311-manylinux_aarch64";
const SOURCE_DATE_EPOCH: &str = "1704067200";

fn build_command(cache: &Path, out_dir: &Path) -> Command {
    let mut command = build_command_with_default_cache(out_dir);
    command.env("CROSSWHEEL_CACHE", cache);
    command
}

fn build_command_with_default_cache(out_dir: &Path) -> Command {
    let mut command = Command::new(common::crosswheel_bin());
    command
        .arg("build")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/blasdot"))
        .args(["--only", IDENTIFIER, "-w"])
        .arg(out_dir)
        // The test stage provisions a target sysroot: not what this test is about.
        .env("CROSSWHEEL_TEST_COMMAND", "")
        .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
        .env_remove("CROSSWHEEL_ZIG");
    command
}

fn assert_succeeded(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn only_wheel(dir: &Path) -> PathBuf {
    let wheels: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read the output folder")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "whl"))
        .collect();
    assert_eq!(
        wheels.len(),
        1,
        "one wheel expected in {}: {wheels:?}",
        dir.display()
    );
    wheels.into_iter().next().expect("one wheel")
}

#[test]
#[ignore = "slow: concurrent real builds with zig"]
fn two_first_runs_sharing_a_fresh_cache_both_succeed_with_identical_wheels() {
    let work = tempfile::tempdir().expect("temp dir");
    let cache = work.path().join("cache");
    let (first_dir, second_dir) = (work.path().join("first"), work.path().join("second"));

    let started = Instant::now();
    let first = build_command(&cache, &first_dir)
        .spawn()
        .expect("start the first build");
    let second = build_command(&cache, &second_dir)
        .spawn()
        .expect("start the second build");
    let (first, second) = (
        first.wait_with_output().expect("wait for the first build"),
        second
            .wait_with_output()
            .expect("wait for the second build"),
    );
    let concurrent = started.elapsed();
    assert_succeeded(&first, "the first concurrent build");
    assert_succeeded(&second, "the second concurrent build");

    let (first_wheel, second_wheel) = (only_wheel(&first_dir), only_wheel(&second_dir));
    assert_eq!(first_wheel.file_name(), second_wheel.file_name());
    assert!(
        std::fs::read(&first_wheel).expect("read") == std::fs::read(&second_wheel).expect("read"),
        "the two concurrent builds produced different wheels"
    );

    // The cache both runs filled must now serve a third run without reinstalling.
    let third_dir = work.path().join("third");
    let started = Instant::now();
    let third = build_command(&cache, &third_dir)
        .output()
        .expect("run the third build");
    let warm = started.elapsed();
    assert_succeeded(&third, "the build reusing the cache");
    assert!(
        std::fs::read(only_wheel(&third_dir)).expect("read")
            == std::fs::read(&first_wheel).expect("read"),
        "the build reusing the cache produced a different wheel"
    );
    assert!(
        warm < concurrent / 2 || warm < Duration::from_secs(20),
        "the warm build took {warm:?}, the cold concurrent ones {concurrent:?}: the cache was not reused"
    );

    let elsewhere_dir = work.path().join("elsewhere");
    let elsewhere = build_command_with_default_cache(&elsewhere_dir)
        .env_remove("CROSSWHEEL_CACHE")
        .output()
        .expect("run a build with the usual cache");
    assert_succeeded(&elsewhere, "the build with the usual cache");
    assert!(
        std::fs::read(only_wheel(&elsewhere_dir)).expect("read")
            == std::fs::read(&first_wheel).expect("read"),
        "a cache in another folder gave a different wheel: its path leaks into the build"
    );
}

/// The cross environments under `cache`, by folder name.
fn cross_envs(cache: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(cache.join("crossenv"))
        .expect("the cache has cross environments")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.is_dir() && !path.file_name().unwrap().to_string_lossy().starts_with('.')
        })
        .collect();
    dirs.sort();
    dirs
}

/// A cross environment is named by what it holds: a run with other compiler flags (or
/// another crosswheel version) gets a folder of its own rather than replacing the one a
/// concurrent build compiles against. numpy's macOS build failed on a missing
/// `structmember.h` when another run swapped the environment under it.
#[test]
#[ignore = "slow: installs zig into a fresh cache, makes macOS cross environments"]
fn a_run_with_other_flags_gets_its_own_cross_environment_and_leaves_the_first_alone() {
    let cache = tempfile::tempdir().expect("a temporary cache");
    let env_with = |cflags: &str| {
        let output = Command::new(common::crosswheel_bin())
            .args(["env", "--target", "macos-arm64", "--python", "3.11"])
            .env("CROSSWHEEL_CACHE", cache.path())
            .env("CFLAGS", cflags)
            .output()
            .expect("crosswheel env runs");
        assert_succeeded(&output, &format!("crosswheel env with CFLAGS={cflags}"));
    };
    let header_of = |env: &Path| {
        use std::os::unix::fs::MetadataExt;
        let header = env.join("include/python3.11/Python.h");
        std::fs::metadata(&header)
            .unwrap_or_else(|error| panic!("{}: {error}", header.display()))
            .ino()
    };

    env_with("-O2");
    let first = cross_envs(cache.path());
    assert_eq!(first.len(), 1, "one environment: {first:?}");
    let first_header = header_of(&first[0]);

    env_with("-O2 -DCROSSWHEEL_OTHER_FLAGS");
    let both = cross_envs(cache.path());
    assert_eq!(both.len(), 2, "other flags, another folder: {both:?}");
    assert!(
        both.contains(&first[0]),
        "the first environment stays: {both:?}"
    );
    assert_eq!(
        header_of(&first[0]),
        first_header,
        "the first environment's headers are the same files, never rewritten"
    );

    env_with("-O2");
    assert_eq!(
        cross_envs(cache.path()),
        both,
        "the same flags again reuse their environment"
    );
    assert_eq!(header_of(&first[0]), first_header);
}
