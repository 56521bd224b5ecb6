//! The peers' commands a configuration calls in its `repair-wheel-command` —
//! `auditwheel repair --strip ...`, `delocate-listdeps`, `delocate-wheel --require-archs
//! {delocate_archs} ...` — answered by crosswheel's repair for the build's target, with
//! the libraries crosswheel built for it on their search path, as a container's
//! `/usr/local/lib` is for the real tools.

use std::path::Path;
use std::process::{Command, Output};

use crate::common;
use crate::target_libraries::{build, read_bytes, text_of, wheel_in, zdemo_project};

/// zdemo (a C extension linking zlib, built for the target from `target-libraries`)
/// with `repair` as its `repair-wheel-command`.
fn build_with_repair_command(dir: &Path, identifier: &str, repair: &str) -> Output {
    let project = zdemo_project(dir);
    let pyproject = project.join("pyproject.toml");
    let mut text = std::fs::read_to_string(&pyproject).unwrap();
    text.push_str(&format!("repair-wheel-command = {repair:?}\n"));
    std::fs::write(&pyproject, text).unwrap();
    build(&project, identifier, &dir.join("wheelhouse"))
}

fn has_symbol_table(elf: &[u8]) -> bool {
    use object::{Object, ObjectSection};
    let file = object::File::parse(elf).expect("an ELF file");
    file.sections()
        .any(|section| matches!(section.name(), Ok(".symtab" | ".strtab")))
}

/// ydemo: a C extension linking libyaml, which crosswheel builds for the target from
/// `target-libraries` and which no manylinux policy lets a wheel take from the system.
fn ydemo_project(dir: &Path, repair: &str) -> std::path::PathBuf {
    let setup_py = "from setuptools import setup, Extension\n\
        setup(ext_modules=[Extension('ydemo._y', ['ydemo/_y.c'], libraries=['yaml'])])\n";
    let source = r#"#include <Python.h>
#include <yaml.h>

static PyObject *version(PyObject *self, PyObject *args) {
    return PyUnicode_FromString(yaml_get_version_string());
}

static PyMethodDef methods[] = {{"version", version, METH_NOARGS, NULL}, {NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_y", NULL, -1, methods};
PyMODINIT_FUNC PyInit__y(void) { return PyModule_Create(&module); }
"#;
    let project = common::setuptools_project(
        dir,
        "ydemo",
        setup_py,
        &[("ydemo/_y.c".to_string(), source.to_string())],
    );
    let pyproject = project.join("pyproject.toml");
    let mut text = std::fs::read_to_string(&pyproject).unwrap();
    text.push_str(&format!(
        "\n[tool.crosswheel]\ntarget-libraries = [\"libyaml\"]\n\
         test-command = \"python -c \\\"from ydemo import _y; print('libyaml', _y.version())\\\"\"\n\
         repair-wheel-command = {repair:?}\n"
    ));
    std::fs::write(&pyproject, text).unwrap();
    project
}

/// lxml's own command, on linux-aarch64: libyaml is vendored under `ydemo.libs` from the
/// target's libraries, every ELF file is stripped, and the wheel passes its test under
/// qemu.
#[test]
#[ignore = "slow: libraries built from Debian sources, zig, qemu"]
fn auditwheel_repair_with_strip_vendors_the_target_library_and_strips_every_elf_file() {
    let dir = tempfile::tempdir().unwrap();
    let project = ydemo_project(
        dir.path(),
        "auditwheel repair --strip -w {dest_dir} {wheel}",
    );
    let output = build(
        &project,
        "cp311-manylinux_aarch64",
        &dir.path().join("wheelhouse"),
    );
    let text = text_of(&output);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("libyaml 0.2.5"),
        "the test ran under qemu:\n{text}"
    );
    let (wheel, files) = wheel_in(&dir.path().join("wheelhouse"));
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.contains("manylinux_2_17_aarch64"), "{name}");
    let vendored: Vec<&String> = files
        .iter()
        .filter(|file| file.starts_with("ydemo.libs/libyaml-"))
        .collect();
    assert_eq!(vendored.len(), 1, "{files:?}");
    let elf_files: Vec<&String> = files
        .iter()
        .filter(|file| file.ends_with(".so") || file.contains(".so."))
        .collect();
    assert_eq!(elf_files.len(), 2, "{files:?}");
    for file in elf_files {
        assert!(
            !has_symbol_table(&read_bytes(&wheel, file)),
            "{file} still has a symbol table"
        );
    }
}

/// The default macOS command of cibuildwheel, preceded by `delocate-listdeps`: the
/// listing names the target's libz, the wheel vendors it under `zdemo/.dylibs` and
/// passes the static check; `--require-archs` of another architecture fails naming it.
#[test]
#[ignore = "slow: libraries built from Debian sources, zig"]
fn delocate_listdeps_and_wheel_with_delocate_archs_vendor_the_target_library_for_macos() {
    let dir = tempfile::tempdir().unwrap();
    let output = build_with_repair_command(
        dir.path(),
        "cp311-macosx_arm64",
        "delocate-listdeps {wheel} && delocate-wheel --require-archs {delocate_archs} -w {dest_dir} -v {wheel}",
    );
    let text = text_of(&output);
    assert!(output.status.success(), "{text}");
    assert!(
        text.lines()
            .any(|line| line.ends_with(".dylib") && line.contains("libz")),
        "delocate-listdeps lists the target's libz:\n{text}"
    );
    assert!(
        text.contains("Copied to package .dylibs directory:"),
        "{text}"
    );
    let (_, files) = wheel_in(&dir.path().join("wheelhouse"));
    assert!(
        files
            .iter()
            .any(|file| file.starts_with("zdemo/.dylibs/libz")),
        "{files:?}"
    );

    let other = tempfile::tempdir().unwrap();
    let output = build_with_repair_command(
        other.path(),
        "cp311-macosx_arm64",
        "delocate-wheel --require-archs x86_64 -w {dest_dir} {wheel}",
    );
    let text = text_of(&output);
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains(
            "lacks the architectures x86_64 that --require-archs asks for (it has arm64)"
        ),
        "{text}"
    );
}

/// A peer flag crosswheel cannot honour stops the command in one line that names it,
/// before anything is read or written.
#[test]
fn a_peer_flag_crosswheel_cannot_honour_is_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in ["auditwheel", "delocate-wheel"] {
        std::os::unix::fs::symlink(common::crosswheel_bin(), bin.join(name)).unwrap();
    }
    let wheel = dir.path().join("demo-1.0-cp311-cp311-linux_aarch64.whl");
    std::fs::write(&wheel, b"not read").unwrap();
    let cases: [(&str, &[&str], &str); 4] = [
        (
            "auditwheel",
            &["repair", "-z", "9", "-w", "out"],
            "error: auditwheel repair -z 9: crosswheel writes every wheel at one compression",
        ),
        (
            "auditwheel",
            &["repair", "--patcher", "none", "-w", "out"],
            "error: auditwheel repair --patcher none: ",
        ),
        (
            "auditwheel",
            &["show", "--ldpaths", "/opt/lib"],
            "error: auditwheel show --ldpaths /opt/lib: ",
        ),
        (
            "delocate-wheel",
            &["--no-sanitize-rpaths", "-w", "out"],
            "error: delocate-wheel --no-sanitize-rpaths: ",
        ),
    ];
    for (program, args, expected) in cases {
        let output = Command::new(bin.join(program))
            .args(args)
            .arg(&wheel)
            .current_dir(dir.path())
            .output()
            .expect("the peer runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{program} {args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{program} {args:?}: {stderr}");
        assert!(stderr.starts_with(expected), "{program} {args:?}: {stderr}");
        assert!(!dir.path().join("out").exists(), "nothing written");
    }
    assert_eq!(
        std::fs::read(&wheel).unwrap(),
        b"not read",
        "the input is untouched"
    );
}

/// `pipx run <peer> ...` (cibuildwheel documents `pipx run abi3audit --strict --report
/// {wheel}`) is the peer; any other pipx line is the machine's own pipx's, and without one
/// it is one line saying so.
#[test]
fn pipx_run_of_a_peer_is_the_peer_and_anything_else_is_the_machines_pipx() {
    let dir = tempfile::tempdir().unwrap();
    let peers = dir.path().join("peers");
    std::fs::create_dir_all(&peers).unwrap();
    std::os::unix::fs::symlink(common::crosswheel_bin(), peers.join("pipx")).unwrap();
    let wheel = dir.path().join("demo-1.0-cp311-cp311-linux_aarch64.whl");
    std::fs::write(&wheel, b"not read").unwrap();
    let pipx = |path: &Path, args: &[&str]| -> Output {
        Command::new(peers.join("pipx"))
            .args(args)
            .env("PATH", path)
            .current_dir(dir.path())
            .output()
            .expect("pipx runs")
    };
    // The peer answers: its own one-line refusal of a flag it cannot honour.
    let output = pipx(
        &peers,
        &[
            "run",
            "auditwheel",
            "show",
            "--ldpaths",
            "/opt/lib",
            "w.whl",
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("error: auditwheel show --ldpaths /opt/lib: "),
        "{stderr}"
    );
    let output = pipx(&peers, &["run", "twine", "check", "w.whl"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: `pipx run twine check w.whl`: this machine has no pipx, and crosswheel answers `pipx run` only for auditwheel, delocate-wheel, delocate-listdeps, delocate-merge, abi3audit: install pipx"),
        "{stderr}"
    );
    let machine = dir.path().join("machine");
    std::fs::create_dir_all(&machine).unwrap();
    std::fs::write(
        machine.join("pipx"),
        "#!/bin/sh\necho \"machine's pipx: $*\"\nexit 3\n",
    )
    .unwrap();
    std::fs::set_permissions(
        machine.join("pipx"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let both = std::env::join_paths([&peers, &machine]).unwrap();
    let output = pipx(Path::new(&both), &["run", "twine", "check", "w.whl"]);
    assert_eq!(output.status.code(), Some(3));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "machine's pipx: run twine check w.whl\n"
    );
    let output = pipx(Path::new(&both), &["install", "abi3audit"]);
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "machine's pipx: install abi3audit\n"
    );
    assert_eq!(std::fs::read(&wheel).unwrap(), b"not read");
}

/// `abi3audit`, which configurations append to their `repair-wheel-command`, is the real
/// tool, pinned by SHA-256 and installed once into crosswheel's cache: it passes an abi3
/// wheel of another architecture (cryptography's aarch64 wheel from the index).
#[test]
#[ignore = "slow: the fixture cache, and the package index once to install abi3audit"]
fn abi3audit_is_the_pinned_real_tool_and_audits_a_foreign_architectures_wheel() {
    let wheel = common::fixture(
        "cryptography-50.0.2-cp311-abi3-manylinux2014_aarch64.manylinux_2_17_aarch64.whl",
    );
    let dir = tempfile::tempdir().unwrap();
    let abi3audit = dir.path().join("abi3audit");
    std::os::unix::fs::symlink(common::crosswheel_bin(), &abi3audit).unwrap();
    let output = Command::new(&abi3audit)
        .args(["--strict", "--report"])
        .arg(&wheel)
        .output()
        .expect("abi3audit runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("\"_rust.abi3.so\"") && stdout.contains("\"is_abi3\": true"),
        "{stdout}"
    );
    // As cibuildwheel's documentation writes the line: the peer answers first, whether or
    // not the machine has a pipx.
    let pipx = dir.path().join("pipx");
    std::os::unix::fs::symlink(common::crosswheel_bin(), &pipx).unwrap();
    let through_pipx = Command::new(&pipx)
        .args(["run", "abi3audit", "--strict", "--report"])
        .arg(&wheel)
        .env(
            "PATH",
            std::env::join_paths(
                std::iter::once(dir.path().to_path_buf())
                    .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
            )
            .unwrap(),
        )
        .output()
        .expect("pipx runs");
    assert!(
        through_pipx.status.success(),
        "{}",
        String::from_utf8_lossy(&through_pipx.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&through_pipx.stdout), stdout);
}

/// `before-all` finds the peers first on its PATH too, answering for its target.
#[test]
#[ignore = "slow: a C extension built with zig"]
fn before_all_finds_the_peers_on_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let project = zdemo_project(dir.path());
    let pyproject = project.join("pyproject.toml");
    let mut text = std::fs::read_to_string(&pyproject).unwrap();
    text.push_str(
        "before-all = \"for peer in auditwheel delocate-wheel delocate-listdeps abi3audit; do command -v $peer || exit 1; done; test \\\"$CROSSWHEEL_PEER_TARGET\\\" = linux-aarch64\"\n",
    );
    std::fs::write(&pyproject, text).unwrap();
    let output = build(
        &project,
        "cp311-manylinux_aarch64",
        &dir.path().join("wheelhouse"),
    );
    let text = text_of(&output);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("/peers/abi3audit"), "{text}");
}

/// The test command finds the peers on its PATH too, after the test venv, answering for
/// its target: `auditwheel show` of the wheel under test reads the target's policy.
#[test]
#[ignore = "slow: a C extension built with zig, tested under qemu"]
fn the_test_command_finds_the_peers_on_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let project = zdemo_project(dir.path());
    let pyproject = project.join("pyproject.toml");
    let text = std::fs::read_to_string(&pyproject).unwrap();
    // The project's own test command, replaced by one that calls the peers.
    let text: String = text
        .lines()
        .filter(|line| !line.starts_with("test-command"))
        .map(|line| format!("{line}\n"))
        .collect();
    let text = format!(
        "{text}test-command = \"for peer in auditwheel abi3audit delocate-listdeps; do command -v $peer | grep -q /peers/ || exit 1; done; \
         test \\\"$CROSSWHEEL_PEER_TARGET\\\" = linux-aarch64 && echo peers-found\"\n"
    );
    std::fs::write(&pyproject, text).unwrap();
    let output = build(
        &project,
        "cp311-manylinux_aarch64",
        &dir.path().join("wheelhouse"),
    );
    let text = text_of(&output);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("peers-found"), "{text}");
}
