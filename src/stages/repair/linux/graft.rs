//! Where vendored libraries go: `<dist>.libs/<hash-mangled name>`. The
//! walk that finds them is `analysis::linux::graph::resolve`; this is the
//! repair's only say in it.

use sha2::{Digest, Sha256};

use crate::analysis::facts::linux::FoundLibrary;

/// `libfoo.so.1` + contents → `libfoo-1a2b3c4d.so.1`: the hash of the contents
/// keeps two different builds of one SONAME from ever sharing a name.
pub fn mangled_name(soname: &str, contents: &[u8]) -> String {
    let digest = Sha256::digest(contents);
    let short: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    match soname.split_once('.') {
        Some((stem, rest)) => format!("{stem}-{short}.{rest}"),
        None => format!("{soname}-{short}"),
    }
}

/// The install path of a library found on the host for the DT_NEEDED
/// `needed`: in `libs_dir`, named after its SONAME (else `needed`), mangled.
pub fn vendored_path(libs_dir: &str, found: &FoundLibrary, needed: &str) -> String {
    let soname = found.facts.soname.as_deref().unwrap_or(needed);
    format!("{libs_dir}/{}", mangled_name(soname, &found.data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mangled_name_keeps_the_version_suffix() {
        let name = mangled_name("libscipy_openblas.so", b"contents");
        assert!(
            name.starts_with("libscipy_openblas-") && name.ends_with(".so"),
            "{name}"
        );
        assert_eq!(name.len(), "libscipy_openblas-12345678.so".len());
        assert!(mangled_name("libgfortran.so.5", b"x").ends_with(".so.5"));
    }

    #[test]
    fn different_contents_never_share_a_mangled_name() {
        assert_ne!(
            mangled_name("libz.so.1", b"one build"),
            mangled_name("libz.so.1", b"another build")
        );
        assert_eq!(
            mangled_name("libz.so.1", b"same"),
            mangled_name("libz.so.1", b"same")
        );
    }
}
