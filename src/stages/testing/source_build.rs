//! The last way to a test requirement: pip under the test interpreter itself, for
//! requirements published only as source (pure-Python sdists, mostly).
//!
//! Under emulation the host's compiler is the danger: the emulated pip starts whatever
//! `cc` it finds, a host program that builds x86-64 code, and labels the result with the
//! target's tag. So the emulated pip gets compilers that refuse with one line (`CC`, `CXX`,
//! ..., and `cc`, `gcc`, ... first on PATH), builds wheels into a folder of ours with a
//! cache of its own (never the user's pip cache, where a wrong wheel would outlive the
//! run), and every wheel's ELF files must be for the target's machine before anything is
//! installed.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::formats::elf::facts::ElfFacts;
use crate::support::sysroot::LinuxArch;

use super::TestError;
use super::run::{Echo, Log};
use super::venv::{TargetEnv, write_executable};

/// Printed by the refusing compilers; found in pip's output to explain the failure.
const REFUSAL: &str = "crosswheel: no compiler for";

/// Compiler names a build may look up on PATH.
const COMPILERS: &[&str] = &[
    "cc", "gcc", "c++", "g++", "cpp", "clang", "clang++", "gfortran", "f95", "ld", "ar", "nvcc",
];

/// Variables builds read a compiler from.
const COMPILER_VARIABLES: &[&str] = &[
    "CC",
    "CXX",
    "CPP",
    "FC",
    "F77",
    "F90",
    "LD",
    "LDSHARED",
    "LDCXXSHARED",
];

/// Builds `requirements` into wheels with pip under `env`'s interpreter, checks them, and
/// installs them. `host_reason` is why the host pip could not install them. Returns the
/// distributions pip built from source.
pub(crate) fn install_from_source(
    env: &TargetEnv,
    requirements: &[String],
    vars: &BTreeMap<String, String>,
    log: &mut Log,
    host_reason: &str,
) -> Result<Vec<String>, TestError> {
    let work = env.root().join(".crosswheel-source-build");
    let (wheels, cache) = (work.join("wheels"), work.join("pip-cache"));
    for dir in [&wheels, &cache] {
        fs::create_dir_all(dir).map_err(TestError::io("create", dir))?;
    }
    let refusing = match env.emulated_arch() {
        Some(arch) => Some(refusing_compilers(&work.join("no-compilers"), arch)?),
        None => None,
    };
    let mut command = env.interpreter_pip(vars, &cache);
    command
        .args(["wheel", "--wheel-dir"])
        .arg(&wheels)
        .args(env.find_links_args());
    if let Some((bin, compiler_vars)) = &refusing {
        command.envs(compiler_vars.iter().map(|(k, v)| (k, v)));
        command.env(
            "PATH",
            path_with_first(bin, vars.get("PATH").map(String::as_str)),
        );
    }
    command.args(requirements);
    let built = log.run(command, Echo::No)?;
    if !built.status.success() {
        if let (Some(arch), true) = (env.emulated_arch(), log.text().contains(REFUSAL)) {
            return Err(TestError::NeedsCompiler {
                requirements: env.named(requirements),
                arch,
                host_reason: host_reason.to_string(),
                log: log.path().to_path_buf(),
            });
        }
        return Err(env.install_error(requirements, built.reason(), log));
    }
    if let Some(arch) = env.emulated_arch() {
        check_machines(&wheels, arch)?;
    }
    let mut command = env.interpreter_pip(vars, &cache);
    command
        .args(["install", "--no-index"])
        .arg("--find-links")
        .arg(&wheels)
        .args(requirements);
    let installed = log.run(command, Echo::No)?;
    let result = if installed.status.success() {
        Ok(built_from_source(&log.text()))
    } else {
        Err(env.install_error(requirements, installed.reason(), log))
    };
    // The private cache and the built wheels go with the run.
    fs::remove_dir_all(&work).map_err(TestError::io("remove", &work))?;
    result
}

/// The distributions in pip's `Created wheel for numpy: filename=...` lines.
fn built_from_source(pip_output: &str) -> Vec<String> {
    pip_output
        .lines()
        .filter_map(|line| line.trim().strip_prefix("Created wheel for "))
        .filter_map(|rest| rest.split_once(':').map(|(name, _)| name.to_string()))
        .collect()
}

/// Scripts standing for every compiler, which fail with one line saying why, and the
/// variables pointing builds at them.
fn refusing_compilers(
    dir: &Path,
    arch: LinuxArch,
) -> Result<(PathBuf, Vec<(String, String)>), TestError> {
    fs::create_dir_all(dir).map_err(TestError::io("create", dir))?;
    let machine = arch.machine();
    let script = format!(
        "#!/bin/sh\necho \"{REFUSAL} {machine} here: $(basename \"$0\") would be the host's and build x86-64 code; crosswheel does not build test requirements for {machine} under emulation\" >&2\nexit 1\n"
    );
    for name in COMPILERS {
        write_executable(&dir.join(name), &script)?;
    }
    let cc = dir.join("cc").to_string_lossy().into_owned();
    let vars = COMPILER_VARIABLES
        .iter()
        .map(|name| (name.to_string(), cc.clone()))
        .collect();
    Ok((dir.to_path_buf(), vars))
}

fn path_with_first(dir: &Path, path: Option<&str>) -> String {
    let inherited = path
        .map(str::to_string)
        .or_else(|| std::env::var("PATH").ok())
        .unwrap_or_default();
    format!("{}:{inherited}", dir.display())
}

/// Fails on the first ELF file in a wheel under `dir` that is not for `arch`.
fn check_machines(dir: &Path, arch: LinuxArch) -> Result<(), TestError> {
    for entry in fs::read_dir(dir).map_err(TestError::io("list", dir))? {
        let wheel = entry.map_err(TestError::io("list", dir))?.path();
        if wheel.extension().is_none_or(|ext| ext != "whl") {
            continue;
        }
        if let Some((file, found)) = foreign_binary(&wheel, arch)? {
            let _ = fs::remove_file(&wheel);
            return Err(TestError::WrongArchitecture {
                wheel: wheel.file_name().map(PathBuf::from).unwrap_or_default(),
                file,
                found,
                expected: arch.machine(),
            });
        }
    }
    Ok(())
}

/// The first ELF file in `wheel` built for another machine than `arch`, and that machine.
pub fn foreign_binary(
    wheel: &Path,
    arch: LinuxArch,
) -> Result<Option<(String, String)>, TestError> {
    let archive = crate::formats::wheel::WheelArchive::open(wheel)
        .map_err(|err| TestError::UnreadableBuild(err.to_string()))?;
    for entry in archive.entries() {
        let data = archive
            .read(&entry.name)
            .map_err(|err| TestError::UnreadableBuild(err.to_string()))?;
        if !crate::formats::elf::facts::is_elf(&data) {
            continue;
        }
        let found = match ElfFacts::parse(&data) {
            Ok(facts) if facts.machine == arch.elf_machine() => continue,
            Ok(facts) => facts
                .arch
                .map_or_else(|| format!("machine {}", facts.machine), str::to_string),
            Err(err) => format!("unreadable ELF ({err})"),
        };
        return Ok(Some((entry.name.clone(), found)));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn built_distributions_are_read_from_pips_output() {
        let output = "Building wheel for tinypkg (pyproject.toml): started\n  Created wheel for tinypkg: filename=tinypkg-1.0-py3-none-any.whl size=1\n";
        assert_eq!(built_from_source(output), ["tinypkg"]);
    }

    #[test]
    fn refusing_compilers_fail_with_one_line_naming_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let (bin, vars) = refusing_compilers(dir.path(), LinuxArch::Ppc64le).unwrap();
        let output = Command::new(bin.join("gcc"))
            .arg("-c")
            .arg("x.c")
            .output()
            .unwrap();
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with("crosswheel: no compiler for ppc64le here: gcc"),
            "{stderr}"
        );
        assert!(
            vars.iter()
                .any(|(name, value)| name == "CC" && value.ends_with("/cc"))
        );
    }

    #[test]
    fn a_wheel_with_a_host_binary_is_refused_and_deleted() {
        let dir = tempfile::tempdir().unwrap();
        // An x86-64 ELF header alone: the machine is all the check reads, and the test
        // binary itself (150 MB in a debug build) took minutes to deflate.
        let mut host_binary = vec![0u8; 64];
        host_binary[..4].copy_from_slice(b"\x7fELF");
        host_binary[4..7].copy_from_slice(&[2, 1, 1]); // 64-bit, little-endian, version 1
        host_binary[16..18].copy_from_slice(&3u16.to_le_bytes()); // ET_DYN
        host_binary[18..20].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
        host_binary[20..24].copy_from_slice(&1u32.to_le_bytes());
        host_binary[52..54].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
        let name = crate::formats::wheel::WheelName::parse("bad-1.0-cp311-cp311-linux_ppc64le.whl")
            .unwrap();
        let entries = vec![
            (
                "bad/_ext.so".to_string(),
                crate::formats::wheel::Contents::Bytes { data: host_binary, mode: 0o755 },
            ),
            (
                "bad-1.0.dist-info/METADATA".to_string(),
                crate::formats::wheel::Contents::Bytes {
                    data: b"Metadata-Version: 2.1\nName: bad\nVersion: 1.0\n".to_vec(),
                    mode: 0o644,
                },
            ),
            (
                "bad-1.0.dist-info/WHEEL".to_string(),
                crate::formats::wheel::Contents::Bytes {
                    data: b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_ppc64le\n"
                        .to_vec(),
                    mode: 0o644,
                },
            ),
        ];
        let wheel =
            crate::formats::wheel::write_wheel(dir.path(), &name, entries, &Default::default())
                .unwrap();
        let err = check_machines(dir.path(), LinuxArch::Ppc64le)
            .unwrap_err()
            .to_string();
        assert!(err.contains("bad/_ext.so"), "{err}");
        assert!(err.contains("ppc64le"), "{err}");
        assert!(err.contains("x86_64"), "{err}");
        assert!(!wheel.exists());
    }
}
