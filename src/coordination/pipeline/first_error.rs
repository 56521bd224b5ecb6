//! The first error of a failed build, as the summary gives it: the line that says why the
//! build stopped, not a heading before it (autoconf's `configure: error: in '<folder>':`,
//! CMake's `CMake Error at <file>:<line> (<command>):`), and for the causes crosswheel
//! knows a hint at what to do: a configure that cannot run target programs, a language
//! crosswheel has no compiler for, a library the target lacks.

use crate::support::target_libraries::{LibraryEntry, catalogue};

/// What the summary says of a failure's cause.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct FirstError {
    /// The line with the reason.
    pub(super) line: String,
    pub(super) hint: Option<String>,
}

/// The first error among `lines` (a failure's message after its first line, which holds a
/// build log's excerpt), with a hint where its cause is one crosswheel knows.
pub(super) fn first_error(lines: &[&str]) -> Option<FirstError> {
    let lines: Vec<&str> = lines.iter().map(|line| line.trim()).collect();
    let start = lines.iter().position(|line| is_error_line(line))?;
    let (line, block) = reason_at(&lines, start);
    let hint = hint_for(&block).or_else(|| crosswheel_hint(&lines));
    Some(FirstError { line, hint })
}

/// Whether a line reports an error: a compiler's or tool's `error:`, meson's `ERROR:`,
/// Python's `...Error:`, CMake's `CMake Error`, GNU ld's `cannot find -lfoo`.
fn is_error_line(line: &str) -> bool {
    // A configure probe's result line (`checking for -single_module linker flag... error:
    // ...`) is what a compiler said while configure went on, unless configure itself
    // stopped there (`checking whether we are cross compiling... configure: error: ...`).
    // Nor is automake's test-suite summary (`# ERROR: 0`).
    if (line.starts_with("checking ") && !line.contains(CONFIGURE_ERROR))
        || line.starts_with("# ERROR:")
    {
        return false;
    }
    line.starts_with("CMake Error")
        || line.contains(": cannot find -l")
        || ["error:", "Error:", "ERROR:"]
            .iter()
            .any(|marker| line.contains(marker))
}

const CONFIGURE_ERROR: &str = "configure: error: ";

/// The line that gives the reason of the error at `lines[start]`, and the lines that
/// belong to that error (for its hint).
fn reason_at<'a>(lines: &[&'a str], start: usize) -> (String, Vec<&'a str>) {
    let line = lines[start];
    if let Some(at) = line.find(CONFIGURE_ERROR) {
        let message = &line[at..];
        // `configure: error: in '/build/libuv-aarch64':` names the folder; the reason is
        // the next `configure: error:` line.
        let names_folder =
            message[CONFIGURE_ERROR.len()..].starts_with("in ") && message.ends_with(':');
        let block: Vec<&str> = lines[start..].iter().take(6).copied().collect();
        if names_folder
            && let Some(reason) = block[1..]
                .iter()
                .find_map(|line| line.find(CONFIGURE_ERROR).map(|at| &line[at..]))
        {
            return (reason.to_string(), block);
        }
        return (message.to_string(), block);
    }
    if line.starts_with("CMake Error") {
        // The message follows the heading, indented, up to a blank line; what belongs to
        // the error goes on to its call stack or CMake's next `-- ` line.
        let block: Vec<&str> = lines[start..]
            .iter()
            .take(30)
            .enumerate()
            .take_while(|(index, line)| {
                *index == 0
                    || !(line.starts_with("Call Stack")
                        || line.starts_with("-- ")
                        || line.starts_with("CMake Error")
                        || line.starts_with("CMake Warning"))
            })
            .map(|(_, line)| *line)
            .collect();
        if line.ends_with(':') {
            let message: Vec<&str> = block[1..]
                .iter()
                .copied()
                .take_while(|line| !line.is_empty())
                .collect();
            if !message.is_empty() {
                return (format!("{line} {}", message.join(" ")), block);
            }
        }
        return (line.to_string(), block);
    }
    (line.to_string(), vec![line])
}

/// A hint crosswheel's backend added to the failure (`crosswheel: the build started ...`).
fn crosswheel_hint(lines: &[&str]) -> Option<String> {
    lines
        .iter()
        .find_map(|line| line.strip_prefix("crosswheel: "))
        .map(String::from)
}

fn hint_for(block: &[&str]) -> Option<String> {
    let text = block.join("\n");
    if text.contains("cannot run C compiled programs")
        || text.contains("cannot run C++ compiled programs")
    {
        return Some(NATIVE_CONFIGURE.to_string());
    }
    if text.contains("cannot run test program while cross compiling") {
        return Some(RUN_TEST_WHILE_CROSS.to_string());
    }
    if let Some(language) = missing_compiler(&text) {
        return Some(format!(
            "crosswheel has no {language} compiler for the target yet (its cross toolchains compile C and C++): a build that needs {language} cannot be cross-built by crosswheel today"
        ));
    }
    missing_library(&text).map(|library| library_hint(&library))
}

const NATIVE_CONFIGURE: &str = "configure took this for a native build and ran a program compiled for the target: the cross environment's CONFIG_SITE, which tells a configure started without --host that it cross compiles for the target, did not reach it (the build started configure with an environment of its own or with --build alone, or `environment` replaced CONFIG_SITE); pass the target's GNU triple through the project's own switch for cross builds (before-all and before-build have it as $CROSSWHEEL_HOST), or build that library in before-all (`./configure --host=$CROSSWHEEL_HOST --prefix=$CROSSWHEEL_PREFIX && make install`), whose prefix every build of the target sees";

const RUN_TEST_WHILE_CROSS: &str = "a configure check must run a program, which a cross build cannot: give configure the answer as its cache variable in `environment` (config.log names the check, e.g. `ac_cv_func_mmap_fixed_mapped=yes`; a value from the environment wins over the cross environment's CONFIG_SITE, which a CONFIG_SITE of your own would replace)";

/// The language whose compiler a meson or CMake configure did not find, where crosswheel
/// has none for it (C and C++ compilers it has: their absence is another problem).
fn missing_compiler(text: &str) -> Option<String> {
    // meson: `'fortran' compiler binary not defined in cross or native file`.
    let meson = text
        .find("' compiler binary not defined in cross")
        .map(|end| {
            let before = &text[..end];
            &before[before.rfind('\'').map_or(0, |at| at + 1)..]
        });
    // CMake: `No CMAKE_Fortran_COMPILER could be found.`
    let cmake = || {
        let after = &text[text.find("No CMAKE_")? + "No CMAKE_".len()..];
        let (language, rest) = after.split_once("_COMPILER")?;
        rest.starts_with(" could be found").then_some(language)
    };
    let language = meson.or_else(cmake)?;
    let name = match language.to_ascii_lowercase().as_str() {
        "c" | "cpp" | "cxx" | "c++" | "asm" => return None,
        "fortran" => "Fortran".to_string(),
        "cuda" => "CUDA".to_string(),
        "objc" => "Objective-C".to_string(),
        "objcpp" | "objcxx" => "Objective-C++".to_string(),
        "rust" => "Rust".to_string(),
        "swift" => "Swift".to_string(),
        "hip" => "HIP".to_string(),
        "d" => "D".to_string(),
        _ => language.to_string(),
    };
    Some(name)
}

/// The library a configure or link did not find, as the log names it.
fn missing_library(text: &str) -> Option<String> {
    const QUOTED: [(&str, &str); 4] = [
        // CMake's find_package in config mode.
        (
            "Could not find a package configuration file provided by \"",
            "\"",
        ),
        // meson's dependency().
        ("Dependency \"", "\" not found"),
        // meson's find_library() (`C library 'foo' not found`).
        ("library '", "' not found"),
        // pkg-config, as autoconf's PKG_CHECK_MODULES prints it.
        ("No package '", "' found"),
    ];
    for (before, after) in QUOTED {
        if let Some(at) = text.find(before) {
            let rest = &text[at + before.len()..];
            if let Some(end) = rest.find(after) {
                return Some(rest[..end].to_string());
            }
        }
    }
    const WORD_AFTER: [&str; 5] = [
        // GNU ld, LLVM's lld (zig), ld64.
        "cannot find -l",
        "unable to find library -l",
        "library not found for -l",
        // CMake's find modules.
        "Could NOT find ",
        "Could not find ",
    ];
    for before in WORD_AFTER {
        let mut rest = text;
        while let Some(at) = rest.find(before) {
            rest = &rest[at + before.len()..];
            let word: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "_-+.".contains(*c))
                .collect();
            let word = word.trim_end_matches('.');
            if !word.is_empty() && !["a", "an", "the"].contains(&word) {
                return Some(word.to_string());
            }
        }
    }
    None
}

fn library_hint(library: &str) -> String {
    match catalogue_entry(library) {
        Some(entry) => {
            let package = entry
                .packages
                .iter()
                .find(|package| package.ends_with("-devel"))
                .unwrap_or(&entry.name);
            format!(
                "the target has no {library}: crosswheel builds {name} for the target from its catalogue when before-all says `yum install -y {package}` (or `target-libraries = [\"{name}\"]`)",
                name = entry.name
            )
        }
        None => format!(
            "the target has no {library}, and crosswheel's catalogue of target libraries (config/target-libraries.toml) does not have it: build it into $CROSSWHEEL_PREFIX in before-all (`./configure --host=$CROSSWHEEL_HOST --prefix=$CROSSWHEEL_PREFIX && make install`), whose prefix every build of the target sees"
        ),
    }
}

/// The catalogue library a log's name means: its catalogue name or a package name
/// (`ZLIB`, `libffi`, `openblas`), a library file it installs (`-lz`: `lib/libz.so`), or
/// the BLAS and LAPACK interfaces, which OpenBLAS provides.
fn catalogue_entry(library: &str) -> Option<&'static LibraryEntry> {
    let lower = library.to_ascii_lowercase();
    let lower = match lower.as_str() {
        "blas" | "cblas" | "lapack" | "lapacke" => "openblas".to_string(),
        _ => lower,
    };
    let bare = lower.strip_prefix("lib").unwrap_or(&lower).to_string();
    let names = [lower.clone(), bare.clone(), format!("lib{bare}")];
    let catalogue = catalogue();
    names
        .iter()
        .find_map(|name| {
            catalogue
                .library(name)
                .or_else(|| catalogue.by_package(name))
        })
        .or_else(|| {
            catalogue.libraries().iter().find(|entry| {
                entry
                    .check
                    .linux
                    .iter()
                    .chain(&entry.check.macos)
                    .any(|file| installs_library(file, &bare))
            })
        })
}

/// Whether `file` (a path in a library's prefix) is the library `-l<name>` links.
fn installs_library(file: &str, name: &str) -> bool {
    let Some(file) = file.strip_prefix("lib/") else {
        return false;
    };
    let Some(stem) = file.strip_prefix("lib") else {
        return false;
    };
    [".so", ".a", ".dylib"]
        .iter()
        .any(|suffix| stem.strip_prefix(name) == Some(suffix))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(log: &str) -> FirstError {
        let lines: Vec<&str> = log.lines().collect();
        first_error(&lines).unwrap_or_else(|| panic!("no first error in {log}"))
    }

    #[test]
    fn a_configure_probes_result_and_a_test_summary_are_not_the_reason() {
        let log = "checking for -single_module linker flag... error: unsupported linker arg: -single_module\n\
            FAIL: verify1\n\
            # ERROR: 0\n\
            subprocess.CalledProcessError: Command '['make', 'check']' returned non-zero exit status 2.";
        assert_eq!(
            first(log).line,
            "subprocess.CalledProcessError: Command '['make', 'check']' returned non-zero exit status 2."
        );
    }

    #[test]
    fn autoconfs_reason_is_the_line_after_the_folder() {
        // uvloop's setup.py runs libuv's configure itself, without --host (autoconf 2.71).
        let log = "checking for a race-free mkdir -p... /usr/bin/mkdir -p\n\
            checking whether we are cross compiling... configure: error: in `/tmp/b/uvloop/build/libuv-aarch64':\n\
            configure: error: cannot run C compiled programs.\n\
            If you meant to cross compile, use `--host'.\n\
            See `config.log' for more details\n\
            Traceback (most recent call last):\n\
            subprocess.CalledProcessError: Command '['./configure']' returned non-zero exit status 1.";
        let found = first(log);
        assert_eq!(
            found.line,
            "configure: error: cannot run C compiled programs."
        );
        let hint = found.hint.unwrap();
        assert!(
            hint.starts_with("configure took this for a native build")
                && hint.contains("CONFIG_SITE")
                && hint.contains("$CROSSWHEEL_HOST"),
            "{hint}"
        );
        // autoconf 2.72 quotes the folder with 'straight' quotes.
        let found = first(
            "configure: error: in '/b/build/libuv-aarch64':\nconfigure: error: C compiler cannot create executables\nSee 'config.log' for more details",
        );
        assert_eq!(
            found.line,
            "configure: error: C compiler cannot create executables"
        );
        assert_eq!(found.hint, None);
    }

    #[test]
    fn a_configure_check_that_must_run_a_program_says_how_to_answer_it() {
        let found = first(
            "checking for working mmap... configure: error: in `/b/libfoo':\nconfigure: error: cannot run test program while cross compiling\nSee `config.log' for more details",
        );
        assert_eq!(
            found.line,
            "configure: error: cannot run test program while cross compiling"
        );
        assert!(found.hint.unwrap().contains("CONFIG_SITE"));
    }

    #[test]
    fn cmakes_reason_is_its_message_after_the_heading() {
        let log = "-- The C compiler identification is Clang 19.1.7\n\
            CMake Error at CMakeLists.txt:3 (project):\n  \
              No CMAKE_Fortran_COMPILER could be found.\n\
            \n  \
              Tell CMake where to find the compiler by setting either the environment\n  \
              variable \"FC\" or the CMake cache entry CMAKE_Fortran_COMPILER to the full\n\
            \n\
            -- Configuring incomplete, errors occurred!\n\
            *** CMake configuration failed";
        let found = first(log);
        assert_eq!(
            found.line,
            "CMake Error at CMakeLists.txt:3 (project): No CMAKE_Fortran_COMPILER could be found."
        );
        assert!(
            found
                .hint
                .unwrap()
                .starts_with("crosswheel has no Fortran compiler for the target yet"),
        );
    }

    #[test]
    fn cmakes_missing_package_names_the_catalogue_library_and_its_yum_line() {
        let log = "CMake Error at /usr/share/cmake-3.28/Modules/FindPackageHandleStandardArgs.cmake:230 (message):\n  \
              Could NOT find ZLIB (missing: ZLIB_LIBRARY ZLIB_INCLUDE_DIR)\n\
            Call Stack (most recent call first):\n  \
              CMakeLists.txt:9 (find_package)";
        let found = first(log);
        assert_eq!(
            found.line,
            "CMake Error at /usr/share/cmake-3.28/Modules/FindPackageHandleStandardArgs.cmake:230 (message): Could NOT find ZLIB (missing: ZLIB_LIBRARY ZLIB_INCLUDE_DIR)"
        );
        let hint = found.hint.unwrap();
        assert!(hint.contains("`yum install -y zlib-devel`"), "{hint}");
        assert!(hint.contains("target-libraries = [\"zlib\"]"), "{hint}");
        // Config mode names the package in quotes, after a paragraph of explanation.
        let log = "CMake Error at CMakeLists.txt:5 (find_package):\n  \
              By not providing \"Findlibuv.cmake\" in CMAKE_MODULE_PATH this project has\n  \
              asked CMake to find a package configuration file provided by \"libuv\", but\n  \
              CMake did not find one.\n\
            \n  \
              Could not find a package configuration file provided by \"libuv\" with any\n  \
              of the following names:\n";
        let found = first(log);
        assert!(
            found.line.ends_with("CMake did not find one."),
            "{}",
            found.line
        );
        assert!(found.hint.unwrap().contains("`yum install -y libuv-devel`"),);
    }

    #[test]
    fn mesons_errors_are_their_own_reason() {
        let found = first(
            "Build type: cross build\nProject name: scipy\n\n../meson.build:88:0: ERROR: 'fortran' compiler binary not defined in cross or native file\n\nA full log can be found at /b/meson-logs/meson-log.txt",
        );
        assert_eq!(
            found.line,
            "../meson.build:88:0: ERROR: 'fortran' compiler binary not defined in cross or native file"
        );
        assert!(found.hint.unwrap().contains("no Fortran compiler"));
        let found = first(
            "Run-time dependency openblas found: NO (tried pkgconfig and cmake)\n../numpy/meson.build:212:4: ERROR: Dependency \"OpenBLAS\" not found, tried pkgconfig and cmake",
        );
        assert!(
            found
                .line
                .ends_with("ERROR: Dependency \"OpenBLAS\" not found, tried pkgconfig and cmake")
        );
        assert!(
            found
                .hint
                .unwrap()
                .contains("`yum install -y openblas-devel`"),
        );
    }

    #[test]
    fn a_library_the_linker_misses_is_looked_up_by_its_file() {
        // LLVM's lld (zig) and GNU ld say it differently.
        for line in [
            "ld.lld: error: unable to find library -lz",
            "/usr/bin/aarch64-linux-gnu-ld: cannot find -lz: No such file or directory",
        ] {
            let found = first(&format!("{line}\nclang: error: linker command failed"));
            assert_eq!(found.line, line);
            assert!(
                found.hint.unwrap().contains("`yum install -y zlib-devel`"),
                "{line}"
            );
        }
        let found = first("ld.lld: error: unable to find library -lquux");
        let hint = found.hint.unwrap();
        assert!(
            hint.starts_with("the target has no quux, and crosswheel's catalogue")
                && hint.contains("$CROSSWHEEL_PREFIX"),
            "{hint}"
        );
    }

    #[test]
    fn a_compiler_error_has_no_hint_unless_the_backend_gave_one() {
        let found =
            first("src/x.c:3:5: error: use of undeclared identifier 'y'\n1 error generated.");
        assert_eq!(
            found.line,
            "src/x.c:3:5: error: use of undeclared identifier 'y'"
        );
        assert_eq!(found.hint, None);
        let found = first(
            "gen: error: cannot execute\ncrosswheel: the build started ./gen, a linux-aarch64 program, directly",
        );
        assert_eq!(
            found.hint.as_deref(),
            Some("the build started ./gen, a linux-aarch64 program, directly")
        );
        assert_eq!(first_error(&["all fine"]), None);
    }
}
