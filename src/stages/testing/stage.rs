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
    let platforms = || crate::formats::wheel::join_platform_tags(tags);
    let mut serves = tags.iter().filter_map(TestPlatform::of_platform_tag);
    let platform = match spec.platform {
        // The build's target says what the wheel is; its tags must agree, or the wheel is
        // not what the build made.
        Some(wanted) => serves.find(|platform| *platform == wanted).ok_or_else(|| {
            TestError::NotTheTargetsWheel {
                wheel: path.to_path_buf(),
                platforms: platforms(),
                wanted,
            }
        })?,
        None => serves.next().ok_or_else(|| TestError::NoTestRunner {
            wheel: path.to_path_buf(),
            platforms: platforms(),
        })?,
    };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::wheel::{Contents, WheelName, WriteOptions, write_wheel};
    use crate::target::LinuxArch;

    /// A wheel of `name` with only its metadata.
    fn wheel_named(dir: &Path, name: &str) -> (std::path::PathBuf, WheelArchive) {
        let name = WheelName::parse(name).unwrap();
        let info = format!("{}-{}.dist-info", name.distribution, name.version);
        let entries = vec![
            (
                format!("{info}/METADATA"),
                Contents::Bytes {
                    data: b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n".to_vec(),
                    mode: 0o644,
                },
            ),
            (
                format!("{info}/WHEEL"),
                Contents::Bytes {
                    data: b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_aarch64\n".to_vec(),
                    mode: 0o644,
                },
            ),
        ];
        let path = write_wheel(dir, &name, entries, &WriteOptions { epoch: Some(0) }).unwrap();
        let archive = WheelArchive::open(&path).unwrap();
        (path, archive)
    }

    #[test]
    fn a_wheel_that_is_not_the_build_targets_is_refused_before_any_test() {
        let dir = tempfile::tempdir().unwrap();
        let (path, wheel) = wheel_named(dir.path(), "demo-1.0-cp311-cp311-linux_aarch64.whl");
        let spec = TestSpec {
            platform: Some(TestPlatform::Linux(LinuxArch::Ppc64le)),
            ..TestSpec::default()
        };
        let err = test_or_check(&path, &wheel, &spec).unwrap_err();
        assert!(
            matches!(err, TestError::NotTheTargetsWheel { .. }),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .contains("(linux_aarch64) are not the build target's"),
            "{err}"
        );
    }
}
