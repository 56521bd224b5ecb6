//! crosswheel's private cache: zig, its compile cache, wrapper scripts, cross
//! environments, build environments and target wheels.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
#[error("cannot locate crosswheel's cache: set CROSSWHEEL_CACHE (or XDG_CACHE_HOME or HOME)")]
pub struct NoCacheDir;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cache {
    root: PathBuf,
}

impl Cache {
    /// `$CROSSWHEEL_CACHE`, else `$XDG_CACHE_HOME/crosswheel`, else `~/.cache/crosswheel`.
    pub fn from_env() -> Result<Cache, NoCacheDir> {
        let non_empty = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
        let root = if let Some(dir) = non_empty("CROSSWHEEL_CACHE") {
            PathBuf::from(dir)
        } else if let Some(dir) = non_empty("XDG_CACHE_HOME") {
            PathBuf::from(dir).join("crosswheel")
        } else if let Some(home) = non_empty("HOME") {
            PathBuf::from(home).join(".cache").join("crosswheel")
        } else {
            return Err(NoCacheDir);
        };
        Ok(Cache { root })
    }

    pub fn at(root: impl Into<PathBuf>) -> Cache {
        Cache { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The private venv holding the `ziglang` package.
    pub fn zig_venv(&self) -> PathBuf {
        self.root.join("ziglang-venv")
    }

    pub fn uv_venv(&self) -> PathBuf {
        self.root.join("uv-venv")
    }

    /// `ZIG_GLOBAL_CACHE_DIR`: zig's libc stubs take 15-50 s per target to build once.
    pub fn zig_global_cache(&self) -> PathBuf {
        self.root.join("zig")
    }

    pub fn toolchains(&self) -> PathBuf {
        self.root.join("toolchains")
    }

    pub fn cross_envs(&self) -> PathBuf {
        self.root.join("crossenv")
    }

    pub fn build_envs(&self) -> PathBuf {
        self.root.join("build-env")
    }

    pub fn target_wheels(&self) -> PathBuf {
        self.root.join("target-wheels")
    }
}

/// The SHA-256 of the file at `path`, lower-case hex: what pinned downloads are checked by.
pub fn sha256_of_file(path: &std::path::Path) -> Result<String, crate::io_error::IoError> {
    use sha2::{Digest, Sha256};
    let bytes = std::fs::read(path).map_err(crate::io_error::IoError::at("read", path))?;
    Ok(Sha256::digest(&bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect())
}

/// A short, stable key naming a cache folder after what it was made from: 12 hex digits
/// of SHA-256 over the length-prefixed `parts` (so `["ab", "c"]` and `["a", "bc"]` differ).
pub fn cache_key(parts: &[&[u8]]) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hasher
        .finalize()
        .iter()
        .take(6)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zig_compile_cache_lives_inside_the_cache() {
        let cache = Cache::at("/tmp/cw");
        assert!(cache.zig_global_cache().starts_with(cache.root()));
        assert!(cache.zig_venv().starts_with(cache.root()));
    }
}
