//! cibuildwheel's troubleshooting hints, printed where its conditions hold and with its
//! words, so users and tests that look for them find them.

use std::path::{Path, PathBuf};

use crate::input::options::Plan;
use crate::target::Platform;

use super::{Ending, Outcome, Stage};

/// cibuildwheel's note (`platforms/linux.py`, `troubleshoot`) when a Linux build or repair
/// failed and the package folder holds `.so` files: a stale in-place build that may have
/// been picked up. `None` when the condition does not hold.
pub fn shared_object_note(plan: &Plan, outcomes: &[Outcome]) -> Option<String> {
    let linux_build_or_repair_failed = outcomes.iter().any(|outcome| {
        let is_linux = plan
            .builds
            .iter()
            .any(|b| b.identifier == outcome.identifier && b.target.platform() == Platform::Linux);
        matches!(
            outcome.ending,
            Ending::Failed {
                stage: Stage::Build | Stage::Repair,
                ..
            }
        ) && is_linux
    });
    if !linux_build_or_repair_failed {
        return None;
    }
    let so_files = shared_objects(&plan.project_dir);
    if so_files.is_empty() {
        return None;
    }
    let mut note = String::from(SO_NOTE);
    note.push_str("  Files detected:\n");
    for file in so_files {
        note.push_str(&format!("    {}\n", file.display()));
    }
    Some(note)
}

const SO_NOTE: &str = "
NOTE: Shared object (.so) files found in this project.

These files might be built against the wrong OS, causing problems with
auditwheel. If possible, run cibuildwheel in a clean checkout.

If you're using Cython and have previously done an in-place build,
remove those build files (*.so and *.c) before starting cibuildwheel.

setuptools uses the build/ folder to store its build cache. It
may be necessary to remove those build files (*.so and *.o) before
starting cibuildwheel.

Files that belong to a virtual environment are probably not an issue
unless you used a custom command telling cibuildwheel to activate it.

";

/// Every `*.so` below `folder` (cibuildwheel's `package_dir.glob("**/*.so")`), sorted.
fn shared_objects(folder: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = walkdir::WalkDir::new(folder)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| entry.path().extension().is_some_and(|ext| ext == "so"))
        .map(|entry| entry.into_path())
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordination::pipeline::{StageTimes, TestResult};

    fn plan_in(project: &Path) -> Plan {
        std::fs::write(
            project.join("setup.py"),
            "raise Exception('this build will fail')\n",
        )
        .unwrap();
        let cli = crate::input::options::CliOverrides {
            only: Some("cp311-manylinux_aarch64".into()),
            ..Default::default()
        };
        crate::input::options::resolve(project, &cli, &std::collections::BTreeMap::new()).unwrap()
    }

    fn failed(stage: Stage) -> Vec<Outcome> {
        vec![Outcome {
            identifier: "cp311-manylinux_aarch64".into(),
            times: StageTimes::default(),
            warnings: Vec::new(),
            test: TestResult::NotRun,
            ending: Ending::Failed {
                stage,
                error: anyhow::anyhow!("this build will fail"),
                kept_apart: None,
            },
        }]
    }

    #[test]
    fn a_failed_linux_build_or_repair_with_so_files_in_the_project_gets_cibuildwheels_note() {
        let project = tempfile::tempdir().unwrap();
        let plan = plan_in(project.path());
        assert_eq!(
            shared_object_note(&plan, &failed(Stage::Build)),
            None,
            "no .so files"
        );
        std::fs::write(project.path().join("libnothing.so"), "").unwrap();
        for stage in [Stage::Build, Stage::Repair] {
            let note = shared_object_note(&plan, &failed(stage)).expect("the note");
            assert!(note.contains("\nNOTE: Shared object (.so) files found in this project.\n"));
            let listed = format!(
                "  Files detected:\n    {}\n",
                project.path().join("libnothing.so").display()
            );
            assert!(note.ends_with(&listed), "{note}");
        }
        // A failed test says nothing of stale build trees.
        assert_eq!(shared_object_note(&plan, &failed(Stage::Test)), None);
    }
}
