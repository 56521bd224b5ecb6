//! Package-manager lines in `before-all`: in cibuildwheel's containers they install the
//! target's libraries (`yum install -y libffi-devel`); here they name the catalogue
//! libraries to build for the target, and the rest of the command still runs.

use super::TargetLibraryError;
use super::catalogue::{LibraryEntry, catalogue};

/// What a `before-all` command asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BeforeAll {
    /// Catalogue libraries its install lines name, in order, each once.
    pub libraries: Vec<&'static LibraryEntry>,
    /// The build-machine tools its install lines name (`cmake`, `autoconf`), as written,
    /// each once: the build gets them where the machine lacks them.
    pub tools: Vec<String>,
    /// The command without its package-manager parts, `&&`-joined; `None` when nothing
    /// else is left to run.
    pub command: Option<String>,
}

/// Reads `command` (the `before-all` option, from `origin`: the configuration file or
/// the variable it was set in).
pub fn read_before_all(command: &str, origin: &str) -> Result<BeforeAll, TargetLibraryError> {
    let mut libraries: Vec<&'static LibraryEntry> = Vec::new();
    let mut tools: Vec<String> = Vec::new();
    let mut kept = Vec::new();
    let mut removed_any = false;
    for part in shell_parts(command) {
        let Some(packages) = installed_packages(part) else {
            kept.push(part.to_string());
            continue;
        };
        removed_any = true;
        for package in packages {
            let name = bare_name(package);
            if let Some(entry) = catalogue().by_package(name) {
                if !libraries.iter().any(|known| known.name == entry.name) {
                    libraries.push(entry);
                }
            } else if catalogue().is_build_tool(name) {
                if !tools.iter().any(|known| known == name) {
                    tools.push(name.to_string());
                }
            } else {
                return Err(TargetLibraryError::UnknownPackage {
                    package: name.to_string(),
                    line: part.to_string(),
                    origin: origin.to_string(),
                });
            }
        }
    }
    // A command without package-manager lines runs exactly as written: `;` keeps going
    // after a failure where `&&` stops, and quoted code (`python -c "a; b"`) is not shell.
    let command = if removed_any {
        (!kept.is_empty()).then(|| kept.join(" && "))
    } else {
        Some(command.to_string()).filter(|command| !command.trim().is_empty())
    };
    Ok(BeforeAll {
        libraries,
        tools,
        command,
    })
}

/// The commands of a shell line, split at newlines, `;` and `&&` outside quotes
/// (`python -c "import os; print(1)"` is one command), trimmed, empty ones dropped.
fn shell_parts(command: &str) -> Vec<&str> {
    let (mut parts, mut start, mut quote) = (Vec::new(), 0, None);
    let bytes = command.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        match quote {
            Some(q) if c == q => quote = None,
            Some(b'"') if c == b'\\' => i += 1,
            Some(_) => {}
            None if c == b'\'' || c == b'"' => quote = Some(c),
            None if c == b'\\' => i += 1,
            None if c == b'\n' || c == b';' || (c == b'&' && bytes.get(i + 1) == Some(&b'&')) => {
                parts.push(&command[start..i]);
                if c == b'&' {
                    i += 1;
                }
                start = i + 1;
            }
            None => {}
        }
        i += 1;
    }
    parts.push(&command[start.min(command.len())..]);
    parts
        .into_iter()
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect()
}

/// The packages a package-manager command installs (empty for `yum update`, `apk
/// update`, `brew update`, ...), or `None` when `part` is not a package-manager command.
fn installed_packages(part: &str) -> Option<Vec<&str>> {
    let mut words = part.split_whitespace().peekable();
    while words
        .peek()
        .is_some_and(|word| *word == "sudo" || word.contains('='))
    {
        words.next();
    }
    let manager = words.next()?;
    let install_verbs: &[&str] = match manager {
        "yum" | "dnf" | "microdnf" => &["install"],
        "apt-get" | "apt" => &["install"],
        "apk" => &["add"],
        "brew" => &["install"],
        _ => return None,
    };
    // Options before the verb; apt's `-o Name=value` takes the next word.
    let mut verb = None;
    while let Some(word) = words.next() {
        if word == "-o" || word == "--option" {
            words.next();
        } else if !word.starts_with('-') {
            verb = Some(word);
            break;
        }
    }
    let verb = verb?;
    if !install_verbs.contains(&verb) {
        // `yum update -y`, `apt-get update`, `apk update`, `brew update`: nothing for
        // the target; a cross build has no package database to refresh.
        return Some(Vec::new());
    }
    let mut packages = Vec::new();
    while let Some(word) = words.next() {
        if word == "-o" || word == "--option" {
            words.next();
        } else if !word.starts_with('-') {
            packages.push(word);
        }
    }
    Some(packages)
}

/// A package name without its version or architecture: `libffi-dev=3.4.4-1`,
/// `libffi-dev:arm64`, `libffi-devel.aarch64`, `'libyaml-devel'`.
fn bare_name(word: &str) -> &str {
    let word = word.trim_matches(|c| c == '\'' || c == '"');
    let word = word.split(['=', ':', '<', '>']).next().unwrap_or(word);
    for arch in [".x86_64", ".aarch64", ".ppc64le", ".noarch", ".i686"] {
        if let Some(stripped) = word.strip_suffix(arch) {
            return stripped;
        }
    }
    word
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(before_all: &BeforeAll) -> Vec<&str> {
        before_all
            .libraries
            .iter()
            .map(|entry| entry.name.as_str())
            .collect()
    }

    /// cibuildwheel's test_before_all: `;` inside `python -c "..."` is Python, not shell.
    #[test]
    fn a_command_without_package_manager_lines_runs_exactly_as_written() {
        let command = r#"python -c "import os, sys; f = open('x', 'w'); f.close()" && python -c "import sys; assert sys.version_info >= (3, 8)"; echo done"#;
        let read = read_before_all(command, "CIBW_BEFORE_ALL_LINUX").unwrap();
        assert_eq!(read.command.as_deref(), Some(command));
        assert!(read.libraries.is_empty());
    }

    #[test]
    fn quoted_separators_stay_inside_the_command_they_belong_to() {
        let read = read_before_all(
            r#"yum install -y libffi-devel; python -c "import a; import b""#,
            "pyproject.toml",
        )
        .unwrap();
        assert_eq!(names(&read), ["libffi"]);
        assert_eq!(
            read.command.as_deref(),
            Some(r#"python -c "import a; import b""#)
        );
    }

    #[test]
    fn every_package_manager_line_names_catalogue_libraries() {
        for command in [
            "yum install -y libffi-devel",
            "dnf -y install libffi-devel zlib-devel",
            "microdnf install -y libffi-devel",
            "apt-get update && apt-get install -y --no-install-recommends libffi-dev zlib1g-dev",
            "sudo apt-get -o Dpkg::Options::=--force-confnew install -y libffi-dev",
            "apk add --no-cache libffi-dev",
            "brew install libffi",
        ] {
            let read = read_before_all(command, "pyproject.toml").unwrap();
            assert_eq!(names(&read)[0], "libffi", "{command}");
            assert_eq!(read.command, None, "{command}");
        }
    }

    #[test]
    fn build_tools_are_named_apart_and_other_commands_still_run() {
        let read = read_before_all(
            "yum install -y cmake ninja-build libffi-devel.aarch64 && ./build-extra.sh --fast; echo done",
            "pyproject.toml",
        )
        .unwrap();
        assert_eq!(names(&read), ["libffi"]);
        assert_eq!(read.tools, ["cmake", "ninja-build"]);
        assert_eq!(
            read.command.as_deref(),
            Some("./build-extra.sh --fast && echo done")
        );
    }

    #[test]
    fn an_unknown_package_names_itself_its_line_its_file_and_the_ways_out() {
        let error = read_before_all(
            "yum install -y epel-release && yum install -y libfoo-devel",
            "pyproject.toml",
        )
        .unwrap_err();
        let message = error.to_string();
        assert!(
            message.starts_with(
                "before-all in pyproject.toml: `yum install -y libfoo-devel` installs libfoo-devel, \
                 which crosswheel cannot build for the target: build it into $CROSSWHEEL_PREFIX in a \
                 before-all of its own (`./configure --host=$CROSSWHEEL_HOST --prefix=$CROSSWHEEL_PREFIX && make install`), \
                 or add it to crosswheel's catalogue (config/target-libraries.toml; it has libffi, zlib, libyaml, "
            ),
            "{message}"
        );
        assert!(message.ends_with(", scipy-openblas32)"), "{message}");
        assert_eq!(message.lines().count(), 1);
    }
}
