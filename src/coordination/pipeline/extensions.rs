//! Wheels of one run built for targets of the same platform carry the same extension
//! modules. A module that the linux-aarch64 wheel has and the linux-ppc64le wheel lacks was
//! left out by that build — an optional extension whose compile failed and that the
//! project tolerated (the pattern `CIBUILDWHEEL` exists to stop) — so that wheel fails
//! instead of reaching the wheelhouse. Platforms are compared only with themselves: Linux
//! and macOS builds legitimately differ (psutil's `_psutil_linux` vs `_psutil_osx`).

use std::collections::BTreeSet;

use super::outcome::{Ending, Outcome, Stage, TestResult};
use crate::input::options::Plan;

/// Extension modules of a wheel, as import paths without their suffix (`pkg/_speedups`);
/// libraries vendored by the repair (`*.libs/`, `.dylibs/`) are not modules.
fn extension_modules(wheel: &std::path::Path) -> Option<BTreeSet<String>> {
    let archive = crate::formats::wheel::WheelArchive::open(wheel).ok()?;
    Some(
        archive
            .entries()
            .iter()
            .filter(|entry| entry.name.ends_with(".so"))
            .filter(|entry| {
                !entry
                    .name
                    .split('/')
                    .any(|part| part.ends_with(".libs") || part == ".dylibs")
            })
            .map(|entry| {
                let (dir, file) = entry.name.rsplit_once('/').unwrap_or(("", &entry.name));
                let module = file.split('.').next().unwrap_or(file);
                format!("{dir}/{module}")
            })
            .collect(),
    )
}

/// Fails, in place, every finished wheel that lacks an extension module another wheel of
/// the same platform and CPython ABI has (a free-threaded build may leave out what its
/// project keeps for the GIL build); its file moves to the failed-wheels folder.
pub(super) fn fail_wheels_missing_extensions(
    plan: &Plan,
    outcomes: &mut [Outcome],
    logs: &super::RunLogs,
) {
    let modules: Vec<Option<BTreeSet<String>>> = outcomes
        .iter()
        .map(|outcome| match (&outcome.ending, &outcome.test) {
            // A wheel serving another version is checked as the one it was built as.
            (_, TestResult::ServedByEarlierWheel { .. }) => None,
            (Ending::Finished(wheel), _) => extension_modules(&wheel.path),
            _ => None,
        })
        .collect();
    let group = |index: usize| {
        let spec = &plan.builds[index];
        (spec.target.platform(), spec.python)
    };
    for index in 0..outcomes.len() {
        let Some(own) = &modules[index] else { continue };
        let missing = (0..outcomes.len())
            .filter(|&other| other != index && group(other) == group(index))
            .find_map(|other| {
                let theirs = modules[other].as_ref()?;
                let lacking: Vec<&String> = theirs.difference(own).collect();
                (!lacking.is_empty()).then_some((other, lacking))
            });
        let Some((other, lacking)) = missing else {
            continue;
        };
        let message = format!(
            "the wheel lacks {} that the {} wheel has: its build left {} out (an optional extension that failed to compile; the build log shows why)",
            lacking
                .iter()
                .map(|module| format!("`{module}`"))
                .collect::<Vec<_>>()
                .join(", "),
            plan.builds[other].identifier,
            if lacking.len() == 1 { "it" } else { "them" },
        );
        fail(plan, logs, &mut outcomes[index], index, message);
    }
}

fn fail(plan: &Plan, logs: &super::RunLogs, outcome: &mut Outcome, index: usize, message: String) {
    let Ending::Finished(wheel) = &outcome.ending else {
        return;
    };
    let kept_apart = super::collect::keep_apart(
        logs,
        &plan.builds[index].identifier,
        &wheel.path,
        &[],
        &message,
    )
    .map_err(|error| tracing::warn!("{}: {error:#}", outcome.identifier))
    .ok();
    tracing::error!("{}: {message}", outcome.identifier);
    outcome.ending = Ending::Failed {
        stage: Stage::Build,
        error: anyhow::anyhow!(message),
        kept_apart,
    };
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::coordination::pipeline::outcome::{FinishedWheel, StageTimes};
    use crate::coordination::pipeline::test_step::tests::plan_of;
    use crate::formats::wheel::{Contents, WheelName, WriteOptions, write_wheel};

    /// The finished outcome of `identifier`: a wheel `file_name` in `dir` holding `binaries`.
    fn finished(dir: &Path, identifier: &str, file_name: &str, binaries: &[&str]) -> Outcome {
        let name = WheelName::parse(file_name).unwrap();
        let bytes = |data: &[u8]| Contents::Bytes {
            data: data.to_vec(),
            mode: 0o755,
        };
        let mut entries = vec![
            (
                "demo-1.0.dist-info/WHEEL".to_string(),
                bytes(
                    format!("Wheel-Version: 1.0\nTag: {}\n", name.tags().join("\nTag: "))
                        .as_bytes(),
                ),
            ),
            (
                "demo-1.0.dist-info/METADATA".to_string(),
                bytes(b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"),
            ),
        ];
        entries.extend(
            binaries
                .iter()
                .map(|binary| (binary.to_string(), bytes(b"\x7fELF"))),
        );
        let path = write_wheel(dir, &name, entries, &WriteOptions::default()).unwrap();
        Outcome {
            identifier: identifier.to_string(),
            times: StageTimes::default(),
            warnings: Vec::new(),
            test: TestResult::NotRun,
            ending: Ending::Finished(FinishedWheel {
                path,
                sha256: String::new(),
                size: 0,
            }),
        }
    }

    /// One outcome per build of `plan`, in plan order: (identifier, wheel file, binaries).
    fn outcomes(plan: &Plan, dir: &Path, wheels: &[(&str, &str, &[&str])]) -> Vec<Outcome> {
        plan.builds
            .iter()
            .map(|spec| {
                let (identifier, file_name, binaries) = wheels
                    .iter()
                    .find(|(identifier, _, _)| *identifier == spec.identifier)
                    .unwrap();
                finished(dir, identifier, file_name, binaries)
            })
            .collect()
    }

    const SPEEDUPS_AARCH64: &str = "demo/_speedups.cpython-311-aarch64-linux-gnu.so";

    #[test]
    fn a_wheel_lacking_a_module_its_platforms_other_wheel_has_fails_and_is_kept_apart() {
        let dir = tempfile::tempdir().unwrap();
        let plan = plan_of("cp311-manylinux_aarch64 cp311-manylinux_ppc64le cp311-macosx_arm64");
        let mut outcomes = outcomes(
            &plan,
            dir.path(),
            &[
                (
                    "cp311-manylinux_aarch64",
                    "demo-1.0-cp311-cp311-manylinux_2_17_aarch64.whl",
                    &[SPEEDUPS_AARCH64],
                ),
                (
                    "cp311-manylinux_ppc64le",
                    "demo-1.0-cp311-cp311-manylinux_2_17_ppc64le.whl",
                    &[],
                ),
                // Another platform: compared only with macOS wheels.
                (
                    "cp311-macosx_arm64",
                    "demo-1.0-cp311-cp311-macosx_11_0_arm64.whl",
                    &[],
                ),
            ],
        );
        let cache = tempfile::tempdir().unwrap();
        let logs = super::super::RunLogs::create(cache.path()).unwrap();
        fail_wheels_missing_extensions(&plan, &mut outcomes, &logs);
        let ended: Vec<(&str, bool)> = outcomes
            .iter()
            .map(|outcome| (outcome.identifier.as_str(), outcome.succeeded()))
            .collect();
        assert_eq!(
            ended,
            [
                ("cp311-manylinux_aarch64", true),
                ("cp311-manylinux_ppc64le", false),
                ("cp311-macosx_arm64", true),
            ]
        );
        let Ending::Failed {
            stage,
            error,
            kept_apart,
        } = &outcomes[1].ending
        else {
            unreachable!()
        };
        assert_eq!(*stage, Stage::Build);
        assert!(
            error.to_string().starts_with(
                "the wheel lacks `demo/_speedups` that the cp311-manylinux_aarch64 wheel has: its build left it out"
            ),
            "{error}"
        );
        let kept_apart = kept_apart.as_ref().expect("the wheel is kept apart");
        // In the run's log folder, never in the output folder.
        assert!(
            kept_apart.starts_with(logs.dir()),
            "{}",
            kept_apart.display()
        );
        assert!(
            kept_apart
                .join("demo-1.0-cp311-cp311-manylinux_2_17_ppc64le.whl")
                .is_file()
        );
        assert!(
            !dir.path()
                .join("demo-1.0-cp311-cp311-manylinux_2_17_ppc64le.whl")
                .exists()
        );
    }

    #[test]
    fn vendored_libraries_and_free_threaded_builds_are_not_compared_as_modules() {
        let dir = tempfile::tempdir().unwrap();
        let plan = plan_of("cp313-manylinux_aarch64 cp313t-manylinux_aarch64");
        let mut outcomes = outcomes(
            &plan,
            dir.path(),
            &[
                (
                    "cp313-manylinux_aarch64",
                    "demo-1.0-cp313-cp313-manylinux_2_17_aarch64.whl",
                    &[
                        "demo/_speedups.cpython-313-aarch64-linux-gnu.so",
                        "demo.libs/libfoo-1a2b3c4d.so",
                    ],
                ),
                // Leaves out what the GIL build has: its project may keep it for GIL builds.
                (
                    "cp313t-manylinux_aarch64",
                    "demo-1.0-cp313-cp313t-manylinux_2_17_aarch64.whl",
                    &[],
                ),
            ],
        );
        let cache = tempfile::tempdir().unwrap();
        let logs = super::super::RunLogs::create(cache.path()).unwrap();
        fail_wheels_missing_extensions(&plan, &mut outcomes, &logs);
        assert!(outcomes.iter().all(Outcome::succeeded));
        let modules = extension_modules(&outcomes[0].wheel().unwrap().path).unwrap();
        assert_eq!(modules.into_iter().collect::<Vec<_>>(), ["demo/_speedups"]);
    }
}
