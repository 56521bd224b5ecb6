//! `manylinux-<arch>-image`: cibuildwheel's build container, read for the one fact a
//! container-less build can honour, the glibc it compiles and links against. A build in
//! the `manylinux_2_28` image gets glibc 2.28's headers and libraries, and pip there
//! installs build requirements' wheels that need up to 2.28; crosswheel builds against the
//! same glibc. The wheel's tag still comes from the symbols its binaries use, as
//! auditwheel's does in that image.

use crate::target::OsVersion;

/// The glibc of the manylinux policy an image builds for: a policy name as cibuildwheel
/// takes it (`manylinux2014`, `manylinux_2_28`) or an image reference naming one
/// (`quay.io/pypa/manylinux_2_28_aarch64:2025.01.04`, `...@sha256:...`). `None` for an
/// image whose name says no policy (a project's own image).
pub fn policy_glibc(image: &str) -> Option<OsVersion> {
    let name = image.trim().rsplit('/').next()?;
    // The tag or digest says which build of the image, never which policy.
    let name = name.split(['@', ':']).next()?;
    if let Some(rest) = name.strip_prefix("manylinux_") {
        let mut numbers = rest.split('_');
        let major = numbers.next()?.parse().ok()?;
        let minor = numbers.next()?.parse().ok()?;
        return Some(OsVersion::new(major, minor));
    }
    // PEP 599, 571 and 513's names, then the glibc of each.
    [
        ("manylinux2014", OsVersion::new(2, 17)),
        ("manylinux2010", OsVersion::new(2, 12)),
        ("manylinux1", OsVersion::new(2, 5)),
    ]
    .into_iter()
    .find(|(policy, _)| {
        name.strip_prefix(policy)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('_'))
    })
    .map(|(_, glibc)| glibc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_name_gives_its_glibc() {
        assert_eq!(policy_glibc("manylinux_2_28"), Some(OsVersion::new(2, 28)));
        assert_eq!(policy_glibc("manylinux_2_34"), Some(OsVersion::new(2, 34)));
        assert_eq!(policy_glibc("manylinux2014"), Some(OsVersion::new(2, 17)));
        assert_eq!(policy_glibc("manylinux2010"), Some(OsVersion::new(2, 12)));
        assert_eq!(policy_glibc("manylinux1"), Some(OsVersion::new(2, 5)));
    }

    #[test]
    fn an_image_reference_gives_the_glibc_of_the_policy_it_names() {
        assert_eq!(
            policy_glibc("quay.io/pypa/manylinux_2_28_ppc64le:2025.01.04-1"),
            Some(OsVersion::new(2, 28))
        );
        assert_eq!(
            policy_glibc("quay.io/pypa/manylinux2014_aarch64@sha256:0123abcd"),
            Some(OsVersion::new(2, 17))
        );
        assert_eq!(
            policy_glibc("manylinux2014_x86_64:latest"),
            Some(OsVersion::new(2, 17))
        );
    }

    #[test]
    fn an_image_that_names_no_policy_gives_none() {
        assert_eq!(policy_glibc("ghcr.io/acme/builder:3"), None);
        assert_eq!(policy_glibc("manylinux20140"), None);
        assert_eq!(policy_glibc("musllinux_1_2"), None);
        assert_eq!(policy_glibc(""), None);
    }
}
