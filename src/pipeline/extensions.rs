//! Wheels of one run built for targets of the same platform carry the same extension
//! modules. A module that the linux-aarch64 wheel has and the linux-ppc64le wheel lacks was
//! left out by that build — an optional extension whose compile failed and that the
//! project tolerated (the pattern `CIBUILDWHEEL` exists to stop) — so that wheel fails
//! instead of reaching the wheelhouse. Platforms are compared only with themselves: Linux
//! and macOS builds legitimately differ (psutil's `_psutil_linux` vs `_psutil_osx`).

use std::collections::BTreeSet;

use super::outcome::{Ending, Outcome, Stage, TestResult};
use crate::options::Plan;

/// Extension modules of a wheel, as import paths without their suffix (`pkg/_speedups`);
/// libraries vendored by the repair (`*.libs/`, `.dylibs/`) are not modules.
fn extension_modules(wheel: &std::path::Path) -> Option<BTreeSet<String>> {
    let archive = crate::wheel::WheelArchive::open(wheel).ok()?;
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
pub(super) fn fail_wheels_missing_extensions(plan: &Plan, outcomes: &mut [Outcome]) {
    let modules: Vec<Option<BTreeSet<String>>> = outcomes
        .iter()
        .map(|outcome| match (&outcome.ending, &outcome.test) {
            // A wheel serving another version is checked as the one it was built as.
            (_, TestResult::CoveredByAbi3 { .. }) => None,
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
        fail(plan, &mut outcomes[index], index, message);
    }
}

fn fail(plan: &Plan, outcome: &mut Outcome, index: usize, message: String) {
    let Ending::Finished(wheel) = &outcome.ending else {
        return;
    };
    let out_dir = wheel
        .path
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let kept_apart = super::keep_apart(&out_dir, &plan.builds[index].identifier, &wheel.path, None)
        .map_err(|error| tracing::warn!("{}: {error:#}", outcome.identifier))
        .ok();
    tracing::error!("{}: {message}", outcome.identifier);
    outcome.ending = Ending::Failed {
        stage: Stage::Build,
        error: anyhow::anyhow!(message),
        kept_apart,
    };
}
