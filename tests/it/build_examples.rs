//! Cross builds of the meson-python and scikit-build-core examples with zig.
//!
//! Needs python3.11 on PATH and network access on the first run (meson-python, ninja,
//! scikit-build-core, cmake); later runs use crosswheel's cache.

use crate::common;

use std::io::Read;
use std::path::{Path, PathBuf};

use crosswheel::stages::backend::{Backend, BuiltWheel};
use crosswheel::support::host::BuildPython;

const EM_AARCH64: u16 = 183;
const EM_PPC64: u16 = 21;
const CPU_TYPE_ARM64: u32 = 0x0100_000c;

/// Builds `example` for `target` with every kind of build interpreter this machine has
/// (the distribution's CPython, whose headers are Debian's multiarch wrapper, and a
/// pyenv or uv one); every build must give the same wheel name. Returns the first.
fn build(example: &str, target: &str, out_dir: &Path) -> BuiltWheel {
    let builds: Vec<BuiltWheel> = common::build_pythons()
        .iter()
        .enumerate()
        .map(|(kind, python)| build_with(python, example, target, &out_dir.join(kind.to_string())))
        .collect();
    for built in &builds[1..] {
        assert_eq!(file_name(&built.path), file_name(&builds[0].path));
    }
    builds
        .into_iter()
        .next()
        .expect("at least the distribution's CPython")
}

fn build_with(python: &BuildPython, example: &str, target: &str, out_dir: &Path) -> BuiltWheel {
    let env = common::zig_cross_env(python, target);
    let project: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(example);
    common::build_in(&env, python, &project, out_dir).unwrap_or_else(|err| panic!("{err}"))
}

/// Names of the wheel's members and the bytes of the one whose name starts with `prefix`.
fn member(wheel: &Path, prefix: &str) -> (String, Vec<u8>) {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(wheel).unwrap()).unwrap();
    let names: Vec<String> = (0..archive.len())
        .map(|index| {
            archive
                .by_index(index)
                .unwrap()
                .name()
                .unwrap()
                .into_owned()
        })
        .filter(|name| name.starts_with(prefix))
        .collect();
    assert_eq!(
        names.len(),
        1,
        "one member starting with {prefix} expected in {}: {names:?}",
        wheel.display()
    );
    let mut data = Vec::new();
    archive
        .by_name(&names[0])
        .unwrap()
        .read_to_end(&mut data)
        .unwrap();
    (names[0].clone(), data)
}

fn file_name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

fn elf_machine(data: &[u8]) -> u16 {
    goblin::elf::Elf::parse(data).unwrap().header.e_machine
}

#[test]
#[ignore = "slow: builds the examples with zig"]
fn meson_python_example_for_linux_aarch64() {
    let out = tempfile::tempdir().unwrap();
    let built = build("mesonproj", "linux-aarch64", out.path());
    assert_eq!(built.backend, Backend::MesonPython);
    assert_eq!(
        file_name(&built.path),
        "mesonproj-0.1.0-cp311-cp311-linux_aarch64.whl"
    );
    let (name, data) = member(&built.path, "mesonproj/_fib");
    assert_eq!(name, "mesonproj/_fib.cpython-311-aarch64-linux-gnu.so");
    assert_eq!(elf_machine(&data), EM_AARCH64);
}

#[test]
#[ignore = "slow: builds the examples with zig"]
fn meson_python_example_for_linux_ppc64le() {
    let out = tempfile::tempdir().unwrap();
    let built = build("mesonproj", "linux-ppc64le", out.path());
    assert_eq!(
        file_name(&built.path),
        "mesonproj-0.1.0-cp311-cp311-linux_ppc64le.whl"
    );
    let (name, data) = member(&built.path, "mesonproj/_fib");
    assert_eq!(name, "mesonproj/_fib.cpython-311-powerpc64le-linux-gnu.so");
    assert_eq!(elf_machine(&data), EM_PPC64);
}

#[test]
#[ignore = "slow: builds the examples with zig"]
fn meson_python_example_for_macos_arm64() {
    let out = tempfile::tempdir().unwrap();
    let built = build("mesonproj", "macos-arm64", out.path());
    assert_eq!(
        file_name(&built.path),
        "mesonproj-0.1.0-cp311-cp311-macosx_11_0_arm64.whl"
    );
    let (name, data) = member(&built.path, "mesonproj/_fib");
    assert_eq!(name, "mesonproj/_fib.cpython-311-darwin.so");
    let goblin::mach::Mach::Binary(macho) = goblin::mach::Mach::parse(&data).unwrap() else {
        panic!("{name} is a fat Mach-O; expected a thin arm64 one");
    };
    assert_eq!(macho.header.cputype, CPU_TYPE_ARM64);
}

#[test]
#[ignore = "slow: builds the examples with zig"]
fn scikit_build_core_example_for_linux_aarch64() {
    let out = tempfile::tempdir().unwrap();
    let built = build("cmakeproj", "linux-aarch64", out.path());
    assert_eq!(built.backend, Backend::ScikitBuildCore);
    assert_eq!(
        file_name(&built.path),
        "cmakeproj-0.1.0-cp311-cp311-linux_aarch64.whl"
    );
    let (name, data) = member(&built.path, "cmakeproj/_gcd");
    assert_eq!(name, "cmakeproj/_gcd.cpython-311-aarch64-linux-gnu.so");
    assert_eq!(elf_machine(&data), EM_AARCH64);
}

#[test]
#[ignore = "slow: builds the examples with zig"]
fn scikit_build_core_example_for_macos_arm64() {
    let out = tempfile::tempdir().unwrap();
    let built = build("cmakeproj", "macos-arm64", out.path());
    assert_eq!(
        file_name(&built.path),
        "cmakeproj-0.1.0-cp311-cp311-macosx_11_0_arm64.whl"
    );
    let (name, data) = member(&built.path, "cmakeproj/_gcd");
    assert_eq!(name, "cmakeproj/_gcd.cpython-311-darwin.so");
    let goblin::mach::Mach::Binary(macho) = goblin::mach::Mach::parse(&data).unwrap() else {
        panic!("{name} is a fat Mach-O; expected a thin arm64 one");
    };
    assert_eq!(macho.header.cputype, CPU_TYPE_ARM64);
}
