//! The pipeline's [`RequirementBuilder`]: a test requirement that neither the index nor
//! Debian has a target wheel of is built from its sdist as crosswheel builds any project —
//! `pipeline::run` on the unpacked sdist for the one identifier, build and repair, no
//! tests — and cached under `<cache>/test-requirements/<target>/<cpXY>/<name>-<version>/`,
//! so the key is (distribution and version the requirement resolved to, target, CPython);
//! `build.json` beside the wheel records the requirement and how long the build took.
//! Every ELF file of the wheel must be for the target before it is cached.
//! A cached wheel whose version satisfies the requirement is taken before anything is
//! downloaded, so the newest release is not looked for once one satisfying build exists.
//! Otherwise the version is the newest whose sdist the index lists for the requirement
//! (`support::host::package_index`: its file list, never `pip download`, which would run
//! the sdist's build backend for the build machine to read its metadata), and that one
//! sdist is downloaded and checked against the index's SHA-256.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::io_error::IoError;
use crate::python_tag::PythonTag;
use crate::stages::testing::{BuiltRequirement, RequirementBuildFailure, RequirementBuilder};
use crate::support::host::BuildPurpose;
use crate::support::host::{Cache, Network};
use crate::target::Target;

use super::run_logs::RunLogs;
use super::{Ending, PipelineOptions, WheelsThisRun};

/// Written beside a cached wheel: what it was built for and how long that took.
const RECORD: &str = "build.json";

pub(super) struct PipelineBuilder {
    pub cache: Cache,
    pub logs: RunLogs,
    pub network: Network,
}

/// The builder a test stage outside a build (`crosswheel test`) is given: the pipeline's,
/// with the logs of the requirements it builds under `logs`.
pub fn requirement_builder(
    cache: &Cache,
    logs: &Path,
    network: Network,
) -> Result<crate::stages::testing::Builder, IoError> {
    Ok(crate::stages::testing::Builder(std::sync::Arc::new(
        PipelineBuilder {
            cache: cache.clone(),
            logs: RunLogs::in_folder(logs)?,
            network,
        },
    )))
}

impl RequirementBuilder for PipelineBuilder {
    fn build(
        &self,
        requirement: &str,
        target: &Target,
        python: PythonTag,
        purpose: BuildPurpose<'_>,
    ) -> Result<BuiltRequirement, RequirementBuildFailure> {
        let failure =
            |reason: String, log: Option<PathBuf>| RequirementBuildFailure { reason, log };
        let arch = target.linux_arch().ok_or_else(|| {
            failure(
                format!(
                    "{}: requirements are built for Linux targets only",
                    target.id()
                ),
                None,
            )
        })?;
        // A build for headers alone is kept apart: it must never be installed to run.
        let folder = match purpose {
            BuildPurpose::Install => "test-requirements",
            BuildPurpose::HeadersOnly(_) => "header-builds",
        };
        let builds = self
            .cache
            .root()
            .join(folder)
            .join(target.id())
            .join(python.to_string());
        // Before the index is read: a satisfying build is taken as it is, offline too.
        if let Some(cached) = cached_satisfying(&builds, requirement) {
            return Ok(cached);
        }
        let downloads = self.cache.root().join("test-requirements").join("sdists");
        let log = self.logs.file(
            &format!(
                "requirement-{}",
                crate::package_name::normalize(requirement)
            ),
            "download",
        );
        let (sdist, name, version) =
            download_sdist(requirement, python, &downloads, &log, &self.network)
                .map_err(|reason| failure(reason, Some(log.clone())))?;
        let key = builds.join(format!(
            "{}-{version}",
            crate::package_name::normalize(&name)
        ));
        if let Some(cached) = cached(&key, &name, &version) {
            return Ok(cached);
        }
        let started = Instant::now();
        let logs = self
            .logs
            .nested(&format!(
                "{}-{version}-{}-{python}",
                crate::package_name::normalize(&name),
                target.id()
            ))
            .map_err(|error| failure(error.to_string(), None))?;
        let built = self.build_sdist(&sdist, target, python, purpose, &key, &logs);
        if let Some(download) = sdist.parent() {
            let _ = std::fs::remove_dir_all(download);
        }
        let wheel = built.map_err(|reason| failure(reason, Some(logs.dir().to_path_buf())))?;
        if let Some((file, found)) = crate::stages::testing::foreign_elf(&wheel, arch)
            .map_err(|error| failure(error.to_string(), None))?
        {
            let _ = std::fs::remove_dir_all(&key);
            return Err(failure(
                format!("its wheel holds {file} for {found}, not {arch}: refused"),
                Some(logs.dir().to_path_buf()),
            ));
        }
        let took = started.elapsed();
        let record = serde_json::json!({
            "requirement": requirement,
            "seconds": took.as_secs_f64(),
            "wheel": wheel.file_name().map(|n| n.to_string_lossy().into_owned()),
        });
        let record_path = key.join(RECORD);
        std::fs::write(&record_path, record.to_string()).map_err(|error| {
            failure(IoError::new("write", &record_path, error).to_string(), None)
        })?;
        Ok(BuiltRequirement {
            wheel,
            name,
            version,
            took,
            cached: false,
        })
    }
}

impl PipelineBuilder {
    /// crosswheel's pipeline on the unpacked `sdist` for one identifier, without tests; the
    /// wheel lands in `key` (first in a folder of its own, renamed into place when done).
    fn build_sdist(
        &self,
        sdist: &Path,
        target: &Target,
        python: PythonTag,
        purpose: BuildPurpose<'_>,
        key: &Path,
        logs: &RunLogs,
    ) -> Result<PathBuf, String> {
        let unpacked = tempfile::Builder::new()
            .prefix("crosswheel-sdist-")
            .tempdir()
            .map_err(|error| error.to_string())?;
        let project = unpack_sdist(sdist, unpacked.path())?;
        let data = target.data();
        let partial = key.with_extension(format!("partial-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&partial);
        let mut overrides = crate::input::options::CliOverrides {
            only: Some(format!("{python}-{}", data.identifier_platform())),
            ..Default::default()
        };
        overrides
            .set("test-skip", "*")
            .set("output-dir", partial.to_string_lossy());
        if let BuildPurpose::HeadersOnly(options) = purpose {
            for (key, value) in options {
                overrides.set(key, value.clone());
            }
        }
        if let Some(mirror) = &self.network.debian_mirror {
            overrides.set("debian-mirror", mirror.clone());
        }
        // The user's variables configure their project, not this one.
        let env = std::collections::BTreeMap::<String, String>::new();
        let plan = crate::input::options::resolve(&project, &overrides, &env)
            .map_err(|error| format!("its configuration: {error}"))?;
        let options = PipelineOptions {
            offline: self.network.offline,
            jobs: 1,
            wheels: WheelsThisRun::default(),
            logs: Some(logs.clone()),
        };
        let outcomes =
            super::run(&plan, &options).map_err(|error| crate::logging::one_line(&error))?;
        let outcome = outcomes.into_iter().next().ok_or("nothing was built")?;
        let wheel = match outcome.ending {
            Ending::Finished(wheel) => wheel.path,
            Ending::Failed { stage, error, .. } => {
                return Err(format!("{stage:?}: {}", crate::logging::one_line(&error)));
            }
        };
        let file = wheel.file_name().ok_or("the wheel has no name")?.to_owned();
        if let Some(parent) = key.parent() {
            std::fs::create_dir_all(parent).map_err(|error| error.to_string())?;
        }
        // Another run may have cached the same build meanwhile: its wheel is as good.
        if std::fs::rename(&partial, key).is_err() && !key.join(&file).is_file() {
            return Err(format!(
                "cannot move {} to {}",
                partial.display(),
                key.display()
            ));
        }
        let _ = std::fs::remove_dir_all(&partial);
        Ok(key.join(file))
    }
}

/// The wheel cached in `key` by an earlier build, with that build's time.
fn cached(key: &Path, name: &str, version: &str) -> Option<BuiltRequirement> {
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(key.join(RECORD)).ok()?).ok()?;
    let wheel = key.join(record.get("wheel")?.as_str()?);
    wheel.is_file().then(|| BuiltRequirement {
        wheel,
        name: name.to_string(),
        version: version.to_string(),
        took: Duration::from_secs_f64(
            record
                .get("seconds")
                .and_then(|s| s.as_f64())
                .unwrap_or(0.0),
        ),
        cached: true,
    })
}

/// The newest wheel an earlier run built into `builds` (one folder per `<name>-<version>`)
/// whose version satisfies `requirement`; its markers were evaluated by the caller.
fn cached_satisfying(builds: &Path, requirement: &str) -> Option<BuiltRequirement> {
    use pep508_rs::pep440_rs::Version;
    use std::str::FromStr;
    let parsed =
        pep508_rs::Requirement::<pep508_rs::VerbatimUrl>::from_str(requirement.trim()).ok()?;
    let specifiers = match parsed.version_or_url {
        None => None,
        Some(pep508_rs::VersionOrUrl::VersionSpecifier(specifiers)) => Some(specifiers),
        Some(pep508_rs::VersionOrUrl::Url(_)) => return None,
    };
    let prefix = format!("{}-", crate::package_name::normalize(parsed.name.as_ref()));
    let mut found: Vec<(Version, BuiltRequirement)> = std::fs::read_dir(builds)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let folder = entry.file_name().into_string().ok()?;
            let version_text = folder.strip_prefix(&prefix)?;
            let version = Version::from_str(version_text).ok()?;
            if specifiers.as_ref().is_some_and(|s| !s.contains(&version)) {
                return None;
            }
            let built = cached(&entry.path(), parsed.name.as_ref(), version_text)?;
            Some((version, built))
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found.pop().map(|(_, built)| built)
}

/// The newest sdist of `requirement`'s distribution that satisfies it on CPython `python`,
/// chosen from the index's list of files (never `pip download`, which runs the sdist's
/// build backend to read its metadata), downloaded into a fresh folder under `downloads`
/// and checked against the SHA-256 the index publishes; with its name and version.
/// `log` records what the index listed and what was taken.
fn download_sdist(
    requirement: &str,
    python: PythonTag,
    downloads: &Path,
    log: &Path,
    network: &Network,
) -> Result<(PathBuf, String, String), String> {
    use crate::support::host::package_index;
    use pep508_rs::pep440_rs::Version;
    use std::str::FromStr;
    let parsed = pep508_rs::Requirement::<pep508_rs::VerbatimUrl>::from_str(requirement.trim())
        .map_err(|_| format!("`{requirement}` is not a requirement the index can resolve"))?;
    let specifiers = match &parsed.version_or_url {
        None => None,
        Some(pep508_rs::VersionOrUrl::VersionSpecifier(specifiers)) => Some(specifiers),
        Some(pep508_rs::VersionOrUrl::Url(_)) => {
            return Err(format!(
                "`{requirement}` names a URL, not a version on the index"
            ));
        }
    };
    let name = parsed.name.to_string();
    if network.offline {
        return Err(format!(
            "offline, and the cache has no build of {name} that satisfies `{requirement}`"
        ));
    }
    let files = package_index::project_files(&name, None, network)?;
    let interpreter = Version::from_str(&python.version()).map_err(|error| error.to_string())?;
    let chosen = package_index::newest_sdist(&files, &name, specifiers, &interpreter);
    let _ = std::fs::write(
        log,
        format!(
            "{requirement}: the index lists {} files of {name}; taking {}\n",
            files.len(),
            chosen
                .as_ref()
                .map_or("no sdist".to_string(), |sdist| format!(
                    "{} ({}, sha256 {})",
                    sdist.file.filename,
                    sdist.file.url,
                    sdist.file.sha256().unwrap_or("none")
                )),
        ),
    );
    let chosen = chosen.ok_or_else(|| {
        format!(
            "the index has no sdist of {name} that satisfies `{requirement}` on CPython {}",
            python.version()
        )
    })?;
    std::fs::create_dir_all(downloads).map_err(|error| error.to_string())?;
    let dir = tempfile::Builder::new()
        .prefix("download-")
        .tempdir_in(downloads)
        .map_err(|error| error.to_string())?
        .keep();
    let sdist = dir.join(&chosen.file.filename);
    package_index::download(&chosen.file, &sdist, network)?;
    Ok((sdist, name, chosen.version.to_string()))
}

/// Unpacks `sdist` into `into`, refusing members that would land outside it (the tar and
/// zip readers both skip `..` and absolute paths); the project folder is the one top folder.
fn unpack_sdist(sdist: &Path, into: &Path) -> Result<PathBuf, String> {
    let file =
        std::fs::File::open(sdist).map_err(|error| format!("{}: {error}", sdist.display()))?;
    if sdist.to_string_lossy().ends_with(".zip") {
        zip::ZipArchive::new(file)
            .and_then(|mut archive| archive.extract(into))
            .map_err(|error| format!("cannot unpack {}: {error}", sdist.display()))?;
    } else {
        tar::Archive::new(flate2::read::GzDecoder::new(file))
            .unpack(into)
            .map_err(|error| format!("cannot unpack {}: {error}", sdist.display()))?;
    }
    let folders: Vec<PathBuf> = std::fs::read_dir(into)
        .map_err(|error| error.to_string())?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .collect();
    match folders.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(format!("{} has no single top folder", sdist.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_build_that_satisfies_the_requirement_is_found_before_any_download() {
        let builds = tempfile::tempdir().unwrap();
        let record = |folder: &str, wheel: &str| {
            let key = builds.path().join(folder);
            std::fs::create_dir_all(&key).unwrap();
            std::fs::write(key.join(wheel), "").unwrap();
            let text = format!(r#"{{"requirement":"numpy","seconds":1200.0,"wheel":"{wheel}"}}"#);
            std::fs::write(key.join(RECORD), text).unwrap();
        };
        record(
            "numpy-1.24.2",
            "numpy-1.24.2-cp311-cp311-manylinux_2_17_ppc64le.whl",
        );
        record(
            "numpy-2.4.6",
            "numpy-2.4.6-cp311-cp311-manylinux_2_34_ppc64le.whl",
        );
        // A build that never finished has no record.
        std::fs::create_dir_all(builds.path().join("numpy-2.5.0")).unwrap();
        let version_for = |requirement: &str| {
            cached_satisfying(builds.path(), requirement).map(|built| built.version)
        };
        assert_eq!(version_for("numpy>=1.25").as_deref(), Some("2.4.6"));
        assert_eq!(version_for("NumPy").as_deref(), Some("2.4.6"));
        assert_eq!(version_for("numpy<2").as_deref(), Some("1.24.2"));
        assert_eq!(version_for("numpy>=3"), None);
        assert_eq!(version_for("crc16"), None);
    }

    #[test]
    fn a_cached_build_is_found_with_its_first_builds_time() {
        let key = tempfile::tempdir().unwrap();
        assert_eq!(cached(key.path(), "crc16", "0.1.1"), None);
        std::fs::write(
            key.path()
                .join("crc16-0.1.1-cp311-cp311-manylinux_2_17_ppc64le.whl"),
            "",
        )
        .unwrap();
        std::fs::write(
            key.path().join(RECORD),
            r#"{"requirement":"crc16","seconds":12.5,"wheel":"crc16-0.1.1-cp311-cp311-manylinux_2_17_ppc64le.whl"}"#,
        )
        .unwrap();
        let found = cached(key.path(), "crc16", "0.1.1").unwrap();
        assert!(found.cached);
        assert_eq!(found.took, Duration::from_secs_f64(12.5));
    }
}
