//! Every `uses:` in the repository's action and workflows pins a third-party action by
//! full commit SHA (a tag can be moved to other code; a commit cannot), with the version
//! in a comment. The one exception is crosswheel's own action in the examples, which
//! users pin to the release they choose.

use std::path::{Path, PathBuf};

/// crosswheel itself, as the documentation tells users to reference it.
const OWN_ACTION: &str = "OWNER/crosswheel@";

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
    if reference.starts_with(OWN_ACTION) {
        return None;
    }
    let Some((_, version)) = reference.rsplit_once('@') else {
        return Some(format!("`{reference}` names no version at all"));
    };
    let is_sha = version.len() == 40 && version.bytes().all(|b| b.is_ascii_hexdigit());
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
