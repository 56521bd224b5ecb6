//! The package index read without pip's resolver (`support::host::package_index`): a
//! project's files from a local stand-in index on 127.0.0.1, once as PEP 691 JSON and once
//! as a PEP 503 HTML page, the newest satisfying sdist chosen from them, downloaded and
//! checked against the index's SHA-256. Needs python3 (which runs the reading helper).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crosswheel::support::host::Network;
use crosswheel::support::host::package_index::{self, IndexFile};
use pep508_rs::pep440_rs::{Version, VersionSpecifiers};
use sha2::Digest;

/// A simple-API stand-in serving `root`'s files; a folder's URL answers with its
/// `index.json` (as PEP 691 JSON) or else its `index.html`. Returns `http://127.0.0.1:<port>`.
fn serve_index(root: PathBuf) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            reader.read_line(&mut request).unwrap();
            // The headers, up to the blank line (pip's session sends several).
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line.trim() != "" {
                line.clear();
            }
            let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
            let file = root.join(path.trim_start_matches('/'));
            let (file, kind) = if path.ends_with('/') {
                if file.join("index.json").is_file() {
                    (
                        file.join("index.json"),
                        "application/vnd.pypi.simple.v1+json",
                    )
                } else {
                    (file.join("index.html"), "text/html")
                }
            } else {
                (file, "application/octet-stream")
            };
            let mut body = Vec::new();
            let response = match std::fs::File::open(&file)
                .and_then(|mut f| f.read_to_end(&mut body))
            {
                Ok(_) => {
                    let mut head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
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
    format!("http://127.0.0.1:{port}")
}

fn sha256(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Two sdists and a wheel of `demo-pkg` under `root/files`; the digests of the sdists.
fn files(root: &Path) -> (String, String) {
    let files = root.join("files");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(files.join("demo_pkg-1.0.tar.gz"), b"demo 1.0").unwrap();
    std::fs::write(files.join("demo_pkg-2.0.tar.gz"), b"demo 2.0").unwrap();
    std::fs::write(files.join("demo_pkg-2.0-py3-none-any.whl"), b"wheel").unwrap();
    (sha256(b"demo 1.0"), sha256(b"demo 2.0"))
}

fn newest(files: &[IndexFile], specifiers: &str) -> package_index::Sdist {
    let specifiers = VersionSpecifiers::from_str(specifiers).unwrap();
    package_index::newest_sdist(
        files,
        "demo-pkg",
        Some(&specifiers),
        &Version::from_str("3.11").unwrap(),
    )
    .expect("a satisfying sdist")
}

#[test]
#[ignore = "needs python3: scripts/test sets it up"]
fn a_json_project_page_gives_the_newest_sdist_which_is_downloaded_and_verified() {
    common_python();
    let root = tempfile::tempdir().unwrap();
    let (one, two) = files(root.path());
    let page = root.path().join("simple/demo-pkg");
    std::fs::create_dir_all(&page).unwrap();
    // Relative URLs, as an index may serve them; 2.0 is yanked.
    let json = format!(
        r#"{{"meta": {{"api-version": "1.1"}}, "name": "demo-pkg", "files": [
          {{"filename": "demo_pkg-1.0.tar.gz", "url": "../../files/demo_pkg-1.0.tar.gz", "hashes": {{"sha256": "{one}"}}, "requires-python": ">=3.8", "yanked": false}},
          {{"filename": "demo_pkg-2.0.tar.gz", "url": "../../files/demo_pkg-2.0.tar.gz", "hashes": {{"sha256": "{two}"}}, "requires-python": ">=3.8", "yanked": "broken"}},
          {{"filename": "demo_pkg-2.0-py3-none-any.whl", "url": "../../files/demo_pkg-2.0-py3-none-any.whl", "hashes": {{}}, "yanked": false}}
        ]}}"#
    );
    std::fs::write(page.join("index.json"), json).unwrap();
    let index = format!("{}/simple", serve_index(root.path().to_path_buf()));
    let network = Network::default();

    // The name as a user writes it; the page is the normalized name's.
    let listed = package_index::project_files("Demo_Pkg", Some(&index), &network).unwrap();
    assert_eq!(listed.len(), 3, "{listed:?}");
    let chosen = newest(&listed, ">=1");
    assert_eq!(chosen.file.filename, "demo_pkg-1.0.tar.gz");
    assert!(
        chosen.file.url.starts_with("http://127.0.0.1:")
            && chosen.file.url.ends_with("/files/demo_pkg-1.0.tar.gz"),
        "{}",
        chosen.file.url
    );
    let into = tempfile::tempdir().unwrap();
    let destination = into.path().join(&chosen.file.filename);
    package_index::download(&chosen.file, &destination, &network).unwrap();
    assert_eq!(std::fs::read(&destination).unwrap(), b"demo 1.0");

    // Other bytes than the index's SHA-256 are refused and not kept.
    let mut tampered = chosen.file.clone();
    tampered.hashes.insert("sha256".into(), two.clone());
    let refused = into.path().join("tampered.tar.gz");
    let error = package_index::download(&tampered, &refused, &network).unwrap_err();
    assert!(
        error.contains("not the") && error.contains("refused"),
        "{error}"
    );
    assert!(!refused.exists());

    // A project the index does not have.
    let error = package_index::project_files("no-such", Some(&index), &network).unwrap_err();
    assert!(error.contains("no-such"), "{error}");
}

#[test]
#[ignore = "needs python3: scripts/test sets it up"]
fn an_html_project_page_is_read_as_pip_reads_it() {
    common_python();
    let root = tempfile::tempdir().unwrap();
    let (one, two) = files(root.path());
    let page = root.path().join("simple/demo-pkg");
    std::fs::create_dir_all(&page).unwrap();
    let html = format!(
        r#"<!DOCTYPE html>
<html><head><meta name="pypi:repository-version" content="1.0"><title>Links for demo-pkg</title></head>
<body><h1>Links for demo-pkg</h1>
<a href="../../files/demo_pkg-1.0.tar.gz#sha256={one}" data-requires-python="&gt;=3.8">demo_pkg-1.0.tar.gz</a><br />
<a href="../../files/demo_pkg-2.0.tar.gz#sha256={two}" data-requires-python="&gt;=3.12">demo_pkg-2.0.tar.gz</a><br />
<a href="../../files/demo_pkg-2.0-py3-none-any.whl">demo_pkg-2.0-py3-none-any.whl</a><br />
</body></html>
"#
    );
    std::fs::write(page.join("index.html"), html).unwrap();
    let index = format!("{}/simple/", serve_index(root.path().to_path_buf()));
    let network = Network::default();

    let listed = package_index::project_files("demo.pkg", Some(&index), &network).unwrap();
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert_eq!(listed[1].requires_python.as_deref(), Some(">=3.12"));
    assert_eq!(listed[1].sha256(), Some(two.as_str()));
    // 2.0 requires CPython 3.12: 1.0 for 3.11.
    let chosen = newest(&listed, "");
    assert_eq!(chosen.version.to_string(), "1.0");
    let into = tempfile::tempdir().unwrap();
    let destination = into.path().join(&chosen.file.filename);
    package_index::download(&chosen.file, &destination, &network).unwrap();
    assert_eq!(std::fs::read(&destination).unwrap(), b"demo 1.0");
}

fn common_python() {
    crate::common::require_tool("python3", "apt-get install python3 python3-pip");
}
