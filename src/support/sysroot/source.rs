//! Debian source packages: the orig tarball of one source package version, fetched under
//! the private APT configuration of [`super::apt`] against the signed Sources index of the
//! system release (the suite the target's system libraries come from), and kept in the
//! cache under its file name once its SHA-256 is the one asked for. Every use checks the
//! cached file's SHA-256 again.

use std::fs;
use std::path::{Path, PathBuf};

use super::apt::PrivateApt;
use super::archive::{config, release_suite, system_suite};
use super::{Network, SysrootError};
use crate::support::host::run_folder::staging_in;

/// One orig tarball of a Debian source package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrigTarball<'a> {
    pub package: &'a str,
    /// The Debian version, epoch included (`1:1.2.13.dfsg-1`).
    pub version: &'a str,
    /// The orig tarball's file name (`zlib_1.2.13.dfsg.orig.tar.bz2`).
    pub file_name: &'a str,
    pub sha256: &'a str,
    /// The suite whose signed Sources index lists this version; `None`: the system
    /// release.
    pub release: Option<&'a str>,
    /// Fetched from the archive's pool by its path, not through a Sources index: for a
    /// version no current release lists any more, whose tarball the archive still keeps.
    /// `sha256` is then the only check (the catalogue says where its value comes from).
    pub from_pool: bool,
}

/// The tarball in `cache/debian-sources/`, fetched on first use from `mirror` (the
/// `debian-mirror` option) or Debian's archive.
pub fn orig_tarball(
    cache: &Path,
    orig: &OrigTarball<'_>,
    network: &Network,
) -> Result<PathBuf, SysrootError> {
    let dir = cache.join("debian-sources");
    let path = dir.join(orig.file_name);
    // Only verified bytes are ever moved under this name, so other bytes there were
    // put there by something else: refuse them rather than build from them or replace
    // them silently.
    if path.is_file() {
        let actual = sha256_of(&path)?;
        if actual != orig.sha256 {
            return Err(SysrootError::CachedMismatch {
                path,
                pinned_in: "config/target-libraries.toml",
                expected: orig.sha256.to_string(),
                actual,
            });
        }
        return Ok(path);
    }
    fs::create_dir_all(&dir).map_err(SysrootError::io("create", &dir))?;
    let work = staging_in(&dir, ".source-")
        .map_err(SysrootError::io("create a temporary folder in", &dir))?;
    let suite = match orig.release {
        Some(codename) => release_suite(codename, network),
        None => system_suite(network),
    };
    super::refuse_when_offline(format!("the source package {}", orig.package), &suite)?;
    tracing::info!(
        "fetching Debian source {} {} from {} {}",
        orig.package,
        orig.version,
        suite.mirror,
        suite.codename
    );
    let apt = PrivateApt::create_for_sources(
        &work.path().join("apt"),
        &config().forwarded_acquire_settings,
        &suite,
    )?;
    let into = work.path().join("files");
    fs::create_dir_all(&into).map_err(SysrootError::io("create", &into))?;
    if orig.from_pool {
        let url = pool_url(&suite.mirror, orig.package, orig.file_name);
        apt.download_file(&url, &into.join(orig.file_name), orig.sha256)?;
        let fetched = into.join(orig.file_name);
        fs::rename(&fetched, &path).map_err(SysrootError::io("move into place", &path))?;
        return Ok(path);
    }
    let problems = apt.update()?;
    if let Err(pinned) = apt.download_orig(
        orig.package,
        Some(orig.version),
        orig.file_name,
        &into,
        &problems,
    ) {
        // A stable release replaces a package's Debian revision with each security or
        // point update (libpng1.6 1.6.39-2+deb12u5 -> u6) and keeps its orig tarball: the
        // tarball's name and SHA-256 below are what is pinned, so the current revision's
        // serves as well. Without one of the same name, the pinned revision's error stands.
        tracing::info!(
            "Debian {} no longer lists {} {}: trying its current revision, whose orig tarball must be the same",
            suite.codename,
            orig.package,
            orig.version
        );
        if apt
            .download_orig(orig.package, None, orig.file_name, &into, &problems)
            .is_err()
            || !into.join(orig.file_name).is_file()
        {
            return Err(pinned);
        }
    }
    let fetched = into.join(orig.file_name);
    if !fetched.is_file() {
        return Err(SysrootError::SourceMismatch {
            package: orig.package.to_string(),
            version: orig.version.to_string(),
            detail: format!("it has no {}", orig.file_name),
        });
    }
    let actual = sha256_of(&fetched)?;
    if actual != orig.sha256 {
        return Err(SysrootError::SourceMismatch {
            package: orig.package.to_string(),
            version: orig.version.to_string(),
            detail: format!(
                "{} has SHA-256 {actual}, the catalogue pins {}",
                orig.file_name, orig.sha256
            ),
        });
    }
    fs::rename(&fetched, &path).map_err(SysrootError::io("move into place", &path))?;
    Ok(path)
}

/// Where a Debian archive keeps a source package's files: `pool/main/<p>/<package>/`, with
/// `lib<x>` for packages named `lib*` (`pool/main/libf/libffi/`).
fn pool_url(mirror: &str, package: &str, file_name: &str) -> String {
    let letters = if package.starts_with("lib") { 4 } else { 1 };
    let section: String = package.chars().take(letters).collect();
    format!(
        "{}/pool/main/{section}/{package}/{file_name}",
        mirror.trim_end_matches('/')
    )
}

fn sha256_of(path: &Path) -> Result<String, SysrootError> {
    Ok(crate::support::host::sha256_of_file(path)?)
}

#[cfg(test)]
mod tests {
    use super::pool_url;

    #[test]
    fn pool_paths_follow_debians_layout() {
        assert_eq!(
            pool_url(
                "http://mirror.example/debian/",
                "python3.14",
                "python3.14_3.14.7.orig.tar.xz"
            ),
            "http://mirror.example/debian/pool/main/p/python3.14/python3.14_3.14.7.orig.tar.xz"
        );
        assert_eq!(
            pool_url(
                "http://mirror.example/debian",
                "libffi",
                "libffi_3.4.4.orig.tar.gz"
            ),
            "http://mirror.example/debian/pool/main/libf/libffi/libffi_3.4.4.orig.tar.gz"
        );
    }
}
