//! Every download crosswheel builds from is pinned by SHA-256 and checked before each use:
//! a cached download whose bytes changed after they were verified is refused in one line
//! that names the file, the pinned hash and the hash it has, and is left as it is.

use crosswheel::support::host::Network;
use crosswheel::support::sysroot::{OrigTarball, orig_tarball};
use crosswheel::support::target_libraries::{IndexSource, catalogue, index_sdist};

use sha2::Digest;

#[test]
fn a_changed_cached_source_tarball_is_refused_naming_both_hashes() {
    let cache = tempfile::tempdir().unwrap();
    let entry = catalogue()
        .library("libffi")
        .expect("libffi in the catalogue");
    let cached = cache.path().join("debian-sources").join(&entry.orig);
    std::fs::create_dir_all(cached.parent().unwrap()).unwrap();
    let tampered = b"not the orig tarball Debian published";
    std::fs::write(&cached, tampered).unwrap();
    let actual: String = sha2::Sha256::digest(tampered)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();

    // The mirror is never asked: the check comes first (an unreachable one proves it).
    let error = orig_tarball(
        cache.path(),
        &OrigTarball {
            package: &entry.debian_source,
            version: &entry.debian_version,
            file_name: &entry.orig,
            sha256: &entry.sha256,
            release: entry.debian_release.as_deref(),
            from_pool: entry.from_pool,
        },
        &crosswheel::support::host::Network::new(false, Some("http://127.0.0.1:9/debian".into())),
    )
    .unwrap_err()
    .to_string();

    assert!(!error.contains('\n'), "{error}");
    assert!(
        error.starts_with(&format!("{}: SHA-256 {actual}", cached.display()))
            && error.contains(&format!(
                "config/target-libraries.toml pins {}",
                entry.sha256
            ))
            && error.contains("delete it"),
        "{error}"
    );
    assert_eq!(
        std::fs::read(&cached).unwrap(),
        tampered,
        "the cached file was changed"
    );
}

/// A real HTTP server on 127.0.0.1 serving the files under `root` (GET only), as a Debian
/// archive's pool or a package index would; returns its URL (with `/debian` after it).
fn serve_folder(root: std::path::PathBuf) -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut request = String::new();
            BufReader::new(&stream).read_line(&mut request).unwrap();
            let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
            let mut file = root.join(path.trim_start_matches('/'));
            // A folder's URL answers with its index.json, as a simple API's project page.
            if path.ends_with('/') {
                file = file.join("index.json");
            }
            let response = match std::fs::read(&file) {
                Ok(body) => {
                    let mut head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .into_bytes();
                    head.extend(body);
                    head
                }
                Err(_) => {
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                        .to_vec()
                }
            };
            let _ = stream.write_all(&response);
        }
    });
    format!("http://127.0.0.1:{port}/debian")
}

/// A source tarball no current Sources index lists comes from the archive's pool, by its
/// path (`pool/main/<p>/<package>/`), and only with the pinned SHA-256.
#[test]
fn a_source_from_the_pool_is_fetched_by_its_path_and_refused_when_its_bytes_differ() {
    let archive = tempfile::tempdir().unwrap();
    let folder = archive.path().join("debian/pool/main/p/pyfake");
    std::fs::create_dir_all(&folder).unwrap();
    let bytes = b"the release tarball, byte for byte";
    std::fs::write(folder.join("pyfake_1.0.orig.tar.xz"), bytes).unwrap();
    let mirror = serve_folder(archive.path().to_path_buf());
    let pinned: String = sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let tarball = |sha256: &str, cache: &std::path::Path| {
        orig_tarball(
            cache,
            &OrigTarball {
                package: "pyfake",
                version: "1.0-1",
                file_name: "pyfake_1.0.orig.tar.xz",
                sha256,
                release: None,
                from_pool: true,
            },
            &crosswheel::support::host::Network::new(false, Some(mirror.clone())),
        )
    };

    let cache = tempfile::tempdir().unwrap();
    let fetched = tarball(&pinned, cache.path()).unwrap();
    assert_eq!(std::fs::read(&fetched).unwrap(), bytes);

    let other = tempfile::tempdir().unwrap();
    let wrong = "0".repeat(64);
    let error = tarball(&wrong, other.path()).unwrap_err().to_string();
    assert!(!error.contains('\n'), "{error}");
    assert!(error.contains("apt-helper download-file"), "{error}");
    assert!(
        !other
            .path()
            .join("debian-sources/pyfake_1.0.orig.tar.xz")
            .exists(),
        "bytes of another hash entered the cache"
    );
}

/// The requirements of scripts/test-requirements.txt, joined across `\` continuations:
/// (name==version, hashes).
fn compiled_requirements(text: &str) -> Vec<(String, Vec<String>)> {
    let joined = text.replace("\\\n", " ");
    joined
        .lines()
        .map(|line| line.split('#').next().unwrap_or_default().trim())
        .filter(|line| !line.is_empty())
        .map(|line| {
            let requirement = line.split([' ', ';']).next().unwrap_or_default().to_owned();
            let hashes = line
                .split_whitespace()
                .filter_map(|word| word.strip_prefix("--hash=sha256:"))
                .map(str::to_owned)
                .collect();
            (requirement, hashes)
        })
        .collect()
}

#[test]
fn the_test_venv_installs_every_package_by_hash_and_every_tool_at_its_pinned_version() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let compiled = std::fs::read_to_string(root.join("scripts/test-requirements.txt")).unwrap();
    let requirements = compiled_requirements(&compiled);
    assert!(requirements.len() > 10, "{requirements:?}");
    for (requirement, hashes) in &requirements {
        assert!(
            requirement.contains("=="),
            "`{requirement}` is not pinned to a version"
        );
        assert!(!hashes.is_empty(), "`{requirement}` has no --hash=sha256:");
        for hash in hashes {
            assert!(hash.len() == 64, "{requirement}: `{hash}` is not a SHA-256");
        }
    }
    let normal = |name: &str| name.to_ascii_lowercase().replace(['_', '.'], "-");
    let wanted = std::fs::read_to_string(root.join("scripts/test-requirements.in")).unwrap();
    for tool in wanted
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
    {
        let (name, version) = tool.split_once("==").expect("every tool is pinned");
        let name = name.split('[').next().unwrap();
        let found = requirements.iter().any(|(requirement, _)| {
            requirement
                .split_once("==")
                .is_some_and(|(n, v)| normal(n) == normal(name) && v == version)
        });
        assert!(
            found,
            "scripts/test-requirements.txt has no {name}=={version}: regenerate it (its header says how)"
        );
    }
    let setup = std::fs::read_to_string(root.join("scripts/setup-test-env")).unwrap();
    assert!(setup.contains("--require-hashes -r scripts/test-requirements.txt"));
}

/// A source from the package index (OpenBLAS's C LAPACK) is found through the index's JSON
/// simple API, downloaded, and kept only with the pinned SHA-256; a cached copy whose bytes
/// changed is refused naming both hashes and left as it is.
#[test]
#[ignore = "needs python3: scripts/test sets it up"]
fn an_index_sdist_is_fetched_through_the_simple_api_and_kept_only_with_its_pinned_hash() {
    let index_root = tempfile::tempdir().unwrap();
    let page = index_root.path().join("simple/fakeproj");
    std::fs::create_dir_all(&page).unwrap();
    std::fs::create_dir_all(index_root.path().join("files")).unwrap();
    let bytes = b"an sdist, byte for byte";
    std::fs::write(index_root.path().join("files/fakeproj-1.0.tar.gz"), bytes).unwrap();
    std::fs::write(
        page.join("index.json"),
        r#"{"meta": {"api-version": "1.1"}, "name": "fakeproj", "files": [{"filename": "fakeproj-1.0.tar.gz", "url": "../../files/fakeproj-1.0.tar.gz", "hashes": {}}]}"#,
    )
    .unwrap();
    let server = serve_folder(index_root.path().to_path_buf());
    let index = format!("{}/simple", server.trim_end_matches("/debian"));
    let pinned: String = sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let source = |sha256: &str| IndexSource {
        project: "fakeproj".into(),
        file: "fakeproj-1.0.tar.gz".into(),
        sha256: sha256.into(),
        licence: "MIT".into(),
        take: "fakeproj-1.0/sub".into(),
        into: "sub".into(),
    };

    let cache = tempfile::tempdir().unwrap();
    let fetched = index_sdist(
        cache.path(),
        &source(&pinned),
        Some(&index),
        &Network::default(),
    )
    .unwrap();
    assert_eq!(std::fs::read(&fetched).unwrap(), bytes);

    let other = tempfile::tempdir().unwrap();
    let wrong = "0".repeat(64);
    let error = index_sdist(
        other.path(),
        &source(&wrong),
        Some(&index),
        &Network::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(!error.contains('\n'), "{error}");
    assert!(
        error.contains(&format!("SHA-256 {pinned}")) && error.contains(&wrong),
        "{error}"
    );
    assert!(
        !other
            .path()
            .join("index-sources/fakeproj-1.0.tar.gz")
            .exists(),
        "bytes of another hash entered the cache"
    );

    let tampered = b"changed after it was verified";
    std::fs::write(&fetched, tampered).unwrap();
    let error = index_sdist(
        cache.path(),
        &source(&pinned),
        Some(&index),
        &Network::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(!error.contains('\n'), "{error}");
    assert!(
        error.contains(&pinned) && error.contains("remove it"),
        "{error}"
    );
    assert_eq!(std::fs::read(&fetched).unwrap(), tampered);
}
