//! Output for CI: `--print-build-identifiers` and `crosswheel matrix`, a GitHub Actions
//! `strategy.matrix` that fans the builds out to Linux runners and adds a native test job
//! on an arm64 macOS runner for each macOS build that has tests (docs/configuration.md);
//! each entry names the runner that executes its target natively, if GitHub has one.

use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::{Value, json};

use super::Plan;
use super::identifiers::Platform;
use super::sources::DEFAULTS_TOML;
use crate::target::{Libc, LinuxArch};

/// Which entries `github_matrix` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatrixJobs {
    /// Build entries and test entries (told apart by `job`).
    All,
    /// One entry per build identifier.
    Build,
    /// One entry per macOS build that runs tests, for a job that `needs` the builds.
    Test,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Runners {
    build_runner: String,
    macos_test_runner: String,
    linux_arm64_test_runner: String,
    /// Identifier platform (`manylinux_x86_64`) → the runner that executes it natively.
    native_runners: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
struct DefaultsFile {
    matrix: Runners,
}

fn runners() -> &'static Runners {
    static RUNNERS: OnceLock<Runners> = OnceLock::new();
    RUNNERS.get_or_init(|| match toml::from_str::<DefaultsFile>(DEFAULTS_TOML) {
        Ok(file) => file.matrix,
        // The file is compiled in; the unit test `bundled_runners_parse` guards it.
        Err(err) => panic!("config/defaults.toml [matrix] is invalid: {err}"),
    })
}

/// `{"include": [...]}` for `strategy.matrix: ${{ fromJSON(...) }}`.
pub fn github_matrix(plan: &Plan, jobs: MatrixJobs) -> Value {
    let runners = runners();
    let mut include = Vec::new();
    for build in &plan.builds {
        // A build job needs the host CPython of the version (either ABI builds either); a
        // test job the interpreter the wheel runs on (`3.13t` for a free-threaded wheel,
        // as actions/setup-python names it).
        let entry = |job: &str, os: &str| {
            let python = match job {
                "test" => build.python.interpreter_version(),
                _ => build.python.version(),
            };
            json!({
                "job": job,
                "identifier": build.identifier,
                "target": build.target.id(),
                "platform": build.target.platform().name(),
                "python": python,
                "os": os,
                "artifact": format!("wheel-{}", build.identifier),
                "native-runner": runners.native_runners.get(&build.target.data().identifier_platform()),
            })
        };
        if matches!(jobs, MatrixJobs::All | MatrixJobs::Build) {
            include.push(entry("build", &runners.build_runner));
        }
        let native_runner = match build.target.platform() {
            // The test stage runs an x86_64 wheel natively only on an Intel Mac (not under
            // Rosetta), and `[matrix]` names an arm64 macOS runner: an x86_64 build keeps
            // the static check of its build job. universal2 wheels run on arm64.
            Platform::Macos if build.target.arch() == "x86_64" => None,
            Platform::Macos => Some(&runners.macos_test_runner),
            Platform::Linux if emulated_stage_cannot_test(build) => {
                Some(&runners.linux_arm64_test_runner)
            }
            Platform::Linux => None,
        };
        if let Some(runner) = native_runner.filter(|_| build.options.runs_tests())
            && matches!(jobs, MatrixJobs::All | MatrixJobs::Test)
        {
            let mut test = entry("test", runner);
            if let Some(fields) = test.as_object_mut() {
                fields.insert("test-on".to_string(), json!(runner));
            }
            include.push(test);
        }
    }
    json!({ "include": include })
}

/// An aarch64 manylinux build of a CPython Debian ships no target interpreter of (3.10,
/// 3.12, every free-threaded one): the emulated test stage reports it `not tested`, a
/// native arm64 runner can test it. A musllinux wheel runs on neither (the runner's
/// CPython is glibc's), so it keeps its `not tested` line.
fn emulated_stage_cannot_test(build: &super::BuildSpec) -> bool {
    build.target.libc() == Some(Libc::Glibc)
        && build.target.linux_arch() == Some(LinuxArch::Aarch64)
        && !crate::support::sysroot::archive::shipped_versions(LinuxArch::Aarch64)
            .contains(&build.python)
}

/// One identifier per line, as cibuildwheel's `--print-build-identifiers`.
pub fn identifiers_text(plan: &Plan) -> String {
    plan.builds
        .iter()
        .map(|build| format!("{}\n", build.identifier))
        .collect()
}

/// `[{"identifier": ..., "target": ..., "platform": ..., "python": ...}, ...]`.
pub fn identifiers_json(plan: &Plan) -> Value {
    Value::Array(
        plan.builds
            .iter()
            .map(|build| {
                json!({
                    "identifier": build.identifier,
                    "target": build.target.id(),
                    "platform": build.target.platform().name(),
                    "python": build.python.version(),
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_runners_parse() {
        assert!(!runners().build_runner.is_empty());
        assert!(!runners().macos_test_runner.is_empty());
    }

    #[test]
    fn every_native_runner_names_a_target() {
        let platforms: Vec<String> = crate::target::targets()
            .iter()
            .map(crate::target::TargetData::identifier_platform)
            .collect();
        for (platform, runner) in &runners().native_runners {
            assert!(!runner.is_empty(), "{platform}");
            assert!(
                platforms.contains(platform),
                "{platform} is no target's identifier platform"
            );
        }
        assert_eq!(
            runners()
                .native_runners
                .get("manylinux_x86_64")
                .map(String::as_str),
            Some("ubuntu-latest")
        );
        assert!(!runners().native_runners.contains_key("manylinux_ppc64le"));
    }
}
