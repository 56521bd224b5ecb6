//! Build identifiers in cibuildwheel's form (`cp311-manylinux_aarch64`,
//! `cp311-musllinux_x86_64`, `cp311-macosx_arm64`): one per CPython version and target (from [`crate::target`]).

pub use crate::python_tag::PythonTag;
pub use crate::target::{Platform, TargetData, targets};

/// `cp311-manylinux_aarch64`.
pub fn identifier(python: PythonTag, target: &TargetData) -> String {
    format!("{python}-{}", target.identifier_platform())
}

/// Splits an identifier back into its CPython version and target.
pub fn parse_identifier(identifier: &str) -> Result<(PythonTag, &'static TargetData), String> {
    let (python, platform) = identifier.split_once('-').ok_or_else(|| {
        format!("`{identifier}` is not a build identifier such as `cp311-manylinux_aarch64`")
    })?;
    let python = PythonTag::parse(python)?;
    let target = targets()
        .iter()
        .find(|target| target.identifier_platform() == platform)
        .ok_or_else(|| {
            let known: Vec<String> = targets()
                .iter()
                .map(TargetData::identifier_platform)
                .collect();
            format!(
                "`{identifier}` names no crosswheel target: the platform part must be one of {}",
                known.join(", ")
            )
        })?;
    Ok((python, target))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_targets_parse() {
        let ids: Vec<&str> = targets().iter().map(|t| t.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "linux-aarch64",
                "linux-ppc64le",
                "linux-x86_64",
                "linux-s390x",
                "linux-i686",
                "linux-armv7l",
                "linux-riscv64",
                "musllinux-x86_64",
                "musllinux-aarch64",
                "musllinux-ppc64le",
                "musllinux-s390x",
                "musllinux-i686",
                "musllinux-armv7l",
                "musllinux-riscv64",
                "macos-arm64",
                "macos-x86_64",
                "macos-universal2"
            ]
        );
    }

    #[test]
    fn identifiers_follow_cibuildwheel_naming() {
        let python = PythonTag::parse("cp311").unwrap();
        let names: Vec<String> = targets().iter().map(|t| identifier(python, t)).collect();
        assert_eq!(
            names,
            [
                "cp311-manylinux_aarch64",
                "cp311-manylinux_ppc64le",
                "cp311-manylinux_x86_64",
                "cp311-manylinux_s390x",
                "cp311-manylinux_i686",
                "cp311-manylinux_armv7l",
                "cp311-manylinux_riscv64",
                "cp311-musllinux_x86_64",
                "cp311-musllinux_aarch64",
                "cp311-musllinux_ppc64le",
                "cp311-musllinux_s390x",
                "cp311-musllinux_i686",
                "cp311-musllinux_armv7l",
                "cp311-musllinux_riscv64",
                "cp311-macosx_arm64",
                "cp311-macosx_x86_64",
                "cp311-macosx_universal2"
            ]
        );
    }

    #[test]
    fn identifier_round_trips() {
        let (python, target) = parse_identifier("cp39-macosx_arm64").unwrap();
        assert_eq!(python.version(), "3.9");
        assert_eq!(target.id, "macos-arm64");
        assert_eq!(
            parse_identifier("cp311-manylinux_x86_64").unwrap().1.id,
            "linux-x86_64"
        );
        assert_eq!(
            parse_identifier("cp311-musllinux_x86_64").unwrap().1.id,
            "musllinux-x86_64"
        );
        assert!(parse_identifier("cp311-musllinux_s390x_x").is_err());
        assert!(parse_identifier("cp311").is_err());
    }

    #[test]
    fn archs_values_name_targets_by_arch_id_alias_or_identifier_platform() {
        let aarch64 = &targets()[0];
        for name in [
            "aarch64",
            "linux-aarch64",
            "manylinux-aarch64",
            "manylinux_aarch64",
        ] {
            assert!(aarch64.is_named(name), "{name}");
        }
        assert!(!aarch64.is_named("arm64"));
        // A bare architecture names both C libraries' targets, as in cibuildwheel; the
        // identifier platform names one.
        let musl = targets()
            .iter()
            .find(|t| t.id == "musllinux-aarch64")
            .unwrap();
        assert!(musl.is_named("aarch64") && musl.is_named("musllinux_aarch64"));
        assert!(!musl.is_named("manylinux_aarch64") && !aarch64.is_named("musllinux_aarch64"));
    }
}
