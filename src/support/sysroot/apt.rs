//! APT under a private configuration: Debian's archive with Debian's keys (both from
//! `config/debian/`), and everything else (state, cache, architecture, source list,
//! configuration parts) in a folder of ours.
//!
//! Nothing of the host's APT is read but its network settings: its source lists, keyrings
//! and `apt.conf.d` are for the host's own release (an Ubuntu host's archive has no
//! Debian suites and no arm64/ppc64el packages) and carry hooks that would act on the
//! host. Only the `Acquire::` settings that reach a network (proxies) are carried over,
//! when the host has APT configured at all.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::SysrootError;
use super::archive::{ARCHIVE_KEYS, Suite};

#[derive(Debug)]
pub(crate) struct PrivateApt {
    dir: PathBuf,
    config: PathBuf,
    arch: String,
    mirror: String,
}

impl PrivateApt {
    /// A configuration in `dir` that fetches `arch` packages from `suite` only.
    pub(crate) fn create(
        dir: &Path,
        arch: &str,
        forwarded_acquire: &[String],
        suite: &Suite,
    ) -> Result<Self, SysrootError> {
        Self::create_for(dir, arch, forwarded_acquire, suite, IndexType::Binary)
    }

    /// A configuration in `dir` that fetches source packages of `suite` only, verified
    /// against its signed Sources index.
    pub(crate) fn create_for_sources(
        dir: &Path,
        forwarded_acquire: &[String],
        suite: &Suite,
    ) -> Result<Self, SysrootError> {
        Self::create_for(dir, "source", forwarded_acquire, suite, IndexType::Source)
    }

    fn create_for(
        dir: &Path,
        arch: &str,
        forwarded_acquire: &[String],
        suite: &Suite,
        index: IndexType,
    ) -> Result<Self, SysrootError> {
        for sub in [
            "state/lists/partial",
            "cache/archives/partial",
            "etc/sources.list.d",
            "etc/apt.conf.d",
            "etc/preferences.d",
            "etc/trusted.gpg.d",
            "log",
        ] {
            let path = dir.join(sub);
            fs::create_dir_all(&path).map_err(SysrootError::io("create", &path))?;
        }
        for empty in ["state/status", "etc/apt.conf", "etc/sources.list"] {
            let path = dir.join(empty);
            fs::write(&path, "").map_err(SysrootError::io("write", &path))?;
        }
        // APT accepts an armored key file as `Signed-By` only under an `.asc` name.
        let keys = dir.join("etc/debian-archive-keys.asc");
        fs::write(&keys, ARCHIVE_KEYS).map_err(SysrootError::io("write", &keys))?;
        let sources = dir.join("etc/sources.list.d/debian.sources");
        fs::write(&sources, render_sources(suite, &keys, index))
            .map_err(SysrootError::io("write", &sources))?;
        let config = dir.join("apt.conf");
        let text = render_config(dir, arch, &host_acquire_settings(forwarded_acquire));
        fs::write(&config, text).map_err(SysrootError::io("write", &config))?;
        Ok(PrivateApt {
            dir: dir.to_path_buf(),
            config,
            arch: arch.to_string(),
            mirror: suite.mirror.clone(),
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

    /// Fetches the package indices. An index that fails (a mirror caught mid-update can
    /// serve an index whose size does not match its Release file) is reported, not fatal: APT ignores it and
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

    /// Only the orig tarball `file_name` of `package`'s source `version` (`None`: the
    /// suite's current one): its URI and SHA-256 from the signed Sources index (`apt-get
    /// source --print-uris`), fetched by APT's own downloader, which checks that hash. The
    /// .dsc and the Debian changes, which a build from the orig tarball does not use, are
    /// not fetched, so a mirror that lags behind its index for them does not matter.
    pub(crate) fn download_orig(
        &self,
        package: &str,
        version: Option<&str>,
        file_name: &str,
        into: &Path,
        index_problems: &[String],
    ) -> Result<(), SysrootError> {
        let wanted = match version {
            Some(version) => format!("{package}={version}"),
            None => package.to_string(),
        };
        let output = run(
            self.apt_get(&["--print-uris", "source", &wanted]),
            "apt-get",
        )?;
        self.check(&output, "apt-get source --print-uris", index_problems)?;
        let listing = String::from_utf8_lossy(&output.stdout);
        // `'URI' FILE SIZE SHA256:HASH`, one line per file of the source package.
        let fields = listing.lines().find_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.len() == 4 && fields[1] == file_name).then_some(fields)
        });
        let Some(fields) = fields else {
            return Err(SysrootError::SourceMismatch {
                package: package.to_string(),
                version: version.unwrap_or("(current)").to_string(),
                detail: format!("it has no {file_name}"),
            });
        };
        self.fetch_checked(
            fields[0].trim_matches('\''),
            &into.join(file_name),
            fields[3],
            index_problems,
        )
    }

    /// One file at `url`, fetched by APT's own downloader (with the machine's proxy
    /// settings forwarded), which refuses it unless its SHA-256 is `sha256`.
    pub(crate) fn download_file(
        &self,
        url: &str,
        into: &Path,
        sha256: &str,
    ) -> Result<(), SysrootError> {
        self.fetch_checked(url, into, &format!("SHA256:{sha256}"), &[])
    }

    /// `apt-helper download-file url into hash`: `hash` as APT spells it (`SHA256:<hex>`).
    fn fetch_checked(
        &self,
        url: &str,
        into: &Path,
        hash: &str,
        index_problems: &[String],
    ) -> Result<(), SysrootError> {
        let mut helper = Command::new("/usr/lib/apt/apt-helper");
        helper
            .env("APT_CONFIG", &self.config)
            .env("LC_ALL", "C")
            .arg("download-file")
            .arg(url)
            .arg(into)
            .arg(hash);
        let output = run(helper, "apt-helper")?;
        self.check(&output, "apt-helper download-file", index_problems)
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
            mirror: self.mirror.clone(),
            detail,
        })
    }
}

/// Which index a private configuration reads: binary packages or source packages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IndexType {
    Binary,
    Source,
}

/// A deb822 source list naming only `suite`, verified with Debian's keys.
fn render_sources(suite: &Suite, keys: &Path, index: IndexType) -> String {
    let types = match index {
        IndexType::Binary => "deb",
        IndexType::Source => "deb-src",
    };
    let mut text = format!(
        "Types: {types}\nURIs: {}\nSuites: {}\nComponents: main\nSigned-By: {}\n",
        suite.mirror,
        suite.codename,
        keys.display()
    );
    if !suite.check_valid_until {
        text.push_str("Check-Valid-Until: no\n");
    }
    text
}

/// The host's `Acquire::` network settings (proxies, retries) that `allowed` names, or
/// none when the host has no APT configuration to ask.
fn host_acquire_settings(allowed: &[String]) -> Vec<String> {
    let mut command = Command::new("apt-config");
    command.env("LC_ALL", "C").args(["dump", "Acquire"]);
    match run(command, "apt-config") {
        Ok(output) if output.status.success() => {
            forwarded_settings(&String::from_utf8_lossy(&output.stdout), allowed)
        }
        _ => Vec::new(),
    }
}

fn render_config(dir: &Path, arch: &str, acquire_settings: &[String]) -> String {
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
    // No keyring of the host's is trusted: the source's Signed-By names ours.
    set("Dir::Etc::Trusted", at("etc/trusted.gpg"));
    set("Dir::Etc::TrustedParts", at("etc/trusted.gpg.d"));
    set("APT::Architecture", quote(arch));
    set("APT::Architectures", format!("{{ {}; }}", quote(arch)));
    set("Acquire::Languages", quote("none"));
    // Downloads land in our folder, which APT's unprivileged `_apt` user cannot write (nor
    // read the key file in).
    set("APT::Sandbox::User", quote("root"));
    for line in acquire_settings {
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
        _ => SysrootError::Io(crate::io_error::IoError::new(
            "run",
            PathBuf::from(tool),
            err,
        )),
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
    fn the_source_names_one_suite_of_debians_archive_signed_by_our_keys() {
        let stable = Suite {
            mirror: "http://mirror.test/debian".into(),
            codename: "bookworm".into(),
            check_valid_until: true,
            offline: false,
        };
        let text = render_sources(&stable, Path::new("/x/keys.asc"), IndexType::Binary);
        assert_eq!(
            text,
            "Types: deb\nURIs: http://mirror.test/debian\nSuites: bookworm\nComponents: main\n\
             Signed-By: /x/keys.asc\n"
        );
        let testing = Suite {
            codename: "forky".into(),
            check_valid_until: false,
            ..stable
        };
        let text = render_sources(&testing, Path::new("/x/keys.asc"), IndexType::Binary);
        assert!(text.ends_with("Check-Valid-Until: no\n"), "{text}");
        let sources = render_sources(&testing, Path::new("/x/keys.asc"), IndexType::Source);
        assert!(sources.starts_with("Types: deb-src\n"), "{sources}");
    }

    #[test]
    fn private_config_points_every_state_path_into_its_folder() {
        let acquire = vec!["Acquire::Retries \"3\";".to_string()];
        let text = render_config(Path::new("/tmp/x"), "ppc64el", &acquire);
        for key in [
            "Dir::State ",
            "Dir::Cache ",
            "Dir::Etc::Parts ",
            "Dir::Etc::SourceParts ",
            "Dir::Etc::Trusted ",
            "Dir::Etc::TrustedParts ",
        ] {
            let line = text
                .lines()
                .find(|l| l.starts_with(key))
                .unwrap_or_else(|| panic!("{key} missing:\n{text}"));
            assert!(line.contains("\"/tmp/x/"), "{line}");
        }
        assert!(text.contains("APT::Architectures { \"ppc64el\"; };"));
        assert!(text.ends_with("Acquire::Retries \"3\";\n"));
    }
}
