//! The test step: what the pipeline asks the test stage for one wheel — on which target
//! CPython (a built one where Debian ships none, the newest shipped one for abi3), with
//! which requirement builder — and how the verdict reads in the summary.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use super::context::RunContext;
use super::{TestResult, report, requirement_build, target_cpython};
use crate::input::options::{BuildSpec, Plan};
use crate::io_error::IoError;
use crate::python_tag::PythonTag;
use crate::stages::testing::{self, TestError, TestOutcome, TestSpec, Verdict};
use crate::support::sysroot::SysrootError;
use crate::target::{Libc, Target};

/// Whose wheel a test is for: the identifier's own build, or an earlier identifier's wheel
/// that serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tested {
    Built,
    /// Tested on the identifier's own CPython alone: the wheel's builder has had its test.
    Served,
}

pub(super) fn test(
    plan: &Plan,
    spec: &BuildSpec,
    wheel: &Path,
    tested: Tested,
    context: &RunContext<'_>,
    environment: &BTreeMap<String, String>,
) -> Result<TestResult> {
    let (cache, logs, offline) = (&context.cache, &context.logs, context.offline);
    if !spec.options.runs_tests() {
        return Ok(TestResult::NotRun);
    }
    if let Some(problem) = &spec.options.test_groups_problem {
        bail!("{problem}");
    }
    let opened = crate::formats::wheel::open_within_env_limits(wheel)?;
    let python_version = match tested {
        Tested::Built => test_version(plan, spec, opened.name()),
        Tested::Served => spec.python,
    };
    let musl = spec.target.libc() == Some(Libc::Musl);
    let mut target_python = spec.options.target_python.clone();
    if target_python.is_none() && needs_built_cpython(spec, python_version) {
        let built = if python_version.is_free_threaded() {
            None
        } else {
            let reach = super::targets::TargetReach::of(spec);
            target_cpython::built_target_cpython(&reach, python_version, cache, offline)?
        };
        match built {
            Some(root) => target_python = Some(root),
            None if musl => {
                return Ok(TestResult::NotTested {
                    reason: no_musl_python(&spec.target, python_version),
                });
            }
            // Debian's answer (which versions it ships) is the one the test gives.
            None => {}
        }
    }
    let test_spec = TestSpec {
        test_command: spec.options.test_command.clone().unwrap_or_default(),
        test_requires: spec.options.test_requires.clone(),
        test_extras: spec.options.test_extras.clone(),
        python_version,
        platform: testing::TestPlatform::of_target(&spec.target),
        test_sources: spec
            .options
            .test_sources
            .iter()
            .map(PathBuf::from)
            .collect(),
        project_dir: spec.paths.root.clone(),
        package_dir: Some(spec.paths.package.clone()),
        qemu_cpu: spec.options.qemu_cpu.clone(),
        cache_dir: cache.root().to_path_buf(),
        log_dir: logs.dir().to_path_buf(),
        log_file: Some(logs.file(&spec.identifier, "test")),
        // What the index lacks is built here on the route through Debian's trees, which
        // are glibc's: a musl CPython's test requirements come from the index alone.
        requirement_builder: spec.target.linux_arch().filter(|_| !musl).map(|_| {
            testing::Builder(std::sync::Arc::new(requirement_build::PipelineBuilder {
                cache: cache.clone(),
                logs: logs.clone(),
                network: context.network(spec),
            }))
        }),
        before_test: spec.options.before_test.clone(),
        environment: environment.clone(),
        test_environment: spec.options.test_environment.clone(),
        target_python,
        network: context.network(spec),
        timeout: spec.options.test_timeout,
    };
    let verdict = match testing::test_or_check(wheel, &opened, &test_spec) {
        Err(TestError::Sysroot(SysrootError::UnsupportedPython { .. })) => {
            return Ok(TestResult::NotTested {
                reason: no_target_python(&spec.target, test_spec.python_version),
            });
        }
        other => other?,
    };
    Ok(match verdict {
        Verdict::StaticCheck(report) if report.passed() => TestResult::StaticCheckPassed,
        Verdict::StaticCheck(report) => {
            let log = logs.file(&spec.identifier, "static-load-check");
            std::fs::write(&log, report.to_string()).map_err(IoError::at("write", &log))?;
            let first = report
                .failures
                .first()
                .map(|f| f.to_string())
                .unwrap_or_default();
            TestResult::Failed {
                reason: format!("static load check failed: {first}; log: {}", log.display()),
            }
        }
        Verdict::Ran(outcome) if outcome.passed => TestResult::Passed { mode: outcome.mode },
        Verdict::Ran(TestOutcome {
            timed_out: Some(timed_out),
            mode,
            log_path,
            ..
        }) => TestResult::TimedOut {
            after: timed_out.after,
            reason: format!(
                "tests {timed_out} ({}); log: {}",
                report::mode_name(mode),
                log_path.display()
            ),
        },
        Verdict::Ran(outcome) => TestResult::Failed {
            reason: format!(
                "tests failed ({}); log: {}",
                report::mode_name(outcome.mode),
                outcome.log_path.display()
            ),
        },
    })
}

/// Whether the test stage runs `python` on a CPython crosswheel builds for the target:
/// always for musl (Debian ships none), and for an emulated glibc target whose Debian
/// releases lack that version (riscv64's first CPython is trixie's 3.13).
fn needs_built_cpython(spec: &BuildSpec, python: PythonTag) -> bool {
    if spec.target.libc() == Some(Libc::Musl) {
        return true;
    }
    let Some(arch) = spec.target.linux_arch() else {
        return false;
    };
    !spec.target.runs_natively_here()
        && matches!(
            crate::support::sysroot::check_target_python(arch, python),
            Err(SysrootError::UnsupportedPython { .. })
        )
}

/// Why a musllinux wheel is not tested: crosswheel builds musl CPythons of the versions
/// config/target-cpython.toml names, with the GIL.
fn no_musl_python(target: &Target, python: PythonTag) -> String {
    format!(
        "no musl CPython {} for {}: crosswheel builds {} (config/target-cpython.toml); set target-python to a musl CPython's root",
        python.interpreter_version(),
        target.arch(),
        crate::support::target_libraries::target_cpythons()
            .versions()
            .join(", ")
    )
}

/// Why a wheel is not tested when Debian ships no target CPython of its version.
fn no_target_python(target: &Target, python: PythonTag) -> String {
    let arch = target.arch();
    let version = python.interpreter_version();
    if python.is_free_threaded() {
        return format!(
            "no {arch} free-threaded CPython {version} (Debian ships none; set target-python)"
        );
    }
    let shipped: Vec<String> = target
        .linux_arch()
        .map(crate::support::sysroot::archive::shipped_versions)
        .unwrap_or_default()
        .into_iter()
        .map(PythonTag::version)
        .collect();
    format!(
        "no {arch} CPython {version} (Debian ships {}; set target-python)",
        shipped.join(", ")
    )
}

/// The CPython a wheel is tested on: its build's. An abi3 wheel, which serves later
/// versions too (each of which tests it again on its own CPython), falls back to the newest
/// version of its target in the plan that Debian ships a target interpreter for when there
/// is no target CPython of its own version: it is tested at least once.
fn test_version(
    plan: &Plan,
    spec: &BuildSpec,
    wheel: &crate::formats::wheel::WheelName,
) -> PythonTag {
    if !wheel.is_abi3() {
        return spec.python;
    }
    let own = spec.python.with_gil();
    let Some(arch) = spec.target.linux_arch() else {
        return own;
    };
    let shipped = crate::support::sysroot::archive::shipped_versions(arch);
    let built = crate::support::target_libraries::target_cpythons().versions();
    if spec.target.runs_natively_here() || shipped.contains(&own) || built.contains(&own.version())
    {
        return own;
    }
    plan.builds
        .iter()
        .map(|build| (build, build.python.with_gil()))
        .filter(|(build, python)| build.target.id() == spec.target.id() && shipped.contains(python))
        .map(|(_, python)| python)
        .max_by_key(|python| python.minor())
        .unwrap_or(own)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The plan of a project whose `build` selects among CPython 3.9 to 3.14t.
    pub(in crate::coordination::pipeline) fn plan_of(build: &str) -> Plan {
        let project = tempfile::tempdir().unwrap();
        let python = r#"["cp39", "cp310", "cp311", "cp312", "cp313", "cp313t", "cp314", "cp314t"]"#;
        std::fs::write(
            project.path().join("pyproject.toml"),
            format!("[tool.crosswheel]\nbuild = \"{build}\"\npython = {python}\n"),
        )
        .unwrap();
        let env = std::collections::BTreeMap::<String, String>::new();
        crate::input::options::resolve(
            project.path(),
            &crate::input::options::CliOverrides::default(),
            &env,
        )
        .unwrap()
    }

    fn spec<'a>(plan: &'a Plan, identifier: &str) -> &'a BuildSpec {
        plan.builds
            .iter()
            .find(|spec| spec.identifier == identifier)
            .unwrap()
    }

    fn wheel(file_name: &str) -> crate::formats::wheel::WheelName {
        crate::formats::wheel::WheelName::parse(file_name).unwrap()
    }

    #[test]
    fn a_version_specific_wheel_is_tested_on_its_own_cpython() {
        let plan = plan_of("cp311-manylinux_aarch64 cp313t-manylinux_aarch64");
        let free_threaded = spec(&plan, "cp313t-manylinux_aarch64");
        let tested = test_version(
            &plan,
            free_threaded,
            &wheel("demo-1.0-cp313-cp313t-linux_aarch64.whl"),
        );
        assert_eq!(tested.to_string(), "cp313t");
    }

    /// config/debian/releases.toml ships 3.9, 3.11 and 3.13 for arm64, not 3.10 or 3.12;
    /// config/target-cpython.toml builds 3.11 alone.
    #[test]
    fn an_abi3_wheel_is_tested_on_its_own_cpython_where_the_target_has_one() {
        let plan = plan_of("cp39-* cp310-* cp311-* cp312-*");
        let abi3 = wheel("demo-1.0-cp39-abi3-linux_aarch64.whl");
        let oldest = spec(&plan, "cp39-manylinux_aarch64");
        assert_eq!(test_version(&plan, oldest, &abi3).to_string(), "cp39");
    }

    #[test]
    fn an_abi3_wheel_without_a_target_cpython_of_its_version_is_tested_on_the_lanes_newest() {
        let plan = plan_of("cp310-* cp311-* cp312-*");
        let abi3 = wheel("demo-1.0-cp310-abi3-linux_aarch64.whl");
        let oldest = spec(&plan, "cp310-manylinux_aarch64");
        assert_eq!(test_version(&plan, oldest, &abi3).to_string(), "cp311");
        let plan = plan_of("cp310-* cp311-* cp312-* cp313t-*");
        let oldest = spec(&plan, "cp310-manylinux_aarch64");
        assert_eq!(
            test_version(&plan, oldest, &abi3).to_string(),
            "cp313",
            "an abi3 wheel runs on the GIL build of a free-threaded identifier's version"
        );
    }

    #[test]
    fn an_abi3_wheel_of_a_version_debian_lacks_falls_back_to_its_own() {
        let plan = plan_of("cp312-manylinux_aarch64");
        let only = &plan.builds[0];
        let shipped =
            crate::support::sysroot::archive::shipped_versions(crate::target::LinuxArch::Aarch64);
        assert!(
            !shipped.contains(&only.python),
            "Debian ships 3.12 now: pick another version"
        );
        let tested = test_version(&plan, only, &wheel("demo-1.0-cp312-abi3-linux_aarch64.whl"));
        assert_eq!(tested.version(), "3.12");
    }

    #[test]
    fn no_target_python_says_why_and_what_debian_has() {
        let target = crate::target::Target::parse("linux-aarch64").unwrap();
        let free_threaded = no_target_python(&target, PythonTag::parse("cp313t").unwrap());
        assert_eq!(
            free_threaded,
            "no aarch64 free-threaded CPython 3.13t (Debian ships none; set target-python)"
        );
        let gil = no_target_python(&target, PythonTag::parse("cp312").unwrap());
        assert!(
            gil.starts_with("no aarch64 CPython 3.12 (Debian ships 3."),
            "{gil}"
        );
        assert!(gil.ends_with("; set target-python)"), "{gil}");
    }
}
