use super::*;

fn openblas_facts() -> Facts {
    Facts {
        wheel: Package {
            name: "Demo_Pkg".into(),
            version: "1.0".into(),
        },
        vendored: vec![
            VendoredFile {
                path: "demo.libs/libscipy_openblas-1a2b3c4d.so".into(),
                name: "libscipy_openblas.so".into(),
                name_version: None,
                sha256: "aa".repeat(32),
                source: Source::Python(Package {
                    name: "scipy_openblas32".into(),
                    version: "0.3.31.188.0".into(),
                }),
                licence: Some(Licence::Expression("BSD-3-Clause".into())),
            },
            VendoredFile {
                path: "demo.libs/libgfortran-5e6f7a8b.so.5".into(),
                name: "libgfortran.so.5".into(),
                name_version: Some("5".into()),
                sha256: "bb".repeat(32),
                source: Source::Debian {
                    package: "libgfortran5".into(),
                    version: "12.2.0-14+deb12u1".into(),
                    arch: "arm64".into(),
                },
                licence: None,
            },
        ],
        needs: vec![
            (
                "demo/_blas.so".into(),
                "demo.libs/libscipy_openblas-1a2b3c4d.so".into(),
            ),
            (
                "demo.libs/libscipy_openblas-1a2b3c4d.so".into(),
                "demo.libs/libgfortran-5e6f7a8b.so.5".into(),
            ),
        ],
        built_with: Vec::new(),
        epoch: Some(1_700_000_000),
    }
}

#[test]
fn the_wheel_is_the_described_component_and_each_vendored_file_a_library() {
    let bom = openblas_facts().to_bom();
    let root = bom.metadata.as_ref().unwrap().component.as_ref().unwrap();
    assert_eq!(root.purl.as_deref(), Some("pkg:pypi/demo-pkg@1.0"));
    let purls: Vec<&str> = bom
        .components
        .iter()
        .filter_map(|c| c.purl.as_deref())
        .collect();
    assert_eq!(
        purls,
        [
            "pkg:deb/debian/libgfortran5@12.2.0-14%2Bdeb12u1?arch=arm64",
            "pkg:pypi/scipy-openblas32@0.3.31.188.0",
        ]
    );
    let openblas = &bom.components[1];
    assert_eq!(openblas.version.as_deref(), Some("0.3.31.188.0"));
    assert_eq!(openblas.sha256(), Some("aa".repeat(32)));
    assert_eq!(
        openblas.locations().collect::<Vec<_>>(),
        ["demo.libs/libscipy_openblas-1a2b3c4d.so"]
    );
    assert_eq!(openblas.licenses[0].describe(), "BSD-3-Clause");
    // The extension is a file component, so the edge extension → OpenBLAS has two ends.
    assert_eq!(bom.components[2].kind, "file");
    assert_eq!(bom.components[2].name, "demo/_blas.so");
}

#[test]
fn the_dependencies_say_who_loads_what() {
    let bom = openblas_facts().to_bom();
    let edges: Vec<(&str, Vec<&str>)> = bom
        .dependencies
        .iter()
        .map(|d| {
            (
                d.reference.as_str(),
                d.depends_on.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        edges,
        [
            ("pkg:pypi/demo-pkg@1.0", vec!["demo/_blas.so"]),
            (
                "demo/_blas.so",
                vec!["demo.libs/libscipy_openblas-1a2b3c4d.so"]
            ),
            ("demo.libs/libgfortran-5e6f7a8b.so.5", vec![]),
            (
                "demo.libs/libscipy_openblas-1a2b3c4d.so",
                vec!["demo.libs/libgfortran-5e6f7a8b.so.5"]
            ),
        ]
    );
}

#[test]
fn packages_built_with_are_components_the_wheel_depends_on_without_files() {
    let facts = Facts {
        vendored: Vec::new(),
        needs: Vec::new(),
        built_with: vec![
            Package {
                name: "nvidia-cuda-runtime".into(),
                version: "13.5.37".into(),
            },
            Package {
                name: "nvidia-cuda-cccl".into(),
                version: "13.3.5.0.6".into(),
            },
        ],
        ..openblas_facts()
    };
    let bom = facts.to_bom();
    let purls: Vec<&str> = bom
        .components
        .iter()
        .filter_map(|c| c.purl.as_deref())
        .collect();
    assert_eq!(
        purls,
        [
            "pkg:pypi/nvidia-cuda-cccl@13.3.5.0.6",
            "pkg:pypi/nvidia-cuda-runtime@13.5.37"
        ]
    );
    assert!(
        bom.components
            .iter()
            .all(|c| c.locations().next().is_none())
    );
    assert_eq!(
        bom.dependencies[0].depends_on,
        [
            "pkg:pypi/nvidia-cuda-cccl@13.3.5.0.6",
            "pkg:pypi/nvidia-cuda-runtime@13.5.37"
        ]
    );
}

#[test]
fn a_library_of_unknown_origin_is_a_generic_package_named_after_itself() {
    let mut facts = openblas_facts();
    facts.vendored[1].source = Source::Unknown;
    let bom = facts.to_bom();
    assert_eq!(
        bom.components[0].purl.as_deref(),
        Some("pkg:generic/libgfortran@5")
    );
    let mut dylib = facts.vendored[1].clone();
    dylib.name = "libgfortran.5.dylib".into();
    assert_eq!(dylib.purl(), "pkg:generic/libgfortran@5");
}

#[test]
fn the_same_facts_give_the_same_bytes_and_other_facts_another_serial_number() {
    let one = openblas_facts().to_bom();
    assert_eq!(one.to_json(), openblas_facts().to_bom().to_json());
    let serial = one.serial_number.clone().unwrap();
    assert!(serial.starts_with("urn:uuid:"), "{serial}");
    // Version 5, RFC 4122 variant: what the CycloneDX schema's pattern accepts.
    assert_eq!(&serial[23..24], "5");
    assert!(matches!(&serial[28..29], "8" | "9" | "a" | "b"), "{serial}");
    let mut other = openblas_facts();
    other.vendored[0].sha256 = "cc".repeat(32);
    assert_ne!(other.to_bom().serial_number.unwrap(), serial);
    let timestamp = one.metadata.unwrap().timestamp;
    assert_eq!(timestamp.as_deref(), Some("2023-11-14T22:13:20Z"));
}

#[test]
fn a_written_document_reads_back_unchanged() {
    let bom = openblas_facts().to_bom();
    assert_eq!(Bom::parse(&bom.to_json()).unwrap(), bom);
    assert!(
        Bom::parse(br#"{"spdxVersion": "SPDX-2.3"}"#)
            .unwrap_err()
            .contains("bomFormat")
    );
}

#[test]
fn versions_come_from_library_names() {
    assert_eq!(version_in_name("libgfortran.so.5").as_deref(), Some("5"));
    assert_eq!(version_in_name("libz.so.1.2.13").as_deref(), Some("1.2.13"));
    assert_eq!(version_in_name("libgfortran.5.dylib").as_deref(), Some("5"));
    assert_eq!(version_in_name("libscipy_openblas.so"), None);
    assert_eq!(version_in_name("libscipy_openblas.dylib"), None);
}

fn wheel_files() -> Vec<(&'static str, String)> {
    vec![
        ("demo/_blas.so", "ee".repeat(32)),
        ("demo.libs/libscipy_openblas-1a2b3c4d.so", "aa".repeat(32)),
        ("demo.libs/libgfortran-5e6f7a8b.so.5", "bb".repeat(32)),
    ]
}

fn check(sbom: &[u8], files: &[(&str, String)]) -> Result<(), SbomError> {
    let names: Vec<&str> = files.iter().map(|(name, _)| *name).collect();
    verify(
        &[(
            "demo-1.0.dist-info/sboms/crosswheel.cdx.json".into(),
            sbom.to_vec(),
        )],
        &names,
        |name| {
            files
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, hash)| hash.clone())
                .ok_or_else(|| "absent".to_string())
        },
    )
}

#[test]
fn a_true_sbom_passes() {
    check(&openblas_facts().to_bom().to_json(), &wheel_files()).unwrap();
}

#[test]
fn a_wrong_hash_fails_naming_the_file() {
    let mut files = wheel_files();
    files[2].1 = "00".repeat(32);
    let err = check(&openblas_facts().to_bom().to_json(), &files).unwrap_err();
    assert!(
        matches!(&err, SbomError::WrongHash { file, .. } if file == "demo.libs/libgfortran-5e6f7a8b.so.5"),
        "{err}"
    );
}

#[test]
fn a_vendored_file_the_sbom_leaves_out_fails() {
    let mut files = wheel_files();
    files.push(("demo.libs/libquadmath-01234567.so.0", "dd".repeat(32)));
    let err = check(&openblas_facts().to_bom().to_json(), &files).unwrap_err();
    assert_eq!(
        err,
        SbomError::Unlisted {
            sbom: "demo-1.0.dist-info/sboms/crosswheel.cdx.json".into(),
            file: "demo.libs/libquadmath-01234567.so.0".into(),
        }
    );
    let err = check(&openblas_facts().to_bom().to_json(), &wheel_files()[..2]).unwrap_err();
    assert!(matches!(err, SbomError::NotInWheel { .. }), "{err}");
}

#[test]
fn an_sbom_that_locates_nothing_only_has_to_parse() {
    let auditwheel_style = br#"{"bomFormat": "CycloneDX", "specVersion": "1.4", "version": 1,
        "components": [{"type": "library", "name": "libgfortran5", "purl": "pkg:deb/debian/libgfortran5"}]}"#;
    check(auditwheel_style, &wheel_files()).unwrap();
    let err = check(b"not json", &wheel_files()).unwrap_err();
    assert!(matches!(err, SbomError::Unreadable { .. }), "{err}");
}

#[test]
fn vendored_paths_are_auditwheel_and_delocate_folders() {
    assert!(is_vendored_path("demo.libs/libz-12345678.so.1"));
    assert!(is_vendored_path("demo/.dylibs/libgfortran.5.dylib"));
    assert!(is_vendored_path("demo.dylibs/libx.dylib"));
    assert!(!is_vendored_path("demo/_blas.so"));
    assert!(!is_vendored_path("demo.libs/"));
    assert!(!is_vendored_path("demo/sub.libs/x.so"));
    assert!(is_sbom_path(
        "demo-1.0.dist-info",
        "demo-1.0.dist-info/sboms/x.cdx.json"
    ));
    assert!(!is_sbom_path(
        "demo-1.0.dist-info",
        "demo-1.0.dist-info/sboms/x.spdx.json"
    ));
}
