//! Hostile wheels, generated here byte by byte, fed to the real command line.
//!
//! Every case must end the same way, for `crosswheel repair` and for
//! `crosswheel inspect` (text and JSON): exit status 1, exactly one line on
//! stderr starting with `error: ` that names the wheel and the problem, nothing
//! on stdout, no file in the output folder, the input wheel unchanged, and no
//! panic. The single-rejection unit tests of the library live in
//! `wheel_archive.rs`, `repair_linux_errors.rs` and `macho_malformed.rs`; this
//! file checks the whole path a user takes, with the inputs an attacker picks.
//!
//! Mach-O cases also go through the library API (parse, edit, verify), so each
//! defect is known to be caught where it should be.

use crate::common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use crosswheel::formats::macho::{
    LoadCommandEdit, MachOFile, SignatureStatus, Version, edit_load_commands, verify_signature,
};
use crosswheel::formats::wheel::WheelArchive;

const LINUX_WHEEL: &str = "demo-1.0-cp311-cp311-linux_aarch64.whl";
const MACOS_WHEEL: &str = "demo-1.0-cp311-cp311-macosx_11_0_arm64.whl";
const DIST_INFO: &str = "demo-1.0.dist-info";
const REGULAR_FILE: u32 = 0o100_644;

const NUMPY_LINUX: &str =
    "numpy-2.2.6-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl";
const NUMPY_MACOS: &str = "numpy-2.2.6-cp311-cp311-macosx_11_0_arm64.whl";
const SMALL_LINUX_EXTENSION: &str =
    "numpy/_core/_operand_flag_tests.cpython-311-aarch64-linux-gnu.so";
const SMALL_MACOS_EXTENSION: &str = "numpy/_core/_operand_flag_tests.cpython-311-darwin.so";

// ---- a zip writer that writes whatever it is told ----

/// One entry exactly as it should appear in the archive, defects included.
#[derive(Clone)]
struct Entry {
    name: Vec<u8>,
    data: Vec<u8>,
    deflate: bool,
    mode: u32,
    /// Uncompressed size to declare instead of the real one.
    declared_size: Option<u32>,
    /// Point the central header at this earlier entry's local header, so two
    /// names share one copy of the data (what a hard link would be in a zip).
    shares_data_of: Option<usize>,
}

impl Entry {
    fn file(name: impl AsRef<[u8]>, data: impl AsRef<[u8]>) -> Self {
        Self {
            name: name.as_ref().to_vec(),
            data: data.as_ref().to_vec(),
            deflate: true,
            mode: REGULAR_FILE,
            declared_size: None,
            shares_data_of: None,
        }
    }

    fn mode(self, mode: u32) -> Self {
        Self { mode, ..self }
    }
}

fn deflate(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(data).expect("deflate into memory");
    encoder.finish().expect("deflate into memory")
}

/// Local headers and data, then the central directory and its end record.
fn zip_bytes(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    let mut local_offsets = Vec::new();
    for entry in entries {
        let stored = if entry.deflate {
            deflate(&entry.data)
        } else {
            entry.data.clone()
        };
        let method: u16 = if entry.deflate { 8 } else { 0 };
        let crc = crc32fast::hash(&entry.data);
        let size = entry.declared_size.unwrap_or(entry.data.len() as u32);
        let fields = |out: &mut Vec<u8>| {
            for field in [20u16, 0x0800, method, 0, 0x21] {
                out.extend_from_slice(&field.to_le_bytes());
            }
            for field in [crc, stored.len() as u32, size] {
                out.extend_from_slice(&field.to_le_bytes());
            }
            out.extend_from_slice(&(entry.name.len() as u16).to_le_bytes());
            out.extend_from_slice(&0u16.to_le_bytes());
        };
        let local_offset = match entry.shares_data_of {
            Some(index) => local_offsets[index],
            None => {
                let offset = out.len() as u32;
                out.extend_from_slice(b"PK\x03\x04");
                fields(&mut out);
                out.extend_from_slice(&entry.name);
                out.extend_from_slice(&stored);
                offset
            }
        };
        local_offsets.push(local_offset);
        central.extend_from_slice(b"PK\x01\x02");
        central.extend_from_slice(&((3u16 << 8) | 20).to_le_bytes());
        fields(&mut central);
        central.extend_from_slice(&[0; 6]); // comment length, disk number, internal attributes
        central.extend_from_slice(&(entry.mode << 16).to_le_bytes());
        central.extend_from_slice(&local_offset.to_le_bytes());
        central.extend_from_slice(&entry.name);
    }
    let central_offset = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(b"PK\x05\x06");
    out.extend_from_slice(&[0; 4]);
    let count = (entries.len() as u16).to_le_bytes();
    out.extend_from_slice(&count);
    out.extend_from_slice(&count);
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&central_offset.to_le_bytes());
    out.extend_from_slice(&[0; 2]);
    out
}

// ---- wheels built from entries ----

fn dist_info_files(tag: &str) -> Vec<Entry> {
    vec![
        Entry::file(
            format!("{DIST_INFO}/WHEEL"),
            format!("Wheel-Version: 1.0\nGenerator: hostile\nRoot-Is-Purelib: false\nTag: {tag}\n"),
        ),
        Entry::file(
            format!("{DIST_INFO}/METADATA"),
            "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
        ),
    ]
}

/// A Linux wheel holding `extra` plus a RECORD that lists every entry correctly.
fn linux_wheel(extra: Vec<Entry>) -> Vec<u8> {
    let mut entries = extra;
    entries.extend(dist_info_files("cp311-cp311-linux_aarch64"));
    zip_bytes(&with_record(entries))
}

fn with_record(mut entries: Vec<Entry>) -> Vec<Entry> {
    let mut record: String = entries
        .iter()
        .map(|entry| common::record_line(&String::from_utf8_lossy(&entry.name), &entry.data))
        .collect();
    record.push_str(&format!("{DIST_INFO}/RECORD,,\n"));
    entries.push(Entry::file(format!("{DIST_INFO}/RECORD"), record));
    entries
}

fn harmless_module() -> Entry {
    Entry::file("demo/__init__.py", "answer = 42\n")
}

/// A member of a real fixture wheel.
fn fixture_member(wheel: &str, member: &str) -> Vec<u8> {
    let file = std::fs::File::open(common::fixture(wheel)).expect("open fixture wheel");
    let mut archive = zip::ZipArchive::new(file).expect("fixture wheel is a zip");
    let mut entry = archive
        .by_name(member)
        .unwrap_or_else(|error| panic!("{wheel} has no {member}: {error}"));
    let mut bytes = Vec::new();
    entry.read_to_end(&mut bytes).expect("read fixture member");
    bytes
}

// ---- running the command line ----

struct Run {
    status: Option<i32>,
    stdout: String,
    stderr: String,
}

fn crosswheel(args: &[&std::ffi::OsStr], env: &[(&str, &str)]) -> Run {
    let mut command = Command::new(common::crosswheel_bin());
    command
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("CROSSWHEEL_MAX_RATIO")
        .env_remove("CROSSWHEEL_MAX_UNCOMPRESSED");
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().expect("run crosswheel");
    Run {
        status: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Writes `bytes` as a wheel and checks that repair and inspect both refuse it
/// cleanly with an error mentioning `expected`. Returns the repair error line.
fn assert_refused(wheel_bytes: &[u8], expected: &str) -> String {
    assert_refused_with_env(LINUX_WHEEL, wheel_bytes, &[], expected)
}

fn assert_refused_with_env(
    file_name: &str,
    wheel_bytes: &[u8],
    env: &[(&str, &str)],
    expected: &str,
) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let wheel = dir.path().join(file_name);
    std::fs::write(&wheel, wheel_bytes).expect("write wheel");
    let wheelhouse = dir.path().join("wheelhouse");
    let mut first_error = None;
    let invocations: [Vec<&std::ffi::OsStr>; 3] = [
        vec![
            "repair".as_ref(),
            wheel.as_os_str(),
            "-w".as_ref(),
            wheelhouse.as_os_str(),
        ],
        vec!["inspect".as_ref(), wheel.as_os_str()],
        vec!["inspect".as_ref(), "--json".as_ref(), wheel.as_os_str()],
    ];
    for args in invocations {
        let run = crosswheel(&args, env);
        let what = format!(
            "`crosswheel {}`",
            args.iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" ")
        );
        assert!(
            !run.stderr.contains("panicked"),
            "{what} panicked:\n{}",
            run.stderr
        );
        assert_eq!(
            run.status,
            Some(1),
            "{what} should fail with status 1; stderr:\n{}",
            run.stderr
        );
        let error = single_error_line(&run.stderr, &what);
        assert!(
            error.contains(expected),
            "{what}: error does not mention `{expected}`: {error}"
        );
        assert!(
            error.contains(file_name),
            "{what}: error does not name the wheel: {error}"
        );
        assert!(
            run.stdout.is_empty(),
            "{what} printed output for a refused wheel:\n{}",
            run.stdout
        );
        assert_no_output_files(&wheelhouse, &what);
        assert_eq!(
            std::fs::read(&wheel).expect("read wheel back"),
            wheel_bytes,
            "{what} modified its input"
        );
        first_error.get_or_insert(error);
    }
    first_error.unwrap_or_default()
}

fn single_error_line(stderr: &str, what: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    match lines.as_slice() {
        [line] if line.starts_with("error: ") => (*line).to_owned(),
        _ => panic!("{what}: expected exactly one `error: ` line on stderr, got:\n{stderr}"),
    }
}

fn assert_no_output_files(dir: &Path, what: &str) {
    if !dir.exists() {
        return;
    }
    let left: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_file())
        .map(|entry| entry.into_path())
        .collect();
    assert!(left.is_empty(), "{what} left files behind: {left:?}");
}

fn inspect_succeeds(wheel_bytes: &[u8], env: &[(&str, &str)]) {
    let dir = tempfile::tempdir().expect("temp dir");
    let wheel = dir.path().join(LINUX_WHEEL);
    std::fs::write(&wheel, wheel_bytes).expect("write wheel");
    let run = crosswheel(&["inspect".as_ref(), wheel.as_os_str()], env);
    assert_eq!(
        run.status,
        Some(0),
        "inspect should accept this wheel; stderr:\n{}",
        run.stderr
    );
}

// ---- entry names ----

#[test]
fn refuses_entry_climbing_out_with_parent_components() {
    assert_refused(
        &linux_wheel(vec![Entry::file(
            "demo/../../../home/victim/.bashrc",
            "rm -rf ~\n",
        )]),
        "`..` component",
    );
}

#[test]
fn refuses_absolute_entry_name() {
    assert_refused(
        &linux_wheel(vec![Entry::file("/etc/cron.d/evil", "* * * * * root sh\n")]),
        "absolute path",
    );
}

#[test]
fn refuses_entry_name_with_backslash_traversal() {
    assert_refused(
        &linux_wheel(vec![Entry::file("demo\\..\\..\\evil.py", "x\n")]),
        "backslash",
    );
}

#[test]
fn refuses_entry_name_with_drive_letter() {
    assert_refused(
        &linux_wheel(vec![Entry::file("C:/Windows/evil.dll", "MZ")]),
        "drive letter",
    );
}

#[test]
fn refuses_duplicate_entry_names() {
    let module = harmless_module();
    let evil = Entry::file("demo/__init__.py", "import os; os.system('id')\n");
    assert_refused(&linux_wheel(vec![module, evil]), "more than once");
}

#[test]
fn refuses_names_colliding_on_case_insensitive_file_systems() {
    assert_refused(
        &linux_wheel(vec![
            Entry::file("demo/Module.py", "a = 1\n"),
            Entry::file("demo/module.py", "a = 2\n"),
        ]),
        "differ only by case",
    );
}

#[test]
fn refuses_non_utf8_entry_name() {
    assert_refused(
        &linux_wheel(vec![Entry::file(b"demo/caf\xe9.py", "x\n")]),
        "not valid UTF-8",
    );
}

// ---- entry types ----

#[test]
fn refuses_symlink_entry() {
    let link = Entry::file("demo/passwd", "/etc/passwd").mode(0o120_777);
    assert_refused(&linux_wheel(vec![harmless_module(), link]), "symbolic link");
}

#[test]
fn refuses_device_fifo_and_socket_entries() {
    for (mode, octal) in [
        (0o020_666, "0o20000"),
        (0o060_660, "0o60000"),
        (0o010_644, "0o10000"),
        (0o140_755, "0o140000"),
    ] {
        let special = Entry::file("demo/node", "").mode(mode);
        assert_refused(
            &linux_wheel(vec![harmless_module(), special]),
            &format!("file type {octal}"),
        );
    }
}

#[test]
fn refuses_two_names_sharing_one_copy_of_data() {
    let original = Entry::file("demo/lib.py", "x = 1\n");
    let alias = Entry {
        shares_data_of: Some(0),
        ..Entry::file("demo/alias.py", "x = 1\n")
    };
    assert_refused(&linux_wheel(vec![original, alias]), "bad local header");
}

// ---- zip bombs ----

#[test]
fn refuses_entry_over_the_default_compression_ratio() {
    let bomb = Entry::file("demo/zeros.bin", vec![0u8; 16 << 20]);
    assert_refused(&linux_wheel(vec![bomb]), "compression-ratio limit");
}

#[test]
fn refuses_entry_whose_declared_size_dwarfs_its_data() {
    let liar = Entry {
        declared_size: Some(0xffff_fff0),
        ..Entry::file("demo/small.bin", "tiny")
    };
    assert_refused(&linux_wheel(vec![liar]), "compression-ratio limit");
}

/// Compresses about 250:1: fine by default, a bomb under a 100:1 limit.
fn repetitive_two_megabytes() -> Entry {
    let line = b"the same line of text, over and over again, sixty-four bytes...\n";
    Entry::file("demo/repetitive.txt", line.repeat((2 << 20) / line.len()))
}

#[test]
#[ignore = "slow: Debian's system libraries for the symbol check (a download on first use)"]
fn crosswheel_max_ratio_lowers_the_compression_ratio_limit() {
    let wheel = linux_wheel(vec![repetitive_two_megabytes()]);
    inspect_succeeds(&wheel, &[]);
    let error = assert_refused_with_env(
        LINUX_WHEEL,
        &wheel,
        &[("CROSSWHEEL_MAX_RATIO", "100")],
        "compression-ratio limit",
    );
    assert!(error.contains("100:1"), "{error}");
}

#[test]
#[ignore = "slow: Debian's system libraries for the symbol check (a download on first use)"]
fn crosswheel_max_uncompressed_lowers_the_total_size_limit() {
    let wheel = linux_wheel(vec![repetitive_two_megabytes()]);
    inspect_succeeds(&wheel, &[]);
    let error = assert_refused_with_env(
        LINUX_WHEEL,
        &wheel,
        &[("CROSSWHEEL_MAX_UNCOMPRESSED", "1000000")],
        "over the 1000000-byte limit",
    );
    assert!(error.contains("zip bomb"), "{error}");
}

#[test]
#[ignore = "slow: Debian's system libraries for the symbol check (a download on first use)"]
fn crosswheel_max_uncompressed_can_raise_the_limit_too() {
    let wheel = linux_wheel(vec![Entry::file("demo/zeros.bin", vec![0u8; 16 << 20])]);
    inspect_succeeds(&wheel, &[("CROSSWHEEL_MAX_RATIO", "100000")]);
}

#[test]
fn refuses_a_limit_variable_that_is_not_a_number() {
    let wheel = linux_wheel(vec![harmless_module()]);
    for (variable, value) in [
        ("CROSSWHEEL_MAX_RATIO", "lots"),
        ("CROSSWHEEL_MAX_UNCOMPRESSED", "0"),
        ("CROSSWHEEL_MAX_UNCOMPRESSED", "-5"),
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join(LINUX_WHEEL);
        std::fs::write(&path, &wheel).expect("write wheel");
        let run = crosswheel(
            &["inspect".as_ref(), path.as_os_str()],
            &[(variable, value)],
        );
        assert_eq!(run.status, Some(1), "{variable}={value}: {}", run.stderr);
        let error = single_error_line(&run.stderr, variable);
        assert!(error.contains(variable) && error.contains(value), "{error}");
    }
}

// ---- RECORD and WHEEL ----

#[test]
fn refuses_record_listing_a_file_that_is_missing() {
    let mut entries = vec![harmless_module()];
    entries.extend(dist_info_files("cp311-cp311-linux_aarch64"));
    let mut entries = with_record(entries);
    entries.retain(|entry| entry.name != b"demo/__init__.py");
    assert_refused(
        &zip_bytes(&entries),
        "RECORD lists `demo/__init__.py`, which is not in the archive",
    );
}

#[test]
fn refuses_file_present_but_missing_from_record() {
    let mut entries = dist_info_files("cp311-cp311-linux_aarch64");
    entries = with_record(entries);
    entries.push(Entry::file("demo/smuggled.py", "import os\n"));
    assert_refused(
        &zip_bytes(&entries),
        "`demo/smuggled.py` is not listed in RECORD",
    );
}

#[test]
fn refuses_wheel_file_without_tag() {
    let mut entries = vec![
        harmless_module(),
        Entry::file(
            format!("{DIST_INFO}/WHEEL"),
            "Wheel-Version: 1.0\nGenerator: hostile\nRoot-Is-Purelib: false\n",
        ),
        Entry::file(
            format!("{DIST_INFO}/METADATA"),
            "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
        ),
    ];
    entries = with_record(entries);
    assert_refused(&zip_bytes(&entries), "no `Tag` line");
}

// ---- ELF inside the wheel ----

const PT_DYNAMIC: u32 = 2;

fn small_linux_extension() -> Vec<u8> {
    fixture_member(NUMPY_LINUX, SMALL_LINUX_EXTENSION)
}

fn read_u16(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(bytes[at..at + 2].try_into().expect("two bytes"))
}

fn read_u64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight bytes"))
}

/// Offset of the PT_DYNAMIC program header of a little-endian ELF64 file.
fn dynamic_program_header(elf: &[u8]) -> usize {
    let (phoff, entry_size, count) = (
        read_u64(elf, 0x20) as usize,
        read_u16(elf, 0x36) as usize,
        read_u16(elf, 0x38) as usize,
    );
    (0..count)
        .map(|index| phoff + index * entry_size)
        .find(|&header| {
            u32::from_le_bytes(elf[header..header + 4].try_into().expect("four bytes"))
                == PT_DYNAMIC
        })
        .expect("the fixture extension has a PT_DYNAMIC")
}

fn wheel_with_extension(elf: Vec<u8>) -> Vec<u8> {
    linux_wheel(vec![
        harmless_module(),
        Entry::file("demo/_native.cpython-311-aarch64-linux-gnu.so", elf),
    ])
}

#[test]
#[ignore = "slow: Debian's system libraries for the symbol check (a download on first use)"]
fn the_unmodified_extension_is_accepted() {
    // Guards the cases below: each fails because of its one defect.
    inspect_succeeds(&wheel_with_extension(small_linux_extension()), &[]);
}

#[test]
#[ignore = "slow: Debian's system libraries for the symbol check (a download on first use)"]
fn refuses_elf_whose_program_headers_are_cut_off() {
    let mut elf = small_linux_extension();
    let phoff = read_u64(&elf, 0x20) as usize;
    elf.truncate(phoff + 56 + 20);
    assert_refused(
        &wheel_with_extension(elf),
        "demo/_native.cpython-311-aarch64-linux-gnu.so",
    );
}

#[test]
#[ignore = "slow: Debian's system libraries for the symbol check (a download on first use)"]
fn refuses_elf_claiming_more_program_headers_than_the_file_holds() {
    let mut elf = small_linux_extension();
    elf[0x38..0x3a].copy_from_slice(&u16::MAX.to_le_bytes());
    let error = assert_refused(&wheel_with_extension(elf), "malformed ELF file");
    assert!(error.contains("program headers"), "{error}");
}

#[test]
#[ignore = "slow: Debian's system libraries for the symbol check (a download on first use)"]
fn refuses_elf_whose_dynamic_section_lies_past_the_end_of_the_file() {
    let mut elf = small_linux_extension();
    let header = dynamic_program_header(&elf);
    let past_the_end = elf.len() as u64 + 0x10_000;
    elf[header + 8..header + 16].copy_from_slice(&past_the_end.to_le_bytes());
    let error = assert_refused(&wheel_with_extension(elf), "malformed ELF file");
    assert!(error.contains("PT_DYNAMIC"), "{error}");
}

#[test]
#[ignore = "slow: Debian's system libraries for the symbol check (a download on first use)"]
fn refuses_elf_whose_dynamic_section_runs_off_the_end_of_the_file() {
    let mut elf = small_linux_extension();
    let header = dynamic_program_header(&elf);
    elf[header + 32..header + 40].copy_from_slice(&u64::from(u32::MAX).to_le_bytes());
    let error = assert_refused(&wheel_with_extension(elf), "malformed ELF file");
    assert!(error.contains("PT_DYNAMIC"), "{error}");
}

// ---- Mach-O inside a macOS wheel (library API) ----

const LC_SEGMENT_64: u32 = 0x19;
const LC_CODE_SIGNATURE: u32 = 0x1d;

fn get_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes"))
}

fn put_u32(bytes: &mut [u8], at: usize, value: u32) {
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

fn put_be_u32(bytes: &mut [u8], at: usize, value: u32) {
    bytes[at..at + 4].copy_from_slice(&value.to_be_bytes());
}

fn get_be_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(bytes[at..at + 4].try_into().expect("four bytes"))
}

fn small_macos_extension() -> Vec<u8> {
    fixture_member(NUMPY_MACOS, SMALL_MACOS_EXTENSION)
}

/// (cmd, offset) of every load command of a thin 64-bit image.
fn load_commands(macho: &[u8]) -> Vec<(u32, usize)> {
    let mut offset = 32;
    (0..get_u32(macho, 16))
        .map(|_| {
            let command = (get_u32(macho, offset), offset);
            offset += get_u32(macho, offset + 4) as usize;
            command
        })
        .collect()
}

fn command_offset(macho: &[u8], cmd: u32) -> usize {
    load_commands(macho)
        .into_iter()
        .find(|&(c, _)| c == cmd)
        .map(|(_, offset)| offset)
        .expect("command present")
}

/// Puts `macho` in a macOS wheel, reads it back through `WheelArchive` (which
/// must accept the wheel: the archive is sound, only the binary lies), then
/// hands it to every Mach-O entry point. None may panic; the parse must fail
/// with a one-line error mentioning `expected`.
fn assert_macho_refused_inside_wheel(macho: Vec<u8>, expected: &str) {
    let (reason, _) = macho_through_wheel(macho);
    let reason = reason.expect_err("the malformed Mach-O parsed");
    assert!(
        reason.contains(expected),
        "error does not mention `{expected}`: {reason}"
    );
}

/// The parse outcome (error text) and the file bytes, after the wheel round trip;
/// also exercises editing and the command line on the same wheel.
fn macho_through_wheel(macho: Vec<u8>) -> (Result<(), String>, Vec<u8>) {
    let member = "demo/_native.cpython-311-darwin.so";
    let mut entries = vec![harmless_module(), Entry::file(member, &macho)];
    entries.extend(dist_info_files("cp311-cp311-macosx_11_0_arm64"));
    let bytes = zip_bytes(&with_record(entries));
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(MACOS_WHEEL);
    std::fs::write(&path, &bytes).expect("write wheel");

    let wheel = WheelArchive::open(&path).expect("the zip itself is sound");
    let data = wheel.read(member).expect("read member");
    assert_eq!(data, macho);
    let parsed = MachOFile::parse(&data)
        .map(|_| ())
        .map_err(|error| error.to_string());
    if let Err(message) = &parsed {
        assert!(!message.contains('\n'), "error is not one line: {message}");
        let edit = edit_load_commands(&data, &[LoadCommandEdit::SetMinos(Version::new(11, 0, 0))]);
        assert!(
            edit.is_err(),
            "editing a file that does not parse succeeded"
        );
    }

    if parsed.is_err() {
        // A binary that does not parse fails every command like any hostile wheel.
        assert_refused_with_env(MACOS_WHEEL, &bytes, &[], member);
        return (parsed, data);
    }

    // A file that parses may be repaired, e.g. by replacing a damaged signature:
    // then every Mach-O of the output must verify. Otherwise, one clean error.
    let wheelhouse = dir.path().join("wheelhouse");
    let repair = crosswheel(
        &[
            "repair".as_ref(),
            path.as_os_str(),
            "-w".as_ref(),
            wheelhouse.as_os_str(),
        ],
        &[],
    );
    assert!(
        !repair.stderr.contains("panicked"),
        "repair panicked:\n{}",
        repair.stderr
    );
    if repair.status == Some(0) {
        let output = walkdir::WalkDir::new(&wheelhouse)
            .into_iter()
            .filter_map(Result::ok)
            .find(|e| e.path().extension().is_some_and(|x| x == "whl"))
            .expect("repair reported success without a wheel");
        let repaired = WheelArchive::open(output.path()).expect("the repaired wheel opens");
        let signed = repaired.read(member).expect("the extension is still there");
        let file = MachOFile::parse(&signed).expect("the repaired extension parses");
        assert!(
            file.slices
                .iter()
                .all(|slice| matches!(verify_signature(slice), SignatureStatus::Valid { .. })),
            "repair wrote an extension whose signature does not verify"
        );
    } else {
        assert_eq!(repair.status, Some(1), "stderr:\n{}", repair.stderr);
        single_error_line(&repair.stderr, "repair");
        assert_no_output_files(&wheelhouse, "repair");
    }
    for args in [vec!["inspect"], vec!["inspect", "--json"]] {
        let mut args: Vec<&std::ffi::OsStr> = args.iter().map(|arg| arg.as_ref()).collect();
        args.push(path.as_os_str());
        let inspect = crosswheel(&args, &[]);
        assert!(
            !inspect.stderr.contains("panicked"),
            "inspect panicked:\n{}",
            inspect.stderr
        );
        if inspect.status != Some(0) {
            assert_eq!(inspect.status, Some(1), "stderr:\n{}", inspect.stderr);
            single_error_line(&inspect.stderr, "inspect");
        }
    }
    (parsed, data)
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn the_unmodified_macos_extension_parses_and_verifies() {
    let (parsed, data) = macho_through_wheel(small_macos_extension());
    parsed.expect("the fixture parses");
    let file = MachOFile::parse(&data).expect("parses");
    assert!(
        file.slices
            .iter()
            .all(|slice| matches!(verify_signature(slice), SignatureStatus::Valid { .. }))
    );
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn refuses_macho_load_command_of_size_zero_that_would_loop_forever() {
    let mut macho = small_macos_extension();
    put_u32(&mut macho, 32 + 4, 0);
    assert_macho_refused_inside_wheel(macho, "cmdsize 0");
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn refuses_macho_with_billions_of_load_commands_in_a_small_table() {
    let mut macho = small_macos_extension();
    put_u32(&mut macho, 16, u32::MAX);
    assert_macho_refused_inside_wheel(macho, "past the");
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn refuses_macho_load_command_overlapping_the_next_one() {
    let mut macho = small_macos_extension();
    let commands = load_commands(&macho);
    let (_, second) = commands[1];
    let (_, third) = commands[2];
    // The second command swallows the third, so the last one starts past the table.
    let swallowed = (third - second) as u32 + get_u32(&macho, third + 4);
    put_u32(&mut macho, second + 4, swallowed);
    let last = commands.len() - 1;
    assert_macho_refused_inside_wheel(macho, &format!("load command {last}: starts at"));
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn refuses_macho_section_data_overlapping_the_load_commands() {
    let mut macho = small_macos_extension();
    let text = command_offset(&macho, LC_SEGMENT_64);
    let first_segment_name = &macho[text + 8..text + 24];
    assert!(
        first_segment_name.starts_with(b"__TEXT"),
        "first segment is __TEXT"
    );
    // First section header's file offset: segment command (72) + name fields (32) + addr, size.
    put_u32(&mut macho, text + 72 + 48, 32);
    assert_macho_refused_inside_wheel(macho, "past section data");
}

/// A universal header over `slices`, each given as (cputype, cpusubtype, offset, size).
fn fat_header(slices: &[(u32, u32, u32, u32)]) -> Vec<u8> {
    let mut header = Vec::new();
    header.extend_from_slice(&0xcafe_babeu32.to_be_bytes());
    header.extend_from_slice(&(slices.len() as u32).to_be_bytes());
    for &(cpu_type, cpu_subtype, offset, size) in slices {
        for field in [cpu_type, cpu_subtype, offset, size, 14] {
            header.extend_from_slice(&field.to_be_bytes());
        }
    }
    header
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn refuses_fat_file_whose_slices_overlap() {
    let thin = small_macos_extension();
    let (cpu_type, cpu_subtype) = (get_u32(&thin, 4), get_u32(&thin, 8));
    let size = thin.len() as u32;
    let mut fat = fat_header(&[
        (cpu_type, cpu_subtype, 16384, size),
        (0x0100_0007, 3, 16384 + size / 2, size / 2),
    ]);
    fat.resize(16384, 0);
    fat.extend_from_slice(&thin);
    assert_macho_refused_inside_wheel(fat, "overlap");
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn refuses_fat_file_listing_more_slices_than_it_holds() {
    let thin = small_macos_extension();
    let mut fat = fat_header(&[(
        get_u32(&thin, 4),
        get_u32(&thin, 8),
        16384,
        thin.len() as u32,
    )]);
    // 40 architectures: still below the 45 from which 0xcafebabe means a Java
    // class file, so every tool takes it for Mach-O. Entries 1..40 are zeros.
    fat[4..8].copy_from_slice(&40u32.to_be_bytes());
    fat.resize(16384, 0);
    fat.extend_from_slice(&thin);
    assert_macho_refused_inside_wheel(fat, "fat slice 1: starts at 0, inside the fat header");
}

/// Where the SuperBlob of a thin image starts.
fn superblob_offset(macho: &[u8]) -> usize {
    let command = command_offset(macho, LC_CODE_SIGNATURE);
    get_u32(macho, command + 8) as usize
}

/// A signature edit must leave the file parseable but its signature Invalid.
fn assert_signature_invalid_inside_wheel(macho: Vec<u8>, expected: &str) {
    let (parsed, data) = macho_through_wheel(macho);
    parsed.expect("only the signature is damaged, the file still parses");
    let file = MachOFile::parse(&data).expect("parses");
    match verify_signature(&file.slices[0]) {
        SignatureStatus::Invalid(reason) => {
            assert!(
                reason.contains(expected),
                "reason does not mention `{expected}`: {reason}"
            )
        }
        other => panic!("a signature with bogus offsets verified as {other:?}"),
    }
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn signature_superblob_index_pointing_far_outside_is_invalid() {
    let mut macho = small_macos_extension();
    let blob = superblob_offset(&macho);
    put_be_u32(&mut macho, blob + 12 + 4, 0xffff_fff0);
    assert_signature_invalid_inside_wheel(macho, "lies outside the SuperBlob");
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn signature_superblob_with_absurd_entry_count_is_invalid() {
    let mut macho = small_macos_extension();
    let blob = superblob_offset(&macho);
    put_be_u32(&mut macho, blob + 8, u32::MAX);
    assert_signature_invalid_inside_wheel(macho, "overruns");
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn signature_blob_claiming_more_bytes_than_the_superblob_is_invalid() {
    let mut macho = small_macos_extension();
    let blob = superblob_offset(&macho);
    let code_directory = blob + get_be_u32(&macho, blob + 12 + 4) as usize;
    put_be_u32(&mut macho, code_directory + 4, u32::MAX - 7);
    assert_signature_invalid_inside_wheel(macho, "past the end of the SuperBlob");
}

#[test]
#[ignore = "needs the fixture cache: scripts/test sets it up"]
fn signature_code_directory_hash_offset_out_of_range_is_invalid() {
    let mut macho = small_macos_extension();
    let blob = superblob_offset(&macho);
    let code_directory = blob + get_be_u32(&macho, blob + 12 + 4) as usize;
    put_be_u32(&mut macho, code_directory + 16, 0x7fff_ff00);
    assert_signature_invalid_inside_wheel(macho, "lies outside the CodeDirectory");
}
