//! Trusted Publishing: trade the CI job's OIDC identity for a short-lived API token.
//!
//! The exchange pypa's publish action makes: the index names the audience it accepts
//! (`GET <index>/_/oidc/audience`), GitHub Actions issues an OIDC token for it
//! (`$ACTIONS_ID_TOKEN_REQUEST_URL&audience=…` with `$ACTIONS_ID_TOKEN_REQUEST_TOKEN` as
//! bearer), and the index mints an upload token for it (`POST <index>/_/oidc/mint-token`).
//! Neither token is ever printed or logged: errors quote what the servers said, with any
//! token in it blanked out.

use serde::Deserialize;

use crate::stages::publish::upload::Credentials;

/// Where GitHub Actions hands out OIDC tokens to a job granted `id-token: write`.
#[derive(Clone, PartialEq, Eq)]
pub struct OidcEndpoint {
    pub url: String,
    pub bearer: String,
}

impl std::fmt::Debug for OidcEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcEndpoint")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl OidcEndpoint {
    pub const URL_VAR: &str = "ACTIONS_ID_TOKEN_REQUEST_URL";
    pub const TOKEN_VAR: &str = "ACTIONS_ID_TOKEN_REQUEST_TOKEN";

    /// The endpoint GitHub Actions announces, when both of its variables are set.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Option<Self> {
        let non_empty = |key: &str| lookup(key).filter(|value| !value.is_empty());
        Some(OidcEndpoint {
            url: non_empty(Self::URL_VAR)?,
            bearer: non_empty(Self::TOKEN_VAR)?,
        })
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TrustedPublishingError {
    #[error(
        "Trusted Publishing needs an OIDC token, but {} is not set: give the job \
         `permissions: id-token: write` (GitHub Actions sets it then), or upload with a token in TWINE_PASSWORD",
        OidcEndpoint::URL_VAR
    )]
    NoIdTokenPermission,
    #[error(
        "{url} does not offer Trusted Publishing ({detail}); upload with a token in TWINE_PASSWORD"
    )]
    NoAudience { url: String, detail: String },
    #[error(
        "GitHub Actions refused an OIDC token for audience `{audience}` ({detail}); check that the job has `permissions: id-token: write`"
    )]
    TokenRefused { audience: String, detail: String },
    #[error(
        "the index does not trust this workflow: {detail}; add this repository, workflow and environment as a Trusted Publisher of the project on the index"
    )]
    NotTrusted { detail: String },
    #[error("the OIDC token expired before the index saw it ({detail}); run the job again")]
    Expired { detail: String },
    #[error("the index refused to mint an upload token at {url}: {detail}")]
    MintRefused { url: String, detail: String },
}

/// `scheme://host[:port]` of the upload URL: the index's own endpoints live at its root.
fn index_root(repository_url: &str) -> &str {
    let after_scheme = repository_url.find("://").map_or(0, |at| at + 3);
    match repository_url[after_scheme..].find('/') {
        Some(slash) => &repository_url[..after_scheme + slash],
        None => repository_url,
    }
}

#[derive(Deserialize)]
struct Audience {
    audience: String,
}

#[derive(Deserialize)]
struct OidcToken {
    value: String,
}

#[derive(Deserialize)]
struct Minted {
    token: String,
}

#[derive(Deserialize, Default)]
struct MintFailure {
    #[serde(default)]
    message: String,
    #[serde(default)]
    errors: Vec<MintFailureReason>,
}

#[derive(Deserialize)]
struct MintFailureReason {
    #[serde(default)]
    code: String,
    #[serde(default)]
    description: String,
}

/// Exchanges the job's identity for upload credentials (`__token__` and the minted token).
pub fn mint_credentials(
    agent: &ureq::Agent,
    repository_url: &str,
    endpoint: Option<&OidcEndpoint>,
) -> Result<Credentials, TrustedPublishingError> {
    let endpoint = endpoint.ok_or(TrustedPublishingError::NoIdTokenPermission)?;
    let root = index_root(repository_url);
    let audience_url = format!("{root}/_/oidc/audience");
    let audience: Audience = get_json(agent, &audience_url, None).map_err(|detail| {
        TrustedPublishingError::NoAudience {
            url: root.to_string(),
            detail,
        }
    })?;
    let separator = if endpoint.url.contains('?') { '&' } else { '?' };
    let token_url = format!(
        "{}{separator}audience={}",
        endpoint.url,
        percent_encode(&audience.audience)
    );
    let redact = |text: String| text.replace(&endpoint.bearer, "***");
    let oidc: OidcToken =
        get_json(agent, &token_url, Some(&endpoint.bearer)).map_err(|detail| {
            TrustedPublishingError::TokenRefused {
                audience: audience.audience.clone(),
                detail: redact(detail),
            }
        })?;
    let mint_url = format!("{root}/_/oidc/mint-token");
    let body = serde_json::json!({ "token": oidc.value }).to_string();
    let redact = |text: &str| redact(text.replace(&oidc.value, "***"));
    let mut response = agent
        .post(&mint_url)
        .header("Content-Type", "application/json")
        .send(body.as_bytes())
        .map_err(|err| TrustedPublishingError::MintRefused {
            url: mint_url.clone(),
            detail: redact(&err.to_string()),
        })?;
    let status = response.status().as_u16();
    let text = read_body(&mut response);
    if (200..300).contains(&status)
        && let Ok(minted) = serde_json::from_str::<Minted>(&text)
    {
        return Ok(Credentials {
            username: "__token__".into(),
            password: minted.token,
        });
    }
    Err(mint_failure(status, &redact(&text), mint_url))
}

/// Sorts the index's refusal (warehouse answers `{"message", "errors": [{code, description}]}`).
fn mint_failure(status: u16, text: &str, url: String) -> TrustedPublishingError {
    let failure: MintFailure = serde_json::from_str(text).unwrap_or_default();
    let detail = match failure.errors.first() {
        Some(reason) => format!("{}: {}", reason.code, one_line(&reason.description)),
        None if !failure.message.is_empty() => one_line(&failure.message),
        None => format!("HTTP {status}: {}", one_line(text)),
    };
    let code = failure
        .errors
        .first()
        .map_or("", |reason| reason.code.as_str());
    let expired = detail.to_ascii_lowercase().contains("expired");
    match code {
        "invalid-publisher" | "invalid-pending-publisher" => {
            TrustedPublishingError::NotTrusted { detail }
        }
        _ if expired => TrustedPublishingError::Expired { detail },
        _ => TrustedPublishingError::MintRefused { url, detail },
    }
}

fn get_json<T: serde::de::DeserializeOwned>(
    agent: &ureq::Agent,
    url: &str,
    bearer: Option<&str>,
) -> Result<T, String> {
    let mut request = agent.get(url).header("Accept", "application/json");
    if let Some(bearer) = bearer {
        request = request.header("Authorization", format!("bearer {bearer}"));
    }
    let mut response = request.call().map_err(|err| err.to_string())?;
    let status = response.status().as_u16();
    let text = read_body(&mut response);
    if !(200..300).contains(&status) {
        return Err(format!("HTTP {status}: {}", one_line(&text)));
    }
    serde_json::from_str(&text).map_err(|err| format!("unexpected answer: {err}"))
}

fn read_body(response: &mut ureq::http::Response<ureq::Body>) -> String {
    response
        .body_mut()
        .with_config()
        .limit(1 << 20)
        .read_to_string()
        .unwrap_or_default()
}

/// The first 200 characters, on one line.
fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|byte| {
            if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
                (byte as char).to_string()
            } else {
                format!("%{byte:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_root_is_the_upload_urls_scheme_and_host() {
        assert_eq!(
            index_root("https://upload.example.org/legacy/"),
            "https://upload.example.org"
        );
        assert_eq!(
            index_root("http://127.0.0.1:8080/legacy/"),
            "http://127.0.0.1:8080"
        );
        assert_eq!(index_root("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
    }

    #[test]
    fn refusals_are_sorted_by_cause() {
        let not_trusted = r#"{"message": "Token request failed", "errors": [{"code": "invalid-publisher",
            "description": "valid token, but no corresponding publisher (All lookup strategies exhausted)"}]}"#;
        assert!(matches!(
            mint_failure(422, not_trusted, "u".into()),
            TrustedPublishingError::NotTrusted { .. }
        ));
        let expired = r#"{"message": "Token request failed", "errors": [{"code": "invalid-token",
            "description": "malformed or invalid token: Signature has expired"}]}"#;
        assert!(matches!(
            mint_failure(422, expired, "u".into()),
            TrustedPublishingError::Expired { .. }
        ));
        let other = mint_failure(503, "<html>down</html>", "u".into());
        assert_eq!(
            other.to_string(),
            "the index refused to mint an upload token at u: HTTP 503: <html>down</html>"
        );
    }

    #[test]
    fn the_endpoint_needs_both_variables_and_hides_its_bearer() {
        let both = |key: &str| Some(format!("value of {key}"));
        let endpoint = OidcEndpoint::from_lookup(both).unwrap();
        assert!(!format!("{endpoint:?}").contains(OidcEndpoint::TOKEN_VAR));
        let url_only = |key: &str| (key == OidcEndpoint::URL_VAR).then(|| "http://x".to_string());
        assert_eq!(OidcEndpoint::from_lookup(url_only), None);
    }
}
