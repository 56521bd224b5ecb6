//! PEP 770 software bills of materials: the CycloneDX 1.6 document a repair writes into
//! `<dist>.dist-info/sboms/` for the files it vendored, and the reading that `inspect` and
//! `check` share.
//!
//! This module knows nothing of ELF or Mach-O: the repair hands it plain facts (which file
//! went where, its bytes' hash, where it came from, who needs it) and gets a document back.

pub mod document;
mod time;
mod verify;

pub use document::{Bom, Component, Dependency, LicenseChoice};
pub use verify::{SbomError, is_sbom_path, is_vendored_path, verify};

use document::{Evidence, Hash, License, Metadata, Occurrence, Pedigree, Tools};

/// The file name crosswheel gives its SBOM inside `<dist>.dist-info/sboms/`.
pub const FILE_STEM: &str = "crosswheel";

/// A distribution on the package index: the wheel being described, or the wheel a
/// vendored library was taken from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Package {
    pub name: String,
    pub version: String,
}

/// Where a vendored file came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A Debian package (a target tree whose manifest lists the file).
    Debian {
        package: String,
        version: String,
        arch: String,
    },
    /// A wheel installed or unpacked on the build machine.
    Python(Package),
    /// A library crosswheel built for the target from a Debian source package's orig
    /// tarball (`target-libraries`).
    DebianSource {
        /// The library's upstream version (`3.4.4`).
        version: String,
        package: String,
        debian_version: String,
        /// SHA-256 of the orig tarball it was built from.
        sha256: String,
        /// Sdists from the package index whose parts the build added to that source
        /// (OpenBLAS's C LAPACK): the SBOM's pedigree of the component.
        also_from: Vec<IndexSdist>,
        /// What the build chose that the source does not say (which LAPACK OpenBLAS
        /// has): the pedigree's notes.
        notes: Option<String>,
    },
    /// Nothing records it: named after the library itself.
    Unknown,
}

/// An sdist from the package index part of a library was built from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexSdist {
    pub package: Package,
    /// SHA-256 of the sdist.
    pub sha256: String,
    /// SPDX expression.
    pub licence: String,
}

/// A licence as its source states it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Licence {
    /// An SPDX expression (PEP 639 `License-Expression`).
    Expression(String),
    /// Free text (the older `License` field).
    Name(String),
}

/// One file the repair put into the wheel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VendoredFile {
    /// Its path inside the wheel.
    pub path: String,
    /// The library's own name: its SONAME or install name's file name (`libgfortran.so.5`).
    pub name: String,
    /// The version its name carries (`5` for `libgfortran.so.5`), used when its source
    /// has none.
    pub name_version: Option<String>,
    /// SHA-256 of the bytes as written into the wheel, lower-case hex.
    pub sha256: String,
    pub source: Source,
    pub licence: Option<Licence>,
}

/// What an SBOM describes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Facts {
    pub wheel: Package,
    pub vendored: Vec<VendoredFile>,
    /// `(a, b)`: the wheel file `a` (an extension or a vendored library) loads `b`, a
    /// vendored library. Both are paths inside the wheel.
    pub needs: Vec<(String, String)>,
    /// Packages the wheel's binaries were compiled against and hold code of without a
    /// file of theirs in the wheel (a CUDA runtime linked statically, its headers'
    /// inline code): the root depends on each.
    pub built_with: Vec<Package>,
    /// Seconds since the epoch for the document's timestamp; without it the document has
    /// none, so it depends on its inputs only.
    pub epoch: Option<u64>,
}

/// The version a library's file name carries: `5` for `libgfortran.so.5` and for
/// `libgfortran.5.dylib`; `None` for `libscipy_openblas.so`.
pub fn version_in_name(name: &str) -> Option<String> {
    let version = match name.split_once(".so.") {
        Some((_, version)) => version,
        None => name.strip_suffix(".dylib")?.split_once('.')?.1,
    };
    version
        .starts_with(|c: char| c.is_ascii_digit())
        .then(|| version.to_string())
}

/// `pkg:pypi/<name>@<version>` with the name normalized as the index does.
pub fn pypi_purl(package: &Package) -> String {
    format!(
        "pkg:pypi/{}@{}",
        crate::package_name::normalize(&package.name),
        encode(&package.version)
    )
}

/// Percent-encodes what a purl segment cannot carry (`+` in Debian versions, `:` epochs).
fn encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'-' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

impl VendoredFile {
    /// The name without its `.so…`/`.dylib` suffix: `libgfortran`.
    fn stem(&self) -> &str {
        let name = self.name.as_str();
        let end = [".so", ".dylib"]
            .iter()
            .filter_map(|suffix| name.find(suffix))
            .min()
            .unwrap_or(name.len());
        // `libgfortran.5.dylib`: the version sits before the suffix.
        let stem = &name[..end];
        match &self.name_version {
            Some(version) => stem
                .strip_suffix(version.as_str())
                .and_then(|s| s.strip_suffix('.'))
                .unwrap_or(stem),
            None => stem,
        }
    }

    fn version(&self) -> Option<&str> {
        match &self.source {
            Source::Debian { version, .. } => Some(version),
            Source::Python(package) => Some(&package.version),
            Source::DebianSource { version, .. } => Some(version),
            Source::Unknown => self.name_version.as_deref(),
        }
    }

    fn purl(&self) -> String {
        match &self.source {
            Source::Debian {
                package,
                version,
                arch,
            } => format!(
                "pkg:deb/debian/{}@{}?arch={}",
                encode(package),
                encode(version),
                encode(arch)
            ),
            Source::Python(package) => pypi_purl(package),
            Source::DebianSource {
                package,
                debian_version,
                sha256,
                ..
            } => format!(
                "pkg:deb/debian/{}@{}?arch=source&checksum=sha256:{}",
                encode(package),
                encode(debian_version),
                encode(sha256)
            ),
            Source::Unknown => match &self.name_version {
                Some(version) => {
                    format!("pkg:generic/{}@{}", encode(self.stem()), encode(version))
                }
                None => format!("pkg:generic/{}", encode(self.stem())),
            },
        }
    }

    fn component(&self) -> Component {
        Component {
            kind: "library".into(),
            bom_ref: Some(self.path.clone()),
            name: self.name.clone(),
            version: self.version().map(str::to_string),
            hashes: vec![Hash {
                alg: document::SHA256.into(),
                content: self.sha256.clone(),
            }],
            licenses: self.licence.iter().map(licence_choice).collect(),
            purl: Some(self.purl()),
            pedigree: self.pedigree(),
            evidence: Some(Evidence {
                occurrences: vec![Occurrence {
                    location: self.path.clone(),
                }],
            }),
        }
    }
}

impl VendoredFile {
    /// The sdists besides its Debian source that a library was built from, as CycloneDX
    /// ancestors; `None` for everything else.
    fn pedigree(&self) -> Option<Pedigree> {
        let Source::DebianSource {
            also_from, notes, ..
        } = &self.source
        else {
            return None;
        };
        (!also_from.is_empty() || notes.is_some()).then(|| Pedigree {
            notes: notes.clone(),
            ancestors: also_from
                .iter()
                .map(|sdist| Component {
                    kind: "library".into(),
                    name: sdist.package.name.clone(),
                    version: Some(sdist.package.version.clone()),
                    hashes: vec![Hash {
                        alg: document::SHA256.into(),
                        content: sdist.sha256.clone(),
                    }],
                    licenses: vec![licence_choice(&Licence::Expression(sdist.licence.clone()))],
                    purl: Some(pypi_purl(&sdist.package)),
                    ..Component::default()
                })
                .collect(),
        })
    }
}

fn licence_choice(licence: &Licence) -> LicenseChoice {
    match licence {
        Licence::Expression(expression) => LicenseChoice::Expression {
            expression: expression.clone(),
        },
        Licence::Name(name) => LicenseChoice::License {
            license: License {
                id: None,
                name: Some(name.clone()),
            },
        },
    }
}

/// A wheel file that loads vendored libraries, for the dependency edges.
fn file_component(path: &str) -> Component {
    Component {
        kind: "file".into(),
        bom_ref: Some(path.to_string()),
        name: path.to_string(),
        evidence: Some(Evidence {
            occurrences: vec![Occurrence {
                location: path.to_string(),
            }],
        }),
        ..Component::default()
    }
}

impl Facts {
    /// The document: the wheel as the described component, one `library` per vendored
    /// file, one `file` per other wheel file that loads one, and the edges between them.
    /// Its serial number is derived from its contents.
    pub fn to_bom(&self) -> Bom {
        let root_ref = pypi_purl(&self.wheel);
        let root = Component {
            kind: "library".into(),
            bom_ref: Some(root_ref.clone()),
            name: self.wheel.name.clone(),
            version: Some(self.wheel.version.clone()),
            purl: Some(root_ref.clone()),
            ..Component::default()
        };
        let mut vendored: Vec<&VendoredFile> = self.vendored.iter().collect();
        vendored.sort_by(|a, b| a.path.cmp(&b.path));
        let is_vendored = |path: &str| vendored.iter().any(|file| file.path == path);
        let mut needs = self.needs.clone();
        needs.sort();
        needs.dedup();
        let mut loaders: Vec<&str> = needs
            .iter()
            .map(|(from, _)| from.as_str())
            .filter(|from| !is_vendored(from))
            .collect();
        loaders.dedup();

        let mut components: Vec<Component> = vendored.iter().map(|file| file.component()).collect();
        components.extend(loaders.iter().copied().map(file_component));
        let mut built_with: Vec<&Package> = self.built_with.iter().collect();
        built_with.sort_by(|a, b| (&a.name, &a.version).cmp(&(&b.name, &b.version)));
        built_with.dedup();
        let built_with_refs: Vec<String> = built_with
            .iter()
            .map(|package| pypi_purl(package))
            .collect();
        components.extend(
            built_with
                .iter()
                .zip(&built_with_refs)
                .map(|(package, purl)| Component {
                    kind: "library".into(),
                    bom_ref: Some(purl.clone()),
                    name: package.name.clone(),
                    version: Some(package.version.clone()),
                    purl: Some(purl.clone()),
                    ..Component::default()
                }),
        );
        let depends_on = |from: &str| -> Vec<String> {
            needs
                .iter()
                .filter(|(a, _)| a == from)
                .map(|(_, b)| b.clone())
                .collect()
        };
        let mut dependencies = vec![Dependency {
            reference: root_ref,
            depends_on: loaders
                .iter()
                .map(|path| path.to_string())
                .chain(built_with_refs.iter().cloned())
                .collect(),
        }];
        dependencies.extend(built_with_refs.iter().map(|purl| Dependency {
            reference: purl.clone(),
            depends_on: Vec::new(),
        }));
        dependencies.extend(
            loaders
                .iter()
                .copied()
                .chain(vendored.iter().map(|file| file.path.as_str()))
                .map(|path| Dependency {
                    reference: path.to_string(),
                    depends_on: depends_on(path),
                }),
        );
        let mut bom = Bom {
            bom_format: document::BOM_FORMAT.into(),
            spec_version: document::SPEC_VERSION.into(),
            serial_number: None,
            version: 1,
            metadata: Some(Metadata {
                timestamp: self.epoch.map(time::rfc3339),
                tools: Some(Tools {
                    components: vec![Component {
                        kind: "application".into(),
                        name: "crosswheel".into(),
                        version: Some(env!("CARGO_PKG_VERSION").into()),
                        ..Component::default()
                    }],
                }),
                component: Some(root),
            }),
            components,
            dependencies,
        };
        bom.serial_number = Some(content_serial_number(&bom.to_json()));
        bom
    }
}

/// `urn:uuid:` + the UUIDv5 of the document's own bytes: the same content always gets the
/// same number, and different content a different one (CycloneDX only asks for a UUID).
pub fn content_serial_number(content: &[u8]) -> String {
    use sha1::{Digest, Sha1};
    // RFC 4122's URL namespace: the name is a URN of the content's SHA-256.
    const NAMESPACE_URL: [u8; 16] = [
        0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30,
        0xc8,
    ];
    let content_hash = <sha2::Sha256 as sha2::Digest>::digest(content);
    let hex: String = content_hash.iter().map(|b| format!("{b:02x}")).collect();
    let mut hasher = Sha1::new();
    hasher.update(NAMESPACE_URL);
    hasher.update(format!("urn:sha256:{hex}").as_bytes());
    let digest = hasher.finalize();
    let mut uuid = [0u8; 16];
    uuid.copy_from_slice(&digest[..16]);
    uuid[6] = (uuid[6] & 0x0f) | 0x50;
    uuid[8] = (uuid[8] & 0x3f) | 0x80;
    let hex: String = uuid.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "urn:uuid:{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests;
