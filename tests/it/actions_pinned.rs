//! Every `uses:` in the repository's action and workflows pins a third-party action by
//! full commit SHA (a tag can be moved to other code; a commit cannot), with the version
//! in a comment. crosswheel's own action in the examples names the placeholder
//! `RELEASE_COMMIT_SHA`, which users replace with the commit of the release they choose;
//! never a tag. The attestation signer the workflows install is pinned by hash.

use std::path::{Path, PathBuf};
use std::process::Command;

/// crosswheel itself, as the documentation tells users to reference it.
const OWN_ACTION: &str = "OWNER/crosswheel@";

/// What the examples write where the user puts the commit of their crosswheel release.
const OWN_COMMIT_PLACEHOLDER: &str = "RELEASE_COMMIT_SHA";

/// The requirements the publish job installs `pypi_attestations` from.
const ATTEST_REQUIREMENTS: &str = "examples/workflows/attest-requirements.txt";

fn files_with_workflows() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("action.yml")];
    for dir in ["docs", "examples", ".github"] {
        for entry in walkdir::WalkDir::new(root.join(dir)).into_iter().flatten() {
            let path = entry.path();
            let is_text = path
                .extension()
                .is_some_and(|ext| ext == "yml" || ext == "yaml" || ext == "md");
            if entry.file_type().is_file() && is_text {
                files.push(path.to_path_buf());
            }
        }
    }
    files
}

/// The problem with one `uses:` value, if any.
fn problem(value: &str) -> Option<String> {
    let (reference, comment) = match value.split_once('#') {
        Some((reference, comment)) => (reference.trim(), Some(comment.trim())),
        None => (value.trim(), None),
    };
    let reference = reference.trim_matches(['"', '\'']);
    if reference.starts_with("./") || reference.starts_with("docker://") {
        return None;
    }
    let Some((_, version)) = reference.rsplit_once('@') else {
        return Some(format!("`{reference}` names no version at all"));
    };
    let is_own_placeholder = reference.starts_with(OWN_ACTION) && version == OWN_COMMIT_PLACEHOLDER;
    let is_sha = is_own_placeholder
        || (version.len() == 40 && version.bytes().all(|b| b.is_ascii_hexdigit()));
    if !is_sha {
        return Some(format!(
            "`{reference}` is pinned by the tag or branch `{version}`; pin the full commit SHA with the version in a comment"
        ));
    }
    match comment {
        Some(comment) if comment.starts_with('v') => None,
        _ => Some(format!(
            "`{reference}` has no `# vX.Y.Z` comment saying which release it is"
        )),
    }
}

#[test]
fn every_third_party_action_is_pinned_by_commit() {
    let mut problems = Vec::new();
    let mut seen = 0;
    for file in files_with_workflows() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in text.lines().enumerate() {
            // A YAML key (`uses:` or `- uses:`), not prose that mentions one.
            let key = line.trim_start().trim_start_matches("- ");
            let Some(value) = key.strip_prefix("uses:") else {
                continue;
            };
            seen += 1;
            if let Some(problem) = problem(value) {
                problems.push(format!("{}:{}: {problem}", file.display(), number + 1));
            }
        }
    }
    assert!(
        seen >= 10,
        "found only {seen} `uses:` lines: is the walk broken?"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_check_refuses_tags_and_accepts_commits() {
    assert!(problem(" actions/checkout@v4").is_some());
    assert!(problem(" actions/checkout@main").is_some());
    assert!(problem(" actions/checkout@11d5960a326750d5838078e36cf38b85af677262").is_some());
    assert_eq!(
        problem(" actions/checkout@11d5960a326750d5838078e36cf38b85af677262 # v4.4.0"),
        None
    );
    assert_eq!(problem(" ./local-action"), None);
}

#[test]
fn crosswheels_own_action_is_pinned_by_commit_too() {
    assert!(problem(" OWNER/crosswheel@v0.1.0").is_some());
    assert!(problem(" OWNER/crosswheel@RELEASE_COMMIT_SHA").is_some());
    assert_eq!(
        problem(" OWNER/crosswheel@RELEASE_COMMIT_SHA # v0.1.0"),
        None
    );
    assert!(problem(" someone/else@RELEASE_COMMIT_SHA # v0.1.0").is_some());
}

/// Every requirement of a pip requirements file with the `--hash` lines that follow it:
/// `(requirement, number of hashes)`.
fn requirements_and_hashes(text: &str) -> Vec<(String, usize)> {
    let mut entries: Vec<(String, usize)> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(hash) = line.strip_prefix("--hash=") {
            let entry = entries
                .last_mut()
                .expect("a --hash line before any requirement");
            assert!(hash.starts_with("sha256:"), "not a SHA-256: {line}");
            entry.1 += 1;
        } else {
            let requirement = line.trim_end_matches('\\').trim();
            entries.push((requirement.to_string(), 0));
        }
    }
    entries
}

#[test]
fn the_attestation_signer_and_everything_it_imports_are_pinned_by_hash() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join(ATTEST_REQUIREMENTS)).unwrap();
    let entries = requirements_and_hashes(&text);
    assert!(
        entries
            .iter()
            .any(|(r, _)| r == "pypi-attestations==0.0.30"),
        "{ATTEST_REQUIREMENTS} does not pin pypi-attestations: {entries:?}"
    );
    assert!(
        entries.len() > 10,
        "only {entries:?}: its dependencies are missing"
    );
    for (requirement, hashes) in &entries {
        let name_and_version = requirement.split(';').next().unwrap().trim();
        assert!(
            name_and_version.contains("=="),
            "{requirement} is not pinned to one version"
        );
        assert!(*hashes > 0, "{requirement} has no --hash");
    }
}

#[test]
fn every_install_of_the_signer_checks_hashes() {
    let mut installs = 0;
    for file in files_with_workflows() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in text.lines().enumerate() {
            let installs_the_signer = line.contains("pip install")
                && (line.contains("attest") || line.contains("sigstore"));
            if !installs_the_signer {
                continue;
            }
            installs += 1;
            assert!(
                line.contains("--require-hashes -r") && line.contains("attest-requirements.txt"),
                "{}:{}: installs the attestation signer without hashes: {line}",
                file.display(),
                number + 1
            );
        }
    }
    assert!(
        installs >= 2,
        "found {installs} installs of the signer: is the walk broken?"
    );
}

#[test]
#[ignore = "slow: installs pypi-attestations and its dependencies from the package index"]
fn the_pinned_signer_installs_in_hash_checking_mode_and_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let venv = tempfile::tempdir().unwrap();
    let created = Command::new("python3")
        .args(["-m", "venv"])
        .arg(venv.path())
        .status()
        .expect("python3 must be on PATH");
    assert!(created.success(), "python3 -m venv failed");
    let python = venv.path().join("bin/python");
    let install = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args(["--require-hashes", "-r"])
        .arg(root.join(ATTEST_REQUIREMENTS))
        .output()
        .unwrap();
    assert!(
        install.status.success(),
        "pip install --require-hashes failed:\n{}",
        String::from_utf8_lossy(&install.stderr)
    );
    let help = Command::new(&python)
        .args(["-m", "pypi_attestations", "sign", "--help"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.status.success() && text.contains("The file to sign"),
        "the signer's CLI did not run: {text}{}",
        String::from_utf8_lossy(&help.stderr)
    );
}
