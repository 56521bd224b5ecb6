//! `_crosswheel_target_import.py`: what a build's Python program does when it imports a
//! module the build compiled for the target (nanobind's stub generator imports the
//! extension it just linked). Such a program starts again in the target's CPython under
//! qemu-user where one of the build's version can run; elsewhere the import stops with a
//! line saying why. The file's own comments say how.

use std::path::Path;

use super::TargetRunner;
use crate::python_tag::PythonTag;
use crate::target::{Libc, Target};

/// Which interpreter runs a program that imports a target module, or why none can.
#[derive(Debug, Clone, PartialEq, Eq)]
enum TargetInterpreter<'a> {
    Runs(&'a Path),
    Cannot(String),
}

fn interpreter<'a>(
    target: &Target,
    runner: Option<&'a TargetRunner>,
    python: PythonTag,
) -> TargetInterpreter<'a> {
    if target.is_macos() {
        return TargetInterpreter::Cannot(
            "no interpreter on this Linux build machine loads a macOS module, so a build \
             step that imports what the build compiled (a stub generator) runs only for \
             Linux targets; skip that step for macOS, or build on a Mac"
                .into(),
        );
    }
    if target.libc() == Some(Libc::Musl) {
        return TargetInterpreter::Cannot(format!(
            "crosswheel has a musl CPython for the test stage, not for a build step that \
             imports a {} module; skip that step for musllinux",
            target.id()
        ));
    }
    let Some(runner) = runner else {
        return TargetInterpreter::Cannot(
            "no emulator could be set up for this build (its warning says why), so no \
             target interpreter can import it"
                .into(),
        );
    };
    if runner.python_tag != python {
        return TargetInterpreter::Cannot(format!(
            "the {} tree's CPython is {}, and a {python} module loads only in {python}",
            target.id(),
            runner.python_tag
        ));
    }
    TargetInterpreter::Runs(&runner.python)
}

/// The module for a build of `python` for `target`.
pub(crate) fn render(
    target: &Target,
    run_program: &Path,
    runner: Option<&TargetRunner>,
    python: PythonTag,
) -> String {
    let (interpreter, why_not) = match interpreter(target, runner, python) {
        TargetInterpreter::Runs(path) => (path.to_string_lossy().into_owned(), String::new()),
        TargetInterpreter::Cannot(why) => (String::new(), why),
    };
    // Strings only: the JSON text is read as a Python literal.
    let config = serde_json::json!({
        "target": target.id(),
        "run_program": run_program.to_string_lossy(),
        "python": interpreter,
        "why_not": why_not,
        // The suffix the build machine's finders skip; `.abi3.so` and `.so` they find, and
        // its loader refuses them.
        "suffixes": [target.ext_suffix(python)],
    });
    include_str!("python_files/target_import.py").replace("@CONFIG@", &config.to_string())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn runner(python_tag: PythonTag) -> TargetRunner {
        TargetRunner {
            qemu: PathBuf::from("/q/qemu-aarch64"),
            root: PathBuf::from("/root-tree"),
            python: PathBuf::from("/root-tree/usr/bin/python3.11"),
            python_tag,
            cpu: None,
        }
    }

    fn config(module: &str) -> serde_json::Value {
        let line = module
            .lines()
            .find_map(|line| line.strip_prefix("_CONFIG = "))
            .expect("a _CONFIG line");
        serde_json::from_str(line).unwrap()
    }

    #[test]
    fn a_linux_target_imports_in_its_own_cpython_of_the_builds_version() {
        let target = Target::parse("linux-aarch64").unwrap();
        let cp311 = PythonTag::cpython3(11);
        let module = render(
            &target,
            Path::new("/e/bin/run-program"),
            Some(&runner(cp311)),
            cp311,
        );
        let config = config(&module);
        assert_eq!(config["python"], "/root-tree/usr/bin/python3.11");
        assert_eq!(config["run_program"], "/e/bin/run-program");
        assert_eq!(
            config["suffixes"],
            serde_json::json!([".cpython-311-aarch64-linux-gnu.so"])
        );
        assert_eq!(config["why_not"], "");
        assert!(!module.contains("@CONFIG@"));
    }

    #[test]
    fn another_version_macos_and_musl_say_why_no_interpreter_imports() {
        let cp311 = PythonTag::cpython3(11);
        let cp313 = PythonTag::cpython3(13);
        let why = |target: &str, runner: Option<&TargetRunner>, python| {
            let target = Target::parse(target).unwrap();
            let config = config(&render(&target, Path::new("/r"), runner, python));
            assert_eq!(config["python"], "");
            config["why_not"].as_str().unwrap().to_string()
        };
        assert_eq!(
            why("linux-aarch64", Some(&runner(cp311)), cp313),
            "the linux-aarch64 tree's CPython is cp311, and a cp313 module loads only in cp313"
        );
        assert!(why("macos-arm64", None, cp311).starts_with("no interpreter on this Linux"));
        assert!(why("musllinux-aarch64", Some(&runner(cp311)), cp311).contains("musl"));
        assert!(why("linux-ppc64le", None, cp311).starts_with("no emulator"));
    }
}
