//! An autoconf `configure` that a project's build runs without `--host` (uvloop's libuv,
//! gevent's libev and c-ares) cross compiles for the target inside the cross environment:
//! its `CONFIG_SITE` names the host, so configure never runs a target program and takes
//! the answers of its run-time checks from the file. The project here is generated with
//! the machine's autoconf and built with `make`, each from the environment's variables
//! only, as a setup.py would start them. Needs zig, autoconf and make.

use crate::common;

use std::path::Path;
use std::process::Command;

use crosswheel::stages::crossenv::CrossEnv;

const CONFIGURE_AC: &str = "\
AC_INIT([probe], [1.0])
AC_CONFIG_AUX_DIR([build-aux])
AC_CANONICAL_HOST
AC_PROG_CC
AC_FUNC_MALLOC
AC_SUBST([cross_compiling])
AC_SUBST([malloc_0_nonnull], [$ac_cv_func_malloc_0_nonnull])
AC_CONFIG_FILES([Makefile answers.txt])
AC_OUTPUT
";

const ANSWERS_IN: &str =
    "host=@host@ cross_compiling=@cross_compiling@ malloc_0_nonnull=@malloc_0_nonnull@\n";

const MAKEFILE_IN: &str = "\
probe: probe.c
\t@CC@ @CFLAGS@ @LDFLAGS@ -o probe probe.c @LIBS@
";

/// `malloc` so the build links what configure decided about it (`rpl_malloc` otherwise).
const PROBE_C: &str = "\
#include <stdlib.h>
int main(void) { return malloc(0) == 0; }
";

/// Generates the project's configure, runs it without `--host` and builds the program
/// with the environment's variables; returns configure's answers and the program.
fn configure_and_make(env: &CrossEnv, folder: &Path, extra_args: &[&str]) -> (String, Vec<u8>) {
    common::require_tool("autoreconf", "apt-get install autoconf");
    common::require_tool("make", "apt-get install make");
    for (name, text) in [
        ("configure.ac", CONFIGURE_AC),
        ("answers.txt.in", ANSWERS_IN),
        ("Makefile.in", MAKEFILE_IN),
        ("probe.c", PROBE_C),
    ] {
        std::fs::write(folder.join(name), text).unwrap();
    }
    run(Command::new("autoreconf").arg("-i").current_dir(folder));
    run(Command::new("sh")
        .arg("./configure")
        .args(extra_args)
        .current_dir(folder)
        .envs(env.env_vars()));
    run(Command::new("make")
        .current_dir(folder)
        .envs(env.env_vars()));
    (
        std::fs::read_to_string(folder.join("answers.txt")).unwrap(),
        std::fs::read(folder.join("probe")).unwrap(),
    )
}

fn run(command: &mut Command) {
    let output = command.output().expect("the program starts");
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
#[ignore = "slow: zig cross environments, autoconf"]
fn a_configure_without_host_cross_compiles_for_linux_aarch64() {
    let env = common::zig_cross_env(&common::distribution_python(), "linux-aarch64");
    let folder = tempfile::tempdir().unwrap();
    let (answers, program) = configure_and_make(&env, folder.path(), &[]);
    // Never a native build, even where qemu in binfmt_misc would run the program.
    assert_eq!(
        answers.trim(),
        "host=aarch64-unknown-linux-gnu cross_compiling=yes malloc_0_nonnull=yes"
    );
    assert_eq!(&program[..4], b"\x7fELF");
    assert_eq!(
        u16::from_le_bytes([program[18], program[19]]),
        183,
        "EM_AARCH64"
    );
}

#[test]
#[ignore = "slow: zig cross environments, autoconf"]
fn a_configure_without_host_cross_compiles_for_linux_ppc64le() {
    let env = common::zig_cross_env(&common::distribution_python(), "linux-ppc64le");
    let folder = tempfile::tempdir().unwrap();
    let (answers, program) = configure_and_make(&env, folder.path(), &[]);
    assert_eq!(
        answers.trim(),
        "host=powerpc64le-unknown-linux-gnu cross_compiling=yes malloc_0_nonnull=yes"
    );
    assert_eq!(
        u16::from_le_bytes([program[18], program[19]]),
        21,
        "EM_PPC64"
    );
}

#[test]
#[ignore = "slow: zig cross environments, autoconf"]
fn a_configure_without_host_cross_compiles_for_musllinux_aarch64() {
    let env = common::zig_cross_env(&common::distribution_python(), "musllinux-aarch64");
    let folder = tempfile::tempdir().unwrap();
    let (answers, program) = configure_and_make(&env, folder.path(), &[]);
    assert_eq!(
        answers.trim(),
        "host=aarch64-unknown-linux-musl cross_compiling=yes malloc_0_nonnull=yes"
    );
    assert_eq!(
        u16::from_le_bytes([program[18], program[19]]),
        183,
        "EM_AARCH64"
    );
}

#[test]
#[ignore = "slow: zig cross environments, autoconf"]
fn a_target_of_the_build_machines_architecture_keeps_its_run_checks() {
    let target = crosswheel::target::Target::parse("linux-x86_64").unwrap();
    if !target.runs_natively_here() {
        // Another build machine: linux-x86_64 is a cross target there like any other.
        return;
    }
    let env = common::zig_cross_env(&common::distribution_python(), "linux-x86_64");
    let folder = tempfile::tempdir().unwrap();
    let (answers, program) = configure_and_make(&env, folder.path(), &[]);
    // configure tried a program, as it does for --host without --build, and it ran.
    assert_eq!(
        answers.trim(),
        "host=x86_64-pc-linux-gnu cross_compiling=no malloc_0_nonnull=yes"
    );
    assert_eq!(
        u16::from_le_bytes([program[18], program[19]]),
        62,
        "EM_X86_64"
    );
}

#[test]
#[ignore = "slow: zig cross environments, autoconf"]
fn a_configure_without_host_cross_compiles_for_macos_arm64() {
    let env = common::zig_cross_env(&common::distribution_python(), "macos-arm64");
    let folder = tempfile::tempdir().unwrap();
    let (answers, program) = configure_and_make(&env, folder.path(), &[]);
    assert_eq!(
        answers.trim(),
        "host=aarch64-apple-darwin cross_compiling=yes malloc_0_nonnull=yes"
    );
    // MH_MAGIC_64, CPU_TYPE_ARM64.
    assert_eq!(&program[..8], b"\xcf\xfa\xed\xfe\x0c\x00\x00\x01");
}

#[test]
#[ignore = "slow: zig cross environments, autoconf"]
fn the_projects_own_host_wins() {
    let env = common::zig_cross_env(&common::distribution_python(), "linux-aarch64");
    let folder = tempfile::tempdir().unwrap();
    // uvloop's LIBUV_CONFIGURE_HOST passes --host itself: configure does as autoconf says,
    // with the file's answers for the target it names.
    let (answers, _) = configure_and_make(
        &env,
        folder.path(),
        &["--host=aarch64-linux-gnu", "--build=x86_64-pc-linux-gnu"],
    );
    assert_eq!(
        answers.trim(),
        "host=aarch64-unknown-linux-gnu cross_compiling=yes malloc_0_nonnull=yes"
    );
}
