//! The smoke test of a target CPython crosswheel built itself, run under qemu-user before
//! the build is trusted: it imports the modules wheels' suites need, calls C through libffi,
//! and has the EXT_SUFFIX, byte order and pointer size of the target's wheels.

use std::path::Path;

use crate::python_tag::PythonTag;
use crate::support::host::Network;
use crate::support::sysroot::LinuxArch;
use crate::target::Target;

use super::emulator::Emulator;

/// Run by the interpreter under test (`-I -c`); its arguments are the expected facts,
/// then the modules.
const SCRIPT: &str = include_str!("smoke_test.py");

/// What a target CPython must be and import.
#[derive(Debug, Clone)]
pub struct SmokeTest<'a> {
    /// crosswheel's cache (for the qemu and root the interpreter runs on).
    pub cache: &'a Path,
    pub target: &'a Target,
    pub python: PythonTag,
    /// Standard-library modules to import (config/target-cpython.toml's `smoke_imports`).
    pub modules: &'a [String],
    /// Whether the emulator's tree may be downloaded, and from which Debian mirror.
    pub network: &'a Network,
}

impl SmokeTest<'_> {
    /// Runs the interpreter under `root` (a folder with `bin/python3.X`, or a root
    /// filesystem with `usr/bin/python3.X`); `Err` names every problem in one line.
    pub fn run(&self, root: &Path) -> Result<String, String> {
        let Some(arch) = self.target.linux_arch() else {
            return Err(format!("{} is not a Linux target", self.target.id()));
        };
        let emulator = Emulator::new(
            self.cache,
            arch,
            self.python,
            Some(root),
            self.network,
            None,
        )
        .map_err(|error| format!("its smoke test could not start: {error}"))?;
        let output = emulator
            .python_command()
            .arg("-I")
            .arg("-c")
            .arg(SCRIPT)
            .args(self.expected_facts(arch))
            .args(self.modules)
            .env_remove("PYTHONHOME")
            .env_remove("PYTHONPATH")
            .output()
            .map_err(|error| format!("qemu could not run it: {error}"))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let said = stdout.lines().last().unwrap_or_default().trim().to_string();
        if output.status.success() {
            return Ok(said);
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        let reason = if said.is_empty() {
            stderr
                .lines()
                .last()
                .unwrap_or("no output")
                .trim()
                .to_string()
        } else {
            said
        };
        Err(format!(
            "its smoke test under qemu failed ({}): {reason}",
            output.status
        ))
    }

    /// The script's first three arguments: EXT_SUFFIX, byte order, pointer bits.
    fn expected_facts(&self, arch: LinuxArch) -> [String; 3] {
        [
            self.target.ext_suffix(self.python),
            if arch.big_endian() { "big" } else { "little" }.to_string(),
            if arch.is_32_bit() { "32" } else { "64" }.to_string(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::SCRIPT;

    /// The script run by the build machine's python3 with `facts`, as qemu runs it.
    fn run_script(facts: &[&str], modules: &[&str]) -> (bool, String) {
        let output = Command::new("python3")
            .args(["-I", "-c", SCRIPT])
            .args(facts)
            .args(modules)
            .output()
            .expect("python3 runs (README's requirement)");
        let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
        (output.status.success(), text)
    }

    fn host_ext_suffix() -> String {
        let output = Command::new("python3")
            .args([
                "-c",
                "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))",
            ])
            .output()
            .unwrap();
        String::from_utf8(output.stdout).unwrap().trim().to_string()
    }

    #[test]
    #[ignore = "needs python3: scripts/test sets it up"]
    fn an_interpreter_that_is_what_the_target_needs_passes_and_says_what_it_checked() {
        let suffix = host_ext_suffix();
        let (passed, said) = run_script(&[&suffix, "little", "64"], &["_ctypes", "zlib", "math"]);
        assert!(passed, "{said}");
        assert!(
            said.contains("imports 3 modules, calls C through ctypes"),
            "{said}"
        );
    }

    #[test]
    #[ignore = "needs python3: scripts/test sets it up"]
    fn every_problem_is_named_in_one_line() {
        let (passed, said) = run_script(
            &[".cpython-311-s390x-linux-gnu.so", "big", "32"],
            &["zlib", "_crosswheel_absent"],
        );
        assert!(!passed);
        assert_eq!(said.lines().count(), 1, "{said}");
        for problem in [
            "cannot import _crosswheel_absent",
            "the target's wheels use .cpython-311-s390x-linux-gnu.so",
            "it runs little-endian, the target is big-endian",
            "its pointers have 64 bits, the target's 32",
        ] {
            assert!(said.contains(problem), "{problem} not in: {said}");
        }
    }
}
