//! Which install names macOS provides itself, from
//! `config/macos-system-libs.toml`.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use serde::Deserialize;
use thiserror::Error;

const BUILTIN: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/config/macos-system-libs.toml"
));

#[derive(Debug, Error)]
#[error("invalid macOS system library list: {0}")]
pub struct SystemLibrariesError(String);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    patterns: Vec<String>,
    libraries: Vec<String>,
}

/// A set of install names (exact and glob patterns) that need no vendoring.
#[derive(Debug)]
pub struct SystemLibraries {
    patterns: Vec<glob::Pattern>,
    libraries: BTreeSet<String>,
}

impl SystemLibraries {
    pub fn from_toml(text: &str) -> Result<SystemLibraries, SystemLibrariesError> {
        let config: Config =
            toml::from_str(text).map_err(|error| SystemLibrariesError(error.to_string()))?;
        let patterns = config
            .patterns
            .iter()
            .map(|pattern| {
                glob::Pattern::new(pattern)
                    .map_err(|error| SystemLibrariesError(format!("pattern `{pattern}`: {error}")))
            })
            .collect::<Result<_, _>>()?;
        Ok(SystemLibraries {
            patterns,
            libraries: config.libraries.into_iter().collect(),
        })
    }

    /// The list shipped inside the binary.
    pub fn builtin() -> &'static SystemLibraries {
        static BUILTIN_LIST: OnceLock<SystemLibraries> = OnceLock::new();
        BUILTIN_LIST.get_or_init(|| {
            SystemLibraries::from_toml(BUILTIN).expect(
                "config/macos-system-libs.toml is part of the source tree and checked by its tests",
            )
        })
    }

    /// True when macOS provides `install_name`. Only absolute names qualify,
    /// and a `..` component disqualifies: `/usr/lib/../local/lib/libfoo.dylib`
    /// is not a system library.
    pub fn is_system(&self, install_name: &str) -> bool {
        if !install_name.starts_with('/')
            || install_name.split('/').any(|component| component == "..")
        {
            return false;
        }
        self.libraries.contains(install_name)
            || self
                .patterns
                .iter()
                .any(|pattern| pattern.matches(install_name))
    }

    /// The explicitly listed libraries.
    pub fn listed(&self) -> impl Iterator<Item = &str> {
        self.libraries.iter().map(String::as_str)
    }
}

/// True when macOS provides `install_name` (per the built-in list).
pub fn is_system_library(install_name: &str) -> bool {
    SystemLibraries::builtin().is_system(install_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_list_parses_and_covers_libsystem_and_libcxx() {
        let list = SystemLibraries::builtin();
        assert!(
            list.listed()
                .any(|name| name == "/usr/lib/libSystem.B.dylib")
        );
        assert!(list.listed().any(|name| name == "/usr/lib/libc++.1.dylib"));
        assert!(list.listed().all(|name| list.is_system(name)));
    }

    #[test]
    fn usr_lib_and_system_trees_are_system() {
        assert!(is_system_library("/usr/lib/libSystem.B.dylib"));
        assert!(is_system_library("/usr/lib/system/libsystem_malloc.dylib"));
        assert!(is_system_library(
            "/System/Library/Frameworks/Accelerate.framework/Versions/A/Accelerate"
        ));
    }

    #[test]
    fn relative_rpath_and_local_names_are_not_system() {
        assert!(!is_system_library("@rpath/libscipy_openblas.dylib"));
        assert!(!is_system_library(
            "@loader_path/../.dylibs/libgfortran.5.dylib"
        ));
        assert!(!is_system_library("/usr/local/lib/libpng16.16.dylib"));
        assert!(!is_system_library("/opt/homebrew/lib/libzmq.5.dylib"));
        assert!(!is_system_library("libz.1.dylib"));
        assert!(!is_system_library("/usr/lib/../local/lib/libfoo.dylib"));
    }

    #[test]
    fn listed_names_count_even_without_a_matching_pattern() {
        let list =
            SystemLibraries::from_toml("patterns = []\nlibraries = [\"/usr/lib/libz.1.dylib\"]")
                .unwrap();
        assert!(list.is_system("/usr/lib/libz.1.dylib"));
        assert!(!list.is_system("/usr/lib/libbz2.1.0.dylib"));
    }

    #[test]
    fn malformed_list_is_an_error() {
        assert!(SystemLibraries::from_toml("patterns = [\"[\"]\nlibraries = []").is_err());
        assert!(SystemLibraries::from_toml("patterns = []").is_err());
    }
}
