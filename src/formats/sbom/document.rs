//! The CycloneDX 1.6 JSON document, as much of it as crosswheel writes and reads.
//!
//! Field order is the order of the structs, so one document always serializes to the same
//! bytes. Reading is lenient: every field is optional and unknown fields are ignored, so a
//! build backend's SBOM parses too and `check` judges only what it can verify.

use serde::{Deserialize, Serialize};

pub const BOM_FORMAT: &str = "CycloneDX";
pub const SPEC_VERSION: &str = "1.6";
pub const SHA256: &str = "SHA-256";

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bom {
    #[serde(default)]
    pub bom_format: String,
    #[serde(default)]
    pub spec_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial_number: Option<String>,
    #[serde(default = "first_version")]
    pub version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<Component>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<Dependency>,
}

fn first_version() -> u32 {
    1
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Tools>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<Component>,
}

/// CycloneDX 1.5+ `tools` object; the 1.4 array form is read as no tools.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tools {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<Component>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Component {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(rename = "bom-ref", default, skip_serializing_if = "Option::is_none")]
    pub bom_ref: Option<String>,
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hashes: Vec<Hash>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub licenses: Vec<LicenseChoice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purl: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pedigree: Option<Pedigree>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Evidence>,
}

/// What a component was made from besides its own source (CycloneDX `pedigree`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pedigree {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ancestors: Vec<Component>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

impl Component {
    /// The paths inside the wheel this component was found at.
    pub fn locations(&self) -> impl Iterator<Item = &str> {
        self.evidence
            .iter()
            .flat_map(|evidence| &evidence.occurrences)
            .map(|occurrence| occurrence.location.as_str())
    }

    /// The SHA-256 the document claims, lower-case hex.
    pub fn sha256(&self) -> Option<String> {
        self.hashes
            .iter()
            .find(|hash| hash.alg == SHA256)
            .map(|hash| hash.content.to_ascii_lowercase())
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hash {
    #[serde(default)]
    pub alg: String,
    #[serde(default)]
    pub content: String,
}

/// One entry of `licenses`: a named licence or an SPDX expression.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LicenseChoice {
    License { license: License },
    Expression { expression: String },
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct License {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl LicenseChoice {
    pub fn describe(&self) -> &str {
        match self {
            Self::License { license } => license
                .id
                .as_deref()
                .or(license.name.as_deref())
                .unwrap_or("?"),
            Self::Expression { expression } => expression,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub occurrences: Vec<Occurrence>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Occurrence {
    #[serde(default)]
    pub location: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Dependency {
    #[serde(rename = "ref", default)]
    pub reference: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
}

impl Bom {
    /// Parses a CycloneDX JSON document; anything else (another format, another
    /// `bomFormat`) is an error whose message says what it is instead.
    pub fn parse(bytes: &[u8]) -> Result<Bom, String> {
        let bom: Bom = serde_json::from_slice(bytes).map_err(|err| err.to_string())?;
        if bom.bom_format != BOM_FORMAT {
            return Err(format!(
                "its bomFormat is `{}`, not `{BOM_FORMAT}`",
                bom.bom_format
            ));
        }
        Ok(bom)
    }

    /// Every component: the described one (`metadata.component`) first.
    pub fn all_components(&self) -> impl Iterator<Item = &Component> {
        self.metadata
            .iter()
            .filter_map(|metadata| metadata.component.as_ref())
            .chain(&self.components)
    }

    /// Pretty JSON with a final newline: deterministic, and diffable by people.
    pub fn to_json(&self) -> Vec<u8> {
        let mut bytes =
            serde_json::to_vec_pretty(self).expect("a Bom of strings always serializes");
        bytes.push(b'\n');
        bytes
    }
}
