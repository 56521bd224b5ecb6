//! The action installs only what it can verify. Its default `crosswheel-from` must not
//! install whatever the index serves under the name `crosswheel` (nothing today, and a
//! squatter's code if someone registers it): the default builds the action's own
//! checkout, and `pypi` installs the release pinned by hash in
//! packaging/action-requirements.txt, or refuses.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn action() -> String {
    std::fs::read_to_string(repo("action.yml")).unwrap()
}

/// The `default:` of one input, read from the YAML text (inputs are two spaces deep,
/// their keys four).
fn input_default(action: &str, input: &str) -> String {
    let mut lines = action
        .lines()
        .skip_while(|line| *line != format!("  {input}:"));
    lines
        .next()
        .unwrap_or_else(|| panic!("action.yml has no input `{input}`"));
    lines
        .take_while(|line| line.starts_with("    "))
        .find_map(|line| line.trim().strip_prefix("default:"))
        .map(|value| value.trim().trim_matches(['"', '\'']).to_owned())
        .unwrap_or_else(|| panic!("input `{input}` has no default"))
}

/// The `run: |` script of the step named `name`, dedented.
fn step_script(action: &str, name: &str) -> String {
    let mut lines = action
        .lines()
        .skip_while(|line| line.trim() != format!("- name: {name}"))
        .skip_while(|line| line.trim() != "run: |")
        .skip(1);
    let first = lines.next().expect("the step has no script");
    let indent = first.len() - first.trim_start().len();
    std::iter::once(first)
        .chain(lines.take_while(|line| {
            line.trim().is_empty() || line.len() - line.trim_start().len() >= indent
        }))
        .map(|line| line.get(indent..).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_default_installs_nothing_unverified_from_the_index() {
    let action = action();
    let default = input_default(&action, "crosswheel-from");
    let script = step_script(&action, "Install crosswheel");
    match default.as_str() {
        "source" => {}
        "pypi" => assert!(
            script.contains("--require-hashes"),
            "the default `crosswheel-from: pypi` installs without --require-hashes"
        ),
        other => panic!("unexpected default `crosswheel-from: {other}`"),
    }
    // Whatever the default, the `pypi` branch installs by hash from the pins file.
    assert!(
        script.contains("--require-hashes --no-deps -r \"$pins\""),
        "{script}"
    );
}

#[test]
fn every_pinned_release_names_its_version_and_hashes() {
    let pins = std::fs::read_to_string(repo("packaging/action-requirements.txt")).unwrap();
    for line in pins.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (requirement, hashes) = line.split_once(' ').unwrap_or((line, ""));
        assert!(requirement.starts_with("crosswheel=="), "{line}");
        assert!(
            hashes.contains("--hash=sha256:"),
            "`{line}` has no --hash=sha256:"
        );
    }
}

/// The inputs of the install step, as the action passes them in its environment.
struct InstallInputs<'a> {
    from: &'a str,
    version: &'a str,
    install_only: &'a str,
}

/// Runs the install step as the runner would, with the action checked out in
/// `action_dir` and `runner_temp` as `$RUNNER_TEMP`.
fn run_install_step(
    inputs: &InstallInputs<'_>,
    action_dir: &Path,
    runner_temp: &Path,
) -> std::process::Output {
    let script = step_script(&action(), "Install crosswheel");
    Command::new("bash")
        .arg("-c")
        .arg(&script)
        .env("CROSSWHEEL_FROM", inputs.from)
        .env("CROSSWHEEL_VERSION", inputs.version)
        .env("INSTALL_ONLY", inputs.install_only)
        .env("GITHUB_ACTION_PATH", action_dir)
        .env("RUNNER_TEMP", runner_temp)
        .env("GITHUB_PATH", runner_temp.join("path"))
        .output()
        .unwrap()
}

/// Runs the install step with `crosswheel-from: pypi`, the action checked out in
/// `action_dir`.
fn install_with_pypi(action_dir: &Path, version: &str) -> (bool, String) {
    let temp = tempfile::tempdir().unwrap();
    let inputs = InstallInputs {
        from: "pypi",
        version,
        install_only: "false",
    };
    let output = run_install_step(&inputs, action_dir, temp.path());
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    // The venv is made only after the checks pass: a refusal installs nothing.
    let installed = temp.path().join("crosswheel-venv").exists();
    assert!(
        output.status.success() || !installed,
        "a refused install made a venv:\n{text}"
    );
    (output.status.success(), text)
}

#[test]
fn pypi_without_a_pinned_release_refuses_in_one_line() {
    let (ok, text) = install_with_pypi(&repo(""), "");
    assert!(!ok);
    assert!(
        text.contains(
            "::error::crosswheel-from: pypi: this action's ref pins no crosswheel release"
        ) && text.contains("use crosswheel-from: source"),
        "{text}"
    );
}

#[test]
fn pypi_refuses_a_version_other_than_the_pinned_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("packaging")).unwrap();
    let hash = "0".repeat(64);
    std::fs::write(
        dir.path().join("packaging/action-requirements.txt"),
        format!("crosswheel==0.1.0 --hash=sha256:{hash}\n"),
    )
    .unwrap();
    let (ok, text) = install_with_pypi(dir.path(), "0.2.0");
    assert!(!ok);
    assert!(text.contains("verifies only crosswheel 0.1.0"), "{text}");
}

#[test]
fn source_refuses_a_version_other_than_the_checkouts() {
    let temp = tempfile::tempdir().unwrap();
    let inputs = InstallInputs {
        from: "source",
        version: "999.0.0",
        install_only: "false",
    };
    let output = run_install_step(&inputs, &repo(""), temp.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success());
    assert!(
        stdout.contains(&format!(
            "::error::crosswheel-version: 999.0.0, but this action's ref is crosswheel {}",
            env!("CARGO_PKG_VERSION")
        )),
        "{stdout}"
    );
    assert!(
        !temp.path().join("crosswheel-cargo").exists(),
        "it built anyway"
    );
}

#[test]
fn install_only_takes_true_or_false_and_nothing_else() {
    let temp = tempfile::tempdir().unwrap();
    let inputs = InstallInputs {
        from: "source",
        version: "",
        install_only: "yes",
    };
    let output = run_install_step(&inputs, &repo(""), temp.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success());
    assert!(
        stdout.contains("::error::install-only: 'yes' is neither true nor false"),
        "{stdout}"
    );
    assert!(
        !temp.path().join("crosswheel-cargo").exists(),
        "a refused input still installed crosswheel"
    );
}

#[test]
fn install_only_skips_the_build_step() {
    let action = action();
    let build = action
        .split("\n    - name: ")
        .find(|step| step.starts_with("Build wheels"))
        .expect("the action has a `Build wheels` step");
    assert!(
        build.contains("if: inputs.install-only != 'true'"),
        "the build step runs even with install-only: true:\n{build}"
    );
}
