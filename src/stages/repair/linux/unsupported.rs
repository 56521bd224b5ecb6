//! Wheels the Linux repair refuses before judging any policy: binaries of the other C
//! library than the policies asked for (no manylinux tag may ever name a musl binary,
//! nor a musllinux tag a glibc one, whatever `--exclude` says) and ARM binaries of an ABI
//! no policy covers.

use crate::analysis::facts::linux::{Binary, glibc_evidence, musl_evidence};
use crate::formats::elf::facts::arm_abi_problem;
use crate::target::Libc;

/// Why no `libc` tag can describe `binaries`, in one line; `None` when one may.
pub fn refusal(binaries: &[Binary], libc: Libc) -> Option<String> {
    for binary in binaries {
        let (other, evidence) = match libc {
            Libc::Glibc => (Libc::Musl, musl_evidence(binary)),
            Libc::Musl => (Libc::Glibc, glibc_evidence(binary)),
        };
        if let Some(evidence) = evidence {
            return Some(format!(
                "{} is linked against {} ({evidence}): a {} tag would promise {}; \
                 repair it with `--plat auto` or a {} tag",
                binary.path,
                other.name(),
                libc.identifier_prefix(),
                libc.name(),
                other.identifier_prefix()
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
