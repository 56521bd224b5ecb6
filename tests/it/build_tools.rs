//! Build tools come with crosswheel: a catalogue library's build on a machine without
//! autoconf, automake, libtool, m4, make or cmake gets them from the cache, pinned
//! (config/build-tools.toml), after the machine's own PATH.

use crate::common;
use crate::ubuntu_host::{UbuntuLook, require_root_and_unshare, zig};

use std::path::Path;
use std::process::Command;

use common::crosswheel_bin;
use crosswheel::support::build_tools::provide;
use crosswheel::support::host::{Cache, Network};

/// The programs a fresh Ubuntu or Debian machine lacks, hidden by mounting /dev/null over
/// them: a program found nowhere else is then not runnable at all.
const HIDDEN: &[&str] = &[
    "autoreconf",
    "autoconf",
    "autoheader",
    "autom4te",
    "automake",
    "aclocal",
    "libtoolize",
    "m4",
    "make",
    "patch",
    "cmake",
    "ninja",
];

fn hide_tools(command: &str) -> String {
    let mut script = String::new();
    for program in HIDDEN {
        for folder in ["/usr/local/bin", "/usr/bin", "/bin"] {
            let path = format!("{folder}/{program}");
            script.push_str(&format!(
                "if [ -e {path} ]; then mount --bind /dev/null {path}; fi\n"
            ));
        }
    }
    script.push_str(&format!("{command}\n"));
    script
}

/// `program` (a path) run with `args`, the provided `folders` first on PATH and the
/// machine's after them (its `sh` and `perl`, which the scripts run).
fn run_in(folders: &[std::path::PathBuf], program: &Path, args: &[&str]) -> String {
    let path = std::env::join_paths(
        folders
            .iter()
            .map(|folder| folder.as_os_str())
            .chain(["/usr/bin".as_ref(), "/bin".as_ref()]),
    )
    .unwrap();
    let output = Command::new(program)
        .args(args)
        .env("PATH", &path)
        .output()
        .unwrap_or_else(|err| panic!("run {}: {err}", program.display()));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "{} {args:?}: {text}",
        program.display()
    );
    text
}

#[test]
#[ignore = "slow: downloads the pinned build tools into a fresh cache"]
fn each_provided_tool_runs_from_the_cache_with_its_data_found_there() {
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::at(cache_dir.path());
    let empty = tempfile::tempdir().unwrap();
    let programs: Vec<String> = ["autoreconf", "make", "patch", "cmake", "ninja"]
        .map(String::from)
        .to_vec();
    let provided = provide(
        &cache,
        &programs,
        empty.path().as_os_str(),
        &Network::default(),
    )
    .unwrap_or_else(|err| panic!("{err}"));
    assert!(provided.missing.is_empty(), "{provided:?}");
    assert_eq!(provided.folders.len(), 5, "{provided:?}");
    let find = |program: &str| {
        provided
            .folders
            .iter()
            .map(|folder| folder.join(program))
            .find(|path| path.is_file())
            .unwrap_or_else(|| panic!("no {program} in {provided:?}"))
    };
    let folders = &provided.folders;
    let tools_root = cache_dir.path().join("tools");
    assert!(
        run_in(folders, &find("autoconf"), &["--version"]).contains("autoconf (GNU Autoconf) 2.71")
    );
    // aclocal's own macros and the system folder (libtool.m4's) are the tree's, not
    // /usr/share/aclocal of whatever machine runs it.
    let acdir = run_in(folders, &find("aclocal"), &["--print-ac-dir"]);
    assert!(
        Path::new(acdir.trim()).starts_with(&tools_root)
            && Path::new(acdir.trim()).join("libtool.m4").is_file(),
        "{acdir}"
    );
    assert!(run_in(folders, &find("libtoolize"), &["--version"]).contains("2.4.7"));
    assert!(run_in(folders, &find("m4"), &["--version"]).contains("1.4.19"));
    assert!(run_in(folders, &find("make"), &["--version"]).contains("GNU Make 4.3"));
    assert!(run_in(folders, &find("patch"), &["--version"]).contains("GNU patch 2.7.6"));
    assert!(run_in(folders, &find("cmake"), &["--version"]).contains("cmake version 3.31.6"));
    assert!(run_in(folders, &find("ninja"), &["--version"]).contains("1.13.0"));
    for program in ["autoreconf", "make", "cmake", "ninja"] {
        assert!(find(program).starts_with(&tools_root), "{program}");
    }

    // autoreconf runs the whole chain (aclocal, autoconf, automake, libtoolize) on a real
    // project and the configure it writes runs.
    let project = tempfile::tempdir().unwrap();
    std::fs::write(
        project.path().join("configure.ac"),
        "AC_INIT([hello], [1.0])\nAM_INIT_AUTOMAKE([foreign])\nLT_INIT\nAC_PROG_CC\n\
         AC_CONFIG_FILES([Makefile])\nAC_OUTPUT\n",
    )
    .unwrap();
    std::fs::write(
        project.path().join("Makefile.am"),
        "lib_LTLIBRARIES = libhello.la\nlibhello_la_SOURCES = hello.c\n",
    )
    .unwrap();
    std::fs::write(
        project.path().join("hello.c"),
        "int hello(void) { return 1; }\n",
    )
    .unwrap();
    let mut folders_first = folders.clone();
    folders_first.extend(["/usr/bin".into(), "/bin".into()]);
    let path = std::env::join_paths(&folders_first).unwrap();
    let output = Command::new(find("autoreconf"))
        .arg("-fi")
        .current_dir(project.path())
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(project.path().join("configure").is_file());
    assert!(project.path().join("ltmain.sh").is_file());
    assert!(project.path().join("Makefile.in").is_file());
}

#[test]
#[ignore = "slow: a real build on an emulated Ubuntu host without build tools"]
fn a_machine_without_autotools_or_make_builds_pyyaml_with_libyaml_from_its_before_all_line() {
    require_root_and_unshare();
    let look = UbuntuLook::new();
    let cache = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sdist = common::fixture("pyyaml-6.0.3.tar.gz");
    let status = Command::new("tar")
        .arg("-xzf")
        .arg(&sdist)
        .arg("-C")
        .arg(dir.path())
        .status()
        .expect("tar runs");
    assert!(status.success());
    let project = dir.path().join("pyyaml-6.0.3");
    let command = format!(
        "'{}' build '{}' --output-dir '{}' --only cp311-manylinux_aarch64",
        crosswheel_bin().display(),
        project.display(),
        out.path().display()
    );
    let output = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "bash", "-c"])
        .arg(look.script(&format!("bash -c {}", shell_quote(&hide_tools(&command)))))
        .env("CROSSWHEEL_CACHE", cache.path())
        .env("CROSSWHEEL_ZIG", zig())
        .env("CIBW_BEFORE_ALL", "yum install -y libyaml-devel")
        .env(
            "CIBW_TEST_COMMAND",
            "python -c \"import yaml; print('with libyaml:', yaml.__with_libyaml__)\"",
        )
        .output()
        .expect("run unshare");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("with libyaml: True") || stderr.contains("with libyaml: True"),
        "{stdout}\n{stderr}"
    );
    let tools: Vec<String> = std::fs::read_dir(cache.path().join("tools"))
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    for tool in ["build-autotools-", "build-make-"] {
        assert!(
            tools.iter().any(|name| name.starts_with(tool)),
            "{tool} was not provided: {tools:?}"
        );
    }
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

#[test]
#[ignore = "slow: a real cross build with cmake hidden from the machine"]
fn a_before_all_line_that_installs_cmake_gives_the_projects_own_build_cmake_where_the_machine_lacks_it()
 {
    require_root_and_unshare();
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    // setup.py runs cmake itself, as a project with a CMake-built part does, and bakes
    // its answer into the extension; `before-build` runs it too.
    let setup_py = r#"
import subprocess
from setuptools import setup, Extension
version = subprocess.check_output(["cmake", "--version"], text=True).split()[2]
with open("cmv.c", "w") as f:
    f.write('#include <Python.h>\n'
            'static struct PyModuleDef m = {PyModuleDef_HEAD_INIT, "_v", NULL, -1, NULL};\n'
            'PyMODINIT_FUNC PyInit__v(void) { PyObject *o = PyModule_Create(&m);\n'
            '  PyModule_AddStringConstant(o, "cmake", "%s"); return o; }\n' % version)
setup(packages=["cmv"], ext_modules=[Extension("cmv._v", ["cmv.c"])])
"#;
    let project = common::setuptools_project(dir.path(), "cmv", setup_py, &[]);
    let mut pyproject = std::fs::read_to_string(project.join("pyproject.toml")).unwrap();
    pyproject.push_str(concat!(
        "\n[tool.cibuildwheel]\n",
        "before-all = \"yum install -y cmake3\"\n",
        "before-build = \"cmake --version\"\n",
        "test-command = \"python -c \\\"from cmv import _v; print('built with cmake', _v.cmake)\\\"\"\n",
    ));
    std::fs::write(project.join("pyproject.toml"), pyproject).unwrap();
    let command = format!(
        "'{}' build '{}' --output-dir '{}' --only cp311-manylinux_aarch64",
        crosswheel_bin().display(),
        project.display(),
        out.path().display()
    );
    let output = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "bash", "-c"])
        .arg(hide_tools(&command))
        .output()
        .expect("run unshare");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("built with cmake 3.31.6") || stderr.contains("built with cmake 3.31.6"),
        "{stdout}\n{stderr}"
    );
}
