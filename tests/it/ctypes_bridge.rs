//! A build's Python code that loads a target library with `ctypes` (h5py's setup reads
//! libhdf5's version so) gets the target's answers: the library is loaded by the target's
//! CPython under qemu, and each call runs there with its arguments and what it writes
//! through pointers carried both ways.
//! Needs zig, qemu-user and a Debian target tree (fetched into the cache on the first run).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use crosswheel::stages::crossenv::CrossEnv;

/// The target tree's C library, which the build machine cannot load.
fn target_libc(env: &CrossEnv) -> PathBuf {
    let root = &env
        .runner
        .as_ref()
        .expect("a Linux target has a runner")
        .root;
    ["usr/lib", "lib"]
        .iter()
        .flat_map(|dir| std::fs::read_dir(root.join(dir)).into_iter().flatten())
        .flatten()
        .map(|entry| entry.path().join("libc.so.6"))
        .find(|path| path.exists())
        .unwrap_or_else(|| panic!("no libc.so.6 in {}", root.display()))
}

/// Runs `script` in the build python inside `env`, as a setup.py runs, with the target
/// libc's path as its argument.
fn run_in(env: &CrossEnv, python: &Path, script: &str, libc: &Path) -> (bool, String, String) {
    let output = Command::new(python)
        .args(["-c", script])
        .arg(libc)
        .envs(env.env_vars())
        .output()
        .expect("the build python runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

const PROBES: &str = r#"
import ctypes, sys
from ctypes import byref, c_char_p, c_int

libc = ctypes.CDLL(sys.argv[1])
print("repr", repr(libc))

# A string result: the target's glibc version.
libc.gnu_get_libc_version.restype = c_char_p
print("glibc", libc.gnu_get_libc_version().decode())

# Numbers written through pointers (h5py's H5get_libversion(byref(major), ...)).
first, second = c_int(), c_int()
matched = libc.sscanf(b"12 34", b"%d %d", byref(first), byref(second))
print("sscanf", matched, first.value, second.value)

# A character array the function fills.
buffer = ctypes.create_string_buffer(32)
libc.snprintf(buffer, 32, b"%s-%d", b"x", 42)
print("snprintf", buffer.value.decode())

# A structure written through a pointer: the machine the target's kernel reports.
class utsname(ctypes.Structure):
    _fields_ = [(name, ctypes.c_char * 65) for name in
                ("sysname", "nodename", "release", "version", "machine", "domainname")]
names = utsname()
libc.uname(ctypes.pointer(names))
print("machine", names.machine.decode())

# A structure returned by value.
class div_t(ctypes.Structure):
    _fields_ = [("quot", c_int), ("rem", c_int)]
libc.div.restype = div_t
libc.div.argtypes = [c_int, c_int]
result = libc.div(7, 2)
print("div", result.quot, result.rem)

# Feature probes by symbol (h5py's has_functions).
print("has", hasattr(libc, "sscanf"), hasattr(libc, "H5Pset_fapl_ros3"))

# What cannot cross says so.
callback = ctypes.CFUNCTYPE(c_int, ctypes.c_void_p, ctypes.c_void_p)(lambda a, b: 0)
try:
    libc.qsort(buffer, 32, 1, callback)
except TypeError as error:
    print("refused", error)
"#;

#[test]
#[ignore = "slow: the target's CPython runs under qemu"]
fn ctypes_calls_into_a_target_library_get_the_targets_answers() {
    let python = common::distribution_python();
    // Big-endian s390x and 32-bit i686 too: values cross as values, never as bytes.
    for (target, machine) in [
        ("linux-aarch64", "aarch64"),
        ("linux-ppc64le", "ppc64le"),
        ("linux-s390x", "s390x"),
        ("linux-i686", "i686"),
    ] {
        let env = common::zig_cross_env(&python, target);
        let libc = target_libc(&env);
        let (ok, stdout, stderr) = run_in(&env, &python.executable, PROBES, &libc);
        assert!(ok, "{target}:\n{stdout}\n{stderr}");
        let line = |key: &str| {
            stdout
                .lines()
                .find_map(|line| line.strip_prefix(&format!("{key} ")))
                .unwrap_or_else(|| panic!("{target}: no {key} line in\n{stdout}\n{stderr}"))
                .to_string()
        };
        assert!(line("repr").contains(&format!("({target}, under qemu)")));
        assert!(line("glibc").starts_with("2."), "{stdout}");
        assert_eq!(line("sscanf"), "2 12 34");
        assert_eq!(line("snprintf"), "x-42");
        assert_eq!(line("machine"), machine, "{stderr}");
        assert_eq!(line("div"), "3 1");
        assert_eq!(line("has"), "True False");
        let refused = line("refused");
        assert!(
            refused.contains("qsort() of")
                && refused.contains(&format!("as a {target} library"))
                && refused.contains("argument 4 is a CFunctionType"),
            "{refused}"
        );
        assert_eq!(
            stderr.matches("ctypes calls into it run in the").count(),
            1,
            "one line says where the calls go: {stderr}"
        );
    }
}

/// A library neither side can load keeps the build machine's error, with the target's
/// reason beside it; a name the target lacks too is the build machine's error alone, and
/// the target is asked for it once: a probe repeated costs no more interpreters under qemu.
#[test]
#[ignore = "slow: the target's CPython runs under qemu"]
fn a_library_neither_side_loads_is_the_build_machines_error() {
    let python = common::distribution_python();
    let env = common::zig_cross_env(&python, "linux-aarch64");
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("libbroken.so");
    std::fs::write(&broken, "not a library").unwrap();
    let script = r#"
import ctypes, sys
import time
for name in (sys.argv[1], "libcrosswheel-no-such-library.so"):
    try:
        ctypes.CDLL(name)
    except OSError as error:
        print("error", error)
start = time.monotonic()
for _ in range(20):
    try:
        ctypes.CDLL("libcrosswheel-no-such-library.so")
    except OSError:
        pass
print("repeats", time.monotonic() - start)
"#;
    let (ok, stdout, stderr) = run_in(&env, &python.executable, script, &broken);
    assert!(ok, "{stdout}\n{stderr}");
    let errors: Vec<&str> = stdout.lines().filter(|l| l.starts_with("error ")).collect();
    assert_eq!(errors.len(), 2, "{stdout}");
    assert!(
        errors[0].contains("the build machine cannot load it")
            && errors[0].contains("nor the linux-aarch64 interpreter under qemu"),
        "{}",
        errors[0]
    );
    assert!(
        errors[1].contains("libcrosswheel-no-such-library.so") && !errors[1].contains("under qemu"),
        "{}",
        errors[1]
    );
    // Each ask of the target starts its CPython under qemu (about 0.5 s); 20 would be 10 s.
    let repeats: f64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("repeats "))
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(repeats < 1.0, "20 repeated probes took {repeats} s");
}

/// A macOS library cannot be loaded here by any interpreter: no bridge is put in place.
#[test]
#[ignore = "slow: zig builds the environment's toolchain"]
fn a_macos_environment_has_no_bridge() {
    let python = common::distribution_python();
    let env = common::zig_cross_env(&python, "macos-arm64");
    assert!(
        !env.sysconfig_dir
            .join("_crosswheel_ctypes_bridge.py")
            .exists()
    );
    let script = "import ctypes; print(ctypes.CDLL.__module__)";
    let (ok, stdout, stderr) = run_in(&env, &python.executable, script, Path::new("-"));
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim(), "ctypes");
}
