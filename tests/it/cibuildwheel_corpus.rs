//! Real `[tool.cibuildwheel]` sections of well-known projects (tests/data/cibuildwheel-corpus,
//! pinned by commit) plan builds unchanged: each file, as a project's pyproject.toml, gives
//! at least one build identifier under `crosswheel build --print-build-identifiers --json`,
//! says that it read `[tool.cibuildwheel]`, and names every option and platform table that
//! does not apply to cross builds in its one `ignored` line.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn corpus() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cibuildwheel-corpus");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", dir.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    files
}

/// The options cibuildwheel has that do not apply to cross builds, from the data file
/// (read here independently of crosswheel's own reading of it).
fn not_applicable() -> (BTreeSet<String>, Vec<String>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/cibuildwheel-options.toml");
    let data: toml::Table = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let options = data["option"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|option| option["handling"].as_str() == Some("not-applicable"))
        .map(|option| option["name"].as_str().unwrap().to_string())
        .collect();
    let foreign = ["windows", "pyodide", "ios", "android"]
        .into_iter()
        .map(String::from)
        .collect();
    (options, foreign)
}

/// What the `ignored` line must name for this configuration: every not-applicable key
/// anywhere in it, and every foreign platform table.
fn expected_ignored(table: &toml::Table) -> BTreeSet<String> {
    let (options, foreign) = not_applicable();
    let mut expected = BTreeSet::new();
    let mut scan = |table: &toml::Table| {
        for key in table.keys() {
            if options.contains(key) {
                expected.insert(key.clone());
            }
        }
        if let Some(toml::Value::Table(inherit)) = table.get("inherit") {
            for key in inherit.keys() {
                if options.contains(key) {
                    expected.insert(key.clone());
                }
            }
        }
    };
    scan(table);
    for platform in ["linux", "macos"] {
        if let Some(toml::Value::Table(inner)) = table.get(platform) {
            scan(inner);
        }
    }
    if let Some(toml::Value::Array(overrides)) = table.get("overrides") {
        for entry in overrides {
            if let toml::Value::Table(entry) = entry {
                scan(entry);
            }
        }
    }
    for name in foreign {
        if table.contains_key(&name) {
            expected.insert(format!("[{name}]"));
        }
    }
    expected
}

struct Planned {
    identifiers: Vec<String>,
    stderr: String,
}

fn plan(pyproject: &Path) -> Planned {
    let project = tempfile::tempdir().unwrap();
    std::fs::copy(pyproject, project.path().join("pyproject.toml")).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_crosswheel"));
    command
        .args(["build", "--print-build-identifiers", "--json"])
        .arg(project.path());
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("CIBW_") || name.starts_with("CROSSWHEEL_") {
            command.env_remove(name.as_ref());
        }
    }
    let output = command.output().expect("run crosswheel");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "{}: crosswheel failed: {stderr}",
        pyproject.display()
    );
    let json: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("{}: not JSON ({err}): {stderr}", pyproject.display()));
    let identifiers = json
        .as_array()
        .unwrap()
        .iter()
        .map(|build| build["identifier"].as_str().unwrap().to_string())
        .collect();
    Planned {
        identifiers,
        stderr,
    }
}

#[test]
fn every_corpus_configuration_plans_builds_unchanged() {
    let files = corpus();
    assert!(files.len() >= 15, "the corpus has {} files", files.len());
    for file in files {
        let name = file.display();
        let text = std::fs::read_to_string(&file).unwrap();
        let document: toml::Table = toml::from_str(&text).unwrap();
        let table = document["tool"]["cibuildwheel"].as_table().unwrap();
        let planned = plan(&file);
        assert!(
            !planned.identifiers.is_empty(),
            "{name}: no build planned: {}",
            planned.stderr
        );
        assert!(
            planned.stderr.contains(
                "reading [tool.cibuildwheel] of pyproject.toml (no [tool.crosswheel] table)"
            ),
            "{name}: {}",
            planned.stderr
        );
        let ignored_lines: Vec<&str> = planned
            .stderr
            .lines()
            .filter(|line| line.starts_with("ignored (does not apply to cross builds): "))
            .collect();
        let expected = expected_ignored(table);
        if expected.is_empty() {
            assert!(ignored_lines.is_empty(), "{name}: {ignored_lines:?}");
            continue;
        }
        assert_eq!(ignored_lines.len(), 1, "{name}: {}", planned.stderr);
        let said: BTreeSet<String> = ignored_lines[0]
            .trim_start_matches("ignored (does not apply to cross builds): ")
            .split(", ")
            .map(String::from)
            .collect();
        assert_eq!(said, expected, "{name}");
        // Nothing the corpus holds is an error or a "did you mean".
        assert!(
            !planned.stderr.contains("did you mean"),
            "{name}: {}",
            planned.stderr
        );
    }
}

#[test]
fn corpus_archs_and_enable_groups_crosswheel_does_not_build_are_said() {
    let corpus_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cibuildwheel-corpus");
    let websockets = plan(&corpus_dir.join("websockets.toml"));
    // Every Linux architecture websockets lists is a manylinux target now.
    assert!(
        !websockets.stderr.contains("not built here: manylinux_"),
        "{}",
        websockets.stderr
    );
    assert!(
        websockets
            .stderr
            .contains("not built: pypy (enable): crosswheel builds CPython wheels only"),
        "{}",
        websockets.stderr
    );
    // `enable = cpython-freethreading` adds 3.13's free-threaded build to 3.14's, which is
    // built by default, as cibuildwheel 3.x did.
    let iminuit = plan(&corpus_dir.join("iminuit.toml"));
    for identifier in ["cp313t-manylinux_aarch64", "cp314t-macosx_arm64"] {
        assert!(
            iminuit.identifiers.iter().any(|id| id == identifier),
            "{identifier}: {:?}",
            iminuit.identifiers
        );
    }
    assert!(
        !iminuit.stderr.contains("free-threaded"),
        "{}",
        iminuit.stderr
    );
    // memray's `cp3{9..15}{t,}-*` expands as bash's brace sequence does.
    let memray = plan(&corpus_dir.join("memray.toml"));
    assert!(
        memray
            .identifiers
            .iter()
            .any(|id| id == "cp310-manylinux_aarch64"),
        "{:?}",
        memray.identifiers
    );
}
