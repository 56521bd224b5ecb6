//! Test requirements that neither the index nor the target's Debian release has a target
//! wheel of are cross-built by crosswheel itself from their sdists (build and repair, no
//! tests), cached, and installed; what cannot be had that way leaves the tested wheel kept
//! apart with the reason, and every log path the run prints exists after it.
//! Needs zig, qemu-user, apt-get and network (the index and Debian's archive).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const IDENTIFIER: &str = "cp311-manylinux_ppc64le";

/// A setuptools project with one C extension whose tests need `requires` on ppc64le.
fn project(root: &Path, requires: &str, test_command: &str) -> PathBuf {
    let files = [(
        "tinyext/_core.c".to_string(),
        "#include <Python.h>\nstatic struct PyModuleDef m = {PyModuleDef_HEAD_INIT, \"_core\", 0, -1, 0};\nPyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&m); }\n".to_string(),
    )];
    let setup = "from setuptools import setup, Extension\nsetup(packages=['tinyext'], ext_modules=[Extension('tinyext._core', ['tinyext/_core.c'])])\n";
    let project = common::setuptools_project(root, "tinyext", setup, &files);
    let pyproject = project.join("pyproject.toml");
    let mut text = std::fs::read_to_string(&pyproject).unwrap();
    text.push_str(&format!(
        "\n[tool.crosswheel]\ntest-requires = [\"{requires}\"]\ntest-command = '''{test_command}'''\n"
    ));
    std::fs::write(&pyproject, text).unwrap();
    project
}

fn build(project: &Path, out: &Path, find_links: Option<&Path>) -> Output {
    let mut command = Command::new(common::crosswheel_bin());
    common::without_option_variables(&mut command);
    command
        .arg("build")
        .arg(project)
        .args(["--only", IDENTIFIER, "--output-dir"])
        .arg(out);
    if let Some(links) = find_links {
        command.env("PIP_FIND_LINKS", links);
    }
    command.output().expect("crosswheel runs")
}

fn text_of(output: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Every absolute path the run printed that names a log or a kept wheel's folder.
fn printed_log_paths(text: &str) -> Vec<PathBuf> {
    text.split_whitespace()
        .map(|word| word.trim_matches(|c: char| matches!(c, ';' | ',' | '(' | ')' | '`' | ':')))
        .filter(|word| word.starts_with('/'))
        .filter(|word| {
            word.ends_with(".log") || word.contains("/failed/") || word.contains("/logs/")
        })
        .map(PathBuf::from)
        .collect()
}

fn cache_root() -> PathBuf {
    crosswheel::support::host::Cache::from_env()
        .expect("a cache folder")
        .root()
        .to_path_buf()
}

/// Held by each test that clears and fills crc16's entry in the cache: tests run in
/// parallel, and one's "built here" must not be another's "cached here".
static CRC16_CACHE_ENTRY: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn crc16_cache_entry() -> std::sync::MutexGuard<'static, ()> {
    CRC16_CACHE_ENTRY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A folder for pip's find-links holding the pinned crc16 0.1.1 sdist: an sdist only (a C
/// extension), and Debian has no python3-crc16; the index's list honours find-links.
fn crc16_links() -> tempfile::TempDir {
    let links = tempfile::tempdir().unwrap();
    std::fs::copy(
        common::fixture("crc16-0.1.1.zip"),
        links.path().join("crc16-0.1.1.zip"),
    )
    .unwrap();
    links
}

#[test]
#[ignore = "slow: zig builds of the project and of crc16, qemu, Debian downloads"]
fn a_test_requirement_no_one_ships_for_ppc64le_is_cross_built_here_cached_and_named() {
    common::require_tool("apt-get", "run on a Debian or Ubuntu host");
    let _entry = crc16_cache_entry();
    let links = crc16_links();
    let key = cache_root().join("test-requirements/linux-ppc64le/cp311/crc16-0.1.1");
    let _ = std::fs::remove_dir_all(&key);
    let root = tempfile::tempdir().unwrap();
    let check = "python -c \"import platform, crc16._crc16 as c; assert platform.machine() == 'ppc64le'; assert c.__file__.endswith('.so'), c.__file__; print('crc16 extension', c.__file__)\"";
    let project = project(root.path(), "crc16==0.1.1", check);
    let out = tempfile::tempdir().unwrap();

    let started = std::time::Instant::now();
    let first = build(&project, out.path(), Some(links.path()));
    let first_text = text_of(&first);
    eprintln!(
        "[timing] build + crc16 built here + test, ppc64le: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(first.status.success(), "{first_text}");
    assert_eq!(common::wheel_names_in(out.path()).len(), 1, "{first_text}");
    let source = first_text
        .lines()
        .find(|line| {
            let line = line.trim_start();
            line.strip_prefix("INFO ")
                .unwrap_or(line)
                .starts_with("test requirement crc16==0.1.1:")
        })
        .unwrap_or_else(|| panic!("no source line for crc16:\n{first_text}"));
    assert!(
        source.contains("crc16 0.1.1 (built here from its sdist in"),
        "{source}"
    );
    assert!(
        !first_text.contains("retrying with pip under the target interpreter"),
        "crc16 must not be built under emulation:\n{first_text}"
    );
    let cached: Vec<String> = common::wheel_names_in(&key);
    assert_eq!(cached.len(), 1, "{cached:?}");
    assert!(
        cached[0].starts_with("crc16-0.1.1-cp311-cp311-manylinux_")
            && cached[0].ends_with("_ppc64le.whl"),
        "{cached:?}"
    );
    for path in printed_log_paths(&first_text) {
        assert!(
            path.exists(),
            "printed {} which does not exist",
            path.display()
        );
    }

    let out = tempfile::tempdir().unwrap();
    let second = build(&project, out.path(), Some(links.path()));
    let second_text = text_of(&second);
    assert!(second.status.success(), "{second_text}");
    assert!(
        second_text.contains("crc16 0.1.1 (cached here; its build took"),
        "the second run must take crc16 from the cache:\n{second_text}"
    );
}

#[test]
#[ignore = "slow: a zig build of the project, qemu, Debian downloads"]
fn a_wheel_that_could_not_be_tested_is_kept_with_the_reason_and_every_printed_log_exists() {
    common::require_tool("apt-get", "run on a Debian or Ubuntu host");
    let root = tempfile::tempdir().unwrap();
    let project = project(root.path(), "numpy>=99", "python -c 'import numpy'");
    let out = tempfile::tempdir().unwrap();
    let output = build(&project, out.path(), None);
    let text = text_of(&output);
    assert!(!output.status.success(), "{text}");
    let error = text
        .lines()
        .find(|line| line.contains(&format!("{IDENTIFIER}: not tested:")))
        .unwrap_or_else(|| panic!("no one-line error:\n{text}"));
    assert!(error.contains("the test requirement numpy>=99"), "{error}");
    assert!(error.contains("Debian bookworm has 1.24"), "{error}");
    assert!(
        error.contains("the index has no sdist of numpy that satisfies `numpy>=99`"),
        "the reason, from the index's list of files: {error}"
    );
    let kept = common::failed_folder(&text, IDENTIFIER);
    assert!(
        std::fs::read_dir(out.path()).map_or(true, |mut entries| entries.next().is_none()),
        "the output folder holds finished wheels only: {text}"
    );
    assert_eq!(
        common::wheel_names_in(&kept).len(),
        1,
        "the untested wheel is kept: {text}"
    );
    let reason = std::fs::read_to_string(kept.join("REASON.txt")).expect("REASON.txt");
    assert!(reason.contains("numpy>=99"), "{reason}");
    assert!(kept.join(format!("{IDENTIFIER}-build.log")).is_file());
    assert!(kept.join(format!("{IDENTIFIER}-test.log")).is_file());
    let printed = printed_log_paths(&text);
    assert!(!printed.is_empty(), "{text}");
    for path in printed {
        assert!(
            path.exists(),
            "printed {} which does not exist:\n{text}",
            path.display()
        );
    }
}

/// `crosswheel test` alone, on a wheel built earlier, cross-builds the test requirement the
/// index and Debian lack as a build's test stage does, and logs it beside its own logs.
#[test]
#[ignore = "slow: zig builds of the project and of crc16, qemu, Debian downloads"]
fn crosswheel_test_alone_cross_builds_a_test_requirement_no_one_ships() {
    common::require_tool("apt-get", "run on a Debian or Ubuntu host");
    let _entry = crc16_cache_entry();
    let links = crc16_links();
    let root = tempfile::tempdir().unwrap();
    let check =
        "python -c \"import platform, crc16._crc16; assert platform.machine() == 'ppc64le'\"";
    let project = project(root.path(), "crc16==0.1.1", check);
    let out = tempfile::tempdir().unwrap();
    let mut command = Command::new(common::crosswheel_bin());
    common::without_option_variables(&mut command);
    let built = command
        .arg("build")
        .arg(&project)
        .args(["--only", IDENTIFIER, "--output-dir"])
        .arg(out.path())
        .env("CIBW_TEST_SKIP", "*")
        .output()
        .expect("crosswheel runs");
    assert!(built.status.success(), "{}", text_of(&built));
    let wheels = common::wheel_names_in(out.path());
    assert_eq!(wheels.len(), 1, "{wheels:?}");

    let key = cache_root().join("test-requirements/linux-ppc64le/cp311/crc16-0.1.1");
    let _ = std::fs::remove_dir_all(&key);
    let work = tempfile::tempdir().unwrap();
    let mut command = Command::new(common::crosswheel_bin());
    common::without_option_variables(&mut command);
    let tested = command
        .arg("test")
        .arg(out.path().join(&wheels[0]))
        .args(["--test-requires", "crc16==0.1.1", "--test-command", check])
        .arg("--project")
        .arg(&project)
        .current_dir(work.path())
        .env("PIP_FIND_LINKS", links.path())
        .output()
        .expect("crosswheel runs");
    let text = text_of(&tested);
    assert!(tested.status.success(), "{text}");
    assert!(
        text.contains("crc16 0.1.1 (built here from its sdist in"),
        "{text}"
    );
    assert!(text.contains("passed (emulated"), "{text}");
    assert_eq!(common::wheel_names_in(&key).len(), 1, "{text}");
    for path in printed_log_paths(&text) {
        assert!(
            path.exists(),
            "printed {} which does not exist",
            path.display()
        );
    }
}
