//! `check_distribution` on wheels and sdists built here, each broken in
//! exactly one way, and on a good one of each.

use std::io::Write;
use std::path::{Path, PathBuf};

use crosswheel::publish::{DistributionKind, check_distribution};
use crosswheel::wheel::{Contents, WheelName, WriteOptions, write_wheel};

const GOOD_WHEEL_FILE: &str =
    "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n";
const GOOD_DESCRIPTION: &str = "Demo\n====\n\nA *demo* package.\n\nUsage\n-----\n\n\
    .. code-block:: python\n\n   import demo\n";

fn metadata(headers: &str, description: &str) -> String {
    format!("{headers}\n{description}")
}

fn good_metadata() -> String {
    metadata(
        "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nSummary: A demo\n\
         Description-Content-Type: text/x-rst\n",
        GOOD_DESCRIPTION,
    )
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

fn check_error(path: &Path) -> String {
    match check_distribution(path) {
        Ok(report) => panic!("{} passed the check: {report:?}", path.display()),
        Err(error) => {
            let message = error.to_string();
            assert!(
                !message.contains('\n'),
                "message is not one line: {message}"
            );
            assert!(
                message.contains(&path.display().to_string()),
                "message does not name the file: {message}"
            );
            message
        }
    }
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

#[test]
fn accepts_compressed_tag_sets_in_any_order() {
    let dir = tempfile::tempdir().unwrap();
    let wheel_file = "Wheel-Version: 1.0\nTag: py3-none-any\nTag: py2-none-any\n";
    let path = wheel(
        dir.path(),
        "demo-1.0-py2.py3-none-any.whl",
        wheel_file,
        &good_metadata(),
    );
    assert_eq!(check_distribution(&path).unwrap().pyversion, "py2.py3");
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
fn rejects_tag_in_file_name_missing_from_wheel_file() {
    let dir = tempfile::tempdir().unwrap();
    let wheel_file = "Wheel-Version: 1.0\nTag: py2-none-any\n";
    let path = wheel(
        dir.path(),
        "demo-1.0-py3-none-any.whl",
        wheel_file,
        &good_metadata(),
    );
    let message = check_error(&path);
    assert!(
        message.contains(
            "tag `py3-none-any` is in the file name but not in `demo-1.0.dist-info/WHEEL`"
        ),
        "{message}"
    );
}

#[test]
fn rejects_wheel_file_tag_missing_from_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let wheel_file =
        "Wheel-Version: 1.0\nTag: py3-none-any\nTag: py3-none-manylinux_2_17_aarch64\n";
    let path = wheel(
        dir.path(),
        "demo-1.0-py3-none-any.whl",
        wheel_file,
        &good_metadata(),
    );
    let message = check_error(&path);
    assert!(
        message
            .contains("lists tag `py3-none-manylinux_2_17_aarch64`, which the file name does not"),
        "{message}"
    );
}

#[test]
fn rejects_metadata_without_name() {
    let dir = tempfile::tempdir().unwrap();
    let text = metadata("Metadata-Version: 2.1\nVersion: 1.0\n", "");
    let path = wheel(
        dir.path(),
        "demo-1.0-py3-none-any.whl",
        GOOD_WHEEL_FILE,
        &text,
    );
    let message = check_error(&path);
    assert!(
        message.contains("METADATA` is malformed: required field `Name` is missing"),
        "{message}"
    );
}

#[test]
fn rejects_unknown_metadata_version() {
    let dir = tempfile::tempdir().unwrap();
    let text = metadata("Metadata-Version: 2.0\nName: demo\nVersion: 1.0\n", "");
    let path = wheel(
        dir.path(),
        "demo-1.0-py3-none-any.whl",
        GOOD_WHEEL_FILE,
        &text,
    );
    let message = check_error(&path);
    assert!(
        message.contains("declares Metadata-Version `2.0`, which is not one of 1.0, 1.1"),
        "{message}"
    );
}

#[test]
fn rejects_metadata_without_metadata_version() {
    let dir = tempfile::tempdir().unwrap();
    let text = metadata("Name: demo\nVersion: 1.0\n", "");
    let path = wheel(
        dir.path(),
        "demo-1.0-py3-none-any.whl",
        GOOD_WHEEL_FILE,
        &text,
    );
    let message = check_error(&path);
    assert!(
        message.contains("has no `Metadata-Version` field"),
        "{message}"
    );
}

#[test]
fn rejects_metadata_name_that_differs_from_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let text = metadata("Metadata-Version: 2.1\nName: other\nVersion: 1.0\n", "");
    let path = wheel(
        dir.path(),
        "demo-1.0-py3-none-any.whl",
        GOOD_WHEEL_FILE,
        &text,
    );
    let message = check_error(&path);
    assert!(
        message.contains("says `other-1.0` but the file name says `demo-1.0`"),
        "{message}"
    );
}

#[test]
fn accepts_metadata_name_equal_after_normalization() {
    let dir = tempfile::tempdir().unwrap();
    let text = metadata(
        "Metadata-Version: 2.1\nName: Zope.Interface\nVersion: 5.0\nDescription-Content-Type: text/plain\n",
        "Text.\n",
    );
    let path = wheel(
        dir.path(),
        "zope_interface-5.0-py3-none-any.whl",
        GOOD_WHEEL_FILE,
        &text,
    );
    check_distribution(&path).unwrap();
}

#[test]
fn rejects_metadata_version_that_differs_from_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let text = metadata("Metadata-Version: 2.1\nName: demo\nVersion: 1.1\n", "");
    let path = wheel(
        dir.path(),
        "demo-1.0-py3-none-any.whl",
        GOOD_WHEEL_FILE,
        &text,
    );
    let message = check_error(&path);
    assert!(
        message.contains("says `demo-1.1` but the file name says `demo-1.0`"),
        "{message}"
    );
}

#[test]
fn rejects_rst_description_with_short_underline() {
    let dir = tempfile::tempdir().unwrap();
    let text = metadata(
        "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nDescription-Content-Type: text/x-rst\n",
        "Demo package\n=====\n\nUse :func:`demo.run`.\n",
    );
    let path = wheel(
        dir.path(),
        "demo-1.0-py3-none-any.whl",
        GOOD_WHEEL_FILE,
        &text,
    );
    let message = check_error(&path);
    assert!(
        message.contains(
            "the long description does not render as reStructuredText: line 2: Title underline too short. \
             (and 1 more problem)"
        ),
        "{message}"
    );
}

#[test]
fn accepts_the_same_text_declared_as_markdown_or_plain() {
    let dir = tempfile::tempdir().unwrap();
    for content_type in ["text/markdown; charset=UTF-8; variant=GFM", "text/plain"] {
        let text = metadata(
            &format!(
                "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nDescription-Content-Type: {content_type}\n"
            ),
            "Demo package\n=====\n",
        );
        let path = wheel(
            dir.path(),
            "demo-1.0-py3-none-any.whl",
            GOOD_WHEEL_FILE,
            &text,
        );
        check_distribution(&path).unwrap();
    }
}

#[test]
fn rejects_unknown_description_content_type() {
    let dir = tempfile::tempdir().unwrap();
    let text = metadata(
        "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nDescription-Content-Type: text/html\n",
        "<b>x</b>\n",
    );
    let path = wheel(
        dir.path(),
        "demo-1.0-py3-none-any.whl",
        GOOD_WHEEL_FILE,
        &text,
    );
    let message = check_error(&path);
    assert!(
        message.contains("Description-Content-Type `text/html` is not"),
        "{message}"
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

#[test]
fn rejects_sdist_without_pkg_info() {
    let dir = tempfile::tempdir().unwrap();
    let path = sdist(dir.path(), "demo-1.0.tar.gz", &[("demo-1.0/setup.py", "")]);
    let message = check_error(&path);
    assert!(message.contains("no `demo-1.0/PKG-INFO`"), "{message}");
}

#[test]
fn rejects_sdist_member_with_parent_dir_component() {
    let dir = tempfile::tempdir().unwrap();
    let info = pkg_info();
    let path = sdist(
        dir.path(),
        "demo-1.0.tar.gz",
        &[("demo-1.0/PKG-INFO", &info), ("demo-1.0/../evil", "")],
    );
    let message = check_error(&path);
    assert!(
        message.contains("unsafe member name `demo-1.0/../evil`"),
        "{message}"
    );
}

#[test]
fn rejects_sdist_whose_pkg_info_names_another_project() {
    let dir = tempfile::tempdir().unwrap();
    let info = pkg_info().replace("Name: demo", "Name: other");
    let path = sdist(
        dir.path(),
        "demo-1.0.tar.gz",
        &[("demo-1.0/PKG-INFO", &info)],
    );
    let message = check_error(&path);
    assert!(
        message.contains("says `other-1.0` but the file name says `demo-1.0`"),
        "{message}"
    );
}

#[test]
fn rejects_truncated_sdist() {
    let dir = tempfile::tempdir().unwrap();
    let info = pkg_info();
    let path = sdist(
        dir.path(),
        "demo-1.0.tar.gz",
        &[("demo-1.0/PKG-INFO", &info)],
    );
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let message = check_error(&path);
    assert!(
        message.contains("not a gzip-compressed tar archive or truncated"),
        "{message}"
    );
}
