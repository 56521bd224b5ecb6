//! `pip` inside an emulated test environment. The environment's python is the target
//! CPython under qemu, which has no pip, so without this a `pip install ...` in
//! `before-test` or the test command would find the host's pip on PATH and install into the
//! host's environment. cibuildwheel runs those commands in the test venv, where `pip` is the
//! venv's own: here `pip install` installs the target's wheels into the test environment with
//! the host's pip (`--target`, the target's platform tags: fast), falling back to pip run by
//! the target interpreter (`pip --python`) for what needs a source build; other pip commands
//! (`list`, `show`, `uninstall`, ...) run under the target interpreter too. `python -m pip`
//! works the same way: a `pip` package in the environment's site-packages hands its
//! arguments to the shim (pip's own `--python` runner imports the host's pip, never this one).

use std::path::Path;

use crate::python_tag::PythonTag;
use crate::support::host::shell_quote;

/// Names a user may call pip by.
pub(crate) fn names(python: PythonTag) -> [String; 3] {
    [
        "pip".to_string(),
        "pip3".to_string(),
        format!("pip{}", python.interpreter_version()),
    ]
}

/// The script: `host_python` runs pip; `site` and `platform_args` are the environment's.
pub(crate) fn script(
    host_python: &Path,
    venv_python: &Path,
    site: &Path,
    platform_args: &[String],
) -> String {
    let host = shell_quote(&host_python.to_string_lossy()).into_owned();
    let venv_python = shell_quote(&venv_python.to_string_lossy()).into_owned();
    let site = shell_quote(&site.to_string_lossy()).into_owned();
    let platform: Vec<String> = platform_args
        .iter()
        .map(|arg| shell_quote(arg).into_owned())
        .collect();
    format!(
        "#!/bin/sh\n\
         # crosswheel: pip for this emulated test environment (see src/stages/testing/pip_shim.rs)\n\
         unset _PYTHON_HOST_PLATFORM _PYTHON_SYSCONFIGDATA_NAME PYTHONPATH PYTHONHOME\n\
         if [ \"$1\" = install ]; then\n\
         \x20 shift\n\
         \x20 PIP_ROOT_USER_ACTION=ignore {host} -m pip install --disable-pip-version-check --no-input --no-compile --target {site} {platform} \"$@\" && exit 0\n\
         \x20 echo \"crosswheel: no target wheel for something above; retrying with pip under the target interpreter\" >&2\n\
         \x20 exec {host} -m pip --python {venv_python} install --disable-pip-version-check \"$@\"\n\
         fi\n\
         exec {host} -m pip --python {venv_python} \"$@\"\n",
        platform = platform.join(" "),
    )
}

/// `pip/__main__.py` of the environment: `python -m pip ...`, run by the emulated target
/// interpreter, becomes the shim in the environment's `bin/` (qemu hands the exec of the
/// build machine's `/bin/sh` to the kernel, so the shim runs natively).
pub(crate) const MODULE_MAIN: &str = "\
# crosswheel: `python -m pip` in this emulated test environment (see src/stages/testing/pip_shim.rs).
import os
import sys

shim = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), \"pip\")
os.execv(\"/bin/sh\", [\"/bin/sh\", shim] + sys.argv[1:])
";

/// `pip/__init__.py`: what `import pip` finds in the environment says what it is.
pub(crate) const MODULE_INIT: &str =
    "\"\"\"crosswheel's stand-in: `python -m pip` runs the environment's pip shim.\"\"\"\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_goes_to_the_test_environment_with_the_targets_tags() {
        let text = script(
            Path::new("/usr/bin/python3"),
            Path::new("/tmp/venv/bin/python"),
            Path::new("/tmp/venv/lib/python3.11/site-packages"),
            &[
                "--only-binary=:all:".into(),
                "--platform=manylinux2014_aarch64".into(),
            ],
        );
        assert!(text.starts_with("#!/bin/sh\n"), "{text}");
        assert!(text.contains(
            "/usr/bin/python3 -m pip install --disable-pip-version-check --no-input --no-compile --target /tmp/venv/lib/python3.11/site-packages --only-binary=:all: --platform=manylinux2014_aarch64 \"$@\" && exit 0"
        ), "{text}");
        assert!(
            text.ends_with("exec /usr/bin/python3 -m pip --python /tmp/venv/bin/python \"$@\"\n"),
            "{text}"
        );
    }

    #[test]
    fn a_pip_shim_runs_the_host_pip_with_the_environment_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("args");
        // A stand-in for the host python that records what it was asked to run.
        let host = dir.path().join("host-python");
        std::fs::write(
            &host,
            format!("#!/bin/sh\necho \"$@\" > {}\n", log.display()),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&host, std::fs::Permissions::from_mode(0o755)).unwrap();
        let shim = dir.path().join("pip");
        let site = dir.path().join("site");
        std::fs::write(
            &shim,
            script(&host, Path::new("/venv/bin/python"), &site, &[]),
        )
        .unwrap();
        let status = std::process::Command::new("sh")
            .arg(&shim)
            .args(["install", "numpy"])
            .status()
            .unwrap();
        assert!(status.success());
        let args = std::fs::read_to_string(&log).unwrap();
        assert!(
            args.starts_with(
                "-m pip install --disable-pip-version-check --no-input --no-compile --target "
            ) && args.trim_end().ends_with(" numpy"),
            "{args}"
        );
        std::process::Command::new("sh")
            .arg(&shim)
            .arg("list")
            .status()
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "-m pip --python /venv/bin/python list\n"
        );
        assert_eq!(
            names(PythonTag::parse("cp311").unwrap()),
            ["pip", "pip3", "pip3.11"]
        );
    }
}
