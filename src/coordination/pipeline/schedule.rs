//! In which order identifiers run, and at what concurrency.
//!
//! Identifiers of one target form a lane, run oldest CPython first: when a build turns out
//! to be a wheel later versions can install (abi3, or `py3-none` with a platform tag), it
//! serves every later version of its lane it fits, which is then not built again but
//! tested on its own CPython (cibuildwheel's `find_compatible_wheel` does the same; see
//! `served`). Lanes run `--jobs` at a time; each identifier's output is captured and
//! printed together when it is done. Outcomes come back in plan order.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::context::RunContext;
use super::outcome::{Ending, FinishedWheel, Outcome, Stage};
use super::served::{Reusable, Reuse};
use super::{report, run_and_report};
use crate::input::options::{BuildSpec, Plan};

/// Indices into `plan.builds`: one lane per target, each by ascending CPython version.
fn lanes(plan: &Plan) -> Vec<Vec<usize>> {
    let mut lanes: Vec<(&str, Vec<usize>)> = Vec::new();
    for (index, spec) in plan.builds.iter().enumerate() {
        match lanes
            .iter_mut()
            .find(|(target, _)| *target == spec.target.id())
        {
            Some((_, lane)) => lane.push(index),
            None => lanes.push((spec.target.id(), vec![index])),
        }
    }
    // By version only: a free-threaded build keeps its plan place beside its version's.
    let minor = |index: &usize| plan.builds[*index].python.minor();
    lanes
        .into_iter()
        .map(|(_, mut lane)| {
            lane.sort_by_key(minor);
            lane
        })
        .collect()
}

pub(super) fn run_all(
    plan: &Plan,
    context: &RunContext<'_>,
    targets: &super::targets::Targets,
) -> Vec<Outcome> {
    let lanes = lanes(plan);
    let concurrent = context.jobs > 1 && plan.builds.len() > 1;
    let workers = if concurrent {
        context.jobs.min(lanes.len())
    } else {
        1
    };
    if concurrent {
        tracing::info!(
            "building {} identifiers, up to {workers} at a time (--jobs); each one's output follows when it is done",
            plan.builds.len()
        );
    }
    let next = AtomicUsize::new(0);
    let finished: Mutex<Vec<(usize, Outcome)>> = Mutex::new(Vec::new());
    let printing = Mutex::new(());
    let run_lane = |lane: &[usize]| {
        let mut reusable: Option<Reusable> = None;
        for &index in lane {
            let spec = &plan.builds[index];
            let served = serving(spec, reusable.as_ref());
            let is_served = served.is_some();
            let run = || match served {
                Some(reusable) => super::served::test_served(plan, spec, context, reusable),
                None => run_and_report(plan, spec, context, targets),
            };
            let outcome = if concurrent {
                let (outcome, output) = crate::logging::capture(run);
                let _printing = printing.lock().unwrap_or_else(|p| p.into_inner());
                let _group = report::Group::start(&spec.identifier);
                output.replay();
                outcome
            } else {
                let _group = report::Group::start(&spec.identifier);
                run()
            };
            let mut finished = finished.lock().unwrap_or_else(|p| p.into_inner());
            match reusable.as_mut() {
                Some(reusable) if is_served && !outcome.succeeded() => {
                    if reusable.failed_on.is_none() {
                        withdraw(reusable, &outcome, &context.logs, &mut finished);
                    }
                }
                Some(_) => {}
                None => reusable = reusable_of(&outcome),
            }
            finished.push((index, outcome));
        }
    };
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                while let Some(lane) = lanes.get(next.fetch_add(1, Ordering::SeqCst)) {
                    run_lane(lane);
                }
            });
        }
    });
    let mut outcomes = finished.into_inner().unwrap_or_else(|p| p.into_inner());
    outcomes.sort_by_key(|(index, _)| *index);
    outcomes.into_iter().map(|(_, outcome)| outcome).collect()
}

fn reuse_of(wheel: &FinishedWheel) -> Option<Reuse> {
    let file_name = wheel.path.file_name().unwrap_or_default().to_string_lossy();
    let name = crate::formats::wheel::WheelName::parse(&file_name).ok()?;
    if name.is_abi3() {
        return Some(Reuse::Abi3);
    }
    name.is_python3_independent()
        .then_some(Reuse::PythonIndependent)
}

/// What the lane's later identifiers may reuse of `outcome`, the first of the lane to
/// finish a wheel.
fn reusable_of(outcome: &Outcome) -> Option<Reusable> {
    let wheel = outcome.wheel()?;
    let reuse = reuse_of(wheel)?;
    Some(Reusable {
        built_as: outcome.identifier.clone(),
        wheel: wheel.clone(),
        reuse,
        failed_on: None,
    })
}

/// The wheel an earlier identifier of the lane built, if it serves `spec`: an abi3 one
/// never serves a free-threaded CPython, which loads no abi3 extension (cibuildwheel
/// builds `cp3XXt` identifiers separately for the same reason).
fn serving<'a>(spec: &BuildSpec, reusable: Option<&'a Reusable>) -> Option<&'a Reusable> {
    reusable.filter(|reusable| match reusable.reuse {
        Reuse::Abi3 => !spec.python.is_free_threaded(),
        Reuse::PythonIndependent => true,
    })
}

/// A served wheel that failed `failed`'s tests leaves the wheelhouse for `failed`'s folder
/// of kept-apart wheels, and every identifier that finished with it (the one that built
/// it, those it served before) fails with it: the wheel is one file for every version it
/// serves.
fn withdraw(
    reusable: &mut Reusable,
    failed: &Outcome,
    logs: &super::RunLogs,
    finished: &mut [(usize, Outcome)],
) {
    reusable.failed_on = Some(failed.identifier.clone());
    let reason = format!(
        "its {} wheel failed the tests of {}, which it serves",
        reusable.reuse.name(),
        failed.identifier
    );
    let (reason, kept_apart) = match super::collect::keep_apart(
        logs,
        &failed.identifier,
        &reusable.wheel.path,
        &logs.files_of(&failed.identifier),
        &reason,
    ) {
        Ok(kept) => (
            format!(
                "{reason}; the wheel, its logs and the reason are kept in {}",
                kept.display()
            ),
            Some(kept),
        ),
        Err(error) => (
            format!(
                "{reason}; keeping the wheel apart failed too: {}",
                crate::logging::one_line(&error)
            ),
            None,
        ),
    };
    for (_, outcome) in finished.iter_mut() {
        if outcome
            .wheel()
            .is_some_and(|wheel| wheel.path == reusable.wheel.path)
        {
            tracing::error!("{}: {reason}", outcome.identifier);
            outcome.ending = Ending::Failed {
                stage: Stage::Test,
                error: anyhow::anyhow!(reason.clone()),
                kept_apart: kept_apart.clone(),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordination::pipeline::TestResult;
    use crate::coordination::pipeline::test_step::tests::plan_of;

    fn identifiers(plan: &Plan, lane: &[usize]) -> Vec<String> {
        lane.iter()
            .map(|&index| plan.builds[index].identifier.clone())
            .collect()
    }

    fn finished(identifier: &str, path: &std::path::Path) -> Outcome {
        Outcome {
            identifier: identifier.to_string(),
            times: Default::default(),
            test: TestResult::NotRun,
            ending: Ending::Finished(FinishedWheel {
                path: path.to_path_buf(),
                sha256: "00".repeat(32),
                size: 1234,
            }),
            warnings: Vec::new(),
        }
    }

    fn spec<'a>(plan: &'a Plan, identifier: &str) -> &'a BuildSpec {
        plan.builds
            .iter()
            .find(|spec| spec.identifier == identifier)
            .unwrap()
    }

    #[test]
    fn an_abi3_wheel_serves_later_gil_builds_but_never_a_free_threaded_one() {
        let plan = plan_of("cp310-* cp312-* cp314t-*");
        let built = finished(
            "cp310-manylinux_aarch64",
            "/w/spam-1.0-cp310-abi3-manylinux_2_17_aarch64.whl".as_ref(),
        );
        let reusable = reusable_of(&built).expect("an abi3 wheel is reusable");
        assert_eq!(reusable.reuse, Reuse::Abi3);
        assert!(serving(spec(&plan, "cp312-manylinux_aarch64"), Some(&reusable)).is_some());
        assert!(serving(spec(&plan, "cp314t-manylinux_aarch64"), Some(&reusable)).is_none());
        assert!(serving(spec(&plan, "cp312-manylinux_aarch64"), None).is_none());
    }

    #[test]
    fn a_python_independent_platform_wheel_serves_every_later_build_free_threaded_too() {
        // cibuildwheel's test_abi_none: a ctypes library in a `py3-none-<platform>` wheel,
        // which a second build would only make again under the same name.
        let plan = plan_of("cp311-* cp314t-*");
        let built = finished(
            "cp311-manylinux_aarch64",
            "/w/ctypesexample-1.0.0-py3-none-manylinux_2_17_aarch64.whl".as_ref(),
        );
        let reusable = reusable_of(&built).expect("a py3-none wheel is reusable");
        assert_eq!(reusable.reuse, Reuse::PythonIndependent);
        let free_threaded = spec(&plan, "cp314t-manylinux_aarch64");
        assert!(serving(free_threaded, Some(&reusable)).is_some());
    }

    #[test]
    fn a_lane_per_target_oldest_cpython_first_in_plan_order_of_targets() {
        let plan = plan_of("cp312-* cp311-* cp313t-* cp313-*");
        let lanes: Vec<Vec<String>> = lanes(&plan)
            .iter()
            .map(|lane| identifiers(&plan, lane))
            .collect();
        assert_eq!(
            lanes,
            [
                [
                    "cp311-manylinux_aarch64",
                    "cp312-manylinux_aarch64",
                    "cp313-manylinux_aarch64",
                    "cp313t-manylinux_aarch64"
                ],
                [
                    "cp311-manylinux_ppc64le",
                    "cp312-manylinux_ppc64le",
                    "cp313-manylinux_ppc64le",
                    "cp313t-manylinux_ppc64le"
                ],
                [
                    "cp311-macosx_arm64",
                    "cp312-macosx_arm64",
                    "cp313-macosx_arm64",
                    "cp313t-macosx_arm64"
                ],
            ]
        );
    }

    #[test]
    fn a_served_wheel_that_fails_a_later_versions_tests_leaves_the_wheelhouse_and_fails_all_it_served()
     {
        let wheelhouse = tempfile::tempdir().unwrap();
        let wheel = wheelhouse
            .path()
            .join("demo-1.0-cp311-abi3-manylinux_2_17_aarch64.whl");
        std::fs::write(&wheel, b"wheel").unwrap();
        let cache = tempfile::tempdir().unwrap();
        let logs = super::super::RunLogs::create(cache.path()).unwrap();
        let mut lane = vec![
            (0, finished("cp311-manylinux_aarch64", &wheel)),
            (1, finished("cp312-manylinux_aarch64", &wheel)),
        ];
        let mut reusable = reusable_of(&lane[0].1).unwrap();
        let failed = Outcome {
            ending: Ending::Failed {
                stage: Stage::Test,
                error: anyhow::anyhow!("tests failed (emulated); log: /l/x.test.log"),
                kept_apart: None,
            },
            ..finished("cp313-manylinux_aarch64", &wheel)
        };

        withdraw(&mut reusable, &failed, &logs, &mut lane);

        assert!(!wheel.exists(), "the wheel is still in the wheelhouse");
        let kept = logs.failed_folder("cp313-manylinux_aarch64");
        assert!(kept.join(wheel.file_name().unwrap()).is_file());
        assert_eq!(
            reusable.failed_on.as_deref(),
            Some("cp313-manylinux_aarch64")
        );
        for (_, outcome) in &lane {
            let Ending::Failed { stage, error, .. } = &outcome.ending else {
                panic!("{} still finishes with the wheel", outcome.identifier);
            };
            assert_eq!(*stage, Stage::Test);
            assert!(
                error
                    .to_string()
                    .starts_with("its abi3 wheel failed the tests of cp313-manylinux_aarch64"),
                "{error}"
            );
        }
    }

    #[test]
    fn only_an_abi3_or_python_independent_wheel_serves_other_versions() {
        let reuse = |name: &str| {
            let outcome = finished("cp311-macosx_arm64", &std::path::Path::new("/w").join(name));
            reusable_of(&outcome).map(|reusable| reusable.reuse)
        };
        assert_eq!(
            reuse("demo-1.0-cp39-abi3-macosx_11_0_arm64.whl"),
            Some(Reuse::Abi3)
        );
        assert_eq!(
            reuse("demo-1.0-py3-none-macosx_11_0_arm64.whl"),
            Some(Reuse::PythonIndependent)
        );
        assert_eq!(reuse("demo-1.0-cp311-cp311-macosx_11_0_arm64.whl"), None);
        assert_eq!(reuse("demo-1.0-cp311-none-macosx_11_0_arm64.whl"), None);
        assert_eq!(reuse("not a wheel name"), None);
    }
}
