//! The `inspect` section for a wheel's PEP 770 SBOMs: what each says the wheel contains.

use serde::Serialize;

use crate::formats::sbom::{Bom, Component, is_sbom_path};
use crate::formats::wheel::WheelArchive;

#[derive(Debug, Serialize)]
pub struct SbomReport {
    /// The SBOM's path inside the wheel.
    pub path: String,
    /// What the document says it describes (its `metadata.component`).
    pub describes: Option<ComponentReport>,
    pub components: Vec<ComponentReport>,
    /// Why the document could not be read, for one that cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct ComponentReport {
    pub name: String,
    pub version: Option<String>,
    pub purl: Option<String>,
    /// Paths inside the wheel the component was found at.
    pub locations: Vec<String>,
    pub sha256: Option<String>,
    pub licences: Vec<String>,
}

impl ComponentReport {
    fn of(component: &Component) -> Self {
        ComponentReport {
            name: component.name.clone(),
            version: component.version.clone(),
            purl: component.purl.clone(),
            locations: component.locations().map(str::to_string).collect(),
            sha256: component.sha256(),
            licences: component
                .licenses
                .iter()
                .map(|licence| licence.describe().to_string())
                .collect(),
        }
    }
}

/// Every CycloneDX SBOM under the wheel's `.dist-info/sboms/`, in entry order.
pub fn inspect(wheel: &WheelArchive) -> Vec<SbomReport> {
    let dist_info = wheel.dist_info_dir();
    wheel
        .entries()
        .iter()
        .filter(|entry| is_sbom_path(dist_info, &entry.name))
        .map(|entry| {
            let parsed = wheel
                .read(&entry.name)
                .map_err(|err| err.to_string())
                .and_then(|bytes| Bom::parse(&bytes));
            match parsed {
                Ok(bom) => SbomReport {
                    path: entry.name.clone(),
                    describes: bom
                        .metadata
                        .as_ref()
                        .and_then(|metadata| metadata.component.as_ref())
                        .map(ComponentReport::of),
                    components: bom.components.iter().map(ComponentReport::of).collect(),
                    problem: None,
                },
                Err(problem) => SbomReport {
                    path: entry.name.clone(),
                    describes: None,
                    components: Vec::new(),
                    problem: Some(problem),
                },
            }
        })
        .collect()
}

pub fn render(reports: &[SbomReport]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for report in reports {
        let _ = writeln!(out, "\nSBOM {}", report.path);
        if let Some(problem) = &report.problem {
            let _ = writeln!(out, "  unreadable: {problem}");
        }
        for component in &report.components {
            let _ = write!(out, "  {}", component.name);
            if let Some(version) = &component.version {
                let _ = write!(out, " {version}");
            }
            if let Some(purl) = &component.purl {
                let _ = write!(out, " ({purl})");
            }
            let _ = writeln!(out);
            for location in &component.locations {
                let _ = writeln!(out, "    at {location}");
            }
            if let Some(sha256) = &component.sha256 {
                let _ = writeln!(out, "    sha256 {sha256}");
            }
            if !component.licences.is_empty() {
                let _ = writeln!(out, "    licence {}", component.licences.join(", "));
            }
        }
    }
    out
}
