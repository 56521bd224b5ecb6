//! How crosswheel reaches its users: `scripts/release-wheels` builds a binary wheel that
//! pip installs as a working `crosswheel` command, and the GitHub Action (`action.yml`)
//! and the example workflow drive the real CLI with flags and matrix keys that exist.
//!
//! The wheel tests build the host wheel once per process (a release build of crosswheel
//! linked with zig), so the first of them takes minutes on a cold cache.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crosswheel::formats::wheel::WheelArchive;
use serde_json::Value;

const VERSION: &str = env!("CARGO_PKG_VERSION");
const REPO: &str = env!("CARGO_MANIFEST_DIR");
/// Any fixed time works; a fixed one makes two builds comparable byte for byte.
const EPOCH: &str = "1700000000";
const HOST_WHEEL: &str = "py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl";

fn repo(path: &str) -> PathBuf {
    Path::new(REPO).join(path)
}

fn run(command: &mut Command) -> Output {
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("cannot run {command:?}: {error}"));
    assert!(
        output.status.success(),
        "{command:?} failed with {}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn stdout_of(command: &mut Command) -> String {
    String::from_utf8_lossy(&run(command).stdout).into_owned()
}

/// Runs the release script for the host target into a fresh `out` folder below the
/// target directory and returns the one wheel it wrote there.
fn build_host_wheel(out: &str) -> PathBuf {
    let wheels = build_wheels(out, &["linux-x86_64"]);
    assert_eq!(wheels.len(), 1, "expected exactly one wheel: {wheels:?}");
    wheels.into_iter().next().unwrap_or_default()
}

/// Runs the release script for `targets` into a fresh `out` folder below the target
/// directory and returns the wheels it wrote there, sorted.
fn build_wheels(out: &str, targets: &[&str]) -> Vec<PathBuf> {
    common::require_tool("python3", "apt-get install python3");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("release_wheel")
        .join(out);
    if out.exists() {
        std::fs::remove_dir_all(&out)
            .unwrap_or_else(|error| panic!("cannot clear {}: {error}", out.display()));
    }
    let mut command = Command::new(repo("scripts/release-wheels"));
    for target in targets {
        command.args(["--target", target]);
    }
    run(command
        .arg("--out")
        .arg(&out)
        .env("SOURCE_DATE_EPOCH", EPOCH));
    let mut wheels: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap_or_else(|error| panic!("cannot list {}: {error}", out.display()))
        .map(|entry| entry.map(|entry| entry.path()))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|error| panic!("cannot list {}: {error}", out.display()));
    wheels.sort();
    wheels
}

/// The host wheel, built once for all the tests of this process.
fn host_wheel() -> &'static Path {
    static WHEEL: OnceLock<PathBuf> = OnceLock::new();
    WHEEL.get_or_init(|| build_host_wheel("first"))
}

/// `python -m pip install` offline and quiet; the caller adds what to install.
fn pip_install(python: &Path) -> Command {
    let mut command = Command::new(python);
    command.args([
        "-m",
        "pip",
        "install",
        "--no-index",
        "--disable-pip-version-check",
        "--quiet",
    ]);
    command
}

fn fresh_venv(dir: &Path) -> PathBuf {
    run(Command::new("python3").args(["-m", "venv"]).arg(dir));
    dir.join("bin")
}

#[test]
#[ignore = "slow: builds crosswheel's release wheel (cargo, zig)"]
fn release_script_builds_a_manylinux2014_binary_wheel_for_the_host() {
    let wheel = host_wheel();
    let file_name = wheel.file_name().unwrap_or_default().to_string_lossy();
    // glibc 2.17 linking (zig) is what makes the wheel install on manylinux2014 systems;
    // the tag is `crosswheel repair --plat auto`'s reading of the symbols used.
    assert_eq!(file_name, format!("crosswheel-{VERSION}-{HOST_WHEEL}"));

    let archive = WheelArchive::open(wheel).unwrap_or_else(|error| panic!("{error}"));
    let payload: BTreeSet<&str> = archive
        .entries()
        .iter()
        .map(|entry| entry.name.as_str())
        .filter(|name| !name.contains(".dist-info/"))
        .collect();
    let script = format!("crosswheel-{VERSION}.data/scripts/crosswheel");
    assert_eq!(
        payload,
        BTreeSet::from([
            "crosswheel/__init__.py",
            "crosswheel/__main__.py",
            script.as_str()
        ])
    );
    let executable = archive.entry(&script).map(|entry| entry.unix_mode);
    assert_eq!(
        executable,
        Some(Some(0o100755)),
        "{script} must be a regular file with mode 0755"
    );
    let elf = archive
        .read(&script)
        .unwrap_or_else(|error| panic!("{error}"));
    assert!(
        elf.starts_with(b"\x7fELF"),
        "{script} is not an ELF executable"
    );

    let wheel_file = archive.wheel_metadata();
    assert_eq!(wheel_file.root_is_purelib(), Some(false));
    assert_eq!(
        wheel_file.tags(),
        [
            "py3-none-manylinux_2_17_x86_64",
            "py3-none-manylinux2014_x86_64"
        ]
    );
    let metadata = archive
        .read(&format!("{}/METADATA", archive.dist_info_dir()))
        .unwrap_or_else(|error| panic!("{error}"));
    let metadata = String::from_utf8_lossy(&metadata);
    for header in [
        "Name: crosswheel\n".to_owned(),
        format!("Version: {VERSION}\n"),
        "Requires-Python: >=3.8\n".to_owned(),
        "Description-Content-Type: text/markdown".to_owned(),
    ] {
        assert!(
            metadata.contains(&header),
            "METADATA lacks `{}`:\n{metadata}",
            header.trim()
        );
    }
    assert!(
        metadata.contains("\nSummary: Build, repair and test Python wheels"),
        "{metadata}"
    );
}

#[test]
#[ignore = "slow: builds crosswheel's release wheel (cargo, zig)"]
fn release_wheel_installs_with_pip_and_runs_as_a_command_and_as_a_module() {
    let wheel = host_wheel();
    let venv = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
    let bin = fresh_venv(venv.path());
    run(pip_install(&bin.join("python")).arg(wheel));

    let expected = format!("crosswheel {VERSION}\n");
    assert_eq!(
        stdout_of(Command::new(bin.join("crosswheel")).arg("--version")),
        expected
    );
    assert_eq!(
        stdout_of(Command::new(bin.join("python")).args(["-m", "crosswheel", "--version"])),
        expected
    );
}

#[test]
#[ignore = "slow: builds crosswheel's release wheel (cargo, zig)"]
fn launcher_finds_the_executable_of_a_pip_target_install() {
    let wheel = host_wheel();
    let target = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
    run(pip_install(Path::new("python3"))
        .arg("--target")
        .arg(target.path())
        .arg(wheel));
    let version = stdout_of(
        Command::new("python3")
            .args(["-m", "crosswheel", "--version"])
            .env("PYTHONPATH", target.path()),
    );
    assert_eq!(version, format!("crosswheel {VERSION}\n"));
}

#[test]
#[ignore = "slow: builds crosswheel's release wheel (cargo, zig)"]
fn release_wheel_passes_crosswheel_check() {
    let wheel = host_wheel();
    run(Command::new(common::crosswheel_bin())
        .arg("check")
        .arg(wheel));
}

#[test]
#[ignore = "slow: builds crosswheel's release wheel (cargo, zig)"]
fn release_wheels_are_byte_identical_when_rebuilt() {
    let first = std::fs::read(host_wheel()).unwrap_or_else(|error| panic!("{error}"));
    let second = build_host_wheel("second");
    let second = std::fs::read(&second).unwrap_or_else(|error| panic!("{error}"));
    assert!(
        first == second,
        "two builds of the same commit with the same SOURCE_DATE_EPOCH differ"
    );
}

/// The other two release targets, cross-built with zig from this Linux x86_64 host:
/// the aarch64 wheel is installed into a real aarch64 CPython under qemu-user by
/// `crosswheel test` and runs there; the macOS arm64 one gets what can be checked
/// without a Mac — an arm64 executable, validly signed, needing only what macOS has.
///
/// Ignored by default: it needs the Rust standard libraries of both targets
/// (`rustup target add aarch64-unknown-linux-gnu aarch64-apple-darwin`), which a fresh
/// machine with only the host toolchain cannot fetch. Run it with
/// `cargo test --release --test it release_script_cross_builds -- --ignored`; `scripts/test`
/// skips it by name.
#[test]
#[ignore = "needs `rustup target add aarch64-unknown-linux-gnu aarch64-apple-darwin`"]
fn release_script_cross_builds_wheels_that_work_on_linux_aarch64_and_macos_arm64() {
    let wheels = build_wheels("cross", &["linux-aarch64", "macos-arm64"]);
    let names: Vec<String> = wheels
        .iter()
        .map(|wheel| {
            wheel
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(
        names,
        [
            format!("crosswheel-{VERSION}-py3-none-macosx_11_0_arm64.whl"),
            format!(
                "crosswheel-{VERSION}-py3-none-manylinux_2_17_aarch64.manylinux2014_aarch64.whl"
            ),
        ]
    );
    let (macos, aarch64) = (&wheels[0], &wheels[1]);
    for wheel in &wheels {
        run(Command::new(common::crosswheel_bin())
            .arg("check")
            .arg(wheel));
    }

    let logs = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
    let tested = run(Command::new(common::crosswheel_bin())
        .arg("test")
        .arg(aarch64)
        .args(["--test-command", "crosswheel --version && python -m crosswheel --version && python -c 'import platform; print(platform.machine())'"])
        .current_dir(logs.path()));
    let stdout = String::from_utf8_lossy(&tested.stdout);
    assert!(
        stdout
            .lines()
            .any(|line| line.starts_with("passed (emulated")),
        "{stdout}"
    );
    // The test command's output is on stdout, before the verdict.
    let version_lines = stdout
        .lines()
        .filter(|line| *line == format!("crosswheel {VERSION}"))
        .count();
    assert_eq!(
        version_lines, 2,
        "the command and the module each print the version:\n{stdout}"
    );
    assert!(stdout.lines().any(|line| line == "aarch64"), "{stdout}");

    let report: Value = serde_json::from_slice(
        &run(Command::new(common::crosswheel_bin())
            .args(["inspect", "--json"])
            .arg(macos))
        .stdout,
    )
    .unwrap_or_else(|error| panic!("inspect --json: {error}"));
    let text = report.to_string();
    assert!(
        text.contains(&format!("crosswheel-{VERSION}.data/scripts/crosswheel")),
        "{text}"
    );
    assert!(
        text.contains("\"arm64\""),
        "not an arm64 executable: {text}"
    );
    let checked = stdout_of(
        Command::new(common::crosswheel_bin())
            .arg("test")
            .arg(macos)
            .args(["--test-command", "crosswheel --version"])
            .current_dir(logs.path()),
    );
    assert!(
        checked.starts_with("static check (not executed)"),
        "{checked}"
    );
}

// --- action.yml and examples/workflows/wheels.yml ---

/// A YAML document as JSON, read by PyYAML (no YAML crate is a dependency).
fn load_yaml(path: &str) -> Value {
    let program = "import json, sys, yaml\n\
                   with open(sys.argv[1], encoding='utf-8') as f:\n    \
                   json.dump(yaml.safe_load(f), sys.stdout)";
    let output = Command::new("python3")
        .args(["-c", program])
        .arg(repo(path))
        .output()
        .unwrap_or_else(|error| {
            panic!("this test needs python3 (apt-get install python3): {error}")
        });
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("No module named 'yaml'"),
        "this test needs PyYAML: python3 -m pip install pyyaml"
    );
    assert!(
        output.status.success(),
        "{path} is not valid YAML: {stderr}"
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| panic!("{path}: {error}"))
}

fn action_inputs(action: &Value) -> BTreeSet<String> {
    action["inputs"]
        .as_object()
        .map(|inputs| inputs.keys().cloned().collect())
        .unwrap_or_default()
}

fn steps(value: &Value) -> &[Value] {
    value["steps"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

#[test]
#[ignore = "needs python3 and PyYAML: scripts/test sets them up"]
fn action_is_composite_and_its_inputs_are_documented() {
    let action = load_yaml("action.yml");
    assert_eq!(action["runs"]["using"], "composite");
    let inputs = action_inputs(&action);
    for required in [
        "package-dir",
        "output-dir",
        "config-file",
        "only",
        "targets",
        "crosswheel-version",
        "crosswheel-from",
    ] {
        assert!(
            inputs.contains(required),
            "action.yml has no input `{required}`"
        );
    }
    assert_eq!(action["inputs"]["package-dir"]["default"], ".");
    assert_eq!(action["inputs"]["output-dir"]["default"], "wheelhouse");

    let docs = std::fs::read_to_string(repo("docs/github-actions.md"))
        .unwrap_or_else(|error| panic!("{error}"));
    for input in &inputs {
        assert!(
            docs.contains(&format!("| `{input}` |")),
            "docs/github-actions.md does not document input `{input}`"
        );
    }
}

#[test]
#[ignore = "needs python3 and PyYAML: scripts/test sets them up"]
fn action_scripts_read_inputs_from_the_environment_never_by_substitution() {
    let action = load_yaml("action.yml");
    for step in steps(&action["runs"]) {
        if let Some(script) = step["run"].as_str() {
            // `${{ }}` inside a script is pasted into the shell text: a matrix value or
            // branch name could inject commands.
            assert!(
                !script.contains("${{"),
                "step `{}` expands an expression in its script",
                step["name"]
            );
        }
    }
}

#[test]
#[ignore = "needs python3 and PyYAML: scripts/test sets them up"]
fn action_build_step_selects_what_its_inputs_say() {
    let action = load_yaml("action.yml");
    let build = steps(&action["runs"])
        .iter()
        .find(|step| step["id"] == "build")
        .unwrap_or_else(|| panic!("action.yml has no step with id `build`"));
    for (variable, input) in [
        ("PACKAGE_DIR", "package-dir"),
        ("OUTPUT_DIR", "output-dir"),
        ("CONFIG_FILE", "config-file"),
        ("ONLY", "only"),
        ("TARGETS", "targets"),
    ] {
        assert_eq!(
            build["env"][variable],
            format!("${{{{ inputs.{input} }}}}"),
            "build step env {variable}"
        );
    }
    let script = build["run"]
        .as_str()
        .unwrap_or_else(|| panic!("the build step has no script"));

    // The real crosswheel behind the script, made to list its selection instead of building.
    let shim_dir = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
    let shim = shim_dir.path().join("crosswheel");
    std::fs::write(
        &shim,
        format!(
            "#!/bin/sh\nexec '{}' \"$@\" --print-build-identifiers\n",
            common::crosswheel_bin().display()
        ),
    )
    .unwrap_or_else(|error| panic!("{error}"));
    std::fs::set_permissions(&shim, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .unwrap_or_else(|error| panic!("{error}"));
    let path = format!(
        "{}:{}",
        shim_dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );

    let select = |only: &str, targets: &str| -> (Vec<String>, String) {
        let github_output = shim_dir.path().join("github-output");
        let listed = stdout_of(
            Command::new("bash")
                .args(["-c", script])
                .current_dir(REPO)
                .env("PATH", &path)
                .env("GITHUB_OUTPUT", &github_output)
                .env("PACKAGE_DIR", "examples/blasdot")
                .env("OUTPUT_DIR", "wheelhouse")
                .env("CONFIG_FILE", "")
                .env("ONLY", only)
                .env("TARGETS", targets),
        );
        let outputs = std::fs::read_to_string(&github_output).unwrap_or_default();
        let _ = std::fs::remove_file(&github_output);
        (listed.lines().map(str::to_owned).collect(), outputs)
    };

    let (listed, outputs) = select("cp311-manylinux_ppc64le", "");
    assert_eq!(listed, ["cp311-manylinux_ppc64le"]);
    assert_eq!(outputs, "output-dir=wheelhouse\n");
    let (mut listed, _) = select("", "manylinux_aarch64 arm64");
    listed.sort();
    assert_eq!(listed, ["cp311-macosx_arm64", "cp311-manylinux_aarch64"]);
}

fn workflow() -> Value {
    load_yaml("examples/workflows/wheels.yml")
}

/// Every `<prefix>.<name>` reference in a job (any depth, any string).
fn references(job: &Value, prefix: &str) -> BTreeSet<String> {
    let text = job.to_string();
    let mut found = BTreeSet::new();
    for (start, _) in text.match_indices(prefix) {
        let name: String = text[start + prefix.len()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_' || *c == '.')
            .collect();
        if !name.is_empty() {
            found.insert(name);
        }
    }
    found
}

#[test]
#[ignore = "needs python3 and PyYAML: scripts/test sets them up"]
fn example_workflow_matrix_keys_exist_in_crosswheel_matrix_output() {
    let workflow = workflow();
    for (job, kind) in [("build", "build"), ("test", "test")] {
        let job_value = &workflow["jobs"][job];
        assert_eq!(
            job_value["strategy"]["matrix"],
            format!("${{{{ fromJSON(needs.plan.outputs.{kind}) }}}}"),
            "job `{job}` must fan out over `crosswheel matrix --jobs {kind}`"
        );
        // blasdot builds for every target and tests its macOS wheel, so both matrices
        // have entries whose keys the jobs must find.
        let matrix: Value = serde_json::from_str(&stdout_of(
            Command::new(common::crosswheel_bin())
                .args(["matrix", "examples/blasdot", "--jobs", kind])
                .current_dir(REPO),
        ))
        .unwrap_or_else(|error| panic!("crosswheel matrix printed invalid JSON: {error}"));
        let entries = matrix["include"].as_array().cloned().unwrap_or_default();
        assert!(
            !entries.is_empty(),
            "crosswheel matrix --jobs {kind} printed no entries for examples/blasdot"
        );
        for key in references(job_value, "matrix.") {
            for entry in &entries {
                assert!(
                    entry.get(&key).is_some(),
                    "job `{job}` uses `matrix.{key}`, which `crosswheel matrix` does not print: {entry}"
                );
            }
        }
    }
}

#[test]
#[ignore = "needs python3 and PyYAML: scripts/test sets them up"]
fn example_workflow_jobs_need_the_outputs_they_read() {
    let workflow = workflow();
    let jobs = workflow["jobs"]
        .as_object()
        .unwrap_or_else(|| panic!("the workflow has no jobs"));
    for (name, job) in jobs {
        let needs: BTreeSet<String> = match &job["needs"] {
            Value::String(one) => BTreeSet::from([one.clone()]),
            Value::Array(many) => many
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => BTreeSet::new(),
        };
        for need in &needs {
            assert!(
                jobs.contains_key(need),
                "job `{name}` needs `{need}`, which does not exist"
            );
        }
        for reference in references(job, "needs.") {
            let mut parts = reference.splitn(3, '.');
            let (Some(other), Some(kind)) = (parts.next(), parts.next()) else {
                continue;
            };
            assert!(
                needs.contains(other),
                "job `{name}` reads `needs.{reference}` without needing `{other}`"
            );
            if kind == "outputs" {
                let output = parts.next().unwrap_or_default();
                let declared = jobs.get(other).and_then(|job| job["outputs"].get(output));
                assert!(
                    declared.is_some(),
                    "job `{name}` reads output `{output}`, which job `{other}` does not declare"
                );
            }
        }
    }
    let plan = jobs["plan"].to_string();
    assert!(
        plan.contains("crosswheel matrix --jobs build")
            && plan.contains("crosswheel matrix --jobs test"),
        "{plan}"
    );
    assert_eq!(jobs["test"]["runs-on"], "${{ matrix.test-on }}");
    let publish: Vec<&str> = steps(&jobs["publish"])
        .iter()
        .filter_map(|step| step["run"].as_str())
        .collect();
    let check = publish
        .iter()
        .position(|run| run.starts_with("crosswheel check"));
    let upload = publish
        .iter()
        .position(|run| run.starts_with("crosswheel upload"));
    assert!(
        matches!((check, upload), (Some(check), Some(upload)) if check < upload),
        "publish must run `crosswheel check` before `crosswheel upload`: {publish:?}"
    );
    let publish_job = &jobs["publish"];
    assert_eq!(
        publish_job["permissions"]["id-token"], "write",
        "publish must be able to get the OIDC token Trusted Publishing trades"
    );
    assert!(
        publish[upload.unwrap()].contains("--trusted-publishing"),
        "publish must upload with Trusted Publishing: {publish:?}"
    );
    assert!(
        !publish_job.to_string().contains("${{ secrets."),
        "publish must store no token: Trusted Publishing needs none"
    );
}

#[test]
#[ignore = "needs python3 and PyYAML: scripts/test sets them up"]
fn example_workflow_passes_only_inputs_the_action_declares() {
    let inputs = action_inputs(&load_yaml("action.yml"));
    let workflow = workflow();
    let mut uses_action = false;
    for job in workflow["jobs"]
        .as_object()
        .into_iter()
        .flat_map(|jobs| jobs.values())
    {
        for step in steps(job) {
            if step["uses"]
                .as_str()
                .is_some_and(|uses| uses.contains("/crosswheel@"))
            {
                uses_action = true;
                for key in step["with"]
                    .as_object()
                    .into_iter()
                    .flat_map(|with| with.keys())
                {
                    assert!(
                        inputs.contains(key),
                        "the workflow passes `{key}`, which action.yml does not declare"
                    );
                }
            }
        }
    }
    assert!(
        uses_action,
        "the example workflow never uses the crosswheel action"
    );
}
