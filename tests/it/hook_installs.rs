//! Build-time installs that serve the target (docs/hooks.md), in real builds:
//! - numpy's way of getting OpenBLAS, a `before-build` that pip-installs scipy-openblas64
//!   and writes `get_pkg_config()` to a `.pc` file, links the aarch64 OpenBLAS
//!   (tests/data/hookblas) and passes its test under qemu;
//! - a library of the build machine linked anyway fails with one line naming the file,
//!   its architecture and the distribution it came from;
//! - a `before-build` pip install goes into the build's own environment: the user's
//!   python on PATH is left as it was, and a build without isolation sees what the hook
//!   installed;
//! - `repair-wheel-command` runs in that environment too: its `python` and `pip` are the
//!   build's, on a machine without a `python` command;
//! - examples/blasdot with a pure `[tool.cibuildwheel]` table (scipy-openblas32 only among
//!   its build requirements) builds and passes its tests on all three targets.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{blasdot_with_table, crosswheel_bin};

fn copy_tree(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let target = to.join(entry.path().strip_prefix(from).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn hookblas() -> tempfile::TempDir {
    let project = tempfile::tempdir().unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hookblas");
    copy_tree(&data, project.path());
    project
}

/// `crosswheel build` with only the given CIBW_* variables, PATH optionally led by `path_first`.
fn build(
    project: &Path,
    out: &Path,
    env: &[(&str, &str)],
    path_first: Option<&Path>,
) -> (Output, String) {
    let mut command = Command::new(crosswheel_bin());
    command.arg("build").arg(project).arg("-w").arg(out);
    common::without_option_variables(&mut command);
    for (name, value) in env {
        command.env(name, value);
    }
    if let Some(dir) = path_first {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![dir.to_path_buf()];
        dirs.extend(std::env::split_paths(&path));
        command.env("PATH", std::env::join_paths(dirs).unwrap());
    }
    let output = command.output().expect("run crosswheel build");
    let all = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output, all)
}

#[test]
#[ignore = "slow: builds a meson project against scipy-openblas64 with zig, tests it under qemu"]
fn a_numpy_style_before_build_links_the_targets_openblas() {
    let project = hookblas();
    let out = tempfile::tempdir().unwrap();
    let (output, all) = build(project.path(), out.path(), &[], None);
    assert!(output.status.success(), "build failed:\n{all}");
    assert!(
        all.contains("crosswheel: scipy-openblas64 0.3.31.188.0 installed for linux-aarch64:"),
        "{all}"
    );
    // The hook wrote its pkg-config file into the target's copy of the project (as into a
    // cibuildwheel container's /project), never into the user's tree; the library it names
    // is the build environment's aarch64 one (the build linked it, the test ran it).
    assert!(
        !project.path().join(".openblas").exists(),
        "the hook wrote into the user's project"
    );
    assert!(
        all.contains("/env/lib/python3.11/site-packages/scipy_openblas64/lib/libscipy_openblas64_.so as hookblas.libs/"),
        "{all}"
    );
    let row = all
        .lines()
        .find(|line| line.starts_with("cp311-manylinux_aarch64"))
        .unwrap_or_else(|| panic!("{all}"));
    assert!(row.contains("passed (emulated)"), "{row}");
    assert!(
        all.contains("as hookblas.libs/libscipy_openblas64_-"),
        "{all}"
    );
}

#[test]
#[ignore = "slow: a zig link of a meson project against the build machine's OpenBLAS"]
fn a_build_machine_library_linked_for_the_target_fails_in_one_line_naming_it() {
    let project = hookblas();
    let out = tempfile::tempdir().unwrap();
    // The mistake crosswheel cannot undo: pip told to install elsewhere (`--target`), so
    // the build machine's wheel stays as it is, and the .pc file names its library.
    let before_build = "mkdir -p {project}/.openblas && python -m pip install --quiet --target {project}/.deps scipy-openblas64==0.3.31.188.0 && PYTHONPATH={project}/.deps python -c 'import scipy_openblas64; print(scipy_openblas64.get_pkg_config())' > {project}/.openblas/scipy-openblas.pc";
    let (output, all) = build(
        project.path(),
        out.path(),
        &[("CIBW_BEFORE_BUILD", before_build)],
        None,
    );
    assert!(!output.status.success(), "{all}");
    let line = all
        .lines()
        .find(|line| line.contains("build linked "))
        .unwrap_or_else(|| panic!("no wrong-architecture line:\n{all}"));
    // The hook installed into the target's copy of the project (as into a cibuildwheel
    // container's /project), which the line names.
    assert!(
        line.contains("the linux-aarch64 build linked /")
            && line.contains("/.deps/scipy_openblas64/lib/libscipy_openblas64_.so"),
        "{line}"
    );
    assert!(
        line.contains("an x86_64 library from scipy-openblas64 0.3.31.188.0"),
        "{line}"
    );
    assert!(line.contains("requirement `scipy-openblas64`"), "{line}");
}

/// A venv of the distribution's CPython 3.11 with setuptools: the user's own python.
fn users_venv(dir: &Path) -> PathBuf {
    let python = common::distribution_python();
    let venv = dir.join("users-venv");
    let status = Command::new(&python.executable)
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(status.success());
    let status = Command::new(venv.join("bin/python"))
        .args(["-m", "pip", "install", "--quiet", "setuptools>=77"])
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::canonicalize(venv).unwrap()
}

fn installed(venv: &Path) -> String {
    let output = Command::new(venv.join("bin/python"))
        .args(["-m", "pip", "freeze", "--all"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
#[ignore = "slow: builds blasdot with zig without build isolation"]
fn a_before_build_pip_install_leaves_the_users_python_untouched() {
    let scratch = tempfile::tempdir().unwrap();
    let venv = users_venv(scratch.path());
    let before = installed(&venv);
    let marker = common::make_wheel(
        scratch.path(),
        "hookmarker-1.0-py3-none-any.whl",
        &[
            ("hookmarker.py", b"WHERE = __file__\n"),
            (
                "hookmarker-1.0.dist-info/WHEEL",
                b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
            ),
            (
                "hookmarker-1.0.dist-info/METADATA",
                b"Metadata-Version: 2.1\nName: hookmarker\nVersion: 1.0\n",
            ),
        ],
    );
    let project = tempfile::tempdir().unwrap();
    blasdot_with_table(
        project.path(),
        &format!(
            "[tool.cibuildwheel]\nbuild-verbosity = 1\nbuild-frontend = \"build; args: --no-isolation\"\nbefore-build = \"pip install --quiet {marker} setuptools>=68 scipy-openblas32\"\n",
            marker = marker.display()
        ),
    );
    // setup.py reports where the hook's package is, as the backend sees it.
    let setup = project.path().join("setup.py");
    let text = std::fs::read_to_string(&setup).unwrap();
    std::fs::write(
        &setup,
        format!("import hookmarker\nprint('hookmarker seen at', hookmarker.WHERE)\n{text}"),
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let (output, all) = build(
        project.path(),
        out.path(),
        &[
            ("CIBW_BUILD", "cp311-manylinux_aarch64"),
            ("CIBW_TEST_COMMAND", ""),
        ],
        Some(&venv.join("bin")),
    );
    assert!(output.status.success(), "build failed:\n{all}");
    let seen = all
        .lines()
        .find_map(|line| line.strip_prefix("hookmarker seen at "))
        .unwrap_or_else(|| panic!("setup.py did not import hookmarker:\n{all}"));
    assert!(
        seen.contains("/env/lib/python3.11/site-packages/"),
        "{seen}"
    );
    assert!(
        !seen.starts_with(&venv.to_string_lossy().into_owned()),
        "{seen}"
    );
    assert_eq!(installed(&venv), before, "the user's venv changed");
    // The build's own environment lives in the work folder and is gone with it.
    let env_root = seen.split("/lib/python3.11/").next().unwrap();
    assert!(
        !Path::new(env_root).exists(),
        "{env_root} outlived the build"
    );
}

const BLASDOT_CIBUILDWHEEL: &str = r#"
[tool.cibuildwheel]
build = "cp311-*"
test-requires = ["pytest"]
test-sources = ["tests"]
test-command = "python -m pytest -q tests"

[tool.cibuildwheel.linux]
archs = ["manylinux_aarch64", "manylinux_ppc64le"]

[tool.cibuildwheel.macos]
archs = ["arm64"]
"#;

#[test]
#[ignore = "slow: builds blasdot for three targets with zig, tests two under qemu"]
fn blasdot_with_a_pure_cibuildwheel_table_builds_and_passes_on_all_three_targets() {
    let project = tempfile::tempdir().unwrap();
    blasdot_with_table(project.path(), BLASDOT_CIBUILDWHEEL);
    let pyproject = std::fs::read_to_string(project.path().join("pyproject.toml")).unwrap();
    assert!(
        !pyproject.contains("crosswheel]") && !pyproject.contains("target-requires"),
        "{pyproject}"
    );
    let out = tempfile::tempdir().unwrap();
    let (output, all) = build(project.path(), out.path(), &[], None);
    assert!(output.status.success(), "build failed:\n{all}");
    assert!(
        all.contains(
            "scipy-openblas32 among the build requirements ship per-platform headers or libraries"
        ),
        "{all}"
    );
    assert_eq!(
        common::wheel_names_in(out.path()),
        [
            "blasdot-0.1.0-cp311-cp311-macosx_11_0_arm64.whl",
            "blasdot-0.1.0-cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
            "blasdot-0.1.0-cp311-cp311-manylinux_2_17_ppc64le.manylinux2014_ppc64le.whl",
        ]
    );
    for (identifier, verdict) in [
        ("cp311-manylinux_aarch64", "passed (emulated)"),
        ("cp311-manylinux_ppc64le", "passed (emulated)"),
        ("cp311-macosx_arm64", "static check (not executed)"),
    ] {
        let row = all
            .lines()
            .find(|line| line.starts_with(identifier))
            .unwrap_or_else(|| panic!("no row for {identifier}:\n{all}"));
        assert!(row.contains(verdict), "{row}");
    }
}

/// cibuildwheel's test_repair_wheel_command_structure runs `python repair.py {wheel}
/// {dest_dir}`. A bare Debian or Ubuntu has no `python` command at all: the repair command
/// runs in the build's own environment, whose `python` and `pip` are the build's, as in
/// cibuildwheel's build venv.
#[test]
#[ignore = "slow: a real zig build"]
fn a_repair_wheel_command_runs_the_python_and_pip_of_the_builds_own_environment() {
    let root = tempfile::tempdir().unwrap();
    let module = "#include <Python.h>\nstatic struct PyModuleDef m = {PyModuleDef_HEAD_INIT, \"_s\"};\n\
                  PyMODINIT_FUNC PyInit__s(void) { return PyModuleDef_Init(&m); }\n";
    let repair = "import os, shutil, sys\n\
                  assert os.environ.get('VIRTUAL_ENV') == sys.prefix != sys.base_prefix, \
                  f'python on PATH is {sys.executable}, not the build environment\\'s'\n\
                  shutil.copy(sys.argv[1], sys.argv[2])\n";
    let project = common::setuptools_project(
        root.path(),
        "spam",
        "from setuptools import setup, Extension\n\
         setup(ext_modules=[Extension('spam._s', ['spam/_s.c'])])\n",
        &[
            ("spam/_s.c".to_string(), module.to_string()),
            ("repair.py".to_string(), repair.to_string()),
        ],
    );
    let mut pyproject = std::fs::read_to_string(project.join("pyproject.toml")).unwrap();
    pyproject.push_str(
        "\n[tool.crosswheel]\narchs = [\"manylinux_aarch64\"]\nbuild = \"cp311-*\"\n\
         test-command = \"\"\n\
         repair-wheel-command = \"pip --version && python repair.py {wheel} {dest_dir}\"\n",
    );
    std::fs::write(project.join("pyproject.toml"), pyproject).unwrap();

    let out = root.path().join("wheelhouse");
    let (output, text) = build(&project, &out, &[], None);
    assert!(output.status.success(), "{text}");
    assert_eq!(
        common::wheel_names_in(&out),
        ["spam-1.0-cp311-cp311-linux_aarch64.whl"],
        "{text}"
    );
}
