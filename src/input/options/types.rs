//! The typed values of the options that are more than strings and lists.

use std::fmt;

use super::frontend::FrontendArgs;
use super::shell;
use crate::support::host::shell_quote;
use crate::target::OsVersion;

/// The frontend names cibuildwheel accepts in `build-frontend`. crosswheel runs the
/// project's backend through its own PEP 517 driver whichever is named; the name says which
/// installer fills the build environment and how its `args` are read
/// ([`super::frontend::parse`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrontendName {
    Build,
    BuildUv,
    Pip,
    Uv,
    /// cibuildwheel's frontend for Pyodide builds; crosswheel builds no Pyodide wheels.
    PyodideBuild,
}

impl FrontendName {
    fn from_name(name: &str) -> Option<FrontendName> {
        match name {
            "build" | "default" => Some(FrontendName::Build),
            "build[uv]" => Some(FrontendName::BuildUv),
            "pip" => Some(FrontendName::Pip),
            "uv" => Some(FrontendName::Uv),
            "pyodide-build" => Some(FrontendName::PyodideBuild),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FrontendName::Build => "build",
            FrontendName::BuildUv => "build[uv]",
            FrontendName::Pip => "pip",
            FrontendName::Uv => "uv",
            FrontendName::PyodideBuild => "pyodide-build",
        }
    }
}

/// `build-frontend`: `"build"`, `"pip; args: --no-build-isolation"`, or
/// `{ name = "build", args = ["--no-isolation"] }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildFrontend {
    pub name: FrontendName,
    /// Extra arguments for the frontend, as written.
    pub args: Vec<String>,
    /// What the args ask for: filled by [`BuildFrontend::read_args`] when the option is
    /// resolved for a build, so the args of an override for builds crosswheel never makes
    /// (`select = "*pyodide*"`) are not held against the configuration.
    pub parsed: FrontendArgs,
}

impl BuildFrontend {
    pub(crate) fn new(name: &str, args: Vec<String>) -> Result<BuildFrontend, String> {
        let name = FrontendName::from_name(name.trim()).ok_or_else(|| {
            format!(
                "unknown frontend `{}`: use build, build[uv], pip or uv",
                name.trim()
            )
        })?;
        let parsed = super::frontend::without_args(name);
        Ok(BuildFrontend { name, args, parsed })
    }

    /// The frontend with its args read as it reads them ([`super::frontend::parse`]).
    pub(crate) fn read_args(mut self) -> Result<BuildFrontend, String> {
        self.parsed = super::frontend::parse(self.name, &self.args)?;
        Ok(self)
    }

    /// The string form: a name, then `; args: ...` in shell syntax.
    pub(crate) fn parse(text: &str) -> Result<BuildFrontend, String> {
        let mut parts = text.split(';');
        let name = parts.next().unwrap_or_default();
        let mut args = Vec::new();
        for part in parts {
            let (key, value) = part
                .split_once(':')
                .ok_or_else(|| format!("`{}` is not `args: ...`", part.trim()))?;
            if key.trim() != "args" {
                return Err(format!(
                    "unknown frontend setting `{}`: only `args` exists",
                    key.trim()
                ));
            }
            args.extend(shell::split_words(value)?);
        }
        BuildFrontend::new(name, args)
    }
}

impl Default for BuildFrontend {
    /// cibuildwheel's default, `build` with no args.
    fn default() -> Self {
        BuildFrontend {
            name: FrontendName::Build,
            args: Vec::new(),
            parsed: super::frontend::without_args(FrontendName::Build),
        }
    }
}

impl fmt::Display for BuildFrontend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name.name())?;
        if !self.args.is_empty() {
            let args: Vec<_> = self.args.iter().map(|arg| shell_quote(arg)).collect();
            write!(f, "; args: {}", args.join(" "))?;
        }
        Ok(())
    }
}

/// `repair-wheel-command`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepairCommand {
    /// Not set: crosswheel's own repair (vendor libraries, fix rpaths, retag, sign).
    Builtin,
    /// Set to an empty string: wheels are left as built.
    Skip,
    /// A shell command with `{wheel}` and `{dest_dir}` placeholders.
    Command(String),
}

impl RepairCommand {
    /// The command for one wheel, placeholders filled and shell-quoted.
    ///
    /// `delocate_archs` is the architectures of a macOS wheel, as cibuildwheel fills
    /// `{delocate_archs}` for `delocate-wheel --require-archs`; Linux has no such
    /// placeholder.
    pub fn command_for(
        &self,
        wheel: &str,
        dest_dir: &str,
        delocate_archs: Option<&str>,
    ) -> Option<String> {
        match self {
            RepairCommand::Command(template) => {
                let mut values = vec![
                    ("wheel", shell_quote(wheel)),
                    ("dest_dir", shell_quote(dest_dir)),
                ];
                if let Some(archs) = delocate_archs {
                    values.push(("delocate_archs", archs.into()));
                }
                let values: Vec<(&str, &str)> = values
                    .iter()
                    .map(|(name, value)| (*name, value.as_ref()))
                    .collect();
                Some(shell::fill_placeholders(template, &values))
            }
            RepairCommand::Builtin | RepairCommand::Skip => None,
        }
    }
}

/// `dependency-versions`: the versions of the tools crosswheel installs for a build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DependencyVersions {
    /// `pinned` (cibuildwheel's default) or `latest`: crosswheel installs no frontend or
    /// repair tools of its own, so the build requirements are installed as the project
    /// states them.
    Unconstrained,
    /// A pip constraints file (from a path, or `packages: ...`) applied when the build
    /// requirements are installed.
    Constraints(std::path::PathBuf),
    /// `packages: a==1 b==2`: constraints given inline.
    Packages(Vec<String>),
}

impl DependencyVersions {
    /// The string form: `pinned`, `latest`, `packages: ...`, or a file (relative to `base`).
    pub(crate) fn parse(text: &str, base: &std::path::Path) -> Result<DependencyVersions, String> {
        let text = text.trim();
        match text {
            "" | "pinned" | "latest" => Ok(DependencyVersions::Unconstrained),
            _ => match text.strip_prefix("packages:") {
                Some(packages) => Ok(DependencyVersions::Packages(shell::split_words(packages)?)),
                None => {
                    let path = base.join(text);
                    if path.is_file() {
                        Ok(DependencyVersions::Constraints(path))
                    } else {
                        Err(format!(
                            "`{text}` is neither pinned, latest, packages: ... nor a constraints file ({} does not exist)",
                            path.display()
                        ))
                    }
                }
            },
        }
    }

    /// pip's constraints lines for the build requirements' installation.
    pub fn constraint_lines(&self) -> Result<Vec<String>, crate::io_error::IoError> {
        match self {
            DependencyVersions::Unconstrained => Ok(Vec::new()),
            DependencyVersions::Packages(packages) => Ok(packages.clone()),
            DependencyVersions::Constraints(path) => Ok(std::fs::read_to_string(path)
                .map_err(crate::io_error::IoError::at("read", path))?
                .lines()
                .map(str::trim)
                .filter(|line| !line.is_empty() && !line.starts_with('#'))
                .map(String::from)
                .collect()),
        }
    }
}

/// A length of time in whole seconds: `45`, `90s`, `30m`, `2h`, `1h30m`; `None` for no
/// limit (empty, `0` or `none`).
pub(crate) fn parse_duration(text: &str) -> Result<Option<u64>, String> {
    let text = text.trim();
    if text.is_empty() || text == "0" || text.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let invalid =
        || format!("`{text}` is not a length of time such as `600`, `90s`, `30m` or `1h30m`");
    if let Ok(seconds) = text.parse::<u64>() {
        return Ok(Some(seconds));
    }
    let mut total: u64 = 0;
    let mut digits = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c.to_ascii_lowercase() {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            _ => return Err(invalid()),
        };
        let amount: u64 = digits.parse().map_err(|_| invalid())?;
        total = amount
            .checked_mul(unit)
            .and_then(|seconds| total.checked_add(seconds))
            .ok_or_else(invalid)?;
        digits.clear();
    }
    if !digits.is_empty() {
        return Err(invalid());
    }
    Ok((total > 0).then_some(total))
}

/// `macos-deployment-target`, checked against the lowest macOS floor of the targets
/// ([`crate::target::macos_floor`], x86_64's); arm64 builds raise it to 11.0 themselves.
pub(crate) fn parse_macos_version(text: &str) -> Result<OsVersion, String> {
    let text = text.trim();
    let version = OsVersion::parse(text)
        .ok_or_else(|| format!("`{text}` is not a macOS version such as `11.0` or `14.2`"))?;
    let floor = crate::target::macos_floor();
    if version < floor {
        return Err(format!(
            "macOS {version} is below {floor}, the oldest macOS crosswheel builds for (x86_64; arm64 starts at {})",
            crate::target::macos_arm64_floor()
        ));
    }
    Ok(version)
}

#[cfg(test)]
mod tests {
    #[test]
    fn test_timeout_reads_seconds_and_units() {
        assert_eq!(parse_duration("45"), Ok(Some(45)));
        assert_eq!(parse_duration("90s"), Ok(Some(90)));
        assert_eq!(parse_duration(" 30m "), Ok(Some(1800)));
        assert_eq!(parse_duration("1h30m"), Ok(Some(5400)));
        assert_eq!(parse_duration(""), Ok(None));
        assert_eq!(parse_duration("none"), Ok(None));
        assert_eq!(parse_duration("0"), Ok(None));
        for bad in ["30 minutes", "m", "1.5h", "-5", "30x"] {
            let message = parse_duration(bad).unwrap_err();
            assert!(
                message.contains("is not a length of time"),
                "{bad}: {message}"
            );
        }
    }

    use super::*;

    #[test]
    fn frontend_string_form_carries_args() {
        let frontend =
            BuildFrontend::parse("pip; args: --extra-index-url 'file:///my wheels'").unwrap();
        assert_eq!(frontend.name, FrontendName::Pip);
        assert_eq!(frontend.args, ["--extra-index-url", "file:///my wheels"]);
        assert_eq!(
            frontend.to_string(),
            "pip; args: --extra-index-url 'file:///my wheels'"
        );
    }

    #[test]
    fn frontend_rejects_unknown_names_and_settings() {
        assert!(
            BuildFrontend::parse("poetry")
                .unwrap_err()
                .contains("poetry")
        );
        assert!(
            BuildFrontend::parse("build; flags: -x")
                .unwrap_err()
                .contains("flags")
        );
        assert_eq!(
            BuildFrontend::parse("default").unwrap().name,
            FrontendName::Build
        );
    }

    #[test]
    fn repair_command_fills_and_quotes_placeholders() {
        let repair = RepairCommand::Command("mytool -w {dest_dir} {wheel}".to_string());
        assert_eq!(
            repair
                .command_for("/tmp/a b/x.whl", "/out", None)
                .as_deref(),
            Some("mytool -w /out '/tmp/a b/x.whl'")
        );
        assert_eq!(RepairCommand::Builtin.command_for("x", "y", None), None);
    }

    #[test]
    fn a_macos_repair_command_gets_the_wheels_architectures_for_delocate() {
        let repair = RepairCommand::Command(
            "delocate-wheel --require-archs {delocate_archs} -w {dest_dir} -v {wheel}".to_string(),
        );
        assert_eq!(
            repair
                .command_for("a.whl", "/out", Some("arm64"))
                .as_deref(),
            Some("delocate-wheel --require-archs arm64 -w /out -v a.whl")
        );
    }

    #[test]
    fn macos_versions_are_normalised_and_floored() {
        assert_eq!(parse_macos_version("12").unwrap().to_string(), "12.0");
        assert_eq!(parse_macos_version("14.2").unwrap().to_string(), "14.2");
        assert_eq!(parse_macos_version("10.15").unwrap().to_string(), "10.15");
        assert!(
            parse_macos_version("10.9")
                .unwrap_err()
                .contains("below 10.13")
        );
        assert!(parse_macos_version("eleven").is_err());
    }
}

/// `cuda` and `cuda-components` as the options give them: a CUDA release (`13.5`) and the
/// components beyond the runtime and CCCL, by cuda-toolkit's extra names. The toolchain
/// checks them against the releases it pins (`toolchain::CudaRequest`); the pipeline does
/// so for every build before the first one starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CudaOption {
    pub release: Option<String>,
    pub components: Vec<String>,
}
