//! `crosswheel upload --trusted-publishing` against a local index on 127.0.0.1 that
//! plays both sides of the exchange: the GitHub Actions OIDC token endpoint, and an index
//! with the audience, mint-token and upload endpoints. Each failure the exchange can meet
//! ends the upload with its own one-line reason, and no token ever reaches the output.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use base64::Engine;
use common::crosswheel_bin;
use crosswheel::formats::wheel::{Contents, WheelName, WriteOptions, write_wheel};

/// What the job's runner gives it with `id-token: write`.
pub(crate) const REQUEST_TOKEN: &str = "actions-request-token-5ecret";
/// The OIDC token the Actions endpoint issues.
const OIDC_TOKEN: &str = "eyJoidc.token.5ecret";
/// The upload token the index mints.
const MINTED: &str = "pypi-minted-token-5ecret";
const AUDIENCE: &str = "testindex";

/// How the index answers a mint-token request.
#[derive(Clone, Copy)]
pub(crate) enum Mint {
    Grant,
    NotTrusted,
    Expired,
    /// An index without Trusted Publishing: no audience endpoint.
    NotOffered,
}

/// A tiny HTTP/1.1 server: one thread, one request per connection.
pub(crate) struct Index {
    port: u16,
    /// The Basic credentials each upload came with.
    pub(crate) uploads: Arc<Mutex<Vec<String>>>,
    /// The multipart body of each upload.
    pub(crate) bodies: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Index {
    pub(crate) fn start(mint: Mint) -> Index {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let uploads = Arc::new(Mutex::new(Vec::new()));
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let (seen, seen_bodies) = (Arc::clone(&uploads), Arc::clone(&bodies));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                serve(stream, mint, &seen, &seen_bodies);
            }
        });
        Index {
            port,
            uploads,
            bodies,
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

struct Request {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let target = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (key, value) = header.split_once(':')?;
        headers.push((key.trim().to_string(), value.trim().to_string()));
    }
    let mut request = Request {
        method,
        target,
        headers,
        body: Vec::new(),
    };
    let length: usize = request
        .header("content-length")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    request.body = vec![0; length];
    reader.read_exact(&mut request.body).ok()?;
    Some(request)
}

fn serve(
    mut stream: TcpStream,
    mint: Mint,
    uploads: &Mutex<Vec<String>>,
    bodies: &Mutex<Vec<Vec<u8>>>,
) {
    let Some(request) = read_request(&stream) else {
        return;
    };
    if request.target.starts_with("/legacy/") {
        bodies.lock().unwrap().push(request.body.clone());
    }
    let (status, body) = answer(&request, mint, uploads);
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

fn answer(request: &Request, mint: Mint, uploads: &Mutex<Vec<String>>) -> (&'static str, String) {
    let path = request.target.split('?').next().unwrap_or_default();
    match (request.method.as_str(), path) {
        ("GET", "/_/oidc/audience") if !matches!(mint, Mint::NotOffered) => {
            ("200 OK", format!(r#"{{"audience": "{AUDIENCE}"}}"#))
        }
        ("GET", "/actions/token") => {
            let bearer = format!("bearer {REQUEST_TOKEN}");
            let authorized = request.header("authorization") == Some(bearer.as_str())
                && request.target.ends_with(&format!("&audience={AUDIENCE}"));
            if authorized {
                ("200 OK", format!(r#"{{"value": "{OIDC_TOKEN}"}}"#))
            } else {
                // Echoes what it got, as careless servers do: the client must blank it.
                let got = request.header("authorization").unwrap_or_default();
                ("401 Unauthorized", format!(r#"{{"message": "bad {got}"}}"#))
            }
        }
        ("POST", "/_/oidc/mint-token") => {
            let expected = format!(r#"{{"token":"{OIDC_TOKEN}"}}"#);
            if request.body != expected.as_bytes() {
                return (
                    "422 Unprocessable Entity",
                    r#"{"message": "no token"}"#.into(),
                );
            }
            match mint {
                Mint::Grant | Mint::NotOffered => ("200 OK", format!(r#"{{"success": true, "token": "{MINTED}"}}"#)),
                Mint::NotTrusted => (
                    "422 Unprocessable Entity",
                    r#"{"message": "Token request failed", "errors": [{"code": "invalid-publisher", "description": "valid token, but no corresponding publisher (All lookup strategies exhausted)"}]}"#.into(),
                ),
                Mint::Expired => (
                    "422 Unprocessable Entity",
                    r#"{"message": "Token request failed", "errors": [{"code": "invalid-token", "description": "malformed or invalid token: Signature has expired"}]}"#.into(),
                ),
            }
        }
        ("POST", "/legacy/") => {
            let credentials = request
                .header("authorization")
                .and_then(|value| value.strip_prefix("Basic "))
                .and_then(|encoded| {
                    base64::engine::general_purpose::STANDARD
                        .decode(encoded)
                        .ok()
                })
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                .unwrap_or_default();
            uploads.lock().unwrap().push(credentials.clone());
            if credentials == format!("__token__:{MINTED}") {
                ("200 OK", String::new())
            } else {
                (
                    "403 Forbidden",
                    r#"{"message": "invalid credentials"}"#.into(),
                )
            }
        }
        _ => ("404 Not Found", String::new()),
    }
}

pub(crate) fn demo_wheel(dir: &Path) -> PathBuf {
    let name = WheelName::parse("trusted_demo-1.0-py3-none-any.whl").unwrap();
    let file = |data: &str| Contents::Bytes {
        data: data.as_bytes().to_vec(),
        mode: 0o644,
    };
    let entries = vec![
        ("trusted_demo/__init__.py".to_string(), file("")),
        (
            "trusted_demo-1.0.dist-info/WHEEL".to_string(),
            file("Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
        ),
        (
            "trusted_demo-1.0.dist-info/METADATA".to_string(),
            file(
                "Metadata-Version: 2.1\nName: trusted-demo\nVersion: 1.0\nDescription-Content-Type: text/plain\n\nDemo.\n",
            ),
        ),
    ];
    write_wheel(dir, &name, entries, &WriteOptions::default()).unwrap()
}

/// Runs `crosswheel upload` against `index` as a GitHub Actions job would, with
/// `id_token` deciding whether the job was granted `id-token: write`.
fn upload(index: &Index, flag: bool, id_token: bool) -> Output {
    let dist = tempfile::tempdir().unwrap();
    let wheel = demo_wheel(dist.path());
    let mut command = Command::new(crosswheel_bin());
    command
        .arg("upload")
        .arg("--repository-url")
        .arg(index.url("/legacy/"));
    if flag {
        command.arg("--trusted-publishing");
    }
    command
        .arg(&wheel)
        .env_remove("TWINE_PASSWORD")
        .env_remove("TWINE_USERNAME")
        .env_remove("TWINE_REPOSITORY_URL")
        .env_remove("ACTIONS_ID_TOKEN_REQUEST_URL")
        .env_remove("ACTIONS_ID_TOKEN_REQUEST_TOKEN")
        .env("RUST_LOG", "trace");
    if id_token {
        command
            .env(
                "ACTIONS_ID_TOKEN_REQUEST_URL",
                index.url("/actions/token?api-version=2.0"),
            )
            .env("ACTIONS_ID_TOKEN_REQUEST_TOKEN", REQUEST_TOKEN);
    }
    let output = command.output().expect("run crosswheel upload");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    for secret in [REQUEST_TOKEN, OIDC_TOKEN, MINTED] {
        assert!(!all.contains(secret), "a token reached the output:\n{all}");
    }
    output
}

pub(crate) fn error_line(output: &Output) -> String {
    assert!(!output.status.success(), "the upload should have failed");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = stderr
        .lines()
        .find(|line| line.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line in:\n{stderr}"));
    line.to_string()
}

#[test]
fn uploads_with_the_minted_token() {
    let index = Index::start(Mint::Grant);
    let output = upload(&index, true, true);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        *index.uploads.lock().unwrap(),
        [format!("__token__:{MINTED}")]
    );
}

#[test]
fn an_actions_job_with_an_id_token_and_no_password_uses_it_without_the_flag() {
    let index = Index::start(Mint::Grant);
    let output = upload(&index, false, true);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(index.uploads.lock().unwrap().len(), 1);
}

#[test]
fn without_id_token_permission_it_says_so() {
    let index = Index::start(Mint::Grant);
    let line = error_line(&upload(&index, true, false));
    assert!(line.contains("id-token: write"), "{line}");
    assert!(index.uploads.lock().unwrap().is_empty());
}

#[test]
fn an_index_that_does_not_trust_the_workflow_says_so() {
    let index = Index::start(Mint::NotTrusted);
    let line = error_line(&upload(&index, true, true));
    assert!(
        line.contains("does not trust this workflow") && line.contains("invalid-publisher"),
        "{line}"
    );
    assert!(index.uploads.lock().unwrap().is_empty());
}

#[test]
fn an_expired_token_says_so() {
    let index = Index::start(Mint::Expired);
    let line = error_line(&upload(&index, true, true));
    assert!(
        line.contains("expired") && line.contains("run the job again"),
        "{line}"
    );
}

#[test]
fn a_refused_token_request_names_the_audience_and_hides_the_bearer() {
    let index = Index::start(Mint::Grant);
    let dist = tempfile::tempdir().unwrap();
    let wheel = demo_wheel(dist.path());
    let output = Command::new(crosswheel_bin())
        .args(["upload", "--trusted-publishing", "--repository-url"])
        .arg(index.url("/legacy/"))
        .arg(&wheel)
        .env_remove("TWINE_PASSWORD")
        .env(
            "ACTIONS_ID_TOKEN_REQUEST_URL",
            index.url("/actions/token?api-version=2.0"),
        )
        .env("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "a-wrong-5ecret-bearer")
        .output()
        .unwrap();
    let line = error_line(&output);
    assert!(
        line.contains(&format!("audience `{AUDIENCE}`")) && line.contains("401"),
        "{line}"
    );
    assert!(!line.contains("a-wrong-5ecret-bearer"), "{line}");
}

#[test]
fn an_index_without_trusted_publishing_says_so() {
    let index = Index::start(Mint::NotOffered);
    let line = error_line(&upload(&index, true, true));
    assert!(
        line.contains("does not offer Trusted Publishing") && line.contains("404"),
        "{line}"
    );
}
