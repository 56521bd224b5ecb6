//! README's main-job command works for a new user: a fresh HOME (so an empty crosswheel
//! cache: zig, target CPythons and wheels are fetched on the way) and a PATH on which the
//! only CPython is the distribution's (Debian's multiarch headers, PEP 668).
//!
//! The command is read from README's quick start, so the README cannot drift from what
//! is tested. `cargo run --release --` is this test's own crosswheel binary (a nested
//! cargo would wait for the lock the running `cargo test` holds). Needs network access.

use crate::common;

use std::path::Path;
use std::process::Command;

const DISTRIBUTION_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The indented command lines of README's `## Quick start` section.
fn quick_start_commands() -> Vec<String> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let section = readme
        .split("\n## ")
        .find(|part| part.starts_with("Quick start"))
        .expect("README has a `## Quick start` section");
    section
        .lines()
        .filter_map(|line| line.strip_prefix("    "))
        .filter(|line| !line.starts_with(' ') && !line.is_empty())
        .map(str::to_string)
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let relative = entry.path().strip_prefix(from).unwrap();
        if relative.starts_with("wheelhouse") || relative.starts_with("build") {
            continue;
        }
        let out = to.join(relative);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&out).unwrap();
        } else {
            std::fs::copy(entry.path(), &out).unwrap();
        }
    }
}

#[test]
#[ignore = "slow: the README's quick start: a real build, tests under qemu"]
fn readmes_main_job_command_builds_and_tests_blasdot_with_the_distributions_python_on_a_fresh_home()
{
    let commands = quick_start_commands();
    let main_job = commands.first().expect("a quick start command");
    let args = main_job
        .strip_prefix("cargo run --release -- ")
        .unwrap_or_else(|| {
            panic!("README's main job is no longer `cargo run --release -- ...`: {main_job}")
        });
    let args: Vec<&str> = args.split_whitespace().collect();
    assert_eq!(
        args,
        ["build", "examples/blasdot"],
        "update this test with README"
    );

    assert!(
        Path::new("/usr/bin/python3.11").is_file(),
        "the quick start needs the distribution's CPython 3.11: apt-get install python3-dev python3-venv python3-pip"
    );
    let work = tempfile::tempdir().unwrap();
    let checkout = work.path().join("checkout");
    let home = work.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/blasdot"),
        &checkout.join("examples/blasdot"),
    );
    let output = Command::new(common::crosswheel_bin())
        .args(&args)
        .current_dir(&checkout)
        .env_clear()
        .env("PATH", DISTRIBUTION_PATH)
        .env("HOME", &home)
        .env("TERM", "dumb")
        .output()
        .expect("run crosswheel");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for (identifier, test) in [
        ("cp311-manylinux_aarch64", "passed (emulated)"),
        ("cp311-manylinux_ppc64le", "passed (emulated)"),
        ("cp311-macosx_arm64", "static check (not executed)"),
    ] {
        let row = stdout
            .lines()
            .find(|line| line.starts_with(identifier))
            .unwrap_or_else(|| panic!("no summary row for {identifier}:\n{stdout}"));
        assert!(row.contains(test), "{row}");
    }
    let wheelhouse = checkout.join("examples/blasdot/wheelhouse");
    let wheels = std::fs::read_dir(&wheelhouse)
        .unwrap()
        .filter(|entry| {
            entry
                .as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "whl"))
        })
        .count();
    assert_eq!(
        wheels,
        3,
        "README promises three wheels in {}",
        wheelhouse.display()
    );
    assert!(
        stdout
            .lines()
            .any(|line| line == "wheels in examples/blasdot/wheelhouse"),
        "{stdout}"
    );
    assert!(
        home.join(".cache/crosswheel").is_dir(),
        "the cache is not under the fresh HOME"
    );
}
