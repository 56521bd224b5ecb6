//! Toolchains, emulators, fixtures and independent readers for the ELF edit tests.
//! Everything fails loudly with what to install: a test never skips.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use crosswheel::formats::elf::edit::{ElfEdits, apply_edits, check_layout};

#[derive(Debug, Clone, Copy)]
pub struct Target {
    pub name: &'static str,
    pub zig_triple: &'static str,
    pub zig_flags: &'static [&'static str],
    /// None: the host runs the programs natively.
    pub qemu: Option<&'static str>,
    /// Extra environment for qemu (OpenBLAS picks an SME kernel on qemu's default aarch64 CPU).
    pub qemu_env: &'static [(&'static str, &'static str)],
}

pub const AARCH64: Target = Target {
    name: "aarch64",
    zig_triple: "aarch64-linux-gnu.2.17",
    zig_flags: &[],
    qemu: Some("qemu-aarch64-static"),
    qemu_env: &[("QEMU_CPU", "cortex-a72")],
};

pub const PPC64LE: Target = Target {
    name: "ppc64le",
    zig_triple: "powerpc64le-linux-gnu.2.19",
    // zig's ppc64le glibc stubs lack the IEEE128 printf family.
    zig_flags: &["-mabi=ibmlongdouble"],
    qemu: Some("qemu-ppc64le-static"),
    qemu_env: &[],
};

pub const X86_64: Target = Target {
    name: "x86_64",
    zig_triple: "x86_64-linux-gnu.2.17",
    zig_flags: &[],
    qemu: None,
    qemu_env: &[],
};

pub const ARMHF: Target = Target {
    name: "armhf",
    zig_triple: "arm-linux-gnueabihf.2.17",
    zig_flags: &[],
    qemu: Some("qemu-arm-static"),
    qemu_env: &[],
};

/// The big-endian target: every edit must write its headers most significant byte first.
pub const S390X: Target = Target {
    name: "s390x",
    zig_triple: "s390x-linux-gnu.2.17",
    zig_flags: &[],
    qemu: Some("qemu-s390x-static"),
    qemu_env: &[],
};

pub fn home() -> PathBuf {
    PathBuf::from(std::env::var_os("HOME").expect("HOME is set"))
}

/// One file of a fixture wheel.
pub fn wheel_member(wheel: &str, member: &str) -> Vec<u8> {
    let path = crate::common::fixture(wheel);
    let file = fs::File::open(&path).unwrap_or_else(|error| {
        panic!(
            "fixture {} is missing ({error}): run `scripts/fetch-fixtures`",
            path.display()
        )
    });
    let mut archive = zip::ZipArchive::new(file)
        .unwrap_or_else(|error| panic!("{} is not a zip file: {error}", path.display()));
    let mut entry = archive
        .by_name(member)
        .unwrap_or_else(|error| panic!("{wheel} has no {member}: {error}"));
    let mut data = Vec::new();
    entry
        .read_to_end(&mut data)
        .unwrap_or_else(|error| panic!("cannot read {member} from {wheel}: {error}"));
    data
}

/// `site/pkg` and `site/pkg.libs`, as an installed repaired wheel lays them out.
pub fn wheel_like_layout(dir: &Path) -> (PathBuf, PathBuf) {
    let pkg = dir.join("site/pkg");
    let libs = dir.join("site/pkg.libs");
    for folder in [&pkg, &libs] {
        fs::create_dir_all(folder).expect("create layout folder");
    }
    (pkg, libs)
}

pub fn edit_file(input: &Path, output: &Path, edits: &ElfEdits) -> PathBuf {
    let data = fs::read(input).expect("read input library");
    let edited = apply_edits(&data, edits)
        .unwrap_or_else(|error| panic!("editing {}: {error}", input.display()));
    fs::write(output, edited).expect("write edited library");
    output.to_path_buf()
}

pub fn zig_cc(target: Target, args: &[&std::ffi::OsStr]) {
    let cache = std::env::var_os("ZIG_GLOBAL_CACHE_DIR")
        .map_or_else(|| home().join(".cache/crosswheel/zig"), PathBuf::from);
    let output = Command::new("python3")
        .args(["-m", "ziglang", "cc", "-target", target.zig_triple, "-O2"])
        .args(target.zig_flags)
        .args(args)
        .env("ZIG_GLOBAL_CACHE_DIR", cache)
        .output()
        .unwrap_or_else(|error| panic!("cannot run python3 -m ziglang ({error}): install python3"));
    assert!(
        output.status.success(),
        "`python3 -m ziglang cc -target {}` failed (install zig with `pip install ziglang`):\n{}",
        target.zig_triple,
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Debian's glibc for the target, from tests/it/common/target-libc.sh (cached).
pub fn sysroot(target: Target) -> PathBuf {
    static LOCK: OnceLock<Mutex<()>> = OnceLock::new();
    // Two tests of one arch must not unpack the same sysroot at once.
    let _guard = LOCK
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/common/target-libc.sh");
    let output = Command::new("bash")
        .arg(&script)
        .arg(target.name)
        .output()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", script.display()));
    assert!(
        output.status.success(),
        "{} {} failed:\n{}",
        script.display(),
        target.name,
        String::from_utf8_lossy(&output.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
}

pub fn run_loader(target: Target, loader: &Path, args: &[&str]) -> String {
    let mut command = match target.qemu {
        Some(qemu) => {
            let mut command = Command::new(qemu);
            command.arg("-L").arg(sysroot(target)).arg(loader);
            command
        }
        None => Command::new(loader),
    };
    let runner = target.qemu.unwrap_or("the host");
    let output = command
        .args(args)
        .envs(target.qemu_env.iter().copied())
        .output()
        .unwrap_or_else(|error| {
            panic!(
                "cannot run the loader under {runner} ({error}): apt-get install qemu-user-static"
            )
        });
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "loader {args:?} under {runner} failed:\n{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

pub fn assert_printed(output: &str, symbol: &str, expected: f64) {
    let value: f64 = output
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{symbol}=")))
        .unwrap_or_else(|| panic!("loader printed no {symbol}= line:\n{output}"))
        .parse()
        .unwrap_or_else(|error| panic!("bad {symbol} value in {output:?}: {error}"));
    assert!(
        (value - expected).abs() < 1e-9,
        "{symbol} returned {value}, expected {expected}"
    );
}

/// binutils' readelf: a reading independent of the `object` crate. Warnings on
/// stderr (readelf's way of reporting malformed headers) fail the test.
pub fn readelf(args: &[&str], path: &Path) -> String {
    let output = Command::new("readelf")
        .args(args)
        .arg(path)
        .output()
        .unwrap_or_else(|error| panic!("cannot run readelf ({error}): apt-get install binutils"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stderr.trim().is_empty(),
        "readelf {args:?} {} complained:\n{stderr}",
        path.display()
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Values of the `(TAG)` lines of `readelf -d`, e.g. `[libm.so.6]` -> `libm.so.6`.
pub fn dynamic_values(readelf_dynamic: &str, tag: &str) -> Vec<String> {
    let marker = format!("({tag})");
    readelf_dynamic
        .lines()
        .filter(|line| line.split_whitespace().nth(1) == Some(marker.as_str()))
        .filter_map(|line| {
            let start = line.find('[')?;
            let end = line.rfind(']')?;
            Some(line.get(start + 1..end)?.to_owned())
        })
        .collect()
}

pub fn count_loads(readelf_segments: &str) -> usize {
    readelf_segments
        .lines()
        .filter(|line| line.trim_start().starts_with("LOAD "))
        .count()
}

pub fn assert_program_headers_are_sane(path: &Path) {
    let data = fs::read(path).expect("read edited file");
    check_layout(&data).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    // readelf reports segments outside the file or sections outside segments.
    readelf(&["-lSW"], path);
}

/// File offset of the section header named `name` in a 64-bit little-endian ELF.
pub fn section_header_offset(data: &[u8], name: &str) -> usize {
    use object::{Object, ObjectSection};
    let file =
        object::read::elf::ElfFile64::<object::Endianness>::parse(data).expect("parse fixture");
    let index = file
        .section_by_name(name)
        .unwrap_or_else(|| panic!("fixture has no {name}"))
        .index()
        .0;
    let e_shoff = u64::from_le_bytes(data[0x28..0x30].try_into().expect("8 bytes"));
    usize::try_from(e_shoff).expect("small offset") + index * 64
}
