//! `upload` against a real index server (pypiserver on 127.0.0.1), then
//! `pip install` from it: the uploaded wheel must be the one pip installs.
//!
//! Needs `python3 -m pip install pypiserver passlib`; fails loudly without.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crosswheel::formats::wheel::{Contents, WheelName, WriteOptions, write_wheel};
use crosswheel::stages::publish::{Credentials, UploadError, UploadOptions, UploadOutcome, upload};

const PROJECT: &str = "crosswheel-publish-demo";
const MODULE: &str = "crosswheel_publish_demo";
const USER: &str = "alice";
const PASSWORD: &str = "correct horse";

/// A pypiserver process, killed when dropped.
struct IndexServer {
    child: Child,
    port: u16,
    _root: tempfile::TempDir,
}

impl IndexServer {
    fn start() -> Self {
        require_python_module("pypiserver");
        require_python_module("passlib");
        let root = tempfile::tempdir().unwrap();
        let htpasswd = root.path().join("htpasswd");
        let packages = root.path().join("packages");
        std::fs::create_dir(&packages).unwrap();
        let status = Command::new("python3")
            .args(["-c", "import sys; from passlib.apache import HtpasswdFile as H; \
                          h = H(sys.argv[1], new=True); h.set_password(sys.argv[2], sys.argv[3]); h.save()"])
            .arg(&htpasswd)
            .args([USER, PASSWORD])
            .status()
            .expect("running python3 to write the htpasswd file");
        assert!(
            status.success(),
            "writing {} with passlib failed",
            htpasswd.display()
        );

        let port = free_port();
        let child = Command::new("python3")
            .args([
                "-m",
                "pypiserver",
                "run",
                "-i",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-a",
                "update",
                "-P",
            ])
            .arg(&htpasswd)
            .arg(&packages)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting python3 -m pypiserver");
        let server = Self {
            child,
            port,
            _root: root,
        };
        server.wait_until_listening();
        server
    }

    fn wait_until_listening(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "pypiserver did not listen on port {} within 30 s",
                self.port
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

impl Drop for IndexServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn require_python_module(module: &str) {
    let found = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    assert!(
        found,
        "python3 cannot import `{module}`: install it with `python3 -m pip install {module}`"
    );
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A pure-Python wheel that installs anywhere; `marker` ends up in its module.
fn demo_wheel(dir: &Path, marker: &str) -> PathBuf {
    let name = WheelName::parse(&format!("{MODULE}-1.0-py3-none-any.whl")).unwrap();
    let dist_info = format!("{MODULE}-1.0.dist-info");
    let file = |data: String| Contents::Bytes {
        data: data.into_bytes(),
        mode: 0o644,
    };
    let metadata = format!(
        "Metadata-Version: 2.1\nName: {PROJECT}\nVersion: 1.0\nSummary: upload round trip\n\
         Classifier: Programming Language :: Python :: 3\nClassifier: License :: OSI Approved :: MIT License\n\
         Description-Content-Type: text/markdown\n\n# Demo\n\nUploaded by a test.\n"
    );
    let entries = vec![
        (
            format!("{MODULE}/__init__.py"),
            file(format!("MARKER = {marker:?}\n")),
        ),
        (
            format!("{dist_info}/WHEEL"),
            file("Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n".into()),
        ),
        (format!("{dist_info}/METADATA"), file(metadata)),
    ];
    write_wheel(dir, &name, entries, &WriteOptions::default()).unwrap()
}

fn options(server: &IndexServer, password: &str, skip_existing: bool) -> UploadOptions {
    UploadOptions {
        repository_url: server.url(),
        credentials: Some(Credentials {
            username: USER.into(),
            password: password.into(),
        }),
        skip_existing,
        trusted_publishing: false,
        oidc_endpoint: None,
        attestations: false,
    }
}

#[test]
#[ignore = "slow: a pypiserver and pip installs"]
fn uploads_skips_existing_and_pip_installs_the_uploaded_wheel() {
    let server = IndexServer::start();
    let dist = tempfile::tempdir().unwrap();
    let wheel = demo_wheel(dist.path(), "round trip");
    let files = vec![wheel.clone()];

    let outcomes = upload(&files, &options(&server, PASSWORD, false)).unwrap();
    assert_eq!(
        outcomes,
        [UploadOutcome::Uploaded {
            path: wheel.clone()
        }]
    );

    let error = upload(&files, &options(&server, PASSWORD, false)).unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(error, UploadError::Rejected { status: 409, .. }),
        "{message}"
    );
    assert!(message.contains("already exists"), "{message}");
    assert!(message.contains("--skip-existing"), "{message}");
    assert!(!message.contains('\n'), "{message}");

    let outcomes = upload(&files, &options(&server, PASSWORD, true)).unwrap();
    assert!(
        matches!(&outcomes[..], [UploadOutcome::SkippedExisting { path, reason }]
            if *path == wheel && reason.contains("already exists")),
        "{outcomes:?}"
    );

    let target = tempfile::tempdir().unwrap();
    let output = Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--isolated",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--no-deps",
        ])
        .args([
            "--index-url",
            &format!("{}simple/", server.url()),
            "--target",
        ])
        .arg(target.path())
        .arg(PROJECT)
        .output()
        .expect("running python3 -m pip");
    assert!(
        output.status.success(),
        "pip install failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let installed =
        std::fs::read_to_string(target.path().join(MODULE).join("__init__.py")).unwrap();
    assert_eq!(installed, "MARKER = \"round trip\"\n");
}

#[test]
#[ignore = "slow: a pypiserver and pip installs"]
fn wrong_password_is_a_clear_403() {
    let server = IndexServer::start();
    let dist = tempfile::tempdir().unwrap();
    let wheel = demo_wheel(dist.path(), "never uploaded");
    let error = upload(&[wheel], &options(&server, "wrong", true)).unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(error, UploadError::Rejected { status: 403, .. }),
        "{message}"
    );
    assert!(
        message.contains("answered 403: Error: 403 Forbidden"),
        "{message}"
    );
    assert!(message.contains("TWINE_PASSWORD"), "{message}");
}

#[test]
#[ignore = "slow: a pypiserver and pip installs"]
fn refuses_to_upload_a_broken_distribution() {
    let dist = tempfile::tempdir().unwrap();
    let broken = dist.path().join(format!("{MODULE}-1.0-py3-none-any.whl"));
    std::fs::write(&broken, b"not a zip").unwrap();
    // Checking comes first, so no server is needed to refuse.
    let options = UploadOptions {
        repository_url: "http://127.0.0.1:9/".into(),
        credentials: None,
        skip_existing: false,
        trusted_publishing: false,
        oidc_endpoint: None,
        attestations: false,
    };
    let message = upload(&[broken], &options).unwrap_err().to_string();
    assert!(message.starts_with("refusing to upload: "), "{message}");
    assert!(message.contains("not a zip archive"), "{message}");
}

#[test]
#[ignore = "slow: a pypiserver and pip installs"]
fn unreachable_index_names_the_url() {
    let dist = tempfile::tempdir().unwrap();
    let wheel = demo_wheel(dist.path(), "nowhere");
    let url = format!("http://127.0.0.1:{}/", free_port());
    let options = UploadOptions {
        repository_url: url.clone(),
        credentials: None,
        skip_existing: false,
        trusted_publishing: false,
        oidc_endpoint: None,
        attestations: false,
    };
    let message = upload(&[wheel], &options).unwrap_err().to_string();
    assert!(
        message.contains(&format!("cannot reach {url}")),
        "{message}"
    );
}
