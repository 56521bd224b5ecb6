//! The fixture set itself: the first loud signal when `scripts/fetch-fixtures` was
//! skipped, and a guard against a lock line that does not say what it pins.

use crate::common;

use rayon::prelude::*;

use common::{fixture, fixtures_matching, locked_fixtures, require_tool, unzip_to};

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn every_locked_fixture_is_fetched_and_matches_its_sha256() {
    let fixtures = locked_fixtures();
    // Hashing ~150 MB is slow in a debug build: use every core.
    let problems: Vec<&str> = fixtures
        .par_iter()
        .filter_map(|locked| locked.verify().err())
        .collect();
    assert!(
        problems.is_empty(),
        "{} of {} locked fixtures are not usable:\n{}",
        problems.len(),
        fixtures.len(),
        problems.join("\n")
    );
}

/// The pin `name==version` in the pip arguments must be the wheel the file name
/// names, so a lock line cannot silently fetch another release.
#[test]
fn each_lock_line_pins_the_version_its_file_name_carries() {
    for locked in locked_fixtures() {
        let pins: Vec<&str> = locked
            .pip_args
            .iter()
            .copied()
            .filter(|arg| arg.contains("=="))
            .collect();
        let [pin] = pins.as_slice() else {
            panic!(
                "{}: expected exactly one `name==version` argument, got {pins:?}",
                locked.file_name
            );
        };
        let (name, version) = pin.split_once("==").unwrap_or_default();
        if locked.file_name.ends_with(".tar.gz") {
            // PEP 625 names an sdist `<normalised name>-<version>.tar.gz`, as wheels are named.
            let expected = format!("{}-{version}.tar.gz", name.replace(['-', '.'], "_"));
            assert_eq!(locked.file_name, expected, "pinned as `{pin}`");
            continue;
        }
        if locked.file_name.ends_with(".zip") {
            // Sdists from before PEP 625 keep their project's own spelling, as a zip.
            assert_eq!(
                locked.file_name,
                format!("{name}-{version}.zip"),
                "pinned as `{pin}`"
            );
            continue;
        }
        // Wheel file names normalise the project name (PEP 427): `-` and `.` become `_`.
        let expected_prefix = format!(
            "{}-{version}-",
            name.to_lowercase().replace(['-', '.'], "_")
        );
        assert!(
            locked
                .file_name
                .to_lowercase()
                .starts_with(&expected_prefix),
            "{}: pinned as `{pin}`, so its file name should start with `{expected_prefix}`",
            locked.file_name
        );
        assert!(
            locked.pip_args.contains(&"--platform"),
            "{}: without --platform pip would fetch the host's wheel",
            locked.file_name
        );
    }
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn fixtures_matching_returns_every_locked_match_in_lock_order() {
    let numpy = fixtures_matching("numpy-2.2.6-*.whl");
    let names: Vec<&str> = numpy
        .iter()
        .filter_map(|path| path.file_name()?.to_str())
        .collect();
    let expected: Vec<&str> = locked_fixtures()
        .iter()
        .map(|locked| locked.file_name)
        .filter(|name| name.starts_with("numpy-2.2.6-"))
        .collect();
    assert_eq!(names, expected);
    assert!(
        names.len() >= 2,
        "expected numpy for several platforms, got {names:?}"
    );
}

#[test]
#[should_panic(expected = "no wheel in tests/fixtures.lock matches")]
fn fixtures_matching_panics_when_nothing_matches() {
    fixtures_matching("no-such-project-*.whl");
}

#[test]
#[should_panic(expected = "is not pinned in tests/fixtures.lock")]
fn fixture_panics_for_a_wheel_outside_the_lock() {
    fixture("not-locked-1.0-py3-none-any.whl");
}

#[test]
#[should_panic(expected = "install it with `apt-get install no-such-tool`")]
fn require_tool_names_the_install_command_when_missing() {
    require_tool("crosswheel-no-such-tool", "apt-get install no-such-tool");
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn unzip_to_extracts_a_wheel_with_its_metadata() {
    let wheel = fixture(
        "markupsafe-3.0.4-cp311-cp311-manylinux2014_ppc64le.manylinux_2_17_ppc64le.manylinux_2_28_ppc64le.whl",
    );
    let dir = tempfile::tempdir().expect("create a temporary folder");
    unzip_to(&wheel, dir.path());
    let wheel_metadata = dir.path().join("markupsafe-3.0.4.dist-info/WHEEL");
    let text = std::fs::read_to_string(&wheel_metadata)
        .unwrap_or_else(|error| panic!("{}: {error}", wheel_metadata.display()));
    assert!(
        text.contains("Tag: cp311-cp311-manylinux_2_17_ppc64le"),
        "unexpected WHEEL:\n{text}"
    );
}
