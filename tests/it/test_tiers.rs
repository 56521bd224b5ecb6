//! The tiers of docs/testing.md, held by the code: every ignored test says why in one of
//! the two forms the docs explain (`slow: ...`, or `needs <what>: scripts/test sets it up`),
//! and each need a reason names is one the docs say how to get. Whether the fast tier really
//! needs nothing but Rust is `scripts/check-fast-tier`'s to check: it runs it as a fresh
//! clone would.

use std::collections::BTreeSet;
use std::path::Path;

use crate::common::sources;

/// The one test that the set-up does not provide for either; `scripts/test` skips it by name.
const MANUAL: &str = "needs `rustup target add aarch64-unknown-linux-gnu aarch64-apple-darwin`";

/// Every `#[ignore = "..."]` reason under `src/` and `tests/it/`, with the file it is in.
fn ignore_reasons() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    sources(&root.join("tests/it"), &mut files);
    let mut reasons = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let shown = file.strip_prefix(root).unwrap().display().to_string();
        for line in text.lines() {
            let line = line.trim();
            if line == "#[ignore]" {
                reasons.push((shown.clone(), String::new()));
            } else if let Some(rest) = line.strip_prefix("#[ignore = \"") {
                let reason = rest.strip_suffix("\"]").unwrap_or(rest);
                reasons.push((shown.clone(), reason.to_string()));
            }
        }
    }
    reasons
}

/// The needs of a `needs A and B: scripts/test sets them up` reason (`["A", "B"]`), or
/// none when the reason has another form.
fn needs_of(reason: &str) -> Option<Vec<&str>> {
    let rest = reason.strip_prefix("needs ")?;
    let needs = rest
        .strip_suffix(": scripts/test sets it up")
        .filter(|needs| !needs.contains(" and "))
        .or_else(|| {
            rest.strip_suffix(": scripts/test sets them up")
                .filter(|needs| needs.contains(" and "))
        })?;
    Some(needs.split(" and ").collect())
}

#[test]
fn every_ignored_test_is_slow_or_names_what_scripts_test_sets_up_for_it() {
    let reasons = ignore_reasons();
    assert!(
        reasons.len() > 100,
        "found only {} ignored tests",
        reasons.len()
    );
    let odd: Vec<String> = reasons
        .iter()
        .filter(|(_, reason)| {
            !(reason.starts_with("slow: ") || needs_of(reason).is_some() || reason == MANUAL)
        })
        .map(|(file, reason)| format!("{file}: #[ignore = \"{reason}\"]"))
        .collect();
    assert!(
        odd.is_empty(),
        "an ignored test says `slow: <what makes it slow>` or `needs <what>: scripts/test sets \
         it up` (`needs <a> and <b>: scripts/test sets them up`), as docs/testing.md explains:\n{}",
        odd.join("\n")
    );
}

#[test]
fn every_need_an_ignored_test_names_is_in_docs_testing_md() {
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/testing.md"))
            .unwrap();
    let reasons = ignore_reasons();
    let needs: BTreeSet<&str> = reasons
        .iter()
        .filter_map(|(_, reason)| needs_of(reason))
        .flatten()
        .collect();
    let missing: Vec<&str> = needs
        .into_iter()
        .filter(|need| !docs.contains(&format!("| {need} |")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/testing.md's table of needs lacks a row (`| <need> | ... |`) for: {}",
        missing.join(", ")
    );
}
