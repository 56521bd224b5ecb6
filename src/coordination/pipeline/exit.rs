//! cibuildwheel's exit codes (its `errors.py`), so CI scripts that branch on them work
//! unchanged: 2 configuration error, 3 nothing to build, 5 a pure wheel where a platform
//! wheel was expected, 6 a wheel name built twice in one run, 8 a repair command that left
//! no wheel or several, 9 an `audit-command` that failed; 1 for every other failure.

use std::collections::BTreeSet;
use std::sync::Mutex;

use crate::input::options::OptionsError;
use crate::stages::backend::BuildError;

/// A failure whose kind cibuildwheel gives its own exit code.
#[derive(Debug, thiserror::Error)]
pub enum FatalError {
    #[error(
        "a wheel named {wheel} was already generated in this run: two builds made the same wheel; check `build`, `skip` and `archs`, or what the backend names its wheels"
    )]
    AlreadyBuilt { wheel: String },
    #[error(
        "repair-wheel-command left no wheel in {{dest_dir}}: it must write the repaired wheel there"
    )]
    RepairLeftNoWheel,
    #[error("repair-wheel-command left {count} wheels in {{dest_dir}}; it must leave exactly one")]
    RepairLeftWheels { count: usize },
    #[error("audit-command failed: {reason}")]
    AuditFailed { command: String, reason: String },
    #[error("{failed} of {total} builds failed (see the summary above)")]
    BuildsFailed {
        failed: usize,
        total: usize,
        code: u8,
    },
}

/// The wheel names this run has put in a wheelhouse, per target, claimed before each move
/// so two concurrent builds cannot both take a name. cibuildwheel checks a name against
/// the wheels of the same container (one target, every Python); a later container's wheel
/// of the same name replaces the earlier one in the output folder, and so does a later
/// target's here.
#[derive(Debug, Default)]
pub struct WheelsThisRun {
    names: Mutex<BTreeSet<(String, String)>>,
}

impl WheelsThisRun {
    /// Claims `name` for `target`; an error if an earlier build of this run for that target
    /// made a wheel of that name.
    pub(super) fn claim(&self, target: &str, name: &str) -> Result<(), FatalError> {
        let mut names = self
            .names
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if names.insert((target.to_string(), name.to_string())) {
            Ok(())
        } else {
            Err(FatalError::AlreadyBuilt {
                wheel: name.to_string(),
            })
        }
    }
}

/// The process exit code of a failed command, as cibuildwheel would give it.
pub fn exit_code(error: &anyhow::Error) -> u8 {
    error.chain().find_map(code_of).unwrap_or(1)
}

/// The code of the first failure among `errors` that has its own, else 1.
pub(super) fn first_code<'a>(errors: impl IntoIterator<Item = &'a anyhow::Error>) -> u8 {
    errors
        .into_iter()
        .map(exit_code)
        .find(|&code| code != 1)
        .unwrap_or(1)
}

fn code_of(cause: &(dyn std::error::Error + 'static)) -> Option<u8> {
    if let Some(fatal) = cause.downcast_ref::<FatalError>() {
        return Some(match fatal {
            FatalError::AlreadyBuilt { .. } => 6,
            FatalError::RepairLeftNoWheel | FatalError::RepairLeftWheels { .. } => 8,
            FatalError::AuditFailed { .. } => 9,
            FatalError::BuildsFailed { code, .. } => *code,
        });
    }
    if let Some(options) = cause.downcast_ref::<OptionsError>() {
        return Some(match options {
            OptionsError::NothingSelected { .. }
            | OptionsError::RequiresPythonExcludesAll { .. } => 3,
            _ => 2,
        });
    }
    match cause.downcast_ref::<BuildError>() {
        Some(BuildError::NoExtension { wheel, .. }) if wheel.ends_with("-none-any.whl") => Some(5),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wheel_name_can_be_claimed_once_per_run() {
        let run = WheelsThisRun::default();
        let name = "spam-0.1.0-cp311-cp311-manylinux_2_17_aarch64.whl";
        run.claim("linux-aarch64", name).unwrap();
        let again = run.claim("linux-aarch64", name).unwrap_err();
        assert!(again.to_string().contains("already generated"), "{again}");
        assert_eq!(exit_code(&anyhow::Error::new(again)), 6);
        assert!(
            WheelsThisRun::default()
                .claim("linux-aarch64", "other.whl")
                .is_ok()
        );
        // Another target is another cibuildwheel container: its wheel of the same name
        // (a repair command's fixed name) is not refused.
        assert!(run.claim("musllinux-aarch64", name).is_ok());
    }

    #[test]
    fn codes_follow_cibuildwheel_through_context() {
        let nothing = OptionsError::NothingSelected {
            build: "*".into(),
            skip: "".into(),
        };
        assert_eq!(exit_code(&anyhow::Error::new(nothing)), 3);
        let excluded = OptionsError::RequiresPythonExcludesAll {
            requires_python: ">=3.13".into(),
            excluded: "cp311".into(),
        };
        assert_eq!(exit_code(&anyhow::Error::new(excluded)), 3);
        let repair = anyhow::Error::new(FatalError::RepairLeftNoWheel).context("cp311-x");
        assert_eq!(exit_code(&repair), 8);
        let pure = BuildError::NoExtension {
            backend: "setuptools",
            wheel: "spam-0.1.0-py3-none-any.whl".into(),
            target: "linux-aarch64".into(),
            cause: "x".into(),
            log: Box::default(),
        };
        // cibuildwheel's words, which its test_pure_wheel reads.
        assert!(
            pure.to_string()
                .starts_with("Build failed because a pure Python wheel was generated. "),
            "{pure}"
        );
        assert_eq!(exit_code(&anyhow::Error::new(pure)), 5);
        let audit = FatalError::AuditFailed {
            command: "abi3audit --strict --report x.whl".into(),
            reason: "audit-command failed (exit status: 1)".into(),
        };
        assert_eq!(exit_code(&anyhow::Error::new(audit)), 9);
        assert_eq!(exit_code(&anyhow::anyhow!("a compiler failed")), 1);
    }

    #[test]
    fn a_run_with_failures_exits_with_the_first_specific_code() {
        let errors = [
            anyhow::anyhow!("a compiler failed"),
            anyhow::Error::new(FatalError::AlreadyBuilt {
                wheel: "x.whl".into(),
            }),
            anyhow::Error::new(FatalError::RepairLeftNoWheel),
        ];
        assert_eq!(first_code(&errors), 6);
        assert_eq!(first_code(&errors[..1]), 1);
    }
}
