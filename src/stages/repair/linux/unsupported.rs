//! Wheels the manylinux repair refuses before judging any policy: binaries linked
//! against musl (no manylinux tag may ever name them, whatever `--exclude` says) and
//! ARM binaries of an ABI no policy covers.

use crate::formats::elf::facts::arm_abi_problem;
use crate::policy::analysis::linux::Binary;

/// What says `binary` was built for musl: its interpreter or C library, or an extension
/// suffix such as `.cpython-312-aarch64-linux-musl.so` (an extension module that needs
/// no library names its libc nowhere else).
fn musl_evidence(binary: &Binary) -> Option<&str> {
    binary.facts.musl_evidence().or_else(|| {
        let file_name = binary.path.rsplit('/').next().unwrap_or(&binary.path);
        file_name.contains("-linux-musl").then_some(file_name)
    })
}

/// Why no manylinux tag can describe `binaries`, in one line; `None` when one may.
pub fn refusal(binaries: &[Binary]) -> Option<String> {
    for binary in binaries {
        if let Some(evidence) = musl_evidence(binary) {
            return Some(format!(
                "{} is linked against musl ({evidence}): musllinux wheels are not supported yet, \
                 and a manylinux tag would promise glibc",
                binary.path
            ));
        }
    }
    binaries.iter().find_map(|binary| {
        let problem = arm_abi_problem(binary.facts.machine, binary.facts.flags)?;
        Some(format!(
            "{} is {problem}; no manylinux policy covers it",
            binary.path
        ))
    })
}
