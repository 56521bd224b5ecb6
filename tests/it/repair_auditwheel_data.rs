//! crosswheel's Linux repair against auditwheel's bundled wheels: every case of
//! tests/data/peers/auditwheel.toml runs `crosswheel repair --plat auto` on one wheel
//! of `tests/bundled-wheels` (read from auditwheel's pinned sdist) and must reach the
//! policy verdict auditwheel's own tests assert, or what docs/repair.md says crosswheel
//! does instead and why.

use crate::common;

use std::collections::BTreeMap;
use std::process::Command;

use serde::Deserialize;

use crosswheel::formats::elf::facts::{ElfFacts, is_elf};

const TABLE: &str = include_str!("../data/peers/auditwheel.toml");
const SDIST: &str = "auditwheel-6.8.2.tar.gz";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    case: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    id: String,
    #[allow(dead_code)]
    source: String,
    wheel: String,
    #[serde(default)]
    lib_paths: Vec<String>,
    #[serde(default)]
    args: Vec<String>,
    auditwheel: Outcome,
    differs: Option<String>,
    crosswheel: Option<Outcome>,
    says: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Outcome {
    result: String,
    policy: Option<String>,
    #[serde(default)]
    dropped: Vec<String>,
}

#[derive(Debug)]
struct Observed {
    ok: bool,
    tags: Vec<String>,
    needed: Vec<String>,
    stderr: String,
}

impl Observed {
    fn matches(&self, expected: &Outcome) -> bool {
        let result = if self.ok { "ok" } else { "error" };
        result == expected.result
            && (!self.ok
                || (expected
                    .policy
                    .as_ref()
                    .is_none_or(|policy| self.tags.first() == Some(policy))
                    && expected
                        .dropped
                        .iter()
                        .all(|name| !self.needed.contains(name))))
    }

    fn describe(&self) -> String {
        if self.ok {
            format!("ok {:?}", self.tags)
        } else {
            format!("error: {}", self.stderr.trim())
        }
    }
}

fn run(case: &Case, data: &BTreeMap<String, Vec<u8>>) -> Observed {
    let dir = tempfile::tempdir().expect("temporary folder");
    let member = |name: &str| {
        data.get(name)
            .unwrap_or_else(|| panic!("{}: auditwheel's tests have no {name}", case.id))
    };
    let file_name = case.wheel.rsplit('/').next().expect("file name");
    let wheel = dir.path().join(file_name);
    std::fs::write(&wheel, member(&format!("bundled-wheels/{}", case.wheel))).expect("write");
    let mut command = Command::new(common::crosswheel_under_test());
    command
        .arg("repair")
        .arg(&wheel)
        .arg("-w")
        .arg(dir.path().join("out"))
        .args(&case.args);
    for folder in &case.lib_paths {
        let target = dir.path().join(folder);
        std::fs::create_dir_all(&target).expect("create lib path");
        let prefix = format!("{folder}/");
        for (name, bytes) in data.iter().filter(|(name, _)| name.starts_with(&prefix)) {
            if !name[prefix.len()..].contains('/') {
                std::fs::write(dir.path().join(name), bytes).expect("write library");
            }
        }
        command.arg("--lib-path").arg(&target);
    }
    let output = command
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("RUST_LOG")
        .output()
        .expect("run crosswheel");
    let mut observed = Observed {
        ok: output.status.success(),
        tags: Vec::new(),
        needed: Vec::new(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    if observed.ok {
        let stdout = String::from_utf8_lossy(&output.stdout);
        let repaired = std::path::PathBuf::from(stdout.lines().last().expect("repaired path"));
        let name = repaired.file_name().expect("name").to_string_lossy();
        let platform = name
            .trim_end_matches(".whl")
            .rsplit('-')
            .next()
            .expect("tag");
        // The PEP 600 (or PEP 656) name first, whatever order the file name lists aliases in.
        let mut tags: Vec<String> = platform.split('.').map(str::to_string).collect();
        tags.sort_by_key(|tag| !(tag.starts_with("manylinux_") || tag.starts_with("musllinux_")));
        observed.tags = tags;
        let mut archive = zip::ZipArchive::new(std::fs::File::open(&repaired).expect("open"))
            .expect("a zip archive");
        for index in 0..archive.len() {
            let mut entry = archive.by_index(index).expect("entry");
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut entry, &mut bytes).expect("read entry");
            if is_elf(&bytes) {
                let facts = ElfFacts::parse(&bytes).expect("the repaired ELF parses");
                observed.needed.extend(facts.needed);
            }
        }
    }
    observed
}

/// Every verdict agrees with auditwheel's, or differs on purpose as the docs say.
#[test]
#[ignore = "slow: Debian's system libraries for the symbol check (a download on first use)"]
fn repairs_agree_with_auditwheels_bundled_wheels() {
    let table: Table = toml::from_str(TABLE).expect("tests/data/peers/auditwheel.toml parses");
    let data = common::sdist_members(SDIST, "tests");
    let cases = table.case.iter().map(|case| {
        let observed = run(case, &data);
        common::PeerCase {
            id: case.id.clone(),
            says: case.says.clone(),
            differs: case.differs.clone(),
            peer_outcome: format!("{:?}", case.auditwheel),
            agrees: observed.matches(&case.auditwheel),
            as_documented: case
                .crosswheel
                .as_ref()
                .is_some_and(|expected| observed.matches(expected)),
            observed: observed.describe(),
            stderr: observed.stderr,
        }
    });
    common::assert_agrees_with_peer(
        "auditwheel",
        "auditwheel's bundled wheels",
        "verdicts",
        cases,
    );
}
