//! Cross builds of examples/blasdot (setuptools + scipy-openblas32) with zig, checked
//! by reading the produced wheels, plus the build stage's failure paths.
//!
//! Needs python3.11 on PATH and network access on the first run (ziglang, setuptools,
//! scipy-openblas32 target wheels); later runs use crosswheel's cache.

use std::io::Read;
use std::path::{Path, PathBuf};

use crosswheel::stages::backend::{BuildError, BuildRequest, BuiltWheel, build_wheel};
use crosswheel::stages::crossenv::CrossEnv;
use crosswheel::stages::toolchain::{ToolchainError, resolve_toolchain};
use crosswheel::support::host::{BuildPython, Cache};
use crosswheel::target::Target;
use crosswheel::target::ToolchainKind;

const EM_AARCH64: u16 = 183;
const EM_PPC64: u16 = 21;
const CPU_TYPE_ARM64: u32 = 0x0100_000c;

fn build_python() -> BuildPython {
    BuildPython::find(crosswheel::python_tag::PythonTag::parse("cp311").unwrap())
        .unwrap_or_else(|err| panic!("these tests need CPython 3.11 on PATH: {err}"))
}

fn cross_env(target: &Target, python: &BuildPython) -> (Cache, CrossEnv) {
    let cache = Cache::from_env().expect("a cache directory");
    let toolchain = resolve_toolchain(
        ToolchainKind::Zig,
        target,
        &cache,
        &python.executable,
        &crosswheel::support::host::Network::default(),
        &[],
        None,
    )
    .unwrap_or_else(|err| panic!("zig toolchain for {target}: {err}"));
    let env = CrossEnv::create(&cache, python, &toolchain, None, None)
        .unwrap_or_else(|err| panic!("cross env: {err}"));
    (cache, env)
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
}

fn build(project: &Path, target: &str, out_dir: &Path) -> Result<BuiltWheel, BuildError> {
    // blasdot's `target-requires` (the plan carries it; the build stage reads no options).
    let target_requires = if project.ends_with("blasdot") {
        vec!["scipy-openblas32".to_string()]
    } else {
        Vec::new()
    };
    let target = Target::parse(target).unwrap();
    let python = build_python();
    let (cache, env) = cross_env(&target, &python);
    build_wheel(&BuildRequest {
        project_dir: project,
        out_dir,
        cross_env: &env,
        python: &python,
        cache: &cache,
        config_settings: &[],
        target_prefixes: &[],
        target_requires: &target_requires,
        environment: &Default::default(),
        offline: false,
        verbosity: 0,
        constraints: &[],
        frontend: &Default::default(),
        hook_env: None,
        log_file: None,
        progress: None,
        header_builder: None,
    })
}

/// The bytes of the one `blasdot/_core*` member, with its name.
fn extension_of(wheel: &Path) -> (String, Vec<u8>) {
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
        .filter(|name| name.starts_with("blasdot/_core"))
        .collect();
    assert_eq!(
        names.len(),
        1,
        "one extension module expected in {}: {names:?}",
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

fn only_entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn assert_linux_extension(target: &str, platform_tag: &str, ext_suffix: &str, machine: u16) {
    let out = tempfile::tempdir().unwrap();
    let built =
        build(&example("blasdot"), target, out.path()).unwrap_or_else(|err| panic!("{err}"));
    eprintln!(
        "blasdot for {target}: build_wheel took {:.2?}",
        built.duration
    );
    assert_eq!(
        file_name(&built.path),
        format!("blasdot-0.1.0-cp311-cp311-{platform_tag}.whl")
    );
    assert_eq!(
        only_entries(out.path()),
        [file_name(&built.path)],
        "nothing but the wheel in the output dir"
    );
    let (name, data) = extension_of(&built.path);
    assert_eq!(name, format!("blasdot/_core{ext_suffix}"));
    let elf = goblin::elf::Elf::parse(&data).unwrap();
    assert_eq!(elf.header.e_machine, machine);
    assert!(
        elf.libraries.contains(&"libscipy_openblas.so"),
        "DT_NEEDED: {:?}",
        elf.libraries
    );
    assert!(
        !elf.libraries.iter().any(|lib| lib.starts_with("libpython")),
        "must not link libpython: {:?}",
        elf.libraries
    );
    let rpaths: Vec<&str> = elf.runpaths.iter().chain(&elf.rpaths).copied().collect();
    assert!(
        rpaths.is_empty(),
        "no host rpath may leak into the extension: {rpaths:?}"
    );
}

#[test]
#[ignore = "slow: builds examples/blasdot with zig"]
fn blasdot_for_linux_aarch64_is_an_aarch64_extension_needing_openblas() {
    assert_linux_extension(
        "linux-aarch64",
        "linux_aarch64",
        ".cpython-311-aarch64-linux-gnu.so",
        EM_AARCH64,
    );
}

#[test]
#[ignore = "slow: builds examples/blasdot with zig"]
fn blasdot_for_linux_ppc64le_is_a_ppc64le_extension_needing_openblas() {
    assert_linux_extension(
        "linux-ppc64le",
        "linux_ppc64le",
        ".cpython-311-powerpc64le-linux-gnu.so",
        EM_PPC64,
    );
}

#[test]
#[ignore = "slow: builds examples/blasdot with zig"]
fn blasdot_for_macos_arm64_is_an_arm64_bundle_needing_openblas() {
    let out = tempfile::tempdir().unwrap();
    let built =
        build(&example("blasdot"), "macos-arm64", out.path()).unwrap_or_else(|err| panic!("{err}"));
    eprintln!(
        "blasdot for macos-arm64: build_wheel took {:.2?}",
        built.duration
    );
    assert_eq!(
        file_name(&built.path),
        "blasdot-0.1.0-cp311-cp311-macosx_11_0_arm64.whl"
    );
    let (name, data) = extension_of(&built.path);
    assert_eq!(name, "blasdot/_core.cpython-311-darwin.so");
    let goblin::mach::Mach::Binary(macho) = goblin::mach::Mach::parse(&data).unwrap() else {
        panic!("{name} is a fat Mach-O; expected a thin arm64 one");
    };
    assert_eq!(macho.header.cputype, CPU_TYPE_ARM64);
    assert!(
        macho
            .libs
            .iter()
            .any(|lib| lib.ends_with("libscipy_openblas.dylib")),
        "load commands: {:?}",
        macho.libs
    );
    let minos = macho
        .load_commands
        .iter()
        .find_map(|command| match &command.command {
            goblin::mach::load_command::CommandVariant::BuildVersion(version) => {
                Some(version.minos)
            }
            _ => None,
        });
    assert_eq!(minos, Some(11 << 16), "LC_BUILD_VERSION minos must be 11.0");
}

#[test]
#[ignore = "slow: builds examples/blasdot with zig"]
fn c_syntax_error_names_the_target_and_shows_the_compiler_message() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(
        project.path().join("pyproject.toml"),
        "[build-system]\nrequires = ['setuptools>=68']\nbuild-backend = 'setuptools.build_meta'\n[project]\nname = 'broken'\nversion = '1.0'\n",
    )
    .unwrap();
    std::fs::write(
        project.path().join("setup.py"),
        "from setuptools import Extension, setup\nsetup(ext_modules=[Extension('broken', ['broken.c'])])\n",
    )
    .unwrap();
    std::fs::write(
        project.path().join("broken.c"),
        "int broken(void) { return 1 }\n",
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let err = build(project.path(), "linux-ppc64le", out.path()).unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, BuildError::BackendFailed { .. }), "{message}");
    assert!(
        message.contains("linux-ppc64le"),
        "names the target: {message}"
    );
    assert!(
        message.contains("broken.c:1:") && message.contains("error: expected ';'"),
        "shows the compiler: {message}"
    );
    assert!(
        only_entries(out.path()).is_empty(),
        "no partial output: {:?}",
        only_entries(out.path())
    );
}

#[test]
#[ignore = "slow: builds examples/blasdot with zig"]
fn offline_without_zig_fails_with_the_install_command() {
    if std::env::var_os("CROSSWHEEL_ZIG").is_some() {
        panic!("unset CROSSWHEEL_ZIG: it would stand in for the missing zig");
    }
    let empty_cache = tempfile::tempdir().unwrap();
    let cache = Cache::at(empty_cache.path());
    let target = Target::parse("linux-aarch64").unwrap();
    let err = resolve_toolchain(
        ToolchainKind::Zig,
        &target,
        &cache,
        Path::new("python3"),
        &crosswheel::support::host::Network::new(true, None),
        &[],
        None,
    )
    .unwrap_err();
    assert!(
        matches!(err, ToolchainError::ZigMissingOffline { .. }),
        "{err}"
    );
    let message = err.to_string();
    assert!(
        message.contains("--offline")
            && message.contains("pip --python")
            && message.contains("install 'ziglang=="),
        "{message}"
    );
    assert!(
        !empty_cache.path().join("ziglang-venv").exists(),
        "offline must not install anything"
    );
}
