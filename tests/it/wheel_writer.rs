//! The deterministic writer: layout, RECORD, timestamps, raw copies, and
//! what real tools (Python's zipfile and csv, pip) make of its output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crosswheel::formats::wheel::{
    CompressionMethod, Contents, DosDateTime, Record, UnsafeName, WheelArchive, WheelError,
    WheelName, WriteOptions, write_wheel,
};

const DEMO: &str = "demo-1.0-py3-none-any.whl";
const EPOCH_2001: u64 = 1_000_000_000;
const EPOCH_2010: u64 = 1_280_000_000;

fn bytes(data: &str, mode: u32) -> Contents<'static> {
    Contents::Bytes {
        data: data.as_bytes().to_vec(),
        mode,
    }
}

fn demo_name() -> WheelName {
    WheelName::parse(DEMO).unwrap()
}

/// A small pure wheel, deliberately listed out of order.
fn demo_entries() -> Vec<(String, Contents<'static>)> {
    let module = "def main():\n    print('demo says hello')\n".repeat(20);
    vec![
        ("zzz/late.py".into(), bytes("", 0o644)),
        (
            "demo-1.0.dist-info/WHEEL".into(),
            bytes(
                "Wheel-Version: 1.0\nGenerator: crosswheel-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
                0o644,
            ),
        ),
        ("demo/cli.py".into(), bytes(&module, 0o755)),
        (
            "demo-1.0.dist-info/METADATA".into(),
            bytes(
                "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n\nA demo.\n",
                0o644,
            ),
        ),
        (
            "demo/__init__.py".into(),
            bytes("from demo.cli import main\n", 0o644),
        ),
        (
            "demo-1.0.dist-info/entry_points.txt".into(),
            bytes("[console_scripts]\ndemo = demo.cli:main\n", 0o644),
        ),
    ]
}

fn write_demo(dir: &Path, epoch: Option<u64>) -> PathBuf {
    write_wheel(dir, &demo_name(), demo_entries(), &WriteOptions { epoch }).unwrap()
}

/// Every entry of `archive` as a raw copy under its own name.
fn raw_copies(archive: &WheelArchive) -> Vec<(String, Contents<'_>)> {
    archive
        .raw_entries()
        .map(|raw| (raw.entry.name.clone(), Contents::Raw(raw)))
        .collect()
}

fn python(args: &[&str]) -> Output {
    Command::new("python3")
        .args(args)
        .output()
        .unwrap_or_else(|error| {
            panic!("this test needs python3 on PATH (apt-get install python3 python3-pip): {error}")
        })
}

fn assert_success(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed:\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn sorts_entries_with_dist_info_last_and_record_very_last() {
    let dir = tempfile::tempdir().unwrap();
    let archive = WheelArchive::open(write_demo(dir.path(), Some(EPOCH_2001))).unwrap();
    let names: Vec<&str> = archive.entries().iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "demo/__init__.py",
            "demo/cli.py",
            "zzz/late.py",
            "demo-1.0.dist-info/METADATA",
            "demo-1.0.dist-info/WHEEL",
            "demo-1.0.dist-info/entry_points.txt",
            "demo-1.0.dist-info/RECORD",
        ]
    );
}

#[test]
fn generates_record_with_sha256_and_size_for_every_entry() {
    let dir = tempfile::tempdir().unwrap();
    let archive = WheelArchive::open(write_demo(dir.path(), None)).unwrap();
    let record = Record::parse(
        std::str::from_utf8(&archive.read("demo-1.0.dist-info/RECORD").unwrap()).unwrap(),
    )
    .unwrap();
    let (own_row, rows) = record.rows().split_last().unwrap();
    assert_eq!(own_row.path, "demo-1.0.dist-info/RECORD");
    assert_eq!((own_row.hash.as_ref(), own_row.size), (None, None));
    for (row, entry) in rows.iter().zip(archive.entries()) {
        assert_eq!(row.path, entry.name);
        assert_eq!(row.size, Some(entry.size));
        assert_eq!(
            row.hash
                .as_ref()
                .unwrap()
                .to_string()
                .split_once('=')
                .unwrap()
                .0,
            "sha256"
        );
    }
    assert_eq!(rows.len(), archive.entries().len() - 1);
}

#[test]
fn keeps_unix_modes_as_regular_files() {
    let dir = tempfile::tempdir().unwrap();
    let archive = WheelArchive::open(write_demo(dir.path(), None)).unwrap();
    assert_eq!(
        archive.entry("demo/cli.py").unwrap().unix_mode,
        Some(0o100_755)
    );
    assert_eq!(
        archive.entry("demo/__init__.py").unwrap().unix_mode,
        Some(0o100_644)
    );
}

#[test]
fn writing_twice_gives_identical_bytes() {
    let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = std::fs::read(write_demo(first.path(), Some(EPOCH_2001))).unwrap();
    let b = std::fs::read(write_demo(second.path(), Some(EPOCH_2001))).unwrap();
    assert_eq!(a, b);
}

#[test]
fn different_source_date_epoch_gives_different_bytes_and_timestamps() {
    let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let path_2001 = write_demo(first.path(), Some(EPOCH_2001));
    let path_2010 = write_demo(second.path(), Some(EPOCH_2010));
    assert_ne!(
        std::fs::read(&path_2001).unwrap(),
        std::fs::read(&path_2010).unwrap()
    );
    for (path, epoch) in [(path_2001, EPOCH_2001), (path_2010, EPOCH_2010)] {
        let archive = WheelArchive::open(path).unwrap();
        assert!(
            archive
                .entries()
                .iter()
                .all(|e| e.modified == DosDateTime::from_unix(epoch))
        );
    }
}

#[test]
fn clamps_source_date_epoch_before_1980() {
    let dir = tempfile::tempdir().unwrap();
    let archive = WheelArchive::open(write_demo(dir.path(), Some(0))).unwrap();
    assert!(
        archive
            .entries()
            .iter()
            .all(|e| e.modified.to_string() == "1980-01-01 00:00:00")
    );
}

#[test]
fn without_epoch_uses_the_newest_copied_timestamp() {
    let (old_dir, new_dir, out_dir) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let old = WheelArchive::open(write_demo(old_dir.path(), Some(EPOCH_2001))).unwrap();
    let new = WheelArchive::open(write_demo(new_dir.path(), Some(EPOCH_2010))).unwrap();
    let mut entries = raw_copies(&old);
    entries.push((
        "demo/copy.py".into(),
        Contents::Raw(new.raw_entry("demo/cli.py").unwrap()),
    ));
    let out = write_wheel(
        out_dir.path(),
        &demo_name(),
        entries,
        &WriteOptions::default(),
    )
    .unwrap();
    let archive = WheelArchive::open(out).unwrap();
    assert!(
        archive
            .entries()
            .iter()
            .all(|e| e.modified == DosDateTime::from_unix(EPOCH_2010))
    );

    let only_new_bytes = write_demo(out_dir.path(), None);
    let archive = WheelArchive::open(only_new_bytes).unwrap();
    assert!(
        archive
            .entries()
            .iter()
            .all(|e| e.modified == DosDateTime::MIN)
    );
}

#[test]
fn raw_copy_keeps_compressed_bytes_identical() {
    let (in_dir, out_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let input = WheelArchive::open(write_demo(in_dir.path(), Some(EPOCH_2001))).unwrap();
    let out = write_wheel(
        out_dir.path(),
        &demo_name(),
        raw_copies(&input),
        &WriteOptions::default(),
    )
    .unwrap();
    let output = WheelArchive::open(out).unwrap();
    let cli = output.raw_entry("demo/cli.py").unwrap();
    assert_eq!(
        cli.entry.method,
        CompressionMethod::Deflated,
        "the test needs a deflated entry"
    );
    for raw in input.raw_entries() {
        let copied = output.raw_entry(&raw.entry.name).unwrap();
        assert_eq!(copied.compressed, raw.compressed, "{}", raw.entry.name);
        assert_eq!(copied.entry.crc32, raw.entry.crc32);
        assert_eq!(copied.entry.method, raw.entry.method);
    }
    // Same entries, same timestamp (taken from the input): same wheel.
    assert_eq!(
        std::fs::read(input.path()).unwrap(),
        std::fs::read(output.path()).unwrap()
    );
}

#[test]
fn regenerates_record_instead_of_copying_a_stale_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut entries = demo_entries();
    entries.push((
        "demo-1.0.dist-info/RECORD".into(),
        bytes("stale,,\n", 0o644),
    ));
    entries.push(("demo-1.0.dist-info/RECORD.jws".into(), bytes("{}", 0o644)));
    let path = write_wheel(dir.path(), &demo_name(), entries, &WriteOptions::default()).unwrap();
    let archive = WheelArchive::open(path).unwrap();
    assert!(archive.record().get("stale").is_none());
    assert!(archive.entry("demo-1.0.dist-info/RECORD.jws").is_none());
}

#[test]
fn retags_a_wheel_by_replacing_its_wheel_file_tags() {
    let (in_dir, out_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let input = WheelArchive::open(write_demo(in_dir.path(), None)).unwrap();
    let retagged = input.name().with_platforms(vec![
        "manylinux_2_17_aarch64".into(),
        "manylinux2014_aarch64".into(),
    ]);
    let mut wheel_file = input.wheel_metadata().clone();
    wheel_file.replace_tags(&retagged.tags());
    let mut entries: Vec<_> = raw_copies(&input)
        .into_iter()
        .filter(|(name, _)| name != "demo-1.0.dist-info/WHEEL")
        .collect();
    entries.push((
        "demo-1.0.dist-info/WHEEL".into(),
        bytes(&wheel_file.to_string(), 0o644),
    ));
    let out = write_wheel(out_dir.path(), &retagged, entries, &WriteOptions::default()).unwrap();
    assert_eq!(
        out.file_name().unwrap(),
        "demo-1.0-py3-none-manylinux_2_17_aarch64.manylinux2014_aarch64.whl"
    );
    let output = WheelArchive::open(out).unwrap();
    assert_eq!(
        output.wheel_metadata().tags(),
        [
            "py3-none-manylinux_2_17_aarch64",
            "py3-none-manylinux2014_aarch64"
        ]
    );
    assert_eq!(
        output.wheel_metadata().get("Generator"),
        Some("crosswheel-test")
    );
}

fn assert_dir_empty(dir: &Path) {
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(leftovers.is_empty(), "left behind: {leftovers:?}");
}

#[test]
fn rejects_unsafe_and_duplicate_names_leaving_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    for (bad, check) in [
        ("demo/../x.py", "unsafe"),
        ("demo/__init__.py", "duplicate"),
        ("demo/CLI.py", "case"),
    ] {
        let mut entries = demo_entries();
        entries.push((bad.into(), bytes("", 0o644)));
        let error =
            write_wheel(dir.path(), &demo_name(), entries, &WriteOptions::default()).unwrap_err();
        match (check, &error) {
            (
                "unsafe",
                WheelError::UnsafeEntryName {
                    problem: UnsafeName::ParentComponent,
                    ..
                },
            )
            | ("duplicate", WheelError::DuplicateEntry { .. })
            | ("case", WheelError::CaseCollision { .. }) => {}
            _ => panic!("{bad}: unexpected {error}"),
        }
        assert!(error.to_string().contains(DEMO), "{error}");
    }
    assert_dir_empty(dir.path());
}

#[test]
fn rejects_entries_for_another_distribution() {
    let dir = tempfile::tempdir().unwrap();
    let other = WheelName::parse("other-1.0-py3-none-any.whl").unwrap();
    let error =
        write_wheel(dir.path(), &other, demo_entries(), &WriteOptions::default()).unwrap_err();
    assert!(
        matches!(error, WheelError::DistInfoMismatch { .. }),
        "{error}"
    );
    assert_dir_empty(dir.path());
}

#[test]
#[ignore = "slow: 65,536 zip entries (over 20 s in a debug build)"]
fn failing_midway_through_writing_leaves_no_partial_wheel() {
    let dir = tempfile::tempdir().unwrap();
    let mut entries = demo_entries();
    // One entry more than a zip without zip64 can count: detected only
    // while the central directory is being written.
    entries.extend((0..65_536).map(|i| (format!("demo/many/{i}.py"), bytes("", 0o644))));
    let error =
        write_wheel(dir.path(), &demo_name(), entries, &WriteOptions::default()).unwrap_err();
    assert!(
        matches!(error, WheelError::ArchiveTooLarge { .. }),
        "{error}"
    );
    assert_dir_empty(dir.path());
}

#[test]
#[ignore = "needs python3: scripts/test sets it up"]
fn rewritten_wheel_passes_python_zipfile_test() {
    let (in_dir, out_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let input = WheelArchive::open(write_demo(in_dir.path(), Some(EPOCH_2001))).unwrap();
    let mut entries = raw_copies(&input);
    entries.push(("demo/é.py".into(), bytes("NEW = 'é'\n", 0o644)));
    let options = WriteOptions {
        epoch: Some(EPOCH_2010),
    };
    let path = write_wheel(out_dir.path(), &demo_name(), entries, &options).unwrap();
    let output = python(&["-m", "zipfile", "-t", path.to_str().unwrap()]);
    assert_success(&output, "python3 -m zipfile -t");
    // zipfile -t exits 0 even when it finds a bad member.
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("Done testing") && !stdout.contains("corrupted"),
        "{stdout}"
    );
}

#[test]
#[ignore = "needs python3: scripts/test sets it up"]
fn record_quoting_reads_back_identically_with_python_csv() {
    let dir = tempfile::tempdir().unwrap();
    let odd_names = [
        "demo/a,b.txt",
        "demo/say \"hi\".txt",
        "demo/é ü.txt",
        "demo/semi;colon.txt",
    ];
    let mut entries = demo_entries();
    entries.extend(
        odd_names
            .iter()
            .map(|name| (name.to_string(), bytes(name, 0o644))),
    );
    let path = write_wheel(dir.path(), &demo_name(), entries, &WriteOptions::default()).unwrap();
    let script = "import csv, io, json, sys, zipfile\n\
        z = zipfile.ZipFile(sys.argv[1])\n\
        text = z.read('demo-1.0.dist-info/RECORD').decode('utf-8')\n\
        print(json.dumps([row for row in csv.reader(io.StringIO(text, newline=''))]))";
    let output = python(&["-c", script, path.to_str().unwrap()]);
    assert_success(&output, "reading RECORD with python csv");
    let python_rows: Vec<Vec<String>> = serde_json::from_slice(&output.stdout).unwrap();
    let archive = WheelArchive::open(&path).unwrap();
    let our_rows: Vec<Vec<String>> = archive
        .record()
        .rows()
        .iter()
        .map(|row| {
            vec![
                row.path.clone(),
                row.hash
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default(),
                row.size.map(|s| s.to_string()).unwrap_or_default(),
            ]
        })
        .collect();
    assert_eq!(python_rows, our_rows);
    for name in odd_names {
        assert!(
            python_rows.iter().any(|row| row[0] == name),
            "{name} not read back by python"
        );
    }
}

#[test]
#[ignore = "needs python3 and pip: scripts/test sets them up"]
fn pip_installs_a_rewritten_pure_wheel() {
    let (in_dir, out_dir, target) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let input = WheelArchive::open(write_demo(in_dir.path(), None)).unwrap();
    let mut entries = raw_copies(&input);
    entries.push(("demo/extra.py".into(), bytes("EXTRA = 1\n", 0o644)));
    let path = write_wheel(
        out_dir.path(),
        &demo_name(),
        entries,
        &WriteOptions {
            epoch: Some(EPOCH_2010),
        },
    )
    .unwrap();
    let output = python(&[
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--no-index",
        "--disable-pip-version-check",
        "--target",
        target.path().to_str().unwrap(),
        path.to_str().unwrap(),
    ]);
    assert_success(&output, "pip install --target");
    assert_eq!(
        std::fs::read_to_string(target.path().join("demo/extra.py")).unwrap(),
        "EXTRA = 1\n"
    );
    let with_path = Command::new("python3")
        .env("PYTHONPATH", target.path())
        .args(["-c", "import demo.extra; print(demo.extra.EXTRA)"])
        .output()
        .unwrap();
    assert_success(&with_path, "importing the installed package");
    assert_eq!(String::from_utf8_lossy(&with_path.stdout).trim(), "1");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(target.path().join("demo/cli.py"))
        .unwrap()
        .permissions()
        .mode();
    assert_ne!(
        mode & 0o111,
        0,
        "pip should keep the executable bit of demo/cli.py"
    );
}
