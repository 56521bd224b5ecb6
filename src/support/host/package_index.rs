//! The package index pip is configured for, read without building anything: a project's
//! files from its simple API (PEP 691 JSON, or the PEP 503 HTML page where that is all the
//! index serves), the newest sdist that satisfies a requirement chosen from that list, and
//! that one file downloaded and checked against the SHA-256 the index publishes for it.
//!
//! Never `pip download` of an sdist: pip reads an sdist's metadata by running its build
//! backend, after installing its build requirements, and meson-python has no metadata hook,
//! so for numpy that is a whole native build for the build machine. The reading is done
//! by the build machine's python3 running `package_index.py` (also `scripts/fetch-fixtures`'),
//! so the index, extra indexes, proxy, certificates and credentials are pip's own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;

use pep508_rs::pep440_rs::{Operator, Version, VersionSpecifiers};
use serde::Deserialize;

use super::Network;

/// The helper python3 runs (`files PROJECT [INDEX]`, `download URL DEST`).
const HELPER: &str = include_str!("package_index.py");

/// One file of a project's simple-API page, in PEP 691's shape.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IndexFile {
    pub filename: String,
    /// Absolute (the helper resolves it against the page).
    pub url: String,
    #[serde(default)]
    pub hashes: BTreeMap<String, String>,
    #[serde(default, rename = "requires-python")]
    pub requires_python: Option<String>,
    /// `false`, `true` or the reason it was yanked (PEP 592).
    #[serde(default)]
    yanked: serde_json::Value,
}

impl IndexFile {
    pub fn is_yanked(&self) -> bool {
        match &self.yanked {
            serde_json::Value::Bool(yanked) => *yanked,
            serde_json::Value::String(_) => true,
            _ => false,
        }
    }

    pub fn sha256(&self) -> Option<&str> {
        self.hashes.get("sha256").map(String::as_str)
    }
}

#[derive(Deserialize)]
struct Page {
    files: Vec<IndexFile>,
}

/// The files of a PEP 691 project page (`{"files": [...]}`; other keys are ignored).
pub fn parse_project_page(json: &str) -> Result<Vec<IndexFile>, String> {
    serde_json::from_str::<Page>(json)
        .map(|page| page.files)
        .map_err(|error| format!("the index's project page is not PEP 691 JSON: {error}"))
}

/// An sdist the index has, with the version its file name carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sdist {
    pub file: IndexFile,
    pub version: Version,
}

/// The version `file_name` carries when it is an sdist of `project` (`.tar.gz` or `.zip`;
/// the name part compared normalized, so `PyYAML-6.0.tar.gz` and `pyyaml-6.0.3.tar.gz` are
/// both PyYAML's, and `python-dateutil-2.9.0.tar.gz` is python-dateutil's).
pub fn sdist_version(file_name: &str, project: &str) -> Option<Version> {
    let stem = file_name
        .strip_suffix(".tar.gz")
        .or_else(|| file_name.strip_suffix(".zip"))?;
    let project = crate::package_name::normalize(project);
    stem.match_indices('-').find_map(|(at, _)| {
        (crate::package_name::normalize(&stem[..at]) == project)
            .then(|| Version::from_str(&stem[at + 1..]).ok())
            .flatten()
    })
}

/// The sdist pip would take for `project` with `specifiers` (`None`: any version) on
/// CPython `python` (`3.11`): the newest version whose sdist's Requires-Python admits
/// `python`, not yanked unless the specifiers pin it with `==`, and no pre-release unless
/// the specifiers name one or nothing else satisfies them. `.tar.gz` before `.zip`.
pub fn newest_sdist(
    files: &[IndexFile],
    project: &str,
    specifiers: Option<&VersionSpecifiers>,
    python: &Version,
) -> Option<Sdist> {
    let pinned = specifiers.is_some_and(|specifiers| {
        !specifiers.is_empty()
            && specifiers
                .iter()
                .all(|s| matches!(s.operator(), Operator::Equal | Operator::ExactEqual))
    });
    let candidates: Vec<Sdist> = files
        .iter()
        .filter(|file| pinned || !file.is_yanked())
        .filter(|file| {
            file.requires_python
                .as_deref()
                .and_then(|text| VersionSpecifiers::from_str(text).ok())
                .is_none_or(|admits| admits.contains(python))
        })
        .filter_map(|file| {
            let version = sdist_version(&file.filename, project)?;
            specifiers
                .is_none_or(|s| s.contains(&version))
                .then(|| Sdist {
                    file: file.clone(),
                    version,
                })
        })
        .collect();
    let pre_named = specifiers.is_some_and(|s| s.iter().any(|s| s.any_prerelease()));
    let any_final = candidates.iter().any(|c| !c.version.any_prerelease());
    candidates
        .into_iter()
        .filter(|c| pre_named || !any_final || !c.version.any_prerelease())
        .max_by(|a, b| {
            a.version.cmp(&b.version).then_with(|| {
                a.file
                    .filename
                    .ends_with(".tar.gz")
                    .cmp(&b.file.filename.ends_with(".tar.gz"))
            })
        })
}

/// The files of `project` on the index pip uses (`index`: this simple-API URL instead).
pub fn project_files(
    project: &str,
    index: Option<&str>,
    network: &Network,
) -> Result<Vec<IndexFile>, String> {
    if network.offline {
        return Err(format!(
            "offline: the package index's list of {project} is not read"
        ));
    }
    let mut command = helper();
    command.args(["files", project]);
    if let Some(index) = index {
        command.arg(index);
    }
    parse_project_page(&run(command)?)
}

/// Downloads `file` to `destination` and checks its bytes against the SHA-256 the index
/// published; a file the index gives no SHA-256 for is refused, and so are other bytes
/// (`destination` is removed then).
pub fn download(file: &IndexFile, destination: &Path, network: &Network) -> Result<(), String> {
    if network.offline {
        return Err(format!("offline: {} is not downloaded", file.filename));
    }
    let expected = file.sha256().ok_or_else(|| {
        format!(
            "the index publishes no SHA-256 for {}: refused",
            file.filename
        )
    })?;
    let mut command = helper();
    command.args(["download", &file.url]).arg(destination);
    run(command)?;
    let actual = super::sha256_of_file(destination).map_err(|error| error.to_string())?;
    if actual != expected {
        let _ = std::fs::remove_file(destination);
        return Err(format!(
            "{} has SHA-256 {actual}, not the {expected} the index publishes: refused",
            file.filename
        ));
    }
    Ok(())
}

/// A wheel crosswheel pins by name and SHA-256 (a toolchain's part): downloaded to
/// `destination` only when the index publishes exactly the pinned SHA-256 for it, and kept
/// only when the bytes have it. The caller announces the download first.
pub fn download_pinned(
    project: &str,
    filename: &str,
    sha256: &str,
    destination: &Path,
    network: &Network,
) -> Result<(), String> {
    let files = project_files(project, None, network)
        .map_err(|err| format!("cannot read {project}'s files on the package index: {err}"))?;
    let file = files
        .iter()
        .find(|file| file.filename == filename)
        .ok_or_else(|| format!("the package index has no {filename}"))?;
    if file.sha256() != Some(sha256) {
        return Err(format!(
            "the package index publishes SHA-256 {} for {filename}, not the pinned {sha256}: refused",
            file.sha256().unwrap_or("none"),
        ));
    }
    // `download` checks the bytes against the published, and so the pinned, SHA-256.
    download(file, destination, network)
}

/// Unpacks the files of `wheel` that `place` maps (a member's path in the wheel to a path
/// under `to`; `None` leaves it out), keeping their modes: how a tool taken from the index's
/// wheels (CUDA's, cmake's) is laid out in the cache.
pub fn unpack_members(
    wheel: &Path,
    to: &Path,
    place: impl Fn(&Path) -> Option<PathBuf>,
) -> Result<(), String> {
    use crate::io_error::IoError;
    let file = std::fs::File::open(wheel)
        .map_err(|err| IoError::new("open", wheel.to_path_buf(), err).to_string())?;
    let mut archive = zip::ZipArchive::new(file)
        .map_err(|err| format!("{} is not a wheel: {err}", wheel.display()))?;
    for index in 0..archive.len() {
        let mut entry = archive
            .by_index(index)
            .map_err(|err| format!("cannot read {}: {err}", wheel.display()))?;
        if entry.is_dir() {
            continue;
        }
        let Some(relative) = entry.enclosed_name().and_then(|name| place(&name)) else {
            continue;
        };
        let path = to.join(relative);
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder)
                .map_err(|err| IoError::new("create", folder.to_path_buf(), err).to_string())?;
        }
        let mut out = std::fs::File::create(&path)
            .map_err(|err| IoError::new("create", path.clone(), err).to_string())?;
        std::io::copy(&mut entry, &mut out).map_err(|err| {
            format!(
                "cannot unpack {} from {}: {err}",
                path.display(),
                wheel.display()
            )
        })?;
        if let Some(mode) = entry.unix_mode() {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode & 0o755))
                .map_err(|err| IoError::new("set the mode of", path.clone(), err).to_string())?;
        }
    }
    Ok(())
}

fn helper() -> Command {
    let mut command = Command::new("python3");
    command
        .args(["-c", HELPER])
        .stdin(std::process::Stdio::null())
        .env_remove("_PYTHON_HOST_PLATFORM")
        .env_remove("PYTHONPATH");
    command
}

/// The helper's stdout, or its one-line error.
fn run(mut command: Command) -> Result<String, String> {
    let output = command
        .output()
        .map_err(|error| format!("cannot run python3: {error}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(stderr
            .lines()
            .rev()
            .find(|line| !line.trim().is_empty())
            .unwrap_or("python3 failed reading the package index")
            .to_string());
    }
    String::from_utf8(output.stdout).map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A project page as the index serves it (PEP 691 JSON, trimmed to a few files of
    /// each kind): wheels, sdists of both kinds, a yanked release, a pre-release, a
    /// Requires-Python that shuts out 3.10 and keys this crate does not read.
    const NUMPY_PAGE: &str = r#"{
  "meta": {"_last-serial": 29000000, "api-version": "1.3"},
  "name": "numpy",
  "versions": ["1.24.2", "1.26.0", "2.2.6", "2.3.0rc1", "2.3.0"],
  "files": [
    {"core-metadata": false, "data-dist-info-metadata": false, "filename": "numpy-1.24.2.tar.gz",
     "hashes": {"sha256": "003a9f530e880cb2cd177cba1af7220b9aa42def9c4afc2a2fc3ee6be7eb2b22"},
     "requires-python": ">=3.8", "size": 10911618, "upload-time": "2023-02-05T21:24:39.011377Z",
     "url": "https://files.example/packages/numpy-1.24.2.tar.gz", "yanked": false},
    {"filename": "numpy-1.26.0.tar.gz", "hashes": {"sha256": "f93fc78fe8bf15afe2b8d6b6499f1c73953169fad1e9a8dd086cdff3190e7fdf"},
     "requires-python": "<3.13,>=3.9", "url": "https://files.example/packages/numpy-1.26.0.tar.gz",
     "yanked": "a build problem on macOS"},
    {"filename": "numpy-2.2.6-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
     "hashes": {"sha256": "fc7b73d02efb0e18c000e9ad8b83480dfcd5dfd11065997ed4c6747470ae8915"},
     "requires-python": ">=3.10", "url": "https://files.example/packages/numpy-2.2.6-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", "yanked": false},
    {"filename": "numpy-2.2.6.tar.gz", "hashes": {"sha256": "e29554e2bef54a90aa5cc07da6ce955accb83f21ab5de01a62c8478897b264fd"},
     "requires-python": ">=3.10", "url": "https://files.example/packages/numpy-2.2.6.tar.gz", "yanked": false},
    {"filename": "numpy-2.3.0rc1.tar.gz", "hashes": {"sha256": "0c8dc2eb3ae05a15a3a2ba2fe2e24c4f6ed1cc3a7c7ac6a3d9ff43ef5e1a7a41"},
     "requires-python": ">=3.11", "url": "https://files.example/packages/numpy-2.3.0rc1.tar.gz", "yanked": false},
    {"filename": "numpy-2.3.0-cp311-cp311-manylinux_2_28_x86_64.whl", "hashes": {"sha256": "5aa9cb3b0b6d5e2b1e4b8d4cbbd8b2bb52c9c4e6a3b7e8c7d1d8e1f8a5b4c3d2"},
     "requires-python": ">=3.11", "url": "https://files.example/packages/numpy-2.3.0-cp311-cp311-manylinux_2_28_x86_64.whl", "yanked": false},
    {"filename": "numpy-2.3.0.tar.gz", "hashes": {"sha256": "581f87f9e9e9db2cba2141400e160ad29bfb56a1b71f8e5e5d4a1b1c2f3e4d5c"},
     "requires-python": ">=3.11", "url": "https://files.example/packages/numpy-2.3.0.tar.gz", "yanked": false}
  ]
}"#;

    fn chosen(
        files: &[IndexFile],
        project: &str,
        requirement: &str,
        python: &str,
    ) -> Option<String> {
        let specifiers =
            (!requirement.is_empty()).then(|| VersionSpecifiers::from_str(requirement).unwrap());
        newest_sdist(
            files,
            project,
            specifiers.as_ref(),
            &Version::from_str(python).unwrap(),
        )
        .map(|sdist| sdist.file.filename)
    }

    #[test]
    fn a_pep_691_page_gives_each_files_name_url_hash_requires_python_and_yanked() {
        let files = parse_project_page(NUMPY_PAGE).unwrap();
        assert_eq!(files.len(), 7);
        assert_eq!(files[0].filename, "numpy-1.24.2.tar.gz");
        assert_eq!(
            files[0].url,
            "https://files.example/packages/numpy-1.24.2.tar.gz"
        );
        assert_eq!(
            files[0].sha256(),
            Some("003a9f530e880cb2cd177cba1af7220b9aa42def9c4afc2a2fc3ee6be7eb2b22")
        );
        assert_eq!(files[0].requires_python.as_deref(), Some(">=3.8"));
        assert!(!files[0].is_yanked());
        // A yanked file's value is its reason.
        assert!(files[1].is_yanked());
        // A minimal page (what the HTML page's parse gives: no size, no meta).
        let minimal = parse_project_page(
            r#"{"files": [{"filename": "crc16-0.1.1.zip", "url": "http://127.0.0.1/crc16-0.1.1.zip",
                "hashes": {}, "requires-python": null, "yanked": false}]}"#,
        )
        .unwrap();
        assert_eq!(minimal[0].sha256(), None);
        assert!(parse_project_page("<html>").is_err());
        assert!(parse_project_page(r#"{"meta": {}}"#).is_err());
    }

    #[test]
    fn an_sdists_file_name_gives_its_version_for_its_project_only() {
        let version =
            |file: &str, project: &str| sdist_version(file, project).map(|v| v.to_string());
        assert_eq!(
            version("crc16-0.1.1.zip", "crc16").as_deref(),
            Some("0.1.1")
        );
        assert_eq!(
            version("PyYAML-5.1.tar.gz", "pyyaml").as_deref(),
            Some("5.1")
        );
        assert_eq!(
            version("python-dateutil-2.8.2.tar.gz", "python_dateutil").as_deref(),
            Some("2.8.2")
        );
        assert_eq!(
            version("scipy_openblas32-0.3.30.0.8.tar.gz", "scipy-openblas32").as_deref(),
            Some("0.3.30.0.8")
        );
        assert_eq!(
            version("numpy-2.3.0rc1.tar.gz", "numpy").as_deref(),
            Some("2.3.0rc1")
        );
        // Not an sdist, another project's, or no version.
        assert_eq!(
            version("numpy-2.2.6-cp311-cp311-manylinux_2_17_x86_64.whl", "numpy"),
            None
        );
        assert_eq!(version("numpy-2.2.6.tar.bz2", "numpy"), None);
        assert_eq!(version("numpy-financial-1.0.0.tar.gz", "numpy"), None);
        assert_eq!(version("numpy.tar.gz", "numpy"), None);
    }

    #[test]
    fn the_newest_satisfying_sdist_is_chosen_as_pip_would() {
        let files = parse_project_page(NUMPY_PAGE).unwrap();
        // The newest final release: not the rc, not a wheel.
        assert_eq!(
            chosen(&files, "numpy", "", "3.11").as_deref(),
            Some("numpy-2.3.0.tar.gz")
        );
        assert_eq!(
            chosen(&files, "NumPy", ">=1.25", "3.11").as_deref(),
            Some("numpy-2.3.0.tar.gz")
        );
        assert_eq!(
            chosen(&files, "numpy", "<2.3", "3.11").as_deref(),
            Some("numpy-2.2.6.tar.gz")
        );
        // Requires-Python shuts 2.3.0 out for 3.10.
        assert_eq!(
            chosen(&files, "numpy", "", "3.10").as_deref(),
            Some("numpy-2.2.6.tar.gz")
        );
        // The yanked 1.26.0 only when pinned.
        assert_eq!(
            chosen(&files, "numpy", "<2", "3.11").as_deref(),
            Some("numpy-1.24.2.tar.gz")
        );
        assert_eq!(
            chosen(&files, "numpy", "==1.26.0", "3.11").as_deref(),
            Some("numpy-1.26.0.tar.gz")
        );
        // A pre-release when the specifier names one, or when nothing else satisfies it.
        assert_eq!(
            chosen(&files, "numpy", ">=2.3.0rc1", "3.11").as_deref(),
            Some("numpy-2.3.0.tar.gz")
        );
        assert_eq!(
            chosen(&files, "numpy", "==2.3.0rc1", "3.11").as_deref(),
            Some("numpy-2.3.0rc1.tar.gz")
        );
        assert_eq!(
            chosen(&files, "numpy", ">2.2.6,!=2.3.0", "3.11").as_deref(),
            Some("numpy-2.3.0rc1.tar.gz")
        );
        // Nothing satisfies.
        assert_eq!(chosen(&files, "numpy", ">=3", "3.11"), None);
        assert_eq!(chosen(&files, "numpy", "", "3.7"), None);
        assert_eq!(chosen(&files, "scipy", "", "3.11"), None);
    }

    #[test]
    fn a_tar_gz_is_taken_before_a_zip_of_the_same_version() {
        let page = r#"{"files": [
            {"filename": "crc16-0.1.1.zip", "url": "u1", "hashes": {"sha256": "1b9f"}},
            {"filename": "crc16-0.1.1.tar.gz", "url": "u2", "hashes": {"sha256": "aa"}},
            {"filename": "crc16-0.1.0.tar.gz", "url": "u3", "hashes": {"sha256": "bb"}}
        ]}"#;
        let files = parse_project_page(page).unwrap();
        assert_eq!(
            chosen(&files, "crc16", "", "3.11").as_deref(),
            Some("crc16-0.1.1.tar.gz")
        );
        assert_eq!(
            chosen(&files[..1], "crc16", "", "3.11").as_deref(),
            Some("crc16-0.1.1.zip")
        );
    }

    #[test]
    fn offline_reads_and_downloads_nothing() {
        let offline = Network::new(true, None);
        let error = project_files("numpy", None, &offline).unwrap_err();
        assert!(error.starts_with("offline"), "{error}");
        let files = parse_project_page(NUMPY_PAGE).unwrap();
        let destination = tempfile::tempdir().unwrap();
        let error = download(&files[0], &destination.path().join("x"), &offline).unwrap_err();
        assert!(error.starts_with("offline"), "{error}");
        assert!(!destination.path().join("x").exists());
    }
}
