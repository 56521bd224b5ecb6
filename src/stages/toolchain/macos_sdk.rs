//! A macOS SDK the user supplies (copied from a Mac or Xcode): zig brings macOS libc
//! headers and libSystem but no Apple frameworks, so `-framework CoreFoundation` needs one.
//! The zig wrappers read it from `SDKROOT` when they run (see `wrappers::link_flags`).

use std::path::{Path, PathBuf};

use super::ToolchainError;

/// A folder laid out as an Apple SDK: `System/Library/Frameworks`, `usr/include`, `usr/lib`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacosSdk {
    pub root: PathBuf,
}

/// The SDK of the `macos-sdk` option, else of `sdkroot` (the `SDKROOT` variable), checked.
pub fn find_macos_sdk(
    configured: Option<&Path>,
    sdkroot: Option<&str>,
) -> Result<Option<MacosSdk>, ToolchainError> {
    let (root, origin) = match (configured, sdkroot.filter(|value| !value.is_empty())) {
        (Some(path), _) => (path.to_path_buf(), "the macos-sdk option"),
        (None, Some(value)) => (PathBuf::from(value), "SDKROOT"),
        (None, None) => return Ok(None),
    };
    let looks_like_sdk = ["System/Library/Frameworks", "usr/lib"]
        .iter()
        .any(|sub| root.join(sub).is_dir());
    if !looks_like_sdk {
        return Err(ToolchainError::NotAnSdk { origin, path: root });
    }
    // Absolute: the wrappers run in the backend's own working folders.
    let root = std::path::absolute(&root).unwrap_or(root);
    Ok(Some(MacosSdk { root }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_wins_over_sdkroot_and_both_must_look_like_an_sdk() {
        let sdk = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(sdk.path().join("usr/lib")).unwrap();
        let found = find_macos_sdk(Some(sdk.path()), Some("/nonexistent")).unwrap();
        assert_eq!(found.unwrap().root, sdk.path());
        assert_eq!(find_macos_sdk(None, Some("")).unwrap(), None);

        let empty = tempfile::tempdir().unwrap();
        let error = find_macos_sdk(None, Some(&empty.path().to_string_lossy()))
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("SDKROOT = ") && error.contains("MacOSX*.sdk"),
            "{error}"
        );
    }
}
