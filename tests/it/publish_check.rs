//! `check_distribution` on wheels and sdists built here, each broken in
//! exactly one way, and on a good one of each.

use std::io::Write;
use std::path::{Path, PathBuf};

use crosswheel::formats::wheel::{Contents, WheelName, WriteOptions, write_wheel};
use crosswheel::stages::publish::{DistributionKind, check_distribution};

const GOOD_WHEEL_FILE: &str =
    "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n";
const GOOD_DESCRIPTION: &str = "Demo\n====\n\nA *demo* package.\n\nUsage\n-----\n\n\
    .. code-block:: python\n\n   import demo\n";

fn metadata(headers: &str, description: &str) -> String {
    format!("{headers}\n{description}")
}

const GOOD_HEADERS: &str = "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nSummary: A demo\n\
    Description-Content-Type: text/x-rst\n";

fn good_metadata() -> String {
    metadata(GOOD_HEADERS, GOOD_DESCRIPTION)
}

/// Writes `file_name` into `dir` with the given WHEEL and METADATA files
/// (and a valid RECORD, so only the intended defect is present).
fn wheel(dir: &Path, file_name: &str, wheel_file: &str, metadata: &str) -> PathBuf {
    let name = WheelName::parse(file_name).expect("test wheel names are valid");
    let dist_info = format!("{}.dist-info", name.dist_info_stem());
    let file = |data: &str| Contents::Bytes {
        data: data.as_bytes().to_vec(),
        mode: 0o644,
    };
    let entries = vec![
        ("demo/__init__.py".to_owned(), file("VALUE = 1\n")),
        (format!("{dist_info}/WHEEL"), file(wheel_file)),
        (format!("{dist_info}/METADATA"), file(metadata)),
    ];
    write_wheel(dir, &name, entries, &WriteOptions::default()).expect("writing the test wheel")
}

/// The check's one-line error about `path`, naming the file; otherwise what is wrong.
fn rejection(path: &Path) -> Result<String, String> {
    match check_distribution(path) {
        Ok(report) => Err(format!("{} passed the check: {report:?}", path.display())),
        Err(error) => {
            let message = error.to_string();
            if message.contains('\n') {
                return Err(format!("message is not one line: {message}"));
            }
            if !message.contains(&path.display().to_string()) {
                return Err(format!("message does not name the file: {message}"));
            }
            Ok(message)
        }
    }
}

fn check_error(path: &Path) -> String {
    rejection(path).unwrap_or_else(|problem| panic!("{problem}"))
}

/// Panics listing every case whose error was not `says` (`(case, outcome, says)`).
fn assert_rejections(outcomes: Vec<(&str, Result<String, String>, &str)>) {
    let wrong: Vec<String> = outcomes
        .into_iter()
        .filter_map(|(case, outcome, says)| match outcome {
            Ok(message) if message.contains(says) => None,
            Ok(message) => Some(format!("{case}: expected `{says}` in: {message}")),
            Err(problem) => Some(format!("{case}: {problem}")),
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn accepts_a_good_wheel() {
    let dir = tempfile::tempdir().unwrap();
    let path = wheel(
        dir.path(),
        "demo-1.0-py3-none-any.whl",
        GOOD_WHEEL_FILE,
        &good_metadata(),
    );
    let report = check_distribution(&path).unwrap();
    assert_eq!(report.kind, DistributionKind::Wheel);
    assert_eq!(report.pyversion, "py3");
    assert_eq!(report.metadata.name(), Some("demo"));
    assert_eq!(report.metadata.description(), Some(GOOD_DESCRIPTION));
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
}

/// A wheel of `file_name` with these WHEEL and METADATA files (headers, then description).
struct WheelCase {
    case: &'static str,
    file_name: &'static str,
    wheel_file: &'static str,
    headers: &'static str,
    description: &'static str,
    /// For a good wheel, the `pyversion` the check reports; for a bad one, what its one
    /// line error says.
    expect: &'static str,
}

const GOOD_WHEELS: &[WheelCase] = &[
    WheelCase {
        case: "compressed tag sets in any order",
        file_name: "demo-1.0-py2.py3-none-any.whl",
        wheel_file: "Wheel-Version: 1.0\nTag: py3-none-any\nTag: py2-none-any\n",
        headers: GOOD_HEADERS,
        description: GOOD_DESCRIPTION,
        expect: "py2.py3",
    },
    WheelCase {
        case: "a METADATA name equal after normalization",
        file_name: "zope_interface-5.0-py3-none-any.whl",
        wheel_file: GOOD_WHEEL_FILE,
        headers: "Metadata-Version: 2.1\nName: Zope.Interface\nVersion: 5.0\nDescription-Content-Type: text/plain\n",
        description: "Text.\n",
        expect: "py3",
    },
    WheelCase {
        case: "text that is bad reStructuredText, declared as Markdown",
        file_name: "demo-1.0-py3-none-any.whl",
        wheel_file: GOOD_WHEEL_FILE,
        headers: "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nDescription-Content-Type: text/markdown; charset=UTF-8; variant=GFM\n",
        description: "Demo package\n=====\n",
        expect: "py3",
    },
    WheelCase {
        case: "text that is bad reStructuredText, declared as plain",
        file_name: "demo-1.0-py3-none-any.whl",
        wheel_file: GOOD_WHEEL_FILE,
        headers: "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nDescription-Content-Type: text/plain\n",
        description: "Demo package\n=====\n",
        expect: "py3",
    },
];

const BAD_WHEELS: &[WheelCase] = &[
    WheelCase {
        case: "a tag of the file name missing from WHEEL",
        file_name: "demo-1.0-py3-none-any.whl",
        wheel_file: "Wheel-Version: 1.0\nTag: py2-none-any\n",
        headers: GOOD_HEADERS,
        description: GOOD_DESCRIPTION,
        expect: "tag `py3-none-any` is in the file name but not in `demo-1.0.dist-info/WHEEL`",
    },
    WheelCase {
        case: "a tag of WHEEL missing from the file name",
        file_name: "demo-1.0-py3-none-any.whl",
        wheel_file: "Wheel-Version: 1.0\nTag: py3-none-any\nTag: py3-none-manylinux_2_17_aarch64\n",
        headers: GOOD_HEADERS,
        description: GOOD_DESCRIPTION,
        expect: "lists tag `py3-none-manylinux_2_17_aarch64`, which the file name does not",
    },
    WheelCase {
        case: "METADATA without a name",
        file_name: "demo-1.0-py3-none-any.whl",
        wheel_file: GOOD_WHEEL_FILE,
        headers: "Metadata-Version: 2.1\nVersion: 1.0\n",
        description: "",
        expect: "METADATA` is malformed: required field `Name` is missing",
    },
    WheelCase {
        case: "an unknown Metadata-Version",
        file_name: "demo-1.0-py3-none-any.whl",
        wheel_file: GOOD_WHEEL_FILE,
        headers: "Metadata-Version: 2.0\nName: demo\nVersion: 1.0\n",
        description: "",
        expect: "declares Metadata-Version `2.0`, which is not one of 1.0, 1.1",
    },
    WheelCase {
        case: "METADATA without a Metadata-Version",
        file_name: "demo-1.0-py3-none-any.whl",
        wheel_file: GOOD_WHEEL_FILE,
        headers: "Name: demo\nVersion: 1.0\n",
        description: "",
        expect: "has no `Metadata-Version` field",
    },
    WheelCase {
        case: "a METADATA name other than the file name's",
        file_name: "demo-1.0-py3-none-any.whl",
        wheel_file: GOOD_WHEEL_FILE,
        headers: "Metadata-Version: 2.1\nName: other\nVersion: 1.0\n",
        description: "",
        expect: "says `other-1.0` but the file name says `demo-1.0`",
    },
    WheelCase {
        case: "a METADATA version other than the file name's",
        file_name: "demo-1.0-py3-none-any.whl",
        wheel_file: GOOD_WHEEL_FILE,
        headers: "Metadata-Version: 2.1\nName: demo\nVersion: 1.1\n",
        description: "",
        expect: "says `demo-1.1` but the file name says `demo-1.0`",
    },
    WheelCase {
        case: "a reStructuredText description with a short underline",
        file_name: "demo-1.0-py3-none-any.whl",
        wheel_file: GOOD_WHEEL_FILE,
        headers: "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nDescription-Content-Type: text/x-rst\n",
        description: "Demo package\n=====\n\nUse :func:`demo.run`.\n",
        expect: "the long description does not render as reStructuredText: line 2: Title underline too short. \
                 (and 1 more problem)",
    },
    WheelCase {
        case: "an unknown Description-Content-Type",
        file_name: "demo-1.0-py3-none-any.whl",
        wheel_file: GOOD_WHEEL_FILE,
        headers: "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nDescription-Content-Type: text/html\n",
        description: "<b>x</b>\n",
        expect: "Description-Content-Type `text/html` is not",
    },
];

fn write_case(dir: &Path, case: &WheelCase) -> PathBuf {
    let text = metadata(case.headers, case.description);
    wheel(dir, case.file_name, case.wheel_file, &text)
}

#[test]
fn accepts_good_wheels() {
    let dir = tempfile::tempdir().unwrap();
    for good in GOOD_WHEELS {
        let path = write_case(dir.path(), good);
        let report = check_distribution(&path)
            .unwrap_or_else(|error| panic!("{}: refused: {error}", good.case));
        assert_eq!(report.pyversion, good.expect, "{}", good.case);
    }
}

#[test]
fn rejects_wheels_broken_in_one_way() {
    let outcomes = BAD_WHEELS
        .iter()
        .map(|bad| {
            let dir = tempfile::tempdir().unwrap();
            let path = write_case(dir.path(), bad);
            (bad.case, rejection(&path), bad.expect)
        })
        .collect();
    assert_rejections(outcomes);
}

#[test]
fn warns_when_description_content_type_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let text = metadata(
        "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
        "Plain words.\n",
    );
    let path = wheel(
        dir.path(),
        "demo-1.0-py3-none-any.whl",
        GOOD_WHEEL_FILE,
        &text,
    );
    let report = check_distribution(&path).unwrap();
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    assert!(
        report.warnings[0].contains("no Description-Content-Type"),
        "{:?}",
        report.warnings
    );
}

#[test]
fn rejects_wheel_entry_with_parent_dir_component() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("demo-1.0-py3-none-any.whl");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let options = zip::write::SimpleFileOptions::default();
    for (name, data) in [
        ("../evil.py", "x = 1\n".to_owned()),
        ("demo-1.0.dist-info/WHEEL", GOOD_WHEEL_FILE.to_owned()),
        ("demo-1.0.dist-info/METADATA", good_metadata()),
        ("demo-1.0.dist-info/RECORD", String::new()),
    ] {
        zip.start_file(name, options).unwrap();
        zip.write_all(data.as_bytes()).unwrap();
    }
    zip.finish().unwrap();
    let message = check_error(&path);
    assert!(
        message.contains("unsafe entry name `../evil.py`"),
        "{message}"
    );
}

#[test]
fn rejects_files_that_are_not_distributions() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("demo-1.0.zip");
    std::fs::write(&zip, b"PK").unwrap();
    let message = check_error(&zip);
    assert!(
        message.contains("expected a wheel (`.whl`) or an sdist (`.tar.gz`)"),
        "{message}"
    );
}

/// One sdist member: a name written byte for byte (so unsafe names can be
/// produced) and its contents.
fn sdist(dir: &Path, file_name: &str, members: &[(&str, &str)]) -> PathBuf {
    let path = dir.join(file_name);
    let encoder = flate2::write::GzEncoder::new(
        std::fs::File::create(&path).unwrap(),
        flate2::Compression::default(),
    );
    let mut builder = tar::Builder::new(encoder);
    for (name, data) in members {
        let mut header = tar::Header::new_ustar();
        let field = &mut header.as_old_mut().name;
        field[..name.len()].copy_from_slice(name.as_bytes());
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::file());
        header.set_cksum();
        builder.append(&header, data.as_bytes()).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap();
    path
}

fn pkg_info() -> String {
    metadata(
        "Metadata-Version: 2.4\nName: demo\nVersion: 1.0\nDescription-Content-Type: text/x-rst\n",
        GOOD_DESCRIPTION,
    )
}

#[test]
fn accepts_a_good_sdist() {
    let dir = tempfile::tempdir().unwrap();
    let info = pkg_info();
    let path = sdist(
        dir.path(),
        "demo-1.0.tar.gz",
        &[("demo-1.0/PKG-INFO", &info), ("demo-1.0/demo.py", "")],
    );
    let report = check_distribution(&path).unwrap();
    assert_eq!(
        (report.kind, report.pyversion.as_str()),
        (DistributionKind::Sdist, "source")
    );
    assert_eq!(report.metadata.version(), Some("1.0"));
}

/// An sdist `demo-1.0.tar.gz` broken in one way.
struct BadSdist {
    case: &'static str,
    /// The `Name` of its `demo-1.0/PKG-INFO` (the good one's otherwise), none without one.
    pkg_info_name: Option<&'static str>,
    /// Members after PKG-INFO.
    members: &'static [(&'static str, &'static str)],
    /// Cut in half after writing.
    truncated: bool,
    says: &'static str,
}

const BAD_SDISTS: &[BadSdist] = &[
    BadSdist {
        case: "no PKG-INFO",
        pkg_info_name: None,
        members: &[("demo-1.0/setup.py", "")],
        truncated: false,
        says: "no `demo-1.0/PKG-INFO`",
    },
    BadSdist {
        case: "a member with a parent folder component",
        pkg_info_name: Some("demo"),
        members: &[("demo-1.0/../evil", "")],
        truncated: false,
        says: "unsafe member name `demo-1.0/../evil`",
    },
    BadSdist {
        case: "a PKG-INFO naming another project",
        pkg_info_name: Some("other"),
        members: &[],
        truncated: false,
        says: "says `other-1.0` but the file name says `demo-1.0`",
    },
    BadSdist {
        case: "truncated",
        pkg_info_name: Some("demo"),
        members: &[],
        truncated: true,
        says: "not a gzip-compressed tar archive or truncated",
    },
];

#[test]
fn rejects_sdists_broken_in_one_way() {
    let outcomes = BAD_SDISTS
        .iter()
        .map(|bad| {
            let dir = tempfile::tempdir().unwrap();
            let info = bad
                .pkg_info_name
                .map(|name| pkg_info().replace("Name: demo", &format!("Name: {name}")));
            let mut members: Vec<(&str, &str)> = info
                .iter()
                .map(|info| ("demo-1.0/PKG-INFO", info.as_str()))
                .collect();
            members.extend_from_slice(bad.members);
            let path = sdist(dir.path(), "demo-1.0.tar.gz", &members);
            if bad.truncated {
                let bytes = std::fs::read(&path).unwrap();
                std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
            }
            (bad.case, rejection(&path), bad.says)
        })
        .collect();
    assert_rejections(outcomes);
}
