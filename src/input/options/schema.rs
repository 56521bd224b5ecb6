//! The option names crosswheel accepts, the shape of each value, and where it may be set.

/// How an option's value is written and read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Glob patterns over identifiers: a space-separated string or an array.
    Selector,
    /// A shell command: a string, or an array of commands joined with ` && `.
    Command,
    /// A whitespace-separated string or an array of items.
    Words,
    /// A comma-separated string or an array (`test-extras`).
    CommaList,
    /// A shell-quoted string or an array (`test-sources`).
    ShellWords,
    /// `NAME=value` assignments: a table or a shell-quoted string.
    Environment,
    /// PEP 517 config settings: a table or a shell-quoted string of `key=value`.
    ConfigSettings,
    /// `build`, `pip`, `build[uv]`, `uv`, optionally with `; args: ...`, or a table.
    Frontend,
    /// Target names: `all`, an architecture, a target id or an alias.
    Archs,
    /// CPython tags such as `cp311`.
    Python,
    /// One of a fixed set of words.
    Choice(&'static [&'static str]),
    /// A macOS version `MAJOR.MINOR`, at least 10.13 (macOS x86_64's floor).
    MacosVersion,
    /// Free text (a path, a CPU name).
    Text,
    /// `enable`: cibuildwheel's groups (`cpython-prerelease`, `pypy`, ...).
    Enable,
    /// `build-verbosity`: an integer from -3 to 3 (or a string holding one).
    Verbosity,
    /// A length of time: seconds (an integer or a string), or with a unit (`90s`, `30m`,
    /// `2h`, `1h30m`); empty, `0` or `none` for no limit. Kept as whole seconds.
    Duration,
    /// A boolean (or `true`/`false`, `1`/`0` as a string).
    Bool,
    /// `dependency-versions`: `pinned`, `latest`, a constraints file, `packages: ...`, or a
    /// table `{ file = ... }` / `{ packages = [...] }`.
    DependencyVersions,
    /// A cibuildwheel option that does not apply to a cross build: any value is accepted,
    /// and the option is reported once as ignored.
    Ignored,
}

impl Kind {
    /// What a value of this kind looks like, for type errors.
    pub(crate) fn expected(self) -> &'static str {
        match self {
            Kind::Selector | Kind::Words | Kind::Archs | Kind::Python | Kind::ShellWords => {
                "a string or an array of strings"
            }
            Kind::CommaList => "a comma-separated string or an array of strings",
            Kind::Command => "a string or an array of commands",
            Kind::Environment => "a table or a string of NAME=VALUE assignments",
            Kind::ConfigSettings => "a table or a string of key=value settings",
            Kind::Frontend => "a string such as \"build\" or a table {name = ..., args = [...]}",
            Kind::Choice(_) | Kind::MacosVersion | Kind::Text => "a string",
            Kind::Enable => "a string or an array of strings",
            Kind::Verbosity => "an integer from -3 to 3",
            Kind::Duration => "seconds (an integer) or a string such as \"30m\"",
            Kind::Bool => "a boolean",
            Kind::DependencyVersions => {
                "a string (pinned, latest, a file or \"packages: ...\") or a table"
            }
            Kind::Ignored => "any value",
        }
    }

    /// Whether an override may `inherit` (append or prepend to) the value it overrides.
    pub(crate) fn accepts_inherit(self) -> bool {
        matches!(
            self,
            Kind::Command
                | Kind::Words
                | Kind::CommaList
                | Kind::ShellWords
                | Kind::Environment
                | Kind::ConfigSettings
                | Kind::Ignored
        )
    }

    /// Whether an empty `CROSSWHEEL_*` variable or flag sets the option. Only for commands,
    /// where empty means "none" (`CROSSWHEEL_REPAIR_WHEEL_COMMAND=""` turns repair off);
    /// elsewhere CI systems expanding an unset matrix variable to "" must not wipe a value.
    pub(crate) fn empty_is_a_value(self) -> bool {
        self == Kind::Command
    }
}

/// Where an option may appear.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Chooses which builds run or where they go: not in `[[overrides]]`, which apply to
    /// builds that are already chosen.
    Selection,
    /// May differ per build identifier.
    PerBuild,
}

#[derive(Debug)]
pub(crate) struct OptionSpec {
    pub key: &'static str,
    pub kind: Kind,
    pub scope: Scope,
}

const fn spec(key: &'static str, kind: Kind, scope: Scope) -> OptionSpec {
    OptionSpec { key, kind, scope }
}

pub(crate) const TOOLCHAINS: &[&str] = &["zig", "gcc"];

/// Every option. `targets` is another name for `archs` (see [`canonical_key`]).
pub(crate) const OPTIONS: &[OptionSpec] = &[
    spec("build", Kind::Selector, Scope::Selection),
    spec("skip", Kind::Selector, Scope::Selection),
    spec("archs", Kind::Archs, Scope::Selection),
    spec("targets", Kind::Archs, Scope::Selection),
    spec("python", Kind::Python, Scope::Selection),
    spec("test-skip", Kind::Selector, Scope::Selection),
    spec("output-dir", Kind::Text, Scope::Selection),
    spec("build-frontend", Kind::Frontend, Scope::PerBuild),
    spec("config-settings", Kind::ConfigSettings, Scope::PerBuild),
    spec("environment", Kind::Environment, Scope::PerBuild),
    spec("environment-pass", Kind::Words, Scope::PerBuild),
    spec("before-all", Kind::Command, Scope::PerBuild),
    spec("before-build", Kind::Command, Scope::PerBuild),
    spec("before-test", Kind::Command, Scope::PerBuild),
    spec("repair-wheel-command", Kind::Command, Scope::PerBuild),
    spec("test-command", Kind::Command, Scope::PerBuild),
    spec("audit-command", Kind::Command, Scope::PerBuild),
    spec("audit-requires", Kind::Words, Scope::PerBuild),
    spec("test-requires", Kind::Words, Scope::PerBuild),
    spec("test-extras", Kind::CommaList, Scope::PerBuild),
    spec("test-sources", Kind::ShellWords, Scope::PerBuild),
    spec("toolchain", Kind::Choice(TOOLCHAINS), Scope::PerBuild),
    spec(
        "macos-deployment-target",
        Kind::MacosVersion,
        Scope::PerBuild,
    ),
    spec("qemu-cpu", Kind::Text, Scope::PerBuild),
    spec("target-python", Kind::Text, Scope::PerBuild),
    spec("macos-sdk", Kind::Text, Scope::PerBuild),
    spec("require-tests", Kind::Bool, Scope::PerBuild),
    spec("debian-mirror", Kind::Text, Scope::PerBuild),
    spec("test-timeout", Kind::Duration, Scope::PerBuild),
    spec("target-requires", Kind::Words, Scope::PerBuild),
    spec("target-libraries", Kind::Words, Scope::PerBuild),
    spec("cuda", Kind::Text, Scope::PerBuild),
    spec("cuda-components", Kind::Words, Scope::PerBuild),
    // The glibc a manylinux build compiles against (`linux_image`).
    spec("manylinux-aarch64-image", Kind::Text, Scope::PerBuild),
    spec("manylinux-armv7l-image", Kind::Text, Scope::PerBuild),
    spec("manylinux-i686-image", Kind::Text, Scope::PerBuild),
    spec("manylinux-ppc64le-image", Kind::Text, Scope::PerBuild),
    spec("manylinux-riscv64-image", Kind::Text, Scope::PerBuild),
    spec("manylinux-s390x-image", Kind::Text, Scope::PerBuild),
    spec("manylinux-x86_64-image", Kind::Text, Scope::PerBuild),
    spec("enable", Kind::Enable, Scope::Selection),
    spec("free-threaded-support", Kind::Bool, Scope::Selection),
    spec("build-verbosity", Kind::Verbosity, Scope::PerBuild),
    spec("test-groups", Kind::Words, Scope::PerBuild),
    spec("test-environment", Kind::Environment, Scope::PerBuild),
    spec(
        "dependency-versions",
        Kind::DependencyVersions,
        Scope::PerBuild,
    ),
];

/// Every option: crosswheel's [`OPTIONS`], then cibuildwheel's options that do not apply to
/// cross builds (`manylinux-x86_64-image`, `container-engine`, ...), from
/// `config/cibuildwheel-options.toml`.
pub(crate) fn all() -> &'static [OptionSpec] {
    static ALL: std::sync::OnceLock<Vec<OptionSpec>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        let mut all: Vec<OptionSpec> = OPTIONS
            .iter()
            .map(|option| spec(option.key, option.kind, option.scope))
            .collect();
        for name in super::cibw::not_applicable_names() {
            if !all.iter().any(|option| option.key == name) {
                all.push(spec(name, Kind::Ignored, Scope::PerBuild));
            }
        }
        all
    })
}

/// Options whose absence means something a value cannot say: without
/// `repair-wheel-command` crosswheel repairs wheels itself, with `""` it does not repair.
#[cfg(test)]
pub(crate) const WITHOUT_DEFAULT: &[&str] = &["repair-wheel-command"];

pub(crate) fn find(key: &str) -> Option<&'static OptionSpec> {
    all().iter().find(|option| option.key == key)
}

/// `targets` and `archs` are one option under two names.
pub(crate) fn canonical_key(key: &'static str) -> &'static str {
    if key == "targets" { "archs" } else { key }
}

/// `CROSSWHEEL_TEST_COMMAND` for `test-command`.
pub(crate) fn env_var_name(key: &str) -> String {
    format!("CROSSWHEEL_{}", key.to_ascii_uppercase().replace('-', "_"))
}

/// cibuildwheel's `CIBW_PROJECT_REQUIRES_PYTHON`: replaces `[project] requires-python`.
pub(crate) const REQUIRES_PYTHON_VAR: &str = "CROSSWHEEL_PROJECT_REQUIRES_PYTHON";

/// `CROSSWHEEL_PLATFORM` (cibuildwheel's `CIBW_PLATFORM`): build only that platform.
pub(crate) const PLATFORM_VAR: &str = "CROSSWHEEL_PLATFORM";

const PLATFORM_SUFFIXES: [&str; 2] = ["_LINUX", "_MACOS"];

const CIBW_PLATFORM_SUFFIXES: [&str; 6] = [
    "_LINUX", "_MACOS", "_WINDOWS", "_PYODIDE", "_IOS", "_ANDROID",
];

/// The option variable a `CROSSWHEEL_*` or `CIBW_*` name was probably meant to be, e.g.
/// `CROSSWHEEL_TEST_COMMAND` for `CROSSWHEEL_TEST_COMAND`, `CIBW_ARCHS_LINUX` for
/// `CIBW_ARCH_LINUX`. `None` for the option variables themselves and for names close to
/// none of them (crosswheel's other variables such as `CROSSWHEEL_CACHE`).
pub(crate) fn misspelt_env_var(name: &str) -> Option<String> {
    if name.starts_with("CIBW_") {
        return misspelt_cibw_var(name);
    }
    let rest = name.strip_prefix("CROSSWHEEL_")?;
    let known = name == REQUIRES_PYTHON_VAR
        || name == PLATFORM_VAR
        || all().iter().any(|option| {
            let base = env_var_name(option.key);
            name == base
                || PLATFORM_SUFFIXES
                    .iter()
                    .any(|suffix| name == format!("{base}{suffix}"))
        });
    if known {
        return None;
    }
    let (stem, suffix) = PLATFORM_SUFFIXES
        .iter()
        .find_map(|suffix| rest.strip_suffix(suffix).map(|stem| (stem, *suffix)))
        .unwrap_or((rest, ""));
    let key = stem.to_ascii_lowercase().replace('_', "-");
    let option = closest(&key, all().iter().map(|option| option.key))?;
    Some(format!("{}{suffix}", env_var_name(option)))
}

fn misspelt_cibw_var(name: &str) -> Option<String> {
    if super::cibw::all_env_vars().any(|known| known == name) {
        return None;
    }
    let rest = name.strip_prefix("CIBW_")?;
    let (stem, suffix) = CIBW_PLATFORM_SUFFIXES
        .iter()
        .find_map(|suffix| rest.strip_suffix(suffix).map(|stem| (stem, *suffix)))
        .unwrap_or((rest, ""));
    let key = stem.to_ascii_lowercase().replace('_', "-");
    let data = super::cibw::data();
    let names = data.option.iter().map(|option| option.name.as_str()).chain(
        data.cli_env_only
            .iter()
            .filter(|o| !o.env.is_empty())
            .map(|o| o.name.as_str()),
    );
    let option = closest(&key, names)?;
    let base = format!("CIBW_{}", option.to_ascii_uppercase().replace('-', "_"));
    let meant = format!("{base}{suffix}");
    // A platform variant cibuildwheel does not read is no better than the misspelling.
    if super::cibw::all_env_vars().any(|known| known == meant) {
        Some(meant)
    } else {
        Some(base)
    }
}

/// The closest of `candidates` to a mistyped `word`, if it is close enough to be a typo.
pub(crate) fn closest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let word = word.to_ascii_lowercase().replace('_', "-");
    candidates
        .into_iter()
        .map(|candidate| (edit_distance(&word, candidate), candidate))
        .filter(|&(distance, candidate)| distance <= (candidate.len() / 3).max(2))
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, candidate)| candidate)
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = Vec::with_capacity(b.len() + 1);
        current.push(i + 1);
        for (j, cb) in b.iter().enumerate() {
            let substitution =
                previous.get(j).copied().unwrap_or(usize::MAX) + usize::from(ca != *cb);
            let deletion = previous
                .get(j + 1)
                .copied()
                .unwrap_or(usize::MAX)
                .saturating_add(1);
            let insertion = current
                .get(j)
                .copied()
                .unwrap_or(usize::MAX)
                .saturating_add(1);
            current.push(substitution.min(deletion).min(insertion));
        }
        previous = current;
    }
    previous.last().copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_single_char_edits() {
        assert_eq!(edit_distance("test-comand", "test-command"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }

    #[test]
    fn suggests_the_nearest_option_for_typos() {
        let keys = OPTIONS.iter().map(|o| o.key);
        assert_eq!(closest("test-comand", keys.clone()), Some("test-command"));
        assert_eq!(
            closest("test_requires", keys.clone()),
            Some("test-requires")
        );
        assert_eq!(closest("enviroment", keys.clone()), Some("environment"));
        assert_eq!(closest("something-else-entirely", keys), None);
    }

    #[test]
    fn env_var_names_follow_cibuildwheel() {
        assert_eq!(env_var_name("test-command"), "CROSSWHEEL_TEST_COMMAND");
        assert_eq!(
            env_var_name("macos-deployment-target"),
            "CROSSWHEEL_MACOS_DEPLOYMENT_TARGET"
        );
    }

    #[test]
    fn misspelt_option_variables_get_a_suggestion() {
        assert_eq!(
            misspelt_env_var("CROSSWHEEL_TEST_COMAND").as_deref(),
            Some("CROSSWHEEL_TEST_COMMAND")
        );
        assert_eq!(
            misspelt_env_var("CROSSWHEEL_ARCH_LINUX").as_deref(),
            Some("CROSSWHEEL_ARCHS_LINUX")
        );
        assert_eq!(
            misspelt_env_var("CIBW_TEST_COMAND").as_deref(),
            Some("CIBW_TEST_COMMAND")
        );
        assert_eq!(
            misspelt_env_var("CIBW_ARCH_LINUX").as_deref(),
            Some("CIBW_ARCHS_LINUX")
        );
        assert_eq!(
            misspelt_env_var("CIBW_BUIDL").as_deref(),
            Some("CIBW_BUILD")
        );
    }

    #[test]
    fn known_and_unrelated_variables_get_no_suggestion() {
        for name in [
            "CROSSWHEEL_TEST_COMMAND",
            "CROSSWHEEL_ARCHS_MACOS",
            "CROSSWHEEL_PROJECT_REQUIRES_PYTHON",
            "CROSSWHEEL_CACHE",
            "CROSSWHEEL_ZIG",
            "CROSSWHEEL_FIXTURES",
            "CROSSWHEEL_TARGET_SITE",
            "CROSSWHEEL_FETCH_JOBS",
            "CROSSWHEEL_PLATFORM",
            "CROSSWHEEL_MANYLINUX_X86_64_IMAGE",
            "CIBW_BUILD",
            "CIBW_ARCHS_LINUX",
            "CIBW_PLATFORM",
            "CIBW_MANYLINUX_X86_64_IMAGE",
            "CIBW_DEBUG_TRACEBACK",
            "PATH",
        ] {
            assert_eq!(misspelt_env_var(name), None, "{name}");
        }
    }

    #[test]
    fn option_names_are_unique() {
        let mut keys: Vec<&str> = OPTIONS.iter().map(|o| o.key).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), OPTIONS.len());
    }
}
