//! A long build is not silent (issue 23 item 22): the build log is written as the backend
//! prints, so `tail -f` follows it while the build runs. (The spinner's last line and the
//! once-a-minute CI line are unit tests of `pipeline::progress`.)

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{crosswheel_bin, without_option_variables};

/// setup.py prints a marker, then waits for the test to say it saw the marker in the log
/// (the file `go`); if the log is written only when the hook ends, the test never sees it
/// and setup.py gives up after 90 s, printing `GAVE UP`.
#[test]
#[ignore = "slow: a real build (zig, a build venv)"]
fn the_build_log_holds_the_backends_output_while_the_build_runs() {
    let project = tempfile::tempdir().unwrap();
    let name = format!("streamprobe{}", std::process::id());
    let go = project.path().join("go");
    std::fs::write(
        project.path().join("pyproject.toml"),
        format!(
            "[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"setuptools.build_meta\"\n\
             [project]\nname = \"{name}\"\nversion = \"0.1\"\n[tool.crosswheel]\ntest-command = \"\"\n"
        ),
    )
    .unwrap();
    std::fs::write(
        project.path().join("setup.py"),
        format!(
            "import os, sys, time\nfrom setuptools import setup, Extension\n\
             if 'bdist_wheel' in sys.argv:\n\
             \x20   print('STREAMED-MARKER', {name:?}, flush=True)\n\
             \x20   for _ in range(900):\n\
             \x20       if os.path.exists({go:?}):\n\
             \x20           break\n\
             \x20       time.sleep(0.1)\n\
             \x20   else:\n\
             \x20       print('GAVE UP', flush=True)\n\
             setup(ext_modules=[Extension('probe', ['probe.c'])])\n",
            go = go.display().to_string(),
            name = name,
        ),
    )
    .unwrap();
    std::fs::write(
        project.path().join("probe.c"),
        "#include <Python.h>\nstatic struct PyModuleDef m = {PyModuleDef_HEAD_INIT, \"probe\"};\n\
         PyMODINIT_FUNC PyInit_probe(void) { return PyModuleDef_Init(&m); }\n",
    )
    .unwrap();
    let cache = crosswheel::support::host::Cache::from_env().unwrap();
    // Each run logs into a folder of its own (`logs/runs/<run>/`); this run's is one that
    // did not exist before it started (other tests may run meanwhile: the marker tells).
    let runs = cache.root().join("logs").join("runs");
    let runs_before = run_folders(&runs);
    let this_runs_log = || -> Option<PathBuf> {
        run_folders(&runs)
            .into_iter()
            .filter(|folder| !runs_before.contains(folder))
            .map(|folder| folder.join("cp311-manylinux_aarch64-build.log"))
            .find(|log| std::fs::read_to_string(log).is_ok_and(|text| text.contains(name.as_str())))
    };
    let mut command = Command::new(crosswheel_bin());
    without_option_variables(&mut command);
    let mut child = command
        .arg("build")
        .arg(project.path())
        .args(["--only", "cp311-manylinux_aarch64", "--output-dir"])
        .arg(project.path().join("out"))
        .env("CI", "true")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut seen_while_running = false;
    let mut log = PathBuf::new();
    while started.elapsed() < Duration::from_secs(600) {
        if let Some(found) = this_runs_log() {
            log = found;
        }
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("STREAMED-MARKER") {
            seen_while_running = child.try_wait().unwrap().is_none();
            std::fs::write(&go, "").unwrap();
            break;
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let status = child.wait().unwrap();
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        seen_while_running,
        "the marker was not in {} while the build ran",
        log.display()
    );
    assert!(!text.contains("GAVE UP"), "{text}");
    assert!(status.success(), "the build failed: {text}");
}

fn run_folders(runs: &std::path::Path) -> Vec<PathBuf> {
    std::fs::read_dir(runs)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.is_dir() && !path.is_symlink())
        .collect()
}
