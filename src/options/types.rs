//! The typed values of the options that are more than strings and lists.

use std::fmt;

use super::shell;

/// `toolchain`: the compiler that builds for the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toolchain {
    /// zig from the `ziglang` package: every target, glibc version chosen per build.
    Zig,
    /// A system cross gcc (Linux targets only).
    Gcc,
}

impl Toolchain {
    pub(crate) fn from_name(name: &str) -> Option<Toolchain> {
        match name {
            "zig" => Some(Toolchain::Zig),
            "gcc" => Some(Toolchain::Gcc),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Toolchain::Zig => "zig",
            Toolchain::Gcc => "gcc",
        }
    }
}

/// The frontend names cibuildwheel accepts in `build-frontend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrontendName {
    Build,
    BuildUv,
    Pip,
    Uv,
}

impl FrontendName {
    fn from_name(name: &str) -> Option<FrontendName> {
        match name {
            "build" | "default" => Some(FrontendName::Build),
            "build[uv]" => Some(FrontendName::BuildUv),
            "pip" => Some(FrontendName::Pip),
            "uv" => Some(FrontendName::Uv),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FrontendName::Build => "build",
            FrontendName::BuildUv => "build[uv]",
            FrontendName::Pip => "pip",
            FrontendName::Uv => "uv",
        }
    }
}

/// `build-frontend`: `"build"`, `"pip; args: --no-build-isolation"`, or
/// `{ name = "build", args = ["--no-isolation"] }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildFrontend {
    pub name: FrontendName,
    /// Extra arguments for the frontend.
    pub args: Vec<String>,
}

impl BuildFrontend {
    pub(crate) fn new(name: &str, args: Vec<String>) -> Result<BuildFrontend, String> {
        let name = FrontendName::from_name(name.trim()).ok_or_else(|| {
            format!(
                "unknown frontend `{}`: use build, build[uv], pip or uv",
                name.trim()
            )
        })?;
        Ok(BuildFrontend { name, args })
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

impl fmt::Display for BuildFrontend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name.name())?;
        if !self.args.is_empty() {
            let args: Vec<_> = self.args.iter().map(|arg| shell::quote(arg)).collect();
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
    pub fn command_for(&self, wheel: &str, dest_dir: &str) -> Option<String> {
        match self {
            RepairCommand::Command(template) => Some(shell::fill_placeholders(
                template,
                &[
                    ("wheel", &shell::quote(wheel)),
                    ("dest_dir", &shell::quote(dest_dir)),
                ],
            )),
            RepairCommand::Builtin | RepairCommand::Skip => None,
        }
    }
}

/// `macos-deployment-target`, checked against arm64's floor of macOS 11.0.
pub(crate) fn parse_macos_version(text: &str) -> Result<String, String> {
    let text = text.trim();
    let (major, minor) = text.split_once('.').unwrap_or((text, "0"));
    let parsed = major.parse::<u32>().ok().zip(minor.parse::<u32>().ok());
    let Some((major, minor)) = parsed else {
        return Err(format!(
            "`{text}` is not a macOS version such as `11.0` or `14.2`"
        ));
    };
    if major < 11 {
        return Err(format!(
            "macOS {major}.{minor} is below 11.0, the first macOS release for arm64"
        ));
    }
    Ok(format!("{major}.{minor}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontend_string_form_carries_args() {
        let frontend = BuildFrontend::parse("pip; args: --no-build-isolation '-v v'").unwrap();
        assert_eq!(frontend.name, FrontendName::Pip);
        assert_eq!(frontend.args, ["--no-build-isolation", "-v v"]);
        assert_eq!(
            frontend.to_string(),
            "pip; args: --no-build-isolation '-v v'"
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
            repair.command_for("/tmp/a b/x.whl", "/out").as_deref(),
            Some("mytool -w /out '/tmp/a b/x.whl'")
        );
        assert_eq!(RepairCommand::Builtin.command_for("x", "y"), None);
    }

    #[test]
    fn macos_versions_are_normalised_and_floored() {
        assert_eq!(parse_macos_version("12").unwrap(), "12.0");
        assert_eq!(parse_macos_version("14.2").unwrap(), "14.2");
        assert!(parse_macos_version("10.15").unwrap_err().contains("11.0"));
        assert!(parse_macos_version("eleven").is_err());
    }
}
