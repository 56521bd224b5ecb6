//! `crosswheel upload --attestations` and `crosswheel check` with PEP 740 attestations:
//! `<file>.publish.attestation` beside a distribution goes to the index in the upload
//! form's `attestations` field (a JSON array, as twine sends it), a missing one stops the
//! upload in one line, and an attestation whose subject is another file (by name or by
//! SHA-256) fails the check in one line. The index is the local 127.0.0.1 stand-in of
//! publish_trusted.rs.

use crate::common::crosswheel_bin;
use crate::publish_trusted::{Index, Mint, REQUEST_TOKEN, demo_wheel, error_line};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use base64::Engine;
use sha2::Digest;

fn sha256_hex(path: &Path) -> String {
    sha2::Sha256::digest(std::fs::read(path).unwrap())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// An attestation as actions/attest and pypi-attestations write it, with the signed
/// statement's subject set to `name` and `sha256`. The signature is not checked here
/// (the index checks it), so any bytes do.
fn attestation(name: &str, sha256: &str) -> serde_json::Value {
    let statement = serde_json::json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": name, "digest": {"sha256": sha256}}],
        "predicateType": "https://docs.pypi.org/attestations/publish/v1",
        "predicate": null,
    });
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    serde_json::json!({
        "version": 1,
        "verification_material": {"certificate": b64(b"certificate"), "transparency_entries": []},
        "envelope": {"statement": b64(statement.to_string().as_bytes()), "signature": b64(b"signature")},
    })
}

fn write_attestation(wheel: &Path, value: &serde_json::Value) -> PathBuf {
    let path = PathBuf::from(format!("{}.publish.attestation", wheel.display()));
    std::fs::write(&path, value.to_string()).unwrap();
    path
}

fn file_name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

fn run(args: &[&str], files: &[&Path], index: Option<&Index>) -> Output {
    let mut command = Command::new(crosswheel_bin());
    command.args(args);
    if let Some(index) = index {
        command
            .arg("--repository-url")
            .arg(index.url("/legacy/"))
            .env(
                "ACTIONS_ID_TOKEN_REQUEST_URL",
                index.url("/actions/token?api-version=2.0"),
            )
            .env("ACTIONS_ID_TOKEN_REQUEST_TOKEN", REQUEST_TOKEN);
    }
    command
        .args(files)
        .env_remove("TWINE_PASSWORD")
        .env_remove("TWINE_REPOSITORY_URL")
        .output()
        .unwrap()
}

/// The value of one form field in a multipart body.
fn form_field(body: &[u8], name: &str) -> Option<String> {
    let body = String::from_utf8_lossy(body);
    let start = body.find(&format!("name=\"{name}\"\r\n\r\n"))? + name.len() + 10;
    let end = body[start..].find("\r\n--")? + start;
    Some(body[start..end].to_owned())
}

fn succeeded(output: &Output) {
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn the_publish_attestation_goes_to_the_index_beside_its_wheel() {
    let index = Index::start(Mint::Grant);
    let dir = tempfile::tempdir().unwrap();
    let wheel = demo_wheel(dir.path());
    let attested = attestation(&file_name(&wheel), &sha256_hex(&wheel));
    write_attestation(&wheel, &attested);
    let output = run(
        &["upload", "--trusted-publishing", "--attestations"],
        &[&wheel],
        Some(&index),
    );
    succeeded(&output);
    let bodies = index.bodies.lock().unwrap();
    assert_eq!(bodies.len(), 1);
    let field = form_field(&bodies[0], "attestations").expect("no attestations field");
    let sent: serde_json::Value = serde_json::from_str(&field).unwrap();
    assert_eq!(sent, serde_json::json!([attested]));
}

#[test]
fn without_the_flag_no_attestation_is_sent_and_globbed_attestations_are_not_uploaded() {
    let index = Index::start(Mint::Grant);
    let dir = tempfile::tempdir().unwrap();
    let wheel = demo_wheel(dir.path());
    let path = write_attestation(
        &wheel,
        &attestation(&file_name(&wheel), &sha256_hex(&wheel)),
    );
    // `crosswheel upload dist/*` hands over the attestation too.
    let output = run(
        &["upload", "--trusted-publishing"],
        &[&wheel, &path],
        Some(&index),
    );
    succeeded(&output);
    let bodies = index.bodies.lock().unwrap();
    assert_eq!(bodies.len(), 1, "the attestation was uploaded as a file");
    assert_eq!(form_field(&bodies[0], "attestations"), None);
}

#[test]
fn a_missing_publish_attestation_stops_the_upload_in_one_line() {
    let index = Index::start(Mint::Grant);
    let dir = tempfile::tempdir().unwrap();
    let wheel = demo_wheel(dir.path());
    let output = run(
        &["upload", "--trusted-publishing", "--attestations"],
        &[&wheel],
        Some(&index),
    );
    let line = error_line(&output);
    assert!(
        line.contains("no attestation beside it")
            && line.contains(&format!("{}.publish.attestation", file_name(&wheel))),
        "{line}"
    );
    assert!(index.bodies.lock().unwrap().is_empty());
}

#[test]
fn check_passes_an_attestation_of_this_file() {
    let dir = tempfile::tempdir().unwrap();
    let wheel = demo_wheel(dir.path());
    write_attestation(
        &wheel,
        &attestation(&file_name(&wheel), &sha256_hex(&wheel)),
    );
    let output = run(&["check"], &[&wheel], None);
    succeeded(&output);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("attests it: "), "{stdout}");
}

#[test]
fn check_fails_an_attestation_of_other_bytes_or_another_file() {
    let dir = tempfile::tempdir().unwrap();
    let wheel = demo_wheel(dir.path());
    let sha256 = sha256_hex(&wheel);
    let other = "0".repeat(64);
    for (name, digest) in [
        (file_name(&wheel), other.as_str()),
        ("trusted_demo-0.9-py3-none-any.whl".to_owned(), &sha256),
    ] {
        write_attestation(&wheel, &attestation(&name, digest));
        let output = run(&["check"], &[&wheel], None);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{stderr}");
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("error: "))
            .collect();
        assert_eq!(errors.len(), 1, "{stderr}");
        assert!(
            errors[0].contains(&format!("attests {name} with sha256 {digest}"))
                && errors[0].contains(&sha256),
            "{}",
            errors[0]
        );
    }
}

#[test]
fn check_fails_a_file_that_is_not_an_attestation() {
    let dir = tempfile::tempdir().unwrap();
    let wheel = demo_wheel(dir.path());
    write_attestation(&wheel, &serde_json::json!({"version": 1}));
    let line = error_line(&run(&["check"], &[&wheel], None));
    assert!(
        line.contains("not a PEP 740 attestation") && line.contains("envelope.statement"),
        "{line}"
    );
}
