//! What the tests built on the peers' own test data share: members of a pinned sdist,
//! the docs sections their documented differences name, and the binary they measure.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::{crosswheel_bin, fixture};

/// The regular files of a locked sdist (`tests/fixtures.lock`) whose path inside the
/// archive starts with `<sdist stem>/<folder>/`, by the path after that prefix: a peer
/// tool's test data, read straight from the verified archive.
pub fn sdist_members(sdist: &str, folder: &str) -> std::collections::BTreeMap<String, Vec<u8>> {
    let path = fixture(sdist);
    let stem = sdist
        .strip_suffix(".tar.gz")
        .expect("an sdist ends with .tar.gz");
    let prefix = format!("{stem}/{}/", folder.trim_matches('/'));
    let file = File::open(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut members = std::collections::BTreeMap::new();
    let entries = archive
        .entries()
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    for entry in entries {
        let mut entry = entry.unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        let name = entry
            .path()
            .expect("member path")
            .to_string_lossy()
            .into_owned();
        let Some(inner) = name.strip_prefix(&prefix) else {
            continue;
        };
        if entry.header().entry_type().is_file() && !inner.is_empty() {
            let mut data = Vec::new();
            entry
                .read_to_end(&mut data)
                .unwrap_or_else(|error| panic!("{}: {name}: {error}", path.display()));
            members.insert(inner.to_string(), data);
        }
    }
    assert!(
        !members.is_empty(),
        "{sdist} has no files under {prefix}: is the lock pinning the right release?"
    );
    members
}

/// Panics unless `reference` (`docs/repair.md#pure-wheels`) names a Markdown file of
/// the repository and one of its headings, by its GitHub anchor.
pub fn assert_docs_section(reference: &str) {
    let (file, anchor) = reference
        .split_once('#')
        .unwrap_or_else(|| panic!("`{reference}` is not `FILE#ANCHOR`"));
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{reference}: cannot read {}: {error}", path.display()));
    let anchors: Vec<String> = text
        .lines()
        .filter_map(|line| line.strip_prefix('#'))
        .map(|heading| {
            heading
                .trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
                .map(|c| if c == ' ' { '-' } else { c })
                .collect()
        })
        .collect();
    assert!(
        anchors.iter().any(|known| known == anchor),
        "{reference}: {file} has no heading with anchor `{anchor}` (it has {anchors:?})"
    );
}

/// The binary the peer-data tests run: `crosswheel_bin()`, or the one named by
/// `CROSSWHEEL_BIN_UNDER_TEST`, which measures another build on the same cases (how
/// the agreement counts before a change are taken).
pub fn crosswheel_under_test() -> PathBuf {
    std::env::var_os("CROSSWHEEL_BIN_UNDER_TEST")
        .map(PathBuf::from)
        .unwrap_or_else(crosswheel_bin)
}

/// One case of a peer's test data as crosswheel ran it, reduced to what
/// [`assert_agrees_with_peer`] judges.
pub struct PeerCase {
    pub id: String,
    /// What crosswheel must print (the case's `says`).
    pub says: Option<String>,
    /// The docs section (`docs/repair.md#...`) of a documented difference (`differs`).
    pub differs: Option<String>,
    /// What the peer reaches, as the table states it.
    pub peer_outcome: String,
    /// crosswheel reached the peer's outcome.
    pub agrees: bool,
    /// crosswheel reached the case's own `crosswheel` outcome.
    pub as_documented: bool,
    /// What crosswheel reached, for the failure message.
    pub observed: String,
    pub stderr: String,
}

/// Every case agrees with `peer` (`"auditwheel"`), or differs on purpose where the docs
/// section its `differs` names says so; a case that agrees again must drop `differs`.
/// Prints `{title}: N of M {noun} agree, K differ as documented`.
pub fn assert_agrees_with_peer(
    peer: &str,
    title: &str,
    noun: &str,
    cases: impl IntoIterator<Item = PeerCase>,
) {
    let mut count = 0;
    let mut agree = 0;
    let mut documented = 0;
    let mut problems = Vec::new();
    for case in cases {
        count += 1;
        if let Some(says) = &case.says
            && !case.stderr.contains(says.as_str())
        {
            problems.push(format!(
                "{}: crosswheel did not say `{says}`; it printed: {}",
                case.id,
                case.stderr.trim()
            ));
        }
        if case.agrees {
            agree += 1;
            if case.differs.is_some() {
                problems.push(format!(
                    "{}: agrees with {peer} now; drop `differs`",
                    case.id
                ));
            }
            continue;
        }
        match &case.differs {
            Some(section) if case.as_documented => {
                assert_docs_section(section);
                documented += 1;
            }
            _ => problems.push(format!(
                "{}: {peer} gives {}, crosswheel {}",
                case.id, case.peer_outcome, case.observed
            )),
        }
    }
    let summary =
        format!("{title}: {agree} of {count} {noun} agree, {documented} differ as documented");
    eprintln!("{summary}");
    assert!(problems.is_empty(), "{summary}\n{}", problems.join("\n"));
}
