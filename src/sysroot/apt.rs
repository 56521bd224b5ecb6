//! APT under a private configuration: the host's mirrors and keys, everything else
//! (state, cache, architecture, source lists, configuration parts) in a folder of ours.
//!
//! The host's `apt.conf.d` is deliberately not read: it carries hooks (cache cleaners,
//! AppStream refreshes) and settings (`Dir::Cache`, architectures) that would act on the
//! host or override ours. Only the `Acquire::` settings needed to reach the mirrors
//! (proxies, snapshot mirrors without `Valid-Until`) are carried over.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::SysrootError;

#[derive(Debug)]
pub(crate) struct PrivateApt {
    dir: PathBuf,
    config: PathBuf,
    arch: String,
}

/// Where the host keeps what we reuse, as `apt-config` resolves it.
#[derive(Debug)]
struct HostApt {
    source_list: PathBuf,
    source_parts: PathBuf,
    trusted: PathBuf,
    trusted_parts: PathBuf,
    acquire_settings: Vec<String>,
}

impl PrivateApt {
    /// `suite`: the Debian release to fetch from instead of the host's own (see
    /// [`retarget_suites`]); `None` keeps the host's suites.
    pub(crate) fn create(
        dir: &Path,
        arch: &str,
        forwarded_acquire: &[String],
        suite: Option<&str>,
    ) -> Result<Self, SysrootError> {
        let host = HostApt::query(forwarded_acquire)?;
        for sub in [
            "state/lists/partial",
            "cache/archives/partial",
            "etc/sources.list.d",
            "etc/apt.conf.d",
            "etc/preferences.d",
            "log",
        ] {
            let path = dir.join(sub);
            fs::create_dir_all(&path).map_err(SysrootError::io("create", &path))?;
        }
        for empty in ["state/status", "etc/apt.conf"] {
            let path = dir.join(empty);
            fs::write(&path, "").map_err(SysrootError::io("write", &path))?;
        }
        let copied = copy_sources(&host, &dir.join("etc"))?;
        if copied.is_empty() {
            return Err(SysrootError::NoSources {
                list: host.source_list,
                parts: host.source_parts,
            });
        }
        if let Some(suite) = suite {
            point_sources_at(&copied, suite)?;
        }
        let config = dir.join("apt.conf");
        let text = render_config(dir, arch, &host);
        fs::write(&config, text).map_err(SysrootError::io("write", &config))?;
        Ok(PrivateApt {
            dir: dir.to_path_buf(),
            config,
            arch: arch.to_string(),
        })
    }

    fn apt_get(&self, args: &[&str]) -> Command {
        let mut command = Command::new("apt-get");
        command
            .env("APT_CONFIG", &self.config)
            .env("DEBIAN_FRONTEND", "noninteractive")
            // Error lines are matched below; keep them in English.
            .env("LC_ALL", "C")
            .args(["-q", "-y"])
            .args(args);
        command
    }

    /// Fetches the package indices. An index that fails (DESIGN: the ppc64el security
    /// index can fail with a size mismatch) is reported, not fatal: APT ignores it and
    /// resolves from the others, and a package that really is missing fails later with
    /// these problems attached.
    pub(crate) fn update(&self) -> Result<Vec<String>, SysrootError> {
        let output = run(self.apt_get(&["update"]), "apt-get")?;
        let problems = problem_lines(&output);
        if !output.status.success() {
            for problem in &problems {
                tracing::warn!("{} package index: {problem}", self.arch);
            }
        }
        Ok(problems)
    }

    /// Downloads `packages` and everything they depend on (no recommends), as if
    /// installing them on an empty system, and returns the `.deb` files.
    pub(crate) fn download_closure(
        &self,
        packages: &[String],
        index_problems: &[String],
    ) -> Result<Vec<PathBuf>, SysrootError> {
        let mut args = vec!["--no-install-recommends", "--download-only", "install"];
        args.extend(packages.iter().map(String::as_str));
        let output = run(self.apt_get(&args), "apt-get")?;
        self.check(&output, "apt-get install --download-only", index_problems)?;
        list_debs(&self.dir.join("cache/archives"))
    }

    /// Downloads exactly `packages` into `into`.
    pub(crate) fn download(
        &self,
        packages: &[String],
        into: &Path,
        index_problems: &[String],
    ) -> Result<Vec<PathBuf>, SysrootError> {
        let mut args = vec!["download"];
        args.extend(packages.iter().map(String::as_str));
        let mut command = self.apt_get(&args);
        command.current_dir(into);
        let output = run(command, "apt-get")?;
        self.check(&output, "apt-get download", index_problems)?;
        list_debs(into)
    }

    fn check(
        &self,
        output: &Output,
        command: &str,
        index_problems: &[String],
    ) -> Result<(), SysrootError> {
        if output.status.success() {
            return Ok(());
        }
        let mut detail = problem_lines(output)
            .into_iter()
            .find(|line| line.starts_with("E:"))
            .unwrap_or_else(|| format!("exit status {}", output.status));
        if let Some(first) = index_problems.first() {
            detail.push_str(&format!(" (while updating the package indices: {first})"));
        }
        Err(SysrootError::Apt {
            command: command.to_string(),
            arch: self.arch.clone(),
            detail,
        })
    }
}

impl HostApt {
    fn query(forwarded_acquire: &[String]) -> Result<Self, SysrootError> {
        let mut command = Command::new("apt-config");
        command.env("LC_ALL", "C").args([
            "shell",
            "SOURCE_LIST",
            "Dir::Etc::SourceList/f",
            "SOURCE_PARTS",
            "Dir::Etc::SourceParts/d",
            "TRUSTED",
            "Dir::Etc::Trusted/f",
            "TRUSTED_PARTS",
            "Dir::Etc::TrustedParts/d",
        ]);
        let shell = stdout_of(run(command, "apt-config")?, "apt-config shell")?;
        let value = |name: &str| shell_assignment(&shell, name).map(PathBuf::from);
        let mut command = Command::new("apt-config");
        command.env("LC_ALL", "C").args(["dump", "Acquire"]);
        let dump = stdout_of(run(command, "apt-config")?, "apt-config dump")?;
        Ok(HostApt {
            source_list: value("SOURCE_LIST").unwrap_or_else(|| "/etc/apt/sources.list".into()),
            source_parts: value("SOURCE_PARTS").unwrap_or_else(|| "/etc/apt/sources.list.d".into()),
            trusted: value("TRUSTED").unwrap_or_else(|| "/etc/apt/trusted.gpg".into()),
            trusted_parts: value("TRUSTED_PARTS")
                .unwrap_or_else(|| "/etc/apt/trusted.gpg.d".into()),
            acquire_settings: forwarded_settings(&dump, forwarded_acquire),
        })
    }
}

/// Copies the host's source lists verbatim (URIs, suites, `Signed-By` and architecture
/// restrictions all keep their meaning for another architecture). Returns the copies.
fn copy_sources(host: &HostApt, etc: &Path) -> Result<Vec<PathBuf>, SysrootError> {
    let mut copied = Vec::new();
    if host.source_list.is_file() {
        let to = etc.join("sources.list");
        fs::copy(&host.source_list, &to).map_err(SysrootError::io("copy", &host.source_list))?;
        copied.push(to);
    }
    let entries = match fs::read_dir(&host.source_parts) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(copied),
        Err(err) => return Err(SysrootError::io("list", &host.source_parts)(err)),
    };
    for entry in entries {
        let entry = entry.map_err(SysrootError::io("list", &host.source_parts))?;
        let path = entry.path();
        // APT itself reads only these two extensions (`*.disabled` and the like are off).
        let is_source = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("list" | "sources")
        );
        if is_source && path.is_file() {
            let to = etc.join("sources.list.d").join(entry.file_name());
            fs::copy(&path, &to).map_err(SysrootError::io("copy", &path))?;
            copied.push(to);
        }
    }
    Ok(copied)
}

/// Points the copied source lists at Debian release `suite` when the host runs another
/// one: the same mirrors and keys (Debian's keyring carries the neighbouring releases'
/// keys), another suite.
fn point_sources_at(sources: &[PathBuf], suite: &str) -> Result<(), SysrootError> {
    let os_release = fs::read_to_string("/etc/os-release").unwrap_or_default();
    let host_codename = os_release_value(&os_release, "VERSION_CODENAME").unwrap_or_default();
    if host_codename == suite {
        return Ok(());
    }
    let foreign = || SysrootError::ForeignSources {
        suite: suite.to_string(),
        host: if host_codename.is_empty() {
            "a release without a codename".to_string()
        } else {
            host_codename.clone()
        },
    };
    if host_codename.is_empty() {
        return Err(foreign());
    }
    let mut retargeted = 0;
    for path in sources {
        let text = fs::read_to_string(path).map_err(SysrootError::io("read", path))?;
        let (text, count) = retarget_suites(&text, &host_codename, suite);
        fs::write(path, text).map_err(SysrootError::io("write", path))?;
        retargeted += count;
    }
    if retargeted == 0 {
        return Err(foreign());
    }
    Ok(())
}

/// Replaces release `from` by `to` in every suite of a source list, in both the one-line
/// (`deb [opts] URI SUITE COMPONENTS`) and the deb822 (`Suites: a b`) format, keeping
/// suffixes: `bookworm-updates` becomes `trixie-updates`. Returns the new text and how
/// many suites changed.
pub(crate) fn retarget_suites(text: &str, from: &str, to: &str) -> (String, usize) {
    let retarget = |suite: &str| -> Option<String> {
        let rest = suite.strip_prefix(from)?;
        (rest.is_empty() || rest.starts_with('-') || rest.starts_with('/'))
            .then(|| format!("{to}{rest}"))
    };
    let mut count = 0;
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, newline) = line
            .strip_suffix('\n')
            .map_or((line, ""), |body| (body, "\n"));
        let trimmed = body.trim_start();
        let indent = &body[..body.len() - trimmed.len()];
        let new_body = if let Some(value) = trimmed
            .get(..7)
            .filter(|key| key.eq_ignore_ascii_case("suites:"))
            .map(|_| &trimmed[7..])
        {
            let suites: Vec<String> = value
                .split_whitespace()
                .map(|suite| match retarget(suite) {
                    Some(new) => {
                        count += 1;
                        new
                    }
                    None => suite.to_string(),
                })
                .collect();
            Some(format!("{indent}Suites: {}", suites.join(" ")))
        } else if trimmed.starts_with("deb ") || trimmed.starts_with("deb-src ") {
            retarget_one_line(trimmed, &retarget).map(|new| {
                count += 1;
                format!("{indent}{new}")
            })
        } else {
            None
        };
        out.push_str(new_body.as_deref().unwrap_or(body));
        out.push_str(newline);
    }
    (out, count)
}

/// `deb [arch=arm64 signed-by=k] URI SUITE COMPONENTS...` with SUITE retargeted, or `None`
/// when the suite is another release's.
fn retarget_one_line(line: &str, retarget: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let mut tokens: Vec<&str> = line.split_whitespace().collect();
    let mut index = 1;
    if tokens.get(index).is_some_and(|t| t.starts_with('[')) {
        while !tokens.get(index)?.ends_with(']') {
            index += 1;
        }
        index += 1;
    }
    let suite_index = index + 1;
    let new = retarget(tokens.get(suite_index)?)?;
    tokens[suite_index] = &new;
    Some(tokens.join(" "))
}

fn render_config(dir: &Path, arch: &str, host: &HostApt) -> String {
    let at = |sub: &str| quote(&dir.join(sub).to_string_lossy());
    let mut text = String::new();
    let mut set = |key: &str, value: String| text.push_str(&format!("{key} {value};\n"));
    set("Dir::State", at("state"));
    set("Dir::State::status", at("state/status"));
    set("Dir::Cache", at("cache"));
    set("Dir::Log", at("log"));
    set("Dir::Etc::Main", at("etc/apt.conf"));
    set("Dir::Etc::Parts", at("etc/apt.conf.d"));
    set("Dir::Etc::SourceList", at("etc/sources.list"));
    set("Dir::Etc::SourceParts", at("etc/sources.list.d"));
    set("Dir::Etc::Preferences", at("etc/preferences"));
    set("Dir::Etc::PreferencesParts", at("etc/preferences.d"));
    set("Dir::Etc::Trusted", quote(&host.trusted.to_string_lossy()));
    set(
        "Dir::Etc::TrustedParts",
        quote(&host.trusted_parts.to_string_lossy()),
    );
    set("APT::Architecture", quote(arch));
    set("APT::Architectures", format!("{{ {}; }}", quote(arch)));
    set("Acquire::Languages", quote("none"));
    // Downloads land in our folder, which APT's unprivileged `_apt` user cannot write.
    set("APT::Sandbox::User", quote("root"));
    for line in &host.acquire_settings {
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// Lines of `apt-config dump Acquire` (already in configuration-file syntax) whose first
/// name after `Acquire::` is allowed, with a value.
fn forwarded_settings(dump: &str, allowed: &[String]) -> Vec<String> {
    dump.lines()
        .filter(|line| {
            let Some((key, value)) = line.split_once(' ') else {
                return false;
            };
            let first = key
                .strip_prefix("Acquire::")
                .and_then(|rest| rest.split("::").next());
            let allowed =
                first.is_some_and(|first| allowed.iter().any(|a| a.eq_ignore_ascii_case(first)));
            allowed && value.trim() != "\"\";" && line.ends_with(';')
        })
        .map(str::to_string)
        .collect()
}

/// The value of `NAME='value'` in `apt-config shell` output.
fn shell_assignment(shell: &str, name: &str) -> Option<String> {
    shell.lines().find_map(|line| {
        let value = line.strip_prefix(name)?.strip_prefix('=')?;
        let value = value.strip_prefix('\'')?.strip_suffix('\'')?;
        Some(value.replace("'\\''", "'"))
    })
}

/// `NAME=value`, `NAME="value"` or `NAME='value'` from an os-release file.
fn os_release_value(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let value = line.strip_prefix(name)?.strip_prefix('=')?.trim();
        let unquoted = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(value);
        Some(unquoted.to_string())
    })
}

fn quote(value: &str) -> String {
    format!("\"{}\"", value.replace('"', "\\\""))
}

fn problem_lines(output: &Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("E:") || line.starts_with("W:"))
        .map(str::to_string)
        .collect()
}

fn run(mut command: Command, tool: &'static str) -> Result<Output, SysrootError> {
    tracing::debug!("running {command:?}");
    command.output().map_err(|err| match err.kind() {
        io::ErrorKind::NotFound => SysrootError::ToolMissing { tool },
        _ => SysrootError::Io {
            action: "run",
            path: PathBuf::from(tool),
            source: err,
        },
    })
}

fn stdout_of(output: Output, command: &str) -> Result<String, SysrootError> {
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    Err(SysrootError::Apt {
        command: command.to_string(),
        arch: "the host".into(),
        detail: stderr.lines().last().unwrap_or("no message").to_string(),
    })
}

fn list_debs(dir: &Path) -> Result<Vec<PathBuf>, SysrootError> {
    let mut debs = Vec::new();
    for entry in fs::read_dir(dir).map_err(SysrootError::io("list", dir))? {
        let path = entry.map_err(SysrootError::io("list", dir))?.path();
        if path.extension().is_some_and(|e| e == "deb") {
            debs.push(path);
        }
    }
    debs.sort();
    Ok(debs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwards_only_allowed_acquire_settings_with_values() {
        let dump = "Acquire \"\";\n\
                    Acquire::http::Proxy \"http://proxy:3128\";\n\
                    Acquire::Check-Valid-Until \"false\";\n\
                    Acquire::IndexTargets::deb::Packages::MetaKey \"x\";\n\
                    Acquire::http \"\";\n\
                    Acquire::Languages:: \"none\";\n";
        let allowed = vec!["http".to_string(), "Check-Valid-Until".to_string()];
        assert_eq!(
            forwarded_settings(dump, &allowed),
            vec![
                "Acquire::http::Proxy \"http://proxy:3128\";",
                "Acquire::Check-Valid-Until \"false\";"
            ]
        );
    }

    #[test]
    fn reads_apt_config_shell_assignments() {
        let shell = "SOURCE_LIST='/etc/apt/sources.list'\nSOURCE_PARTS='/etc/apt/it'\\''s.d/'\n";
        assert_eq!(
            shell_assignment(shell, "SOURCE_LIST").as_deref(),
            Some("/etc/apt/sources.list")
        );
        assert_eq!(
            shell_assignment(shell, "SOURCE_PARTS").as_deref(),
            Some("/etc/apt/it's.d/")
        );
        assert_eq!(shell_assignment(shell, "SOURCE"), None);
    }

    #[test]
    fn suites_of_both_source_formats_move_to_another_release_with_their_suffixes() {
        let deb822 = "Types: deb\nURIs: http://mirror/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\n\
                      Types: deb\nURIs: http://mirror/debian-security\nSuites: bookworm-security\n";
        let (text, count) = retarget_suites(deb822, "bookworm", "trixie");
        assert_eq!(count, 3);
        assert!(text.contains("Suites: trixie trixie-updates\n"), "{text}");
        assert!(text.contains("Suites: trixie-security\n"), "{text}");
        assert!(text.contains("URIs: http://mirror/debian\n"), "{text}");

        let one_line = "# deb http://old bookworm main\n\
                        deb [arch=amd64 signed-by=/k.gpg] http://mirror/debian bookworm main contrib\n\
                        deb http://security/debian-security bookworm-security main\n\
                        deb http://other/repo stable main\n";
        let (text, count) = retarget_suites(one_line, "bookworm", "trixie");
        assert_eq!(count, 2);
        assert_eq!(
            text,
            "# deb http://old bookworm main\n\
             deb [arch=amd64 signed-by=/k.gpg] http://mirror/debian trixie main contrib\n\
             deb http://security/debian-security trixie-security main\n\
             deb http://other/repo stable main\n"
        );
    }

    #[test]
    fn os_release_values_may_be_quoted() {
        let text = "NAME=\"Debian GNU/Linux\"\nVERSION_CODENAME=bookworm\nID='debian'\n";
        assert_eq!(
            os_release_value(text, "VERSION_CODENAME").as_deref(),
            Some("bookworm")
        );
        assert_eq!(
            os_release_value(text, "NAME").as_deref(),
            Some("Debian GNU/Linux")
        );
        assert_eq!(os_release_value(text, "ID").as_deref(), Some("debian"));
        assert_eq!(os_release_value(text, "VERSION"), None);
    }

    #[test]
    fn a_suite_that_only_starts_like_the_release_is_left_alone() {
        let (text, count) = retarget_suites("Suites: bookwormish\n", "bookworm", "trixie");
        assert_eq!((text.as_str(), count), ("Suites: bookwormish\n", 0));
    }

    #[test]
    fn private_config_points_every_state_path_into_its_folder() {
        let host = HostApt {
            source_list: "/etc/apt/sources.list".into(),
            source_parts: "/etc/apt/sources.list.d".into(),
            trusted: "/etc/apt/trusted.gpg".into(),
            trusted_parts: "/etc/apt/trusted.gpg.d".into(),
            acquire_settings: vec!["Acquire::Retries \"3\";".into()],
        };
        let text = render_config(Path::new("/tmp/x"), "ppc64el", &host);
        for key in [
            "Dir::State ",
            "Dir::Cache ",
            "Dir::Etc::Parts ",
            "Dir::Etc::SourceParts ",
        ] {
            let line = text
                .lines()
                .find(|l| l.starts_with(key))
                .unwrap_or_else(|| panic!("{key} missing:\n{text}"));
            assert!(line.contains("\"/tmp/x/"), "{line}");
        }
        assert!(text.contains("APT::Architectures { \"ppc64el\"; };"));
        assert!(text.contains("Dir::Etc::TrustedParts \"/etc/apt/trusted.gpg.d\";"));
        assert!(text.ends_with("Acquire::Retries \"3\";\n"));
    }
}
