//! What `crosswheel toolchain` prints: per target, which toolchains are ready, what is
//! missing and the exact command that installs it. Never installs anything.

use std::fmt;
use std::path::{Path, PathBuf};

use super::{ToolchainError, gcc, zig};
use crate::support::host::Cache;
use crate::target::Target;

#[derive(Debug, Clone)]
pub struct Readiness {
    pub found: Vec<(String, PathBuf)>,
    pub missing: Vec<String>,
    /// Shell command that fixes `missing`; `None` when nothing is missing or no fix exists.
    pub install_command: Option<String>,
}

impl Readiness {
    pub fn is_ready(&self) -> bool {
        self.missing.is_empty()
    }
}

#[derive(Debug, Clone)]
pub struct TargetDoctor {
    pub target: Target,
    pub zig: Readiness,
    pub gcc: Readiness,
}

#[derive(Debug, Clone)]
pub struct DoctorReport {
    pub cache: PathBuf,
    pub targets: Vec<TargetDoctor>,
}

pub fn doctor(
    cache: &Cache,
    host_python: &Path,
    targets: &[Target],
) -> Result<DoctorReport, ToolchainError> {
    let found_zig = zig::find_zig(cache)?;
    let zig_readiness = match &found_zig {
        Some(found) => Readiness {
            found: vec![(format!("zig {}", found.version), found.exe.clone())],
            missing: Vec::new(),
            install_command: None,
        },
        None => Readiness {
            found: Vec::new(),
            missing: vec!["zig (PyPI package ziglang)".to_string()],
            install_command: Some(zig::zig_install_command(cache, host_python)),
        },
    };
    let targets = targets
        .iter()
        .map(|target| {
            let probe = gcc::probe_gcc(target);
            let install_command = if probe.missing.is_empty() {
                None
            } else {
                gcc::apt_install_command(target)
            };
            TargetDoctor {
                target: target.clone(),
                zig: zig_readiness.clone(),
                gcc: Readiness {
                    found: probe.found,
                    missing: probe.missing,
                    install_command,
                },
            }
        })
        .collect();
    Ok(DoctorReport {
        cache: cache.root().to_path_buf(),
        targets,
    })
}

impl fmt::Display for DoctorReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "cache: {}", self.cache.display())?;
        for entry in &self.targets {
            writeln!(
                f,
                "{} — zig -target {}",
                entry.target,
                entry.target.zig_triple()
            )?;
            for (name, readiness) in [("zig", &entry.zig), ("gcc", &entry.gcc)] {
                let state = if readiness.is_ready() {
                    "ready"
                } else {
                    "missing"
                };
                writeln!(f, "  {name}: {state}")?;
                for (tool, path) in &readiness.found {
                    writeln!(f, "    found   {tool}: {}", path.display())?;
                }
                for tool in &readiness.missing {
                    writeln!(f, "    missing {tool}")?;
                }
                if let Some(command) = &readiness.install_command {
                    writeln!(f, "    install: {command}")?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_cache_reports_zig_missing_with_install_command() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::at(dir.path());
        // An explicit zig would mask the empty cache.
        if std::env::var_os("CROSSWHEEL_ZIG").is_some() {
            panic!("unset CROSSWHEEL_ZIG to run this test");
        }
        let report = doctor(&cache, Path::new("python3"), &Target::all()).unwrap();
        let text = report.to_string();
        assert!(!report.targets[0].zig.is_ready());
        assert!(
            text.contains("pip --python") && text.contains("ziglang=="),
            "{text}"
        );
        assert!(text.contains("macos-arm64"), "{text}");
    }
}
