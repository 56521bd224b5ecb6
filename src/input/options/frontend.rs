//! `build-frontend` args, read as the named frontend reads them. crosswheel runs the PEP 517
//! hooks itself, so what an arg means has to be carried over: config settings go to the
//! backend, isolation and the dependency check change how the build environment is made,
//! verbosity flags add to `build-verbosity`, and pip's or uv's index options go to the
//! installer that fills the build environment. Args that change only the frontend's own
//! output (colour, progress bars) are accepted and named in one note; an arg that would
//! change the build and cannot be honoured is an error naming it, never dropped.

use super::types::FrontendName;
pub use crate::support::host::Installer;

/// What a frontend's args ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontendArgs {
    pub installer: Installer,
    /// `false` with `--no-isolation`/`-n` (build) or `--no-build-isolation` (pip, uv): the
    /// backend runs in the build's own environment (pip and what `before-build` installed)
    /// and nothing is installed.
    pub isolation: bool,
    /// Without isolation, whether missing build requirements are an error before the build:
    /// build checks unless `-x`; pip only with `--check-build-dependencies`; uv never.
    pub check_dependencies: bool,
    /// `-C key=value` and its spellings, in order.
    pub config_settings: Vec<(String, String)>,
    /// `-v` counts +1, `-q` -1: added to `build-verbosity`, as cibuildwheel appends both.
    pub verbosity: i64,
    /// Options for the installer (`--index-url X`, `--constraint X`, ...), in its own spelling.
    pub installer_args: Vec<String>,
    /// Args accepted that change nothing crosswheel builds (`--no-progress`), as written:
    /// said once in the run's notes.
    pub without_effect: Vec<String>,
}

/// Index options pip and uv spell alike; `true` when the option takes a value.
const SHARED_INSTALLER_OPTIONS: &[(&str, bool)] = &[
    ("--index-url", true),
    ("-i", true),
    ("--extra-index-url", true),
    ("--find-links", true),
    ("-f", true),
    ("--no-index", false),
    ("--require-hashes", false),
    ("--keyring-provider", true),
    ("--cache-dir", true),
];

/// pip's other options that change what `pip install` fetches for the build environment.
const PIP_INSTALLER_OPTIONS: &[(&str, bool)] = &[
    ("--pre", false),
    ("--only-binary", true),
    ("--no-binary", true),
    ("--prefer-binary", false),
    ("--constraint", true),
    ("-c", true),
    ("--build-constraint", true),
    ("--trusted-host", true),
    ("--cert", true),
    ("--client-cert", true),
    ("--proxy", true),
    ("--retries", true),
    ("--timeout", true),
    ("--no-cache-dir", false),
];

/// uv's (`uv build`) other options with the same meaning for `uv pip install`.
const UV_INSTALLER_OPTIONS: &[(&str, bool)] = &[
    ("--index", true),
    ("--default-index", true),
    ("--index-strategy", true),
    ("--prerelease", true),
    ("--resolution", true),
    ("--no-binary", false),
    ("--no-binary-package", true),
    ("--no-build", false),
    ("--no-build-package", true),
    ("--exclude-newer", true),
    ("--verify-hashes", false),
    ("--no-verify-hashes", false),
    ("--no-cache", false),
    ("--refresh", false),
    ("--offline", false),
    ("--link-mode", true),
    ("--native-tls", false),
    ("--allow-insecure-host", true),
    // uv's own configuration files (uv.toml, `[tool.uv]`) are not read: what `uv build
    // --no-config` asks, `uv pip install --no-config` does for the build environment.
    ("--no-config", false),
];

/// `uv build`'s constraints on the build requirements: `--constraint` for `uv pip install`.
const UV_BUILD_CONSTRAINTS: &[&str] = &["--build-constraint", "--build-constraints", "-b"];

/// Args that shape only the frontend's own terminal output; `true` when the arg takes a
/// value. crosswheel prints its own progress, so honouring them changes nothing built.
const OUTPUT_ONLY: &[(&str, bool)] = &[
    ("--no-progress", false),
    ("--progress-bar", true),
    ("--color", true),
    ("--no-color", false),
    ("--disable-pip-version-check", false),
    ("--no-python-downloads", false),
];

/// pip args whose meaning crosswheel always has: it builds the project alone (`--no-deps`)
/// through PEP 517 (`--use-pep517`).
const PIP_ALREADY_SO: &[&str] = &["--no-deps", "--use-pep517"];

/// What `name` does with no args.
pub(crate) fn without_args(name: FrontendName) -> FrontendArgs {
    FrontendArgs {
        installer: match name {
            FrontendName::BuildUv | FrontendName::Uv => Installer::Uv,
            FrontendName::Build | FrontendName::Pip | FrontendName::PyodideBuild => Installer::Pip,
        },
        isolation: true,
        check_dependencies: matches!(name, FrontendName::Build | FrontendName::BuildUv),
        config_settings: Vec::new(),
        verbosity: 0,
        installer_args: Vec::new(),
        without_effect: Vec::new(),
    }
}

/// Reads `args` as `name` reads them.
pub(crate) fn parse(name: FrontendName, args: &[String]) -> Result<FrontendArgs, String> {
    let mut parsed = without_args(name);
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = |flag: &str| {
            inline
                .clone()
                .or_else(|| rest.next().cloned())
                .ok_or_else(|| format!("build-frontend arg `{flag}` needs a value"))
        };
        if let Some(setting) = config_setting(flag, &mut value)? {
            let (key, val) = setting.split_once('=').unwrap_or((&setting, ""));
            parsed
                .config_settings
                .push((key.to_string(), val.to_string()));
            continue;
        }
        if read_common(flag, &mut parsed) || read_short_flags(name, flag, &mut parsed) {
            continue;
        }
        if let Some(&(_, takes_value)) = OUTPUT_ONLY.iter().find(|(known, _)| *known == flag) {
            let written = match (takes_value, inline.is_some()) {
                (true, false) => format!("{flag} {}", value(flag)?),
                _ => arg.clone(),
            };
            parsed.without_effect.push(written);
            continue;
        }
        match name {
            FrontendName::Build | FrontendName::BuildUv => match flag {
                "--no-isolation" => parsed.isolation = false,
                "--skip-dependency-check" => parsed.check_dependencies = false,
                "--installer" => parsed.installer = build_installer(&value(flag)?)?,
                "--config-json" => parsed.config_settings.extend(config_json(&value(flag)?)?),
                "--wheel" | "-w" => {}
                _ => return Err(cannot_apply(name, arg)),
            },
            FrontendName::Pip => match flag {
                "--no-build-isolation" => parsed.isolation = false,
                "--check-build-dependencies" => parsed.check_dependencies = true,
                _ if PIP_ALREADY_SO.contains(&flag) => {}
                _ => installer_option(PIP_INSTALLER_OPTIONS, flag, &mut value, &mut parsed)
                    .ok_or_else(|| cannot_apply(name, arg))??,
            },
            FrontendName::Uv => match flag {
                "--no-build-isolation" => parsed.isolation = false,
                _ if UV_BUILD_CONSTRAINTS.contains(&flag) => {
                    let file = value(flag)?;
                    parsed
                        .installer_args
                        .extend(["--constraint".to_string(), file]);
                }
                _ => installer_option(UV_INSTALLER_OPTIONS, flag, &mut value, &mut parsed)
                    .ok_or_else(|| cannot_apply(name, arg))??,
            },
            FrontendName::PyodideBuild => return Err(cannot_apply(name, arg)),
        }
    }
    if !parsed.isolation && !parsed.installer_args.is_empty() {
        return Err(format!(
            "build-frontend args {} choose what the installer fetches, but without isolation nothing is installed: drop them or the no-isolation flag",
            parsed.installer_args.join(" ")
        ));
    }
    Ok(parsed)
}

/// `-C key=value`, `-Ckey=value`, `--config-setting(s) key=value` (or `=key=value`).
fn config_setting(
    flag: &str,
    value: &mut impl FnMut(&str) -> Result<String, String>,
) -> Result<Option<String>, String> {
    match flag {
        "-C" | "--config-setting" | "--config-settings" => value(flag).map(Some),
        _ => Ok(flag
            .strip_prefix("-C")
            .filter(|rest| !rest.is_empty())
            .map(String::from)),
    }
}

/// Verbosity, which every frontend spells alike.
fn read_common(flag: &str, parsed: &mut FrontendArgs) -> bool {
    match flag {
        "--verbose" => parsed.verbosity += 1,
        "--quiet" => parsed.verbosity -= 1,
        _ => return false,
    }
    true
}

/// `-v`, `-vv`, `-q`, and for build the combinable `-n`/`-x` (`-nx`, as argparse allows).
fn read_short_flags(name: FrontendName, flag: &str, parsed: &mut FrontendArgs) -> bool {
    let Some(letters) = flag.strip_prefix('-').filter(|l| !l.starts_with('-')) else {
        return false;
    };
    let build = matches!(name, FrontendName::Build | FrontendName::BuildUv);
    let known = |c: char| matches!(c, 'v' | 'q') || (build && matches!(c, 'n' | 'x'));
    if letters.is_empty() || !letters.chars().all(known) {
        return false;
    }
    for letter in letters.chars() {
        match letter {
            'v' => parsed.verbosity += 1,
            'q' => parsed.verbosity -= 1,
            'n' => parsed.isolation = false,
            _ => parsed.check_dependencies = false,
        }
    }
    true
}

/// One of the installer's own options, passed to it as written; `None` if `flag` is not one.
fn installer_option(
    table: &[(&str, bool)],
    flag: &str,
    value: &mut impl FnMut(&str) -> Result<String, String>,
    parsed: &mut FrontendArgs,
) -> Option<Result<(), String>> {
    let &(_, takes_value) = SHARED_INSTALLER_OPTIONS
        .iter()
        .chain(table)
        .find(|(name, _)| *name == flag)?;
    parsed.installer_args.push(flag.to_string());
    if takes_value {
        match value(flag) {
            Ok(value) => parsed.installer_args.push(value),
            Err(message) => return Some(Err(message)),
        }
    }
    Some(Ok(()))
}

fn build_installer(value: &str) -> Result<Installer, String> {
    match value {
        "pip" => Ok(Installer::Pip),
        "uv" => Ok(Installer::Uv),
        other => Err(format!(
            "build-frontend arg `--installer {other}`: build's installers are pip and uv"
        )),
    }
}

/// build's `--config-json '{"key": "value", "list": ["a", "b"]}'`.
fn config_json(text: &str) -> Result<Vec<(String, String)>, String> {
    let bad = || {
        format!(
            "build-frontend arg `--config-json {text}` is not a JSON object of strings or lists of strings"
        )
    };
    let serde_json::Value::Object(map) = serde_json::from_str(text).map_err(|_| bad())? else {
        return Err(bad());
    };
    let mut pairs = Vec::new();
    for (key, value) in map {
        match value {
            serde_json::Value::String(text) => pairs.push((key, text)),
            serde_json::Value::Array(items) => {
                for item in items {
                    let serde_json::Value::String(text) = item else {
                        return Err(bad());
                    };
                    pairs.push((key.clone(), text));
                }
            }
            _ => return Err(bad()),
        }
    }
    Ok(pairs)
}

fn cannot_apply(name: FrontendName, arg: &str) -> String {
    let what = match name {
        FrontendName::Build | FrontendName::BuildUv => {
            "build's args that apply to a cross build are -C/--config-setting, --config-json, -n/--no-isolation, -x/--skip-dependency-check, --installer, -v, -q; set an index for the installer with PIP_INDEX_URL/UV_INDEX_URL in `environment`"
        }
        FrontendName::Pip => {
            "pip's args that apply are -C/--config-settings, --no-build-isolation, --check-build-dependencies, -v, -q and the install options (--index-url, --extra-index-url, --find-links, --no-index, --pre, --only-binary, --no-binary, --prefer-binary, -c/--constraint, ...)"
        }
        FrontendName::Uv => {
            "uv build's args that apply are -C/--config-setting, --no-build-isolation, -b/--build-constraint, -v, -q and the index options (--index, --default-index, --index-url, --extra-index-url, --find-links, --no-index, --prerelease, --require-hashes, ...)"
        }
        FrontendName::PyodideBuild => {
            "pyodide-build builds Pyodide wheels only: use build, build[uv], pip or uv"
        }
    };
    format!(
        "build-frontend arg `{arg}` has no meaning for crosswheel's cross build with {}: {what}",
        name.name()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(name: FrontendName, args: &str) -> Result<FrontendArgs, String> {
        parse(
            name,
            &args
                .split_whitespace()
                .map(String::from)
                .collect::<Vec<_>>(),
        )
    }

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn uvs_no_config_reaches_the_installer_as_bottleneck_asks() {
        // bottleneck 1.6.1: `build-frontend = "uv; args: --no-config"`.
        let args = parsed(FrontendName::Uv, "--no-config").unwrap();
        assert_eq!(args.installer_args, ["--no-config"]);
        assert!(args.without_effect.is_empty());
    }

    #[test]
    fn output_only_args_are_accepted_and_kept_for_the_note() {
        let args = parsed(
            FrontendName::Pip,
            "--no-color --progress-bar off --disable-pip-version-check",
        )
        .unwrap();
        assert_eq!(
            args.without_effect,
            [
                "--no-color",
                "--progress-bar off",
                "--disable-pip-version-check"
            ]
        );
        let uv = parsed(FrontendName::BuildUv, "--color=never --no-progress").unwrap();
        assert_eq!(uv.without_effect, ["--color=never", "--no-progress"]);
        assert_eq!(
            uv,
            FrontendArgs {
                without_effect: uv.without_effect.clone(),
                ..without_args(FrontendName::BuildUv)
            }
        );
    }

    #[test]
    fn an_arg_that_would_change_the_build_is_still_an_error() {
        let err = parsed(FrontendName::Build, "--sdist").unwrap_err();
        assert!(err.contains("--sdist"), "{err}");
    }

    #[test]
    fn every_spelling_of_a_config_setting_reaches_the_backend() {
        let args = parsed(
            FrontendName::Build,
            "-C a=1 -Cb=2 --config-setting c=3 --config-setting=d=4 --config-settings e",
        )
        .unwrap();
        assert_eq!(
            args.config_settings,
            pairs(&[("a", "1"), ("b", "2"), ("c", "3"), ("d", "4"), ("e", "")])
        );
        let json = parse(
            FrontendName::BuildUv,
            &[
                "--config-json".into(),
                r#"{"k": "v", "l": ["x", "y"]}"#.into(),
            ],
        )
        .unwrap();
        assert_eq!(
            json.config_settings,
            pairs(&[("k", "v"), ("l", "x"), ("l", "y")])
        );
    }

    #[test]
    fn the_frontend_names_the_installer_and_builds_are_isolated_by_default() {
        let installer = |name, args| parsed(name, args).unwrap().installer;
        assert_eq!(installer(FrontendName::Build, ""), Installer::Pip);
        assert_eq!(installer(FrontendName::Pip, ""), Installer::Pip);
        assert_eq!(installer(FrontendName::BuildUv, ""), Installer::Uv);
        assert_eq!(installer(FrontendName::Uv, ""), Installer::Uv);
        assert_eq!(
            installer(FrontendName::Build, "--installer uv"),
            Installer::Uv
        );
        assert_eq!(
            installer(FrontendName::Build, "--installer=uv"),
            Installer::Uv
        );
        assert!(parsed(FrontendName::Build, "").unwrap().isolation);
    }

    #[test]
    fn no_isolation_and_the_dependency_check_follow_each_frontend() {
        let build = parsed(FrontendName::Build, "--no-isolation").unwrap();
        assert!(!build.isolation && build.check_dependencies);
        for combined in [
            "-nx",
            "-xn",
            "-n -x",
            "--no-isolation --skip-dependency-check",
        ] {
            let args = parsed(FrontendName::BuildUv, combined).unwrap();
            assert!(!args.isolation && !args.check_dependencies, "{combined}");
        }
        let pip = parsed(FrontendName::Pip, "--no-build-isolation").unwrap();
        assert!(!pip.isolation && !pip.check_dependencies);
        let checked = parsed(
            FrontendName::Pip,
            "--no-build-isolation --check-build-dependencies",
        )
        .unwrap();
        assert!(checked.check_dependencies);
        let uv = parsed(FrontendName::Uv, "--no-build-isolation").unwrap();
        assert!(!uv.isolation && !uv.check_dependencies);
        // pip's spelling is not build's, and the reverse.
        assert!(parsed(FrontendName::Build, "--no-build-isolation").is_err());
        assert!(parsed(FrontendName::Pip, "-n").is_err());
    }

    #[test]
    fn verbosity_flags_add_up() {
        assert_eq!(
            parsed(FrontendName::Pip, "-vv --verbose")
                .unwrap()
                .verbosity,
            3
        );
        assert_eq!(parsed(FrontendName::Build, "-q").unwrap().verbosity, -1);
        assert_eq!(parsed(FrontendName::Uv, "--quiet -v").unwrap().verbosity, 0);
    }

    #[test]
    fn index_options_go_to_the_installer_in_its_own_spelling() {
        let pip = parsed(
            FrontendName::Pip,
            "--only-binary numpy -i https://example.invalid/simple --pre --find-links=/wheels --no-deps",
        )
        .unwrap();
        assert_eq!(
            pip.installer_args,
            [
                "--only-binary",
                "numpy",
                "-i",
                "https://example.invalid/simple",
                "--pre",
                "--find-links",
                "/wheels"
            ]
        );
        let uv = parsed(
            FrontendName::Uv,
            "--build-constraints ci.txt --require-hashes --index-url https://example.invalid/simple",
        )
        .unwrap();
        assert_eq!(
            uv.installer_args,
            [
                "--constraint",
                "ci.txt",
                "--require-hashes",
                "--index-url",
                "https://example.invalid/simple"
            ]
        );
    }

    #[test]
    fn an_arg_that_cannot_apply_is_an_error_naming_it() {
        for (name, arg) in [
            (FrontendName::Build, "--sdist"),
            (FrontendName::Build, "--index-url"),
            (FrontendName::Pip, "--wheel-dir=/tmp"),
            (FrontendName::Uv, "--out-dir"),
            (FrontendName::Uv, "--no-build-isolation-package"),
        ] {
            let error = parsed(name, arg).unwrap_err();
            assert!(
                error.starts_with(&format!("build-frontend arg `{arg}` has no meaning")),
                "{error}"
            );
            assert!(!error.contains('\n'), "{error}");
        }
        assert_eq!(
            parsed(FrontendName::Pip, "--index-url").unwrap_err(),
            "build-frontend arg `--index-url` needs a value"
        );
        assert!(
            parsed(FrontendName::Pip, "--no-build-isolation --pre")
                .unwrap_err()
                .contains("nothing is installed")
        );
        assert!(parsed(FrontendName::Build, "--installer conda").is_err());
    }
}
