//! The test stage's one entry, for `crosswheel test` and the pipeline alike: which
//! platform of the wheel to test, whether this host runs it or only checks it statically,
//! and — before any work — whether a target CPython exists for an emulated run.

use std::path::Path;

use crate::analysis::loadcheck::{LoadCheckReport, check_macos_wheel};
use crate::formats::wheel::WheelArchive;

use super::{Host, TestError, TestOutcome, TestPlan, TestPlatform, TestSpec, plan, test_wheel};

/// What the test stage concluded about one wheel.
#[derive(Debug)]
pub enum Verdict {
    /// The test command ran, natively or under qemu-user; see [`TestOutcome::passed`].
    Ran(TestOutcome),
    /// Nothing here can execute the wheel (macOS arm64 off an arm64 Mac): what the loader
    /// would do was checked instead, and nothing ran.
    StaticCheck(LoadCheckReport),
}

/// Tests `wheel` (opened from `path`) for the first of its platform tags this host can
/// test (a `macosx_10_15_x86_64.macosx_11_0_arm64` wheel is tested as arm64).
pub fn test_or_check(
    path: &Path,
    wheel: &WheelArchive,
    spec: &TestSpec,
) -> Result<Verdict, TestError> {
    let tags = &wheel.name().platform;
    let platform = tags
        .iter()
        .find_map(TestPlatform::of_platform_tag)
        .ok_or_else(|| TestError::NoTestRunner {
            wheel: path.to_path_buf(),
            platforms: crate::formats::wheel::join_platform_tags(tags),
        })?;
    match plan(platform, Host::current())? {
        TestPlan::StaticLoadCheck => Ok(Verdict::StaticCheck(
            check_macos_wheel(wheel).map_err(TestError::LoadCheck)?,
        )),
        TestPlan::Emulated(arch) => {
            if matches!(platform, TestPlatform::MuslLinux(_)) && spec.target_python.is_none() {
                return Err(TestError::NoMuslPython { arch });
            }
            if spec.target_python.is_none() {
                crate::support::sysroot::check_target_python(arch, spec.python_version)?;
            }
            Ok(Verdict::Ran(test_wheel(path, platform, spec)?))
        }
        TestPlan::Native => Ok(Verdict::Ran(test_wheel(path, platform, spec)?)),
    }
}
