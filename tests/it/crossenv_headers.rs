//! The cross environment's headers describe the target, whatever CPython builds.
//!
//! For every target and every kind of build interpreter on this machine — the
//! distribution's CPython, whose `pyconfig.h` is a multiarch wrapper that dispatches on
//! the compiler's target, and a CPython with a plain header (pyenv or uv) — the target's
//! cross compiler compiles `tests/it/common/pyconfig_probe.c` against the environment's
//! headers: `static_assert`s that every size, alignment and byte-order answer of
//! `pyconfig.h` is the target's. Needs zig (installed into crosswheel's cache on first
//! use) and network access on the first run.

use crate::common;

use std::path::Path;
use std::process::Command;

use crosswheel::support::host::BuildPython;

/// Every target of config/targets.toml that is compiled itself (universal2 is its two
/// slices, each checked on its own).
fn targets() -> Vec<&'static str> {
    crosswheel::target::targets()
        .iter()
        .filter(|target| target.fuses.is_empty())
        .map(|target| target.id.as_str())
        .collect()
}

fn compile_probe(python: &BuildPython, target_name: &str, out_dir: &Path) -> Result<(), String> {
    let env = common::zig_cross_env(python, target_name);
    let probe = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/common/pyconfig_probe.c");
    let object = out_dir.join(format!("{target_name}.o"));
    let output = Command::new(common::c_compiler(&env))
        .arg("-c")
        .arg(format!("-I{}", env.python_include_dir.display()))
        .arg(&probe)
        .arg("-o")
        .arg(&object)
        .output()
        .unwrap_or_else(|err| panic!("cannot run {}: {err}", common::c_compiler(&env).display()));
    if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

#[test]
#[ignore = "slow: compiles with zig against the target headers"]
fn every_target_compiles_the_pyconfig_probe_with_every_kind_of_build_python() {
    let out = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for python in common::build_pythons() {
        for target in targets() {
            if let Err(stderr) = compile_probe(&python, target, out.path()) {
                failures.push(format!(
                    "{target} with {}:\n{stderr}",
                    python.executable.display()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[ignore = "slow: compiles with zig against the target headers"]
fn the_distribution_pythons_multiarch_wrapper_never_reaches_the_target() {
    let python = common::distribution_python();
    for target_name in targets() {
        let env = common::zig_cross_env(&python, target_name);
        let header = std::fs::read_to_string(env.python_include_dir.join("pyconfig.h")).unwrap();
        assert!(
            !header.contains("multiarch location"),
            "{target_name}: the wrapper was copied"
        );
        let data = crosswheel::target::Target::parse(target_name)
            .unwrap()
            .data();
        // 8 from the build machine's header, 4 where the target is ILP32 (i686, armv7l).
        let long = data
            .pyconfig_define
            .get("SIZEOF_LONG")
            .map_or("8", String::as_str);
        assert!(
            header.contains(&format!("#define SIZEOF_LONG {long}\n")),
            "{target_name}: not a real pyconfig.h, or not the target's"
        );
        if data
            .pyconfig_undef
            .iter()
            .any(|name| name == "HAVE_GCC_ASM_FOR_X64")
        {
            assert!(
                header.contains("/* #undef HAVE_GCC_ASM_FOR_X64 */"),
                "{target_name}: x86_64's answer kept"
            );
        }
    }
}

#[test]
#[ignore = "slow: compiles with zig against the target headers"]
fn target_sysconfig_compiler_flags_carry_no_debug_info_flag() {
    let python = common::distribution_python();
    let env = common::zig_cross_env(&python, "linux-aarch64");
    let module = env
        .sysconfig_dir
        .join(format!("{}.py", env.sysconfigdata_name));
    let script = "import runpy, sys\nv = runpy.run_path(sys.argv[1])['build_time_vars']\n\
         for key in ['CFLAGS', 'OPT', 'BASECFLAGS', 'CONFIGURE_CFLAGS', 'PY_CFLAGS', 'CFLAGS_NODIST',\n\
         'PY_CFLAGS_NODIST', 'PY_CORE_CFLAGS', 'PY_STDMODULE_CFLAGS', 'PY_BUILTIN_MODULE_CFLAGS']:\n    \
         print(key, repr(v.get(key, '')))\n";
    let output = std::process::Command::new(&python.executable)
        .args(["-c", script])
        .arg(&module)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let listing = String::from_utf8(output.stdout).unwrap();
    // Debian's CPython is built with -g, as manylinux's is: every one of these has it.
    for line in listing.lines() {
        let flags = line
            .split_once(' ')
            .map_or("", |(_, flags)| flags.trim_matches('\''));
        assert!(
            !flags.split_whitespace().any(|flag| flag.starts_with("-g")),
            "{line}"
        );
    }
    assert_eq!(listing.lines().count(), 10, "{listing}");
}

/// Build scripts handed PYO3_CROSS_LIB_DIR (the sysconfig folder) find the target's headers
/// as an installed CPython has them, at `../../include/python3.X` beside
/// `lib/python3.X`: cryptography's cffi build script looks nowhere else.
#[test]
#[ignore = "slow: creates a cross environment with zig"]
fn the_sysconfig_folder_sits_where_an_installed_cpythons_lib_folder_does() {
    let python = common::distribution_python();
    let env = common::zig_cross_env(&python, "linux-aarch64");
    let version = env.sysconfig_dir.file_name().unwrap();
    assert_eq!(
        version.to_string_lossy(),
        format!("python{}", python.version_text())
    );
    assert_eq!(
        env.sysconfig_dir.parent().unwrap().file_name().unwrap(),
        "lib"
    );
    let include = env.sysconfig_dir.join("../../include").join(version);
    assert!(include.join("Python.h").is_file(), "{}", include.display());
    assert!(
        include.join("pyconfig.h").is_file(),
        "{}",
        include.display()
    );
    assert!(
        env.sysconfig_dir
            .join(format!("{}.py", env.sysconfigdata_name))
            .is_file()
    );
}
