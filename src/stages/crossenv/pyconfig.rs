//! The target's `pyconfig.h`.
//!
//! Extensions compile against the build python's headers, which describe the build
//! machine. `Python.h` and its companions are the same for every LP64 target, but
//! `pyconfig.h` carries configure's answers: a few of them (x87 assembly, wchar_t
//! signedness, long double size on macOS, ...) differ between x86_64 and the targets. The
//! cross environment therefore writes the build python's *real* `pyconfig.h` with the
//! target's values from `config/targets.toml` put in place.
//!
//! Debian's and Ubuntu's CPythons ship a multiarch wrapper as `pyconfig.h` that includes
//! `<x86_64-linux-gnu/python3.X/pyconfig.h>` by the compiler's target triple; for any
//! other target it fails. The real header sits in `INCLUDEDIR/MULTIARCH/python3.X/`.

use std::path::{Path, PathBuf};

use super::CrossEnvError;
use crate::support::host::BuildPython;
use crate::target::Target;

/// The build python's real `pyconfig.h`: the one next to `Python.h`, or the multiarch
/// header it dispatches to.
pub(crate) fn host_pyconfig(python: &BuildPython) -> Result<PathBuf, CrossEnvError> {
    let beside = python.include.join("pyconfig.h");
    let text = std::fs::read_to_string(&beside).map_err(|_| CrossEnvError::NoHeaders {
        python: python.executable.clone(),
        missing: beside.clone(),
        package: dev_package(python),
    })?;
    if !is_multiarch_wrapper(&text) {
        return Ok(beside);
    }
    let multiarch = python.config_str("MULTIARCH").unwrap_or_default();
    let include_dir = python.config_str("INCLUDEDIR").unwrap_or("/usr/include");
    let header_dir = python
        .include
        .file_name()
        .map(PathBuf::from)
        .unwrap_or_default();
    let candidates = [
        Path::new(include_dir)
            .join(multiarch)
            .join(&header_dir)
            .join("pyconfig.h"),
        python
            .platinclude
            .parent()
            .unwrap_or(Path::new("/usr/include"))
            .join(multiarch)
            .join(&header_dir)
            .join("pyconfig.h"),
    ];
    candidates
        .iter()
        .find(|path| path.is_file())
        .cloned()
        .ok_or_else(|| CrossEnvError::NoHeaders {
            python: python.executable.clone(),
            missing: candidates[0].clone(),
            package: dev_package(python),
        })
}

/// Debian's wrapper picks the real header with `#include <TRIPLET/python3.X/pyconfig.h>`
/// lines and ends with an `#error` for unknown targets; a real header has neither.
fn is_multiarch_wrapper(text: &str) -> bool {
    text.contains("multiarch location for pyconfig.h")
        || (text.contains("/pyconfig.h>") && !text.contains("SIZEOF_"))
}

/// The package that holds the headers of a distribution CPython.
fn dev_package(python: &BuildPython) -> String {
    format!("libpython{}-dev", python.version_text())
}

/// `host` (a real `pyconfig.h`) with `target`'s values put in place: each corrected macro
/// replaces its `#define NAME ...` or `/* #undef NAME */` line; macros the header lacks are
/// added before its include guard closes. `Py_GIL_DISABLED` selects the ABI: it is what
/// makes CPython's headers describe the free-threaded object layout and reference
/// counting, the only difference between the two builds' headers.
pub(crate) fn for_target(host: &str, target: &Target, free_threaded: bool) -> String {
    let data = target.data();
    let gil_disabled = free_threaded.then_some("1");
    let mut pending: Vec<(&str, Option<&str>)> = data
        .pyconfig_undef
        .iter()
        .map(|name| (name.as_str(), None))
        .chain(
            data.pyconfig_define
                .iter()
                .map(|(name, value)| (name.as_str(), Some(value.as_str()))),
        )
        .chain([("Py_GIL_DISABLED", gil_disabled)])
        .collect();
    let render = |name: &str, value: Option<&str>| match value {
        Some(value) => format!("#define {name} {value}"),
        None => format!("/* #undef {name} */"),
    };
    let mut lines: Vec<String> = Vec::new();
    for line in host.lines() {
        let named = macro_of_line(line);
        match pending.iter().position(|(name, _)| Some(*name) == named) {
            Some(index) => {
                let (name, value) = pending.remove(index);
                lines.push(render(name, value));
            }
            None => lines.push(line.to_string()),
        }
    }
    let added: Vec<String> = pending
        .iter()
        .filter(|(_, value)| value.is_some())
        .map(|(name, value)| render(name, *value))
        .collect();
    if !added.is_empty() {
        let guard_end = lines
            .iter()
            .rposition(|line| line.trim_start().starts_with("#endif"))
            .unwrap_or(lines.len());
        let mut block = vec![format!(
            "/* {}: values the build machine's configure did not record */",
            target.id()
        )];
        block.extend(added);
        lines.splice(guard_end..guard_end, block);
    }
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

/// `NAME` of a `#define NAME ...` or `/* #undef NAME */` line at the start of a line.
fn macro_of_line(line: &str) -> Option<&str> {
    let rest = line
        .strip_prefix("#define ")
        .or_else(|| line.strip_prefix("/* #undef "))?;
    rest.split([' ', '\t'])
        .next()
        .filter(|name| !name.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: &str = "#ifndef Py_PYCONFIG_H\n#define Py_PYCONFIG_H\n\
        #define HAVE_GCC_ASM_FOR_X64 1\n/* #undef HAVE_USABLE_WCHAR_T */\n\
        #define SIZEOF_LONG_DOUBLE 16\n#define PY_SUPPORT_TIER 1\n#endif /*Py_PYCONFIG_H*/\n";

    #[test]
    fn target_values_replace_the_host_lines_in_place() {
        let target = Target::parse("linux-aarch64").unwrap();
        let text = for_target(HOST, &target, false);
        assert!(
            text.contains("/* #undef HAVE_GCC_ASM_FOR_X64 */\n"),
            "{text}"
        );
        assert!(text.contains("#define HAVE_USABLE_WCHAR_T 1\n"), "{text}");
        assert!(text.contains("#define PY_SUPPORT_TIER 2\n"), "{text}");
        assert!(text.contains("#define SIZEOF_LONG_DOUBLE 16\n"), "{text}");
        assert_eq!(text.lines().count(), HOST.lines().count(), "{text}");
    }

    #[test]
    fn values_the_host_header_lacks_are_added_inside_the_guard() {
        let target = Target::parse("macos-arm64").unwrap();
        let text = for_target(HOST, &target, false);
        assert!(text.contains("#define SIZEOF_LONG_DOUBLE 8\n"), "{text}");
        let added = text.find("#define SIZEOF_FPOS_T 8").expect("added");
        assert!(added < text.rfind("#endif").unwrap(), "{text}");
    }

    /// The build machine's header says what Linux has; a macOS target's says what macOS
    /// has, or C code that reads it through Python.h (gevent's libev) calls `eventfd`.
    #[test]
    fn a_macos_header_has_no_linux_kernel_interfaces_and_has_kqueue() {
        let host = HOST.replace(
            "#endif /*Py_PYCONFIG_H*/",
            "#define HAVE_EPOLL 1\n#define HAVE_EVENTFD 1\n#define HAVE_SYS_EPOLL_H 1\n\
             #define HAVE_PIPE2 1\n/* #undef HAVE_KQUEUE */\n#endif /*Py_PYCONFIG_H*/",
        );
        for id in ["macos-arm64", "macos-x86_64"] {
            let text = for_target(&host, &Target::parse(id).unwrap(), false);
            for linux_only in [
                "HAVE_EPOLL",
                "HAVE_EVENTFD",
                "HAVE_SYS_EPOLL_H",
                "HAVE_PIPE2",
            ] {
                assert!(
                    text.contains(&format!("/* #undef {linux_only} */\n")),
                    "{id}: {text}"
                );
                assert!(
                    !text.contains(&format!("#define {linux_only} ")),
                    "{id}: {text}"
                );
            }
            assert!(text.contains("#define HAVE_KQUEUE 1\n"), "{id}: {text}");
        }
        let linux = for_target(&host, &Target::parse("linux-aarch64").unwrap(), false);
        assert!(linux.contains("#define HAVE_EVENTFD 1\n"), "{linux}");
    }

    #[test]
    fn the_free_threaded_abi_is_chosen_by_py_gil_disabled_either_way() {
        let target = Target::parse("linux-aarch64").unwrap();
        let gil_host = format!("{HOST}/* #undef Py_GIL_DISABLED */\n");
        let free_threaded = for_target(&gil_host, &target, true);
        assert!(
            free_threaded.contains("#define Py_GIL_DISABLED 1\n"),
            "{free_threaded}"
        );
        assert!(
            !free_threaded.contains("#undef Py_GIL_DISABLED"),
            "{free_threaded}"
        );

        let free_threaded_host =
            gil_host.replace("/* #undef Py_GIL_DISABLED */", "#define Py_GIL_DISABLED 1");
        let with_gil = for_target(&free_threaded_host, &target, false);
        assert!(
            with_gil.contains("/* #undef Py_GIL_DISABLED */\n"),
            "{with_gil}"
        );
        assert!(!with_gil.contains("#define Py_GIL_DISABLED"), "{with_gil}");

        // A header from before 3.13 has no line for it: the macro is added inside the guard.
        let added = for_target(HOST, &target, true);
        let at = added.find("#define Py_GIL_DISABLED 1").expect("added");
        assert!(at < added.rfind("#endif").unwrap(), "{added}");
    }

    #[test]
    fn debians_multiarch_wrapper_is_recognised() {
        let wrapper = "#if defined(__linux__)\n# if defined(__x86_64__) && defined(__LP64__)\n\
            #  include <x86_64-linux-gnu/python3.11/pyconfig.h>\n# else\n\
            #   error unknown multiarch location for pyconfig.h\n# endif\n#endif\n";
        assert!(is_multiarch_wrapper(wrapper));
        assert!(!is_multiarch_wrapper(HOST));
    }
}
