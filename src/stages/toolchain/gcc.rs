//! A system cross gcc (`aarch64-linux-gnu-gcc`, ...) as an alternative to zig.

use std::path::{Path, PathBuf};

use super::ToolchainError;
use crate::support::host::find_on_path;
use crate::target::Target;

/// Found tools of a system cross gcc; `cxx` may be missing when only C is installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GccTools {
    pub cc: PathBuf,
    pub cxx: Option<PathBuf>,
    pub ar: PathBuf,
    pub ranlib: PathBuf,
}

/// What a target's gcc looks like on this machine: the tools found and those missing.
#[derive(Debug, Clone, Default)]
pub struct GccProbe {
    pub found: Vec<(String, PathBuf)>,
    pub missing: Vec<String>,
}

pub fn apt_install_command(target: &Target) -> Option<String> {
    let packages = &target.data().gcc_packages;
    (!packages.is_empty()).then(|| format!("apt-get install {}", packages.join(" ")))
}

pub fn probe_gcc(target: &Target) -> GccProbe {
    let mut probe = GccProbe::default();
    if target.is_macos() {
        probe
            .missing
            .push("a cross gcc for macOS (none exists: use zig)".to_string());
        return probe;
    }
    let triple = target.gnu_triple();
    for tool in ["gcc", "g++", "ar", "ranlib"] {
        let name = format!("{triple}-{tool}");
        match find_on_path(&name) {
            Some(path) => probe.found.push((name, path)),
            None => probe.missing.push(name),
        }
    }
    // gcc installs without the target's libc headers; the failure then only shows up as
    // "stdio.h: No such file" deep inside a build.
    let libc_header = Path::new("/usr")
        .join(triple)
        .join("include")
        .join("stdio.h");
    if libc_header.is_file() {
        probe
            .found
            .push((format!("{triple} libc headers"), libc_header));
    } else {
        probe
            .missing
            .push(format!("{triple} libc headers ({})", libc_header.display()));
    }
    probe
}

pub fn find_gcc(target: &Target) -> Result<GccTools, ToolchainError> {
    let probe = probe_gcc(target);
    let found = |name: &str| {
        probe
            .found
            .iter()
            .find(|(tool, _)| tool.ends_with(name))
            .map(|(_, path)| path.clone())
    };
    let essential_missing: Vec<String> = probe
        .missing
        .iter()
        .filter(|tool| !tool.ends_with("g++"))
        .cloned()
        .collect();
    match (found("-gcc"), found("-ar"), found("-ranlib")) {
        (Some(cc), Some(ar), Some(ranlib)) if essential_missing.is_empty() => Ok(GccTools {
            cc,
            cxx: found("-g++"),
            ar,
            ranlib,
        }),
        _ => Err(ToolchainError::GccMissing {
            target: target.id().to_string(),
            missing: essential_missing.join(", "),
            install_command: apt_install_command(target)
                .unwrap_or_else(|| "use the zig toolchain for this target".to_string()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_hint_names_the_libc_package() {
        let target = Target::parse("linux-aarch64").unwrap();
        let command = apt_install_command(&target).unwrap();
        assert!(
            command.contains("gcc-aarch64-linux-gnu") && command.contains("libc6-dev-arm64-cross"),
            "{command}"
        );
    }

    #[test]
    fn macos_has_no_gcc() {
        let target = Target::parse("macos-arm64").unwrap();
        let err = find_gcc(&target).unwrap_err().to_string();
        assert!(err.contains("use the zig toolchain"), "{err}");
    }
}
