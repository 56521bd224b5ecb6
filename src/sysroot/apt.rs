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
    pub(crate) fn create(
        dir: &Path,
        arch: &str,
        forwarded_acquire: &[String],
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
        if copied == 0 {
            return Err(SysrootError::NoSources {
                list: host.source_list,
                parts: host.source_parts,
            });
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
/// restrictions all keep their meaning for another architecture). Returns how many.
fn copy_sources(host: &HostApt, etc: &Path) -> Result<usize, SysrootError> {
    let mut copied = 0;
    if host.source_list.is_file() {
        let to = etc.join("sources.list");
        fs::copy(&host.source_list, &to).map_err(SysrootError::io("copy", &host.source_list))?;
        copied += 1;
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
            copied += 1;
        }
    }
    Ok(copied)
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
