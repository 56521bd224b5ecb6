//! `crosswheel upload`: the index's legacy upload API, a multipart/form-data
//! POST per file (`:action=file_upload`, `protocol_version=1`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use sha2::Digest;

use crate::io_error::IoError;
use crate::stages::publish::attestation::{self, AttestationError, PUBLISH_KIND};
use crate::stages::publish::check::{CheckError, CheckReport, check_distribution};
use crate::stages::publish::trusted::{OidcEndpoint, TrustedPublishingError, mint_credentials};

/// Metadata headers and the upload form fields they become; repeated
/// headers become repeated fields.
const FORM_FIELDS: [(&str, &str); 26] = [
    ("Metadata-Version", "metadata_version"),
    ("Name", "name"),
    ("Version", "version"),
    ("Summary", "summary"),
    ("Home-page", "home_page"),
    ("Author", "author"),
    ("Author-email", "author_email"),
    ("Maintainer", "maintainer"),
    ("Maintainer-email", "maintainer_email"),
    ("License", "license"),
    ("License-Expression", "license_expression"),
    ("License-File", "license_file"),
    ("Keywords", "keywords"),
    ("Platform", "platform"),
    ("Classifier", "classifiers"),
    ("Download-URL", "download_url"),
    ("Supported-Platform", "supported_platform"),
    ("Project-URL", "project_urls"),
    ("Provides-Dist", "provides_dist"),
    ("Obsoletes-Dist", "obsoletes_dist"),
    ("Requires-Dist", "requires_dist"),
    ("Requires-External", "requires_external"),
    ("Requires-Python", "requires_python"),
    ("Provides-Extra", "provides_extras"),
    ("Description-Content-Type", "description_content_type"),
    ("Dynamic", "dynamic"),
];

/// How much of an error body to quote: enough for any index's message.
const MAX_REASON_LEN: usize = 300;

/// Account for HTTP basic authentication; API tokens use the user name `__token__`.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UploadOptions {
    /// The index's legacy upload URL.
    pub repository_url: String,
    pub credentials: Option<Credentials>,
    /// Count "file already exists" answers as skipped instead of failing.
    pub skip_existing: bool,
    /// Upload with a token minted through Trusted Publishing instead of `credentials`.
    pub trusted_publishing: bool,
    /// The CI's OIDC token endpoint, when it announces one.
    pub oidc_endpoint: Option<OidcEndpoint>,
    /// Send each file's PEP 740 attestations (`<file>.publish.attestation` required).
    pub attestations: bool,
}

impl UploadOptions {
    /// Options from the command line, completed from the environment the
    /// conventional way: `TWINE_REPOSITORY_URL` when no URL is given,
    /// `TWINE_USERNAME` and `TWINE_PASSWORD` (user name `__token__` when only
    /// a password, i.e. an API token, is set). Trusted Publishing is used when asked for,
    /// and on a CI job that can get an OIDC token when no password is set.
    pub fn from_env(
        repository_url: Option<String>,
        skip_existing: bool,
        trusted_publishing: bool,
    ) -> Result<Self, UploadError> {
        Self::from_lookup(repository_url, skip_existing, trusted_publishing, |key| {
            std::env::var(key).ok()
        })
    }

    fn from_lookup(
        repository_url: Option<String>,
        skip_existing: bool,
        trusted_publishing: bool,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, UploadError> {
        let non_empty = |key: &str| lookup(key).filter(|value| !value.is_empty());
        let repository_url = repository_url
            .filter(|url| !url.is_empty())
            .or_else(|| non_empty("TWINE_REPOSITORY_URL"))
            .ok_or(UploadError::NoRepositoryUrl)?;
        if !(repository_url.starts_with("https://") || repository_url.starts_with("http://")) {
            return Err(UploadError::BadRepositoryUrl {
                url: repository_url,
            });
        }
        let password = non_empty("TWINE_PASSWORD");
        let oidc_endpoint = OidcEndpoint::from_lookup(&lookup);
        let trusted_publishing =
            trusted_publishing || (password.is_none() && oidc_endpoint.is_some());
        let credentials = password
            .filter(|_| !trusted_publishing)
            .map(|password| Credentials {
                username: non_empty("TWINE_USERNAME").unwrap_or_else(|| "__token__".to_owned()),
                password,
            });
        Ok(Self {
            repository_url,
            credentials,
            skip_existing,
            trusted_publishing,
            oidc_endpoint,
            attestations: false,
        })
    }
}

/// What happened to one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UploadOutcome {
    Uploaded {
        path: PathBuf,
    },
    /// The index already has this file (only with `skip_existing`).
    SkippedExisting {
        path: PathBuf,
        reason: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    #[error(
        "no repository URL: pass --repository-url or set TWINE_REPOSITORY_URL \
         to the index's legacy upload URL"
    )]
    NoRepositoryUrl,

    #[error("repository URL `{url}` is not an http:// or https:// URL")]
    BadRepositoryUrl { url: String },

    #[error("refusing to upload: {0}")]
    Check(#[from] CheckError),

    #[error(transparent)]
    TrustedPublishing(#[from] TrustedPublishingError),

    #[error(transparent)]
    Attestation(#[from] AttestationError),

    #[error(transparent)]
    Io(#[from] crate::io_error::IoError),

    #[error("{}: cannot reach {url}: {source}", path.display())]
    Transport {
        path: PathBuf,
        url: String,
        source: Box<ureq::Error>,
    },

    #[error(
        "{}: {url} redirected to {location}; use the final upload URL as --repository-url",
        path.display()
    )]
    Redirected {
        path: PathBuf,
        url: String,
        location: String,
    },

    #[error("{}: {url} answered {status}: {reason}{}", path.display(), rejection_hint(*status, reason))]
    Rejected {
        path: PathBuf,
        url: String,
        status: u16,
        reason: String,
    },
}

fn rejection_hint(status: u16, reason: &str) -> &'static str {
    if is_already_exists(status, reason) {
        " (the index has this file; pass --skip-existing to skip it)"
    } else if matches!(status, 401 | 403) {
        " (check TWINE_USERNAME and TWINE_PASSWORD; tokens use the user name `__token__`)"
    } else {
        ""
    }
}

/// Checks every file (and, with `attestations`, that each has its publish attestation),
/// then uploads them in order. Attestation files among `files` go with their
/// distribution. Stops at the first failure; files uploaded before it stay uploaded.
pub fn upload(files: &[PathBuf], opts: &UploadOptions) -> Result<Vec<UploadOutcome>, UploadError> {
    let dists = attestation::split_inputs(files)?;
    let reports = dists
        .iter()
        .map(check_distribution)
        .collect::<Result<Vec<_>, _>>()?;
    if opts.attestations {
        for report in &reports {
            let expected = attestation::attestation_path(&report.path, PUBLISH_KIND);
            if !report.attestations.iter().any(|a| a.path == expected) {
                return Err(AttestationError::Missing {
                    dist: report.path.clone(),
                    expected,
                }
                .into());
            }
        }
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_connect(Some(Duration::from_secs(30)))
        .user_agent(concat!("crosswheel/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let minted = if opts.trusted_publishing {
        let credentials =
            mint_credentials(&agent, &opts.repository_url, opts.oidc_endpoint.as_ref())?;
        tracing::info!("minted a short-lived upload token through Trusted Publishing");
        Some(credentials)
    } else {
        None
    };
    let credentials = minted.as_ref().or(opts.credentials.as_ref());
    let mut outcomes = Vec::with_capacity(reports.len());
    for report in &reports {
        let outcome = upload_one(&agent, report, opts, credentials)?;
        match &outcome {
            UploadOutcome::Uploaded { path } => tracing::info!("uploaded {}", path.display()),
            UploadOutcome::SkippedExisting { path, reason } => {
                tracing::info!(
                    "skipped {}: already on the index ({reason})",
                    path.display()
                );
            }
        }
        outcomes.push(outcome);
    }
    Ok(outcomes)
}

fn upload_one(
    agent: &ureq::Agent,
    report: &CheckReport,
    opts: &UploadOptions,
    credentials: Option<&Credentials>,
) -> Result<UploadOutcome, UploadError> {
    let path = &report.path;
    let content = std::fs::read(path).map_err(IoError::at("read", path))?;
    let form = MultipartForm::for_distribution(report, &content, opts.attestations);
    let url = &opts.repository_url;
    let mut request = agent
        .post(url)
        .header("Content-Type", form.content_type())
        .header("Accept", "text/plain, text/html;q=0.9, */*;q=0.1");
    if let Some(credentials) = credentials {
        let pair = format!("{}:{}", credentials.username, credentials.password);
        let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
        request = request.header("Authorization", format!("Basic {encoded}"));
    }
    let mut response = request
        .send(&form.body[..])
        .map_err(|source| UploadError::Transport {
            path: path.clone(),
            url: url.clone(),
            source: Box::new(source),
        })?;
    let status = response.status().as_u16();
    if (200..300).contains(&status) {
        return Ok(UploadOutcome::Uploaded { path: path.clone() });
    }
    if (300..400).contains(&status) {
        let location = response
            .headers()
            .get("location")
            .and_then(|value| value.to_str().ok())
            .unwrap_or("an unnamed location")
            .to_owned();
        return Err(UploadError::Redirected {
            path: path.clone(),
            url: url.clone(),
            location,
        });
    }
    let body = response
        .body_mut()
        .with_config()
        .limit(1 << 20)
        .read_to_string()
        .unwrap_or_default();
    let reason = server_reason(
        &body,
        response.status().canonical_reason().unwrap_or("error"),
    );
    if opts.skip_existing && is_already_exists(status, &reason) {
        return Ok(UploadOutcome::SkippedExisting {
            path: path.clone(),
            reason,
        });
    }
    Err(UploadError::Rejected {
        path: path.clone(),
        url: url.clone(),
        status,
        reason,
    })
}

/// How indexes say the file is already there: 409 Conflict, or 400 with
/// "File already exists" (as the public index answers).
fn is_already_exists(status: u16, reason: &str) -> bool {
    status == 409 || (status == 400 && reason.to_ascii_lowercase().contains("already exist"))
}

/// The server's explanation, on one line: the first informative part of
/// an HTML error page (`<pre>`, `<title>`, `<body>`), or a plain-text body.
fn server_reason(body: &str, fallback: &str) -> String {
    let lower = body.to_ascii_lowercase();
    let sections = ["pre", "title", "body"].into_iter().filter_map(|tag| {
        let start = lower.find(&format!("<{tag}>"))? + tag.len() + 2;
        let end = lower[start..]
            .find(&format!("</{tag}>"))
            .map_or(body.len(), |end| start + end);
        body.get(start..end)
    });
    let is_html = lower.contains("<html");
    let candidates: Vec<&str> = if is_html {
        sections.collect()
    } else {
        vec![body]
    };
    let reason = candidates
        .into_iter()
        .map(html_to_line)
        // pypiserver fills `<pre>` with `None` when it has nothing to say.
        .find(|text| !text.is_empty() && text != "None")
        .unwrap_or_else(|| fallback.to_owned());
    match reason.char_indices().nth(MAX_REASON_LEN) {
        Some((cut, _)) => format!("{}…", &reason[..cut]),
        None => reason,
    }
}

/// Text without tags, common entities decoded, whitespace collapsed.
fn html_to_line(html: &str) -> String {
    let mut text = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                text.push(' ');
            }
            _ if !in_tag => text.push(c),
            _ => {}
        }
    }
    let text = text
        .replace("&#039;", "'")
        .replace("&#39;", "'")
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A multipart/form-data body built in memory (distributions are small
/// enough, and a known length avoids chunked uploads some indexes refuse).
struct MultipartForm {
    boundary: String,
    body: Vec<u8>,
}

impl MultipartForm {
    fn for_distribution(report: &CheckReport, content: &[u8], attestations: bool) -> Self {
        let sha256 = sha2::Sha256::digest(content);
        // Derived from the content, so it cannot occur inside it.
        let boundary = format!("crosswheel-{}", hex(&sha256));
        let mut form = Self {
            boundary,
            body: Vec::with_capacity(content.len() + 16 * 1024),
        };
        form.field(":action", "file_upload");
        form.field("protocol_version", "1");
        form.field("filetype", report.kind.filetype());
        form.field("pyversion", &report.pyversion);
        form.field("sha256_digest", &hex(&sha256));
        for (header, field) in FORM_FIELDS {
            for value in report.metadata.get_all(header) {
                form.field(field, value);
            }
        }
        if let Some(description) = report.metadata.description() {
            form.field("description", description);
        }
        if attestations {
            // twine's form: one field, a JSON array of the attestation objects.
            let all: Vec<&serde_json::Value> =
                report.attestations.iter().map(|a| &a.json).collect();
            form.field(
                "attestations",
                &serde_json::to_string(&all).unwrap_or_default(),
            );
        }
        let file_name = file_name(&report.path);
        form.file("content", &file_name, content);
        form.body
            .extend_from_slice(format!("--{}--\r\n", form.boundary).as_bytes());
        form
    }

    fn content_type(&self) -> String {
        format!("multipart/form-data; boundary={}", self.boundary)
    }

    fn field(&mut self, name: &str, value: &str) {
        let header = format!(
            "--{}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n",
            self.boundary
        );
        self.body.extend_from_slice(header.as_bytes());
        self.body.extend_from_slice(value.as_bytes());
        self.body.extend_from_slice(b"\r\n");
    }

    fn file(&mut self, name: &str, file_name: &str, content: &[u8]) {
        let header = format!(
            "--{}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{}\"\r\n\
             Content-Type: application/octet-stream\r\n\r\n",
            self.boundary,
            file_name.replace(['"', '\r', '\n'], "_")
        );
        self.body.extend_from_slice(header.as_bytes());
        self.body.extend_from_slice(content);
        self.body.extend_from_slice(b"\r\n");
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |key| {
            pairs
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn command_line_url_wins_over_environment() {
        let options = UploadOptions::from_lookup(
            Some("http://127.0.0.1:1/".into()),
            false,
            false,
            env(&[("TWINE_REPOSITORY_URL", "http://other/")]),
        )
        .unwrap();
        assert_eq!(options.repository_url, "http://127.0.0.1:1/");
        assert_eq!(options.credentials, None);
    }

    #[test]
    fn token_alone_authenticates_as_token_user() {
        let options = UploadOptions::from_lookup(
            None,
            true,
            false,
            env(&[
                ("TWINE_REPOSITORY_URL", "https://index/legacy/"),
                ("TWINE_PASSWORD", "tok"),
            ]),
        )
        .unwrap();
        let credentials = options.credentials.unwrap();
        assert_eq!(
            (credentials.username.as_str(), credentials.password.as_str()),
            ("__token__", "tok")
        );
        assert!(options.skip_existing);
    }

    #[test]
    fn requires_a_repository_url() {
        let error = UploadOptions::from_lookup(None, false, false, env(&[])).unwrap_err();
        assert!(matches!(error, UploadError::NoRepositoryUrl), "{error}");
        let error =
            UploadOptions::from_lookup(Some("ftp://x".into()), false, false, env(&[])).unwrap_err();
        assert!(
            matches!(error, UploadError::BadRepositoryUrl { .. }),
            "{error}"
        );
    }

    #[test]
    fn an_oidc_endpoint_without_a_password_means_trusted_publishing() {
        let actions: &'static [(&str, &str)] = &[
            ("TWINE_REPOSITORY_URL", "https://index/legacy/"),
            (
                "ACTIONS_ID_TOKEN_REQUEST_URL",
                "https://actions/token?api-version=2.0",
            ),
            ("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "bearer"),
        ];
        let options = UploadOptions::from_lookup(None, false, false, env(actions)).unwrap();
        assert!(options.trusted_publishing);
        let with_password: &'static [(&str, &str)] = &[
            ("TWINE_REPOSITORY_URL", "https://index/legacy/"),
            ("TWINE_PASSWORD", "tok"),
            ("ACTIONS_ID_TOKEN_REQUEST_URL", "https://actions/token"),
            ("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "bearer"),
        ];
        let options = UploadOptions::from_lookup(None, false, false, env(with_password)).unwrap();
        assert!(!options.trusted_publishing && options.credentials.is_some());
        // Asked for, it wins over the password.
        let options = UploadOptions::from_lookup(None, false, true, env(with_password)).unwrap();
        assert!(options.trusted_publishing && options.credentials.is_none());
    }

    #[test]
    fn credentials_debug_output_hides_the_password() {
        let credentials = Credentials {
            username: "u".into(),
            password: "secret".into(),
        };
        assert!(!format!("{credentials:?}").contains("secret"));
    }

    #[test]
    fn extracts_reason_from_html_error_pages() {
        let bottle = "<html><head><title>Error: 409 Conflict</title></head><body>\
            <h1>Error: 409 Conflict</h1><p>Sorry:</p><pre>Package &#039;demo-1.0.whl&#039; already exists!\n</pre></body></html>";
        assert_eq!(
            server_reason(bottle, "Conflict"),
            "Package 'demo-1.0.whl' already exists!"
        );
        let plain = "400 File already exists ('demo-1.0.whl', with blake2_256 hash 'x').\n";
        assert_eq!(server_reason(plain, "Bad Request"), plain.trim());
        assert_eq!(server_reason("", "Forbidden"), "Forbidden");
        let nothing_to_say = "<html><head><title>Error: 403 Forbidden</title></head><body><pre>None</pre></body></html>";
        assert_eq!(
            server_reason(nothing_to_say, "Forbidden"),
            "Error: 403 Forbidden"
        );
    }

    #[test]
    fn recognizes_already_exists_answers() {
        assert!(is_already_exists(409, "anything"));
        assert!(is_already_exists(
            400,
            "File already exists ('demo-1.0.whl')"
        ));
        assert!(!is_already_exists(400, "Invalid distribution file"));
        assert!(!is_already_exists(403, "already exists"));
    }
}
