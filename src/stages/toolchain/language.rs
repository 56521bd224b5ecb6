//! The seam for languages: a toolchain is a list of [`Compiler`]s, one per [`Language`],
//! and every build system's view of a compiler is generated from that list.
//!
//! Build systems name one compiler in several ways — autotools and setuptools read `CC`,
//! meson's cross file has `[binaries] c`, CMake has `CMAKE_C_COMPILER`, Makefiles read
//! `CC_FOR_BUILD` for the build machine's. Those names are facts of the language and live
//! in config/languages.toml; the cross environment renders every compiler of a toolchain
//! the same way. A language is added by a row there, a variant here and a provider that
//! finds or installs its compiler for a target (zig or a system gcc provide C and C++):
//! meson, CMake, setuptools and autotools then see it without the cross environment or
//! the pipeline changing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const LANGUAGES_TOML: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/config/languages.toml"
));

/// A language a build compiles for the target.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Deserialize, serde::Serialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    C,
    Cxx,
    Cuda,
    Fortran,
    Rust,
}

impl Language {
    /// Every language, in the order cross files list them.
    pub const ALL: [Language; 5] = [
        Language::C,
        Language::Cxx,
        Language::Cuda,
        Language::Fortran,
        Language::Rust,
    ];

    /// How build systems name this language's compilers (config/languages.toml).
    pub fn names(self) -> &'static LanguageNames {
        config()
            .language
            .iter()
            .find(|names| names.id == self)
            // The unit test `every_language_has_one_row` guards the compiled-in file.
            .unwrap_or_else(|| panic!("config/languages.toml has no row for {self:?}"))
    }
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.names().name)
    }
}

/// One row of config/languages.toml (the file's header describes the fields).
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LanguageNames {
    pub id: Language,
    pub name: String,
    pub variables: Vec<String>,
    pub build_variable: Option<String>,
    pub build_program: String,
    pub native_names: Vec<String>,
    pub gnu_program: String,
    pub flags_variable: Option<String>,
    #[serde(default)]
    pub preprocessed: bool,
    pub meson: String,
    pub cmake: Option<String>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct LanguagesConfig {
    language: Vec<LanguageNames>,
}

fn config() -> &'static LanguagesConfig {
    static CONFIG: OnceLock<LanguagesConfig> = OnceLock::new();
    CONFIG.get_or_init(|| match toml::from_str(LANGUAGES_TOML) {
        Ok(config) => config,
        // The file is compiled in; the unit test `the_bundled_file_parses` guards it.
        Err(err) => panic!("config/languages.toml is invalid: {err}"),
    })
}

/// The compiler of one language for one target: what a build runs, by path and with no
/// extra arguments, to compile that language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compiler {
    pub language: Language,
    pub program: PathBuf,
    /// Variables a build needs besides the language's own compiler variables: where a
    /// language's runtime or SDK is (a provider sets them; C and C++ need none).
    pub environment: BTreeMap<String, String>,
    /// A folder of the provider's programs that build front ends look up by name on PATH
    /// (maturin and setuptools-rust run `cargo`); the backend puts it on PATH.
    pub programs_dir: Option<PathBuf>,
    /// The folder of the language's shared runtime that the compiler links
    /// (`libgfortran.so.5`): the repair finds it there and vendors it into the wheel.
    pub runtime_dir: Option<PathBuf>,
    /// Globs of the libraries the language's binaries need that a wheel never vendors
    /// (CUDA's driver and the libraries users install from the index's nvidia-* wheels).
    pub never_vendored: Vec<String>,
    /// The packages whose headers and static libraries the language's binaries hold code
    /// of (CUDA's runtime): the SBOM names them.
    pub built_with: Vec<crate::formats::sbom::Package>,
    /// Variables for the hooks that run on the build machine, without the cross
    /// environment (`get_requires_for_build_wheel`): the build machine's own copy of the
    /// language's SDK, where a project's setup probes it there (cupy's setup.py compiles
    /// and runs CUDA probes whenever it is imported).
    pub build_machine_environment: BTreeMap<String, String>,
}

impl Compiler {
    pub fn new(language: Language, program: PathBuf) -> Compiler {
        Compiler {
            language,
            program,
            environment: BTreeMap::new(),
            programs_dir: None,
            runtime_dir: None,
            never_vendored: Vec::new(),
            built_with: Vec::new(),
            build_machine_environment: BTreeMap::new(),
        }
    }

    /// The environment variables that give this compiler to a build: the language's
    /// variables (`CC`), then the provider's own.
    pub fn variables(&self) -> impl Iterator<Item = (String, String)> + '_ {
        let program = self.program.to_string_lossy().into_owned();
        self.language
            .names()
            .variables
            .iter()
            .map(move |name| (name.clone(), program.clone()))
            .chain(
                self.environment
                    .iter()
                    .map(|(name, value)| (name.clone(), value.clone())),
            )
    }
}

/// The compilers of a toolchain, at most one per language, in [`Language::ALL`] order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Compilers(BTreeMap<Language, Compiler>);

impl Compilers {
    /// The toolchain's compilers; a later one of a language replaces an earlier one.
    pub fn new(compilers: impl IntoIterator<Item = Compiler>) -> Compilers {
        Compilers(
            compilers
                .into_iter()
                .map(|compiler| (compiler.language, compiler))
                .collect(),
        )
    }

    pub fn get(&self, language: Language) -> Option<&Compiler> {
        self.0.get(&language)
    }

    /// The program of `language`'s compiler, if the toolchain has one.
    pub fn program(&self, language: Language) -> Option<&Path> {
        self.get(language)
            .map(|compiler| compiler.program.as_path())
    }

    pub fn iter(&self) -> impl Iterator<Item = &Compiler> {
        self.0.values()
    }

    pub fn languages(&self) -> impl Iterator<Item = Language> + '_ {
        self.0.keys().copied()
    }

    /// The compilers' [`Compiler::runtime_dir`]s, where the repair finds their runtimes.
    pub fn runtime_dirs(&self) -> impl Iterator<Item = &Path> {
        self.iter()
            .filter_map(|compiler| compiler.runtime_dir.as_deref())
    }

    /// The compilers' [`Compiler::never_vendored`] globs, for the repair's exclusions.
    pub fn never_vendored(&self) -> impl Iterator<Item = &str> {
        self.iter()
            .flat_map(|compiler| compiler.never_vendored.iter().map(String::as_str))
    }

    /// The compilers' [`Compiler::built_with`] packages, for the SBOM.
    pub fn built_with(&self) -> impl Iterator<Item = &crate::formats::sbom::Package> {
        self.iter().flat_map(|compiler| compiler.built_with.iter())
    }

    /// The compilers' [`Compiler::build_machine_environment`]s, for the hooks that run on
    /// the build machine.
    pub fn build_machine_environment(&self) -> impl Iterator<Item = (&String, &String)> {
        self.iter()
            .flat_map(|compiler| compiler.build_machine_environment.iter())
    }

    /// The compilers' [`Compiler::programs_dir`]s, for PATH.
    pub fn programs_dirs(&self) -> impl Iterator<Item = &Path> {
        self.iter()
            .filter_map(|compiler| compiler.programs_dir.as_deref())
    }
}

/// The build machine's compiler of `language` (`cc`, `c++`) from PATH, or its bare name
/// when PATH has none: a build that needs it then fails saying which program is missing.
pub fn build_machine_program(language: Language) -> String {
    let name = &language.names().build_program;
    crate::support::host::find_on_path(name)
        .map(|path| path.to_string_lossy().into_owned())
        .unwrap_or_else(|| name.clone())
}

/// A user's compile flags for each language and the flags every language shares, as the
/// environment gives them (`CFLAGS`, `CXXFLAGS`, `CPPFLAGS`, `LDFLAGS`). Meson ignores
/// them for the host machine of a cross build, so cross files carry them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserFlags {
    /// Per language, from its `flags_variable`; every language of the build has an entry.
    pub compile: BTreeMap<Language, Vec<String>>,
    pub cppflags: Vec<String>,
    pub ldflags: Vec<String>,
}

impl UserFlags {
    /// The flags for `languages` from the environment.
    pub fn from_env(languages: impl IntoIterator<Item = Language>) -> UserFlags {
        Self::from_lookup(languages, |name| std::env::var(name).ok())
    }

    /// The flags for `languages`, each variable read through `lookup`.
    pub fn from_lookup(
        languages: impl IntoIterator<Item = Language>,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> UserFlags {
        let split = |name: &str| -> Vec<String> {
            lookup(name)
                .map(|value| value.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default()
        };
        UserFlags {
            compile: languages
                .into_iter()
                .map(|language| {
                    let flags = language
                        .names()
                        .flags_variable
                        .as_deref()
                        .map(split)
                        .unwrap_or_default();
                    (language, flags)
                })
                .collect(),
            cppflags: split("CPPFLAGS"),
            ldflags: split("LDFLAGS"),
        }
    }

    /// What compiling `language` gets: `CPPFLAGS` first for preprocessed languages, then
    /// the language's own flags.
    pub fn compile_args(&self, language: Language) -> Vec<String> {
        let shared: &[String] = if language.names().preprocessed {
            &self.cppflags
        } else {
            &[]
        };
        shared
            .iter()
            .chain(self.compile.get(&language).into_iter().flatten())
            .cloned()
            .collect()
    }

    pub fn languages(&self) -> impl Iterator<Item = Language> + '_ {
        self.compile.keys().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_file_parses() {
        assert!(!config().language.is_empty());
    }

    #[test]
    fn every_language_has_one_row() {
        for language in Language::ALL {
            let rows = config()
                .language
                .iter()
                .filter(|names| names.id == language)
                .count();
            assert_eq!(rows, 1, "{language:?} in config/languages.toml");
        }
        assert_eq!(config().language.len(), Language::ALL.len());
    }

    #[test]
    fn c_and_cxx_are_named_as_build_systems_name_them() {
        let c = Language::C.names();
        assert_eq!(
            (c.variables.as_slice(), c.meson.as_str(), c.cmake.as_deref()),
            (&["CC".to_string()][..], "c", Some("C"))
        );
        let cxx = Language::Cxx.names();
        assert_eq!(
            (
                cxx.variables.as_slice(),
                cxx.meson.as_str(),
                cxx.cmake.as_deref()
            ),
            (&["CXX".to_string()][..], "cpp", Some("CXX"))
        );
        assert_eq!(Language::Cxx.to_string(), "C++");
    }

    #[test]
    fn a_compiler_gives_its_languages_variables_then_its_own() {
        let mut compiler = Compiler::new(Language::C, PathBuf::from("/w/cc"));
        compiler
            .environment
            .insert("SDK_ROOT".into(), "/sdk".into());
        let variables: Vec<_> = compiler.variables().collect();
        assert_eq!(
            variables,
            [
                ("CC".to_string(), "/w/cc".to_string()),
                ("SDK_ROOT".to_string(), "/sdk".to_string())
            ]
        );
    }

    #[test]
    fn cppflags_reach_preprocessed_languages_before_their_own_flags() {
        let flags = UserFlags::from_lookup(Language::ALL, |name| {
            Some(
                match name {
                    "CPPFLAGS" => "-DX",
                    "CFLAGS" => "-O1 -g",
                    "CXXFLAGS" => "-O3",
                    _ => "",
                }
                .to_string(),
            )
        });
        assert_eq!(flags.compile_args(Language::C), ["-DX", "-O1", "-g"]);
        assert_eq!(flags.compile_args(Language::Cxx), ["-DX", "-O3"]);
    }
}
