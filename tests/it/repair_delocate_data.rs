//! crosswheel's macOS repair against delocate's own test data: every case of
//! tests/data/peers/delocate.toml rebuilds the input a delocate test builds from
//! `delocate/tests/data` (read from delocate's pinned sdist), runs `crosswheel repair`
//! and must reach what delocate reaches, or what docs/repair.md says crosswheel does
//! instead and why.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde::Deserialize;

use crosswheel::analysis::facts::macos::wheel_binaries;
use crosswheel::formats::macho::{LoadCommandEdit, edit_load_commands};
use crosswheel::formats::wheel::WheelArchive;

const TABLE: &str = include_str!("../data/peers/delocate.toml");
const SDIST: &str = "delocate-0.13.0.tar.gz";

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
    name: Option<String>,
    #[serde(default)]
    host_libs: Vec<String>,
    #[serde(default)]
    link: Vec<Relink>,
    #[serde(default)]
    add: Vec<Add>,
    #[serde(default, rename = "move")]
    moves: Vec<Move>,
    #[serde(default)]
    thin: Vec<Thin>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    delocate: Outcome,
    differs: Option<String>,
    crosswheel: Option<Outcome>,
    says: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Relink {
    file: String,
    from: String,
    to: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Add {
    data: String,
    path: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Move {
    from: String,
    to: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Thin {
    file: String,
    arch: String,
}

/// What a repair reached; the fields left out of a table entry are not compared.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Outcome {
    result: String,
    tag: Option<String>,
    vendored: Option<Vec<String>>,
    #[serde(default)]
    ids: BTreeMap<String, String>,
    #[serde(default)]
    rpaths_gone: Vec<String>,
}

/// What one crosswheel run did.
#[derive(Debug)]
struct Observed {
    ok: bool,
    tag: String,
    vendored: BTreeSet<String>,
    ids: BTreeMap<String, String>,
    rpaths: BTreeSet<String>,
    stderr: String,
}

impl Observed {
    fn matches(&self, expected: &Outcome) -> bool {
        let result = if self.ok { "ok" } else { "error" };
        if result != expected.result {
            return false;
        }
        if !self.ok {
            return true;
        }
        let vendored_ok = expected
            .vendored
            .as_ref()
            .is_none_or(|files| files.iter().cloned().collect::<BTreeSet<_>>() == self.vendored);
        expected.tag.as_ref().is_none_or(|tag| *tag == self.tag)
            && vendored_ok
            && expected
                .ids
                .iter()
                .all(|(file, id)| self.ids.get(file) == Some(id))
            && expected
                .rpaths_gone
                .iter()
                .all(|rpath| !self.rpaths.contains(rpath))
    }

    fn describe(&self) -> String {
        if self.ok {
            format!(
                "ok {} vendored {:?} rpaths {:?}",
                self.tag, self.vendored, self.rpaths
            )
        } else {
            format!("error: {}", self.stderr.trim())
        }
    }
}

/// `lipo -thin`: the one slice of `arch` of a universal file.
fn thin(data: &[u8], arch: &str) -> Vec<u8> {
    let wanted: u32 = match arch {
        "x86_64" => 0x0100_0007,
        "arm64" => 0x0100_000c,
        other => panic!("no CPU type for {other}"),
    };
    let word = |at: usize| u32::from_be_bytes(data[at..at + 4].try_into().expect("4 bytes"));
    assert_eq!(word(0), 0xcafe_babe, "not a universal (fat) Mach-O file");
    (0..word(4) as usize)
        .map(|index| 8 + index * 20)
        .find(|&at| word(at) == wanted)
        .map(|at| data[word(at + 8) as usize..][..word(at + 12) as usize].to_vec())
        .unwrap_or_else(|| panic!("no {arch} slice"))
}

fn read_wheel(path: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(path).expect("open wheel"))
        .expect("a zip archive");
    let mut files = BTreeMap::new();
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).expect("zip entry");
        if entry.is_file() {
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut entry, &mut data).expect("read entry");
            files.insert(entry.name().expect("entry name").to_string(), data);
        }
    }
    files
}

/// Builds the case's input in `dir` (with its `libs/`) and returns the wheel's path.
fn prepare(case: &Case, data: &BTreeMap<String, Vec<u8>>, dir: &Path) -> std::path::PathBuf {
    let member = |name: &str| {
        data.get(name)
            .unwrap_or_else(|| panic!("{}: delocate's data has no {name}", case.id))
            .clone()
    };
    let libs = dir.join("libs");
    std::fs::create_dir_all(&libs).expect("create libs/");
    for lib in &case.host_libs {
        std::fs::write(libs.join(lib), member(lib)).expect("write host library");
    }
    let original = dir.join("original.whl");
    std::fs::write(&original, member(&case.wheel)).expect("write wheel");
    let mut files = read_wheel(&original);
    files.retain(|name, _| !name.ends_with(".dist-info/RECORD"));
    for relink in &case.link {
        let to = libs.join(&relink.to).display().to_string();
        let edit = LoadCommandEdit::ChangeDependency {
            from: relink.from.clone(),
            to,
        };
        let file = files.get_mut(&relink.file).expect("file to relink");
        *file = edit_load_commands(file, &[edit]).expect("relink");
    }
    for add in &case.add {
        files.insert(add.path.clone(), member(&add.data));
    }
    for moved in &case.moves {
        let bytes = files.remove(&moved.from).expect("file to move");
        files.insert(moved.to.clone(), bytes);
    }
    for thinned in &case.thin {
        if let Some(lib) = thinned.file.strip_prefix("libs/") {
            let path = libs.join(lib);
            let bytes = std::fs::read(&path).expect("read host library");
            std::fs::write(&path, thin(&bytes, &thinned.arch)).expect("thin host library");
        } else {
            let file = files.get_mut(&thinned.file).expect("file to thin");
            *file = thin(file, &thinned.arch);
        }
    }
    std::fs::remove_file(&original).expect("remove the original");
    let name = case.name.as_deref().unwrap_or(&case.wheel);
    let entries: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(name, bytes)| (name.as_str(), bytes.as_slice()))
        .collect();
    common::make_wheel(dir, name, &entries)
}

fn run(case: &Case, data: &BTreeMap<String, Vec<u8>>) -> Observed {
    let dir = tempfile::tempdir().expect("temporary folder");
    let wheel = prepare(case, data, dir.path());
    let output = Command::new(common::crosswheel_under_test())
        .arg("repair")
        .arg(&wheel)
        .args(["-w", "out"])
        .args(&case.args)
        .current_dir(dir.path())
        .env_remove("MACOSX_DEPLOYMENT_TARGET")
        .env_remove("RUST_LOG")
        .envs(&case.env)
        .output()
        .expect("run crosswheel");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let mut observed = Observed {
        ok: output.status.success(),
        tag: String::new(),
        vendored: BTreeSet::new(),
        ids: BTreeMap::new(),
        rpaths: BTreeSet::new(),
        stderr,
    };
    if !observed.ok {
        return observed;
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let repaired = dir
        .path()
        .join(stdout.lines().last().expect("the repaired wheel's path"));
    let file_name = repaired.file_name().expect("file name").to_string_lossy();
    observed.tag = file_name
        .trim_end_matches(".whl")
        .rsplit('-')
        .next()
        .expect("platform tag")
        .to_string();
    let before: BTreeSet<String> = read_wheel(&wheel).into_keys().collect();
    observed.vendored = read_wheel(&repaired)
        .into_keys()
        .filter(|name| !before.contains(name) && !name.contains(".dist-info/"))
        .collect();
    let archive = WheelArchive::open(&repaired).expect("open the repaired wheel");
    for binary in wheel_binaries(&archive).expect("read the repaired binaries") {
        if let Some(id) = binary.install_id() {
            observed.ids.insert(binary.path.clone(), id.to_string());
        }
        observed.rpaths.extend(binary.rpaths());
    }
    observed
}

/// Every case agrees with delocate, or differs on purpose as the docs say.
#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn repairs_agree_with_delocates_test_data() {
    let table: Table = toml::from_str(TABLE).expect("tests/data/peers/delocate.toml parses");
    let data = common::sdist_members(SDIST, "delocate/tests/data");
    let cases = table.case.iter().map(|case| {
        let observed = run(case, &data);
        common::PeerCase {
            id: case.id.clone(),
            says: case.says.clone(),
            differs: case.differs.clone(),
            peer_outcome: format!("{:?}", case.delocate),
            agrees: observed.matches(&case.delocate),
            as_documented: case
                .crosswheel
                .as_ref()
                .is_some_and(|expected| observed.matches(expected)),
            observed: observed.describe(),
            stderr: observed.stderr,
        }
    });
    common::assert_agrees_with_peer("delocate", "delocate's test data", "cases", cases);
}
