//! In which order identifiers run, and at what concurrency.
//!
//! Identifiers of one target form a lane, run oldest CPython first: when a build turns out
//! to be a wheel later versions can install (abi3, or `py3-none` with a platform tag), it
//! serves every later version of its lane it fits, which is then not built again
//! (cibuildwheel's `find_compatible_wheel` does the same). Lanes run `--jobs` at a time; each identifier's
//! output is captured and printed together when it is done. Outcomes come back in plan
//! order.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::context::RunContext;
use super::outcome::{Ending, FinishedWheel, Outcome, StageTimes, TestResult};
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
        let mut reusable: Option<(String, FinishedWheel, Reuse)> = None;
        for &index in lane {
            let spec = &plan.builds[index];
            let outcome = match serving(spec, reusable.as_ref()) {
                Some((built_as, wheel, reuse)) => {
                    covered(spec.identifier.clone(), built_as, wheel, *reuse)
                }
                None if concurrent => {
                    let (outcome, output) =
                        crate::logging::capture(|| run_and_report(plan, spec, context, targets));
                    let _printing = printing.lock().unwrap_or_else(|p| p.into_inner());
                    let _group = report::Group::start(&spec.identifier);
                    output.replay();
                    outcome
                }
                None => {
                    let _group = report::Group::start(&spec.identifier);
                    run_and_report(plan, spec, context, targets)
                }
            };
            if reusable.is_none()
                && let Some(wheel) = outcome.wheel()
                && let Some(reuse) = reuse_of(wheel)
            {
                reusable = Some((spec.identifier.clone(), wheel.clone(), reuse));
            }
            finished
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((index, outcome));
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

/// Which later identifiers of its lane a finished wheel can serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reuse {
    /// `cp3X-abi3`: every later CPython with the GIL.
    Abi3,
    /// `py3-none-<platform>` (a ctypes library, a bundled program): every later CPython,
    /// free-threaded ones included, as it links no Python at all.
    PythonIndependent,
}

impl Reuse {
    fn name(self) -> &'static str {
        match self {
            Reuse::Abi3 => "abi3",
            Reuse::PythonIndependent => "py3-none",
        }
    }
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

/// The wheel an earlier identifier of the lane built, if it serves `spec`: an abi3 one
/// never serves a free-threaded CPython, which loads no abi3 extension (cibuildwheel
/// builds `cp3XXt` identifiers separately for the same reason).
fn serving<'a>(
    spec: &BuildSpec,
    reusable: Option<&'a (String, FinishedWheel, Reuse)>,
) -> Option<&'a (String, FinishedWheel, Reuse)> {
    reusable.filter(|(_, _, reuse)| match reuse {
        Reuse::Abi3 => !spec.python.is_free_threaded(),
        Reuse::PythonIndependent => true,
    })
}

/// An identifier a lower version's wheel already serves: not built again.
fn covered(identifier: String, built_as: &str, wheel: &FinishedWheel, reuse: Reuse) -> Outcome {
    let name = wheel.path.file_name().unwrap_or_default().to_string_lossy();
    tracing::info!(
        "{identifier}: Found previously built wheel {name} (built as {built_as}), that's compatible with {identifier}; not built again"
    );
    Outcome {
        identifier,
        times: StageTimes::default(),
        test: TestResult::ServedByEarlierWheel {
            built_as: built_as.to_string(),
            kind: reuse.name(),
        },
        ending: Ending::Finished(wheel.clone()),
        warnings: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordination::pipeline::test_step::tests::plan_of;

    fn identifiers(plan: &Plan, lane: &[usize]) -> Vec<String> {
        lane.iter()
            .map(|&index| plan.builds[index].identifier.clone())
            .collect()
    }

    #[test]
    fn an_abi3_wheel_serves_later_gil_builds_but_never_a_free_threaded_one() {
        let plan = plan_of("cp310-* cp312-* cp314t-*");
        let wheel = FinishedWheel {
            path: "/w/spam-1.0-cp310-abi3-manylinux_2_17_aarch64.whl".into(),
            sha256: String::new(),
            size: 0,
        };
        let built = ("cp310-manylinux_aarch64".to_string(), wheel, Reuse::Abi3);
        let spec = |identifier: &str| {
            plan.builds
                .iter()
                .find(|spec| spec.identifier == identifier)
                .unwrap()
        };
        assert!(serving(spec("cp312-manylinux_aarch64"), Some(&built)).is_some());
        assert!(serving(spec("cp314t-manylinux_aarch64"), Some(&built)).is_none());
        assert!(serving(spec("cp312-manylinux_aarch64"), None).is_none());
    }

    #[test]
    fn a_python_independent_platform_wheel_serves_every_later_build_free_threaded_too() {
        // cibuildwheel's test_abi_none: a ctypes library in a `py3-none-<platform>` wheel,
        // which a second build would only make again under the same name.
        let plan = plan_of("cp311-* cp314t-*");
        let wheel = FinishedWheel {
            path: "/w/ctypesexample-1.0.0-py3-none-manylinux_2_17_aarch64.whl".into(),
            sha256: String::new(),
            size: 0,
        };
        assert_eq!(reuse_of(&wheel), Some(Reuse::PythonIndependent));
        let built = (
            "cp311-manylinux_aarch64".to_string(),
            wheel,
            Reuse::PythonIndependent,
        );
        let free_threaded = plan
            .builds
            .iter()
            .find(|spec| spec.identifier == "cp314t-manylinux_aarch64")
            .unwrap();
        assert!(serving(free_threaded, Some(&built)).is_some());
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
    fn a_covered_identifier_finishes_with_the_wheel_it_is_served_by() {
        let wheel = FinishedWheel {
            path: "/wheelhouse/demo-1.0-cp311-abi3-manylinux_2_17_aarch64.whl".into(),
            sha256: "00".repeat(32),
            size: 1234,
        };
        assert_eq!(reuse_of(&wheel), Some(Reuse::Abi3));
        let outcome = covered(
            "cp312-manylinux_aarch64".to_string(),
            "cp311-manylinux_aarch64",
            &wheel,
            Reuse::Abi3,
        );
        assert_eq!(outcome.identifier, "cp312-manylinux_aarch64");
        assert_eq!(
            outcome.test,
            TestResult::ServedByEarlierWheel {
                built_as: "cp311-manylinux_aarch64".to_string(),
                kind: "abi3"
            }
        );
        let served = outcome.wheel().expect("a finished identifier");
        assert_eq!((&served.path, served.size), (&wheel.path, wheel.size));
        assert_eq!(
            outcome.times.build + outcome.times.repair,
            Default::default()
        );
    }

    #[test]
    fn only_an_abi3_or_python_independent_wheel_serves_other_versions() {
        let wheel = |name: &str| FinishedWheel {
            path: std::path::PathBuf::from("/wheelhouse").join(name),
            sha256: String::new(),
            size: 0,
        };
        let reuse = |name: &str| reuse_of(&wheel(name));
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
