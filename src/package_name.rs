//! Python project names as the index compares them: the one PEP 503 normaliser, and the
//! name a PEP 508 requirement starts with (read by `pep508_rs`, as maturin and uv do).

use std::str::FromStr;

pub use pep508_rs::PackageName;

/// PEP 503 normalisation of any text: lower case, every run of `-`, `_`, `.` one `-`
/// (`re.sub(r"[-_.]+", "-", name).lower()`). Total, unlike [`PackageName::new`], because
/// callers compare names read from wheels, metadata and configuration that may not be
/// valid names; a comparison of two invalid names must still be the index's.
pub fn normalize(name: &str) -> String {
    let mut normalized = String::with_capacity(name.len());
    let mut in_separator_run = false;
    for c in name.trim().chars() {
        if matches!(c, '-' | '_' | '.') {
            if !in_separator_run {
                normalized.push('-');
            }
            in_separator_run = true;
        } else {
            normalized.push(c.to_ascii_lowercase());
            in_separator_run = false;
        }
    }
    normalized
}

/// The project a PEP 508 requirement names (`numpy` of `NumPy[x]>=2; python_version>"3"`),
/// normalised; `None` for text that is not a requirement (a path, a URL-only line, a typo).
pub fn requirement_name(requirement: &str) -> Option<PackageName> {
    pep508_rs::Requirement::<pep508_rs::VerbatimUrl>::from_str(requirement.trim())
        .ok()
        .map(|requirement| requirement.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_normalize_as_pep_503_says() {
        assert_eq!(normalize("Zope.Interface"), "zope-interface");
        assert_eq!(normalize("a__b-.c"), "a-b-c");
        assert_eq!(normalize("PyYAML"), "pyyaml");
        assert_eq!(normalize(" Foo__Bar.baz "), "foo-bar-baz");
        // The index's regex keeps leading and trailing runs; so does this.
        assert_eq!(normalize("_private"), "-private");
    }

    #[test]
    fn requirements_name_their_project_before_extras_specifiers_and_markers() {
        let name = |text: &str| requirement_name(text).map(|name| name.to_string());
        assert_eq!(name("numpy>=2").as_deref(), Some("numpy"));
        assert_eq!(
            name("Scipy_OpenBLAS64[x] >=0.3 ; python_version >= '3.10'").as_deref(),
            Some("scipy-openblas64")
        );
        assert_eq!(
            name("pkg @ https://example.invalid/pkg-1.0.tar.gz").as_deref(),
            Some("pkg")
        );
        assert_eq!(name("./local/dir"), None);
        assert_eq!(name(">=2"), None);
    }
}
