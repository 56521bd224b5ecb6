//! Inside the cross environment the build interpreter answers for the target wherever a
//! build script asks which machine it builds for — `sys.platform`, `os.uname()`,
//! `platform.*`, `sysconfig` — in the backend's process and in every python the build
//! starts with `sys.executable`; the build tools that detect their own machine (meson,
//! pip, ...) still see the build machine. Needs zig (fetched into the cache on first use).

use crate::common;

use std::process::Command;

use crosswheel::stages::crossenv::CrossEnv;

/// What a setup.py typically asks, one answer per line.
const QUESTIONS: &str = r#"
import os, platform, sys, sysconfig
print(sys.platform)
print(os.uname().sysname, os.uname().machine)
print(platform.system(), platform.machine())
print(platform.mac_ver()[0] or "-")
print(sysconfig.get_platform())
print(sysconfig.get_config_var("EXT_SUFFIX"))
"#;

fn ask(env: &CrossEnv, program_name: &str, script: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(program_name);
    std::fs::write(&path, script).unwrap();
    let output = Command::new(&env.python)
        .arg(&path)
        .envs(env.env_vars())
        .output()
        .expect("the build python runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
#[ignore = "slow: zig cross environments"]
fn a_setup_script_in_a_linux_aarch64_environment_sees_linux_aarch64() {
    let env = common::zig_cross_env(&common::distribution_python(), "linux-aarch64");
    assert_eq!(
        ask(&env, "setup.py", QUESTIONS),
        [
            "linux",
            "Linux aarch64",
            "Linux aarch64",
            "-",
            "linux-aarch64",
            ".cpython-311-aarch64-linux-gnu.so",
        ]
    );
}

#[test]
#[ignore = "slow: zig cross environments"]
fn a_setup_script_in_a_macos_environment_sees_darwin_arm64() {
    let env = common::zig_cross_env(&common::distribution_python(), "macos-arm64");
    assert_eq!(
        ask(&env, "setup.py", QUESTIONS),
        [
            "darwin",
            "Darwin arm64",
            "Darwin arm64",
            "11.0",
            "macosx-11.0-arm64",
            ".cpython-311-darwin.so",
        ]
    );
}

#[test]
#[ignore = "slow: zig cross environments"]
fn a_sys_executable_subprocess_of_the_build_sees_the_target_too() {
    let env = common::zig_cross_env(&common::distribution_python(), "linux-ppc64le");
    let spawn = format!(
        "import subprocess, sys\nsubprocess.run([sys.executable, '-c', {QUESTIONS:?}], check=True)\n"
    );
    let answers = ask(&env, "setup.py", &spawn);
    assert_eq!(answers[..3], ["linux", "Linux ppc64le", "Linux ppc64le"]);
}

#[test]
#[ignore = "slow: zig cross environments"]
fn build_tools_that_detect_their_own_machine_see_the_build_machine() {
    let env = common::zig_cross_env(&common::distribution_python(), "macos-arm64");
    let host_machine = std::env::consts::ARCH;
    for tool in ["meson", "pip"] {
        let answers = ask(&env, tool, QUESTIONS);
        assert_eq!(answers[0], "linux", "{tool} was told it runs on the target");
        assert_eq!(answers[2], format!("Linux {host_machine}"), "{tool}");
        // sysconfig stays the target's for everyone: it describes what is built.
        assert_eq!(answers[4], "macosx-11.0-arm64", "{tool}");
    }
}

/// What a backend asks to tag and compile for CPython's ABI, one answer per line.
const ABI_QUESTIONS: &str = r#"
import sys, sysconfig
print(sys.abiflags or "-")
print(sysconfig.get_config_var("Py_GIL_DISABLED"))
print(sysconfig.get_config_var("SOABI"))
print(sysconfig.get_config_var("LDVERSION"))
print("Py_GIL_DISABLED 1" in open(sysconfig.get_config_h_filename()).read())
"#;

#[test]
#[ignore = "slow: zig cross environments"]
fn a_free_threaded_environment_describes_the_t_abi_to_the_build_but_not_to_pip() {
    let python = common::host_python("3.13").targeting(true);
    let env = common::zig_cross_env(&python, "linux-aarch64");
    assert_eq!(
        ask(&env, "setup.py", ABI_QUESTIONS),
        ["t", "1", "cpython-313t-aarch64-linux-gnu", "3.13t", "True"]
    );
    // pip installs the build requirements for the interpreter it runs in.
    assert_eq!(
        ask(&env, "pip", "import sys\nprint(sys.abiflags or '-')\n"),
        ["-"]
    );

    let with_gil = common::zig_cross_env(&python.clone().targeting(false), "linux-aarch64");
    assert_ne!(
        with_gil.root, env.root,
        "each ABI has an environment of its own"
    );
    assert_eq!(
        ask(&with_gil, "setup.py", ABI_QUESTIONS),
        ["-", "0", "cpython-313-aarch64-linux-gnu", "3.13", "False"]
    );
}
