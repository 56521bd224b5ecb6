//! A wheel's python (language) and ABI tags (PEP 425), parsed once where a wheel name is
//! read. Like [`super::PlatformTag`], lossless: each renders back to exactly the text it
//! was read from, and a tag of no known form is kept as written. The CPython version in
//! them is the crate's one model of it, [`PythonTag`] (`cp311`, `cp313t`).

use std::fmt;

use crate::python_tag::PythonTag;

/// One python tag of a wheel name: `cp311`, `py3`, `py2`, `pp310`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LanguageTag {
    /// `cp3<minor>`: CPython of one version.
    CPython(PythonTag),
    /// `py<major>` or `py<major><minor>`, written after `py` as here: any implementation.
    Python(String),
    /// Any other tag (`pp310`, `ip27`), kept as written.
    Other(String),
}

impl LanguageTag {
    pub fn parse(tag: &str) -> LanguageTag {
        let parsed = match tag.strip_prefix("py") {
            Some(version) if !version.is_empty() && version.bytes().all(|b| b.is_ascii_digit()) => {
                LanguageTag::Python(version.to_owned())
            }
            _ => PythonTag::parse(tag)
                .ok()
                .filter(|python| !python.is_free_threaded())
                .map_or_else(|| LanguageTag::Other(tag.to_owned()), LanguageTag::CPython),
        };
        if parsed.to_string() == tag {
            parsed
        } else {
            LanguageTag::Other(tag.to_owned())
        }
    }

    /// The CPython of a `cp3<minor>` tag.
    pub fn cpython(&self) -> Option<PythonTag> {
        match self {
            LanguageTag::CPython(python) => Some(*python),
            _ => None,
        }
    }

    /// Whether the tag is Python 3 of any implementation (`py3`, `py38`).
    pub fn is_any_python3(&self) -> bool {
        matches!(self, LanguageTag::Python(version) if version.starts_with('3'))
    }
}

impl fmt::Display for LanguageTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LanguageTag::CPython(python) => write!(f, "{python}"),
            LanguageTag::Python(version) => write!(f, "py{version}"),
            LanguageTag::Other(tag) => f.write_str(tag),
        }
    }
}

/// One ABI tag of a wheel name: `cp311`, `cp313t`, `abi3`, `none`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AbiTag {
    /// `none`: no ABI (pure Python, or an extension loaded without CPython's ABI).
    None,
    /// `abi3`: CPython's stable ABI.
    Abi3,
    /// `cp3<minor>` or `cp3<minor>t`: the ABI of one CPython build.
    CPython(PythonTag),
    /// Any other tag (`pypy310_pp73`, `cp39m`), kept as written.
    Other(String),
}

impl AbiTag {
    pub fn parse(tag: &str) -> AbiTag {
        let parsed = match tag {
            "none" => AbiTag::None,
            "abi3" => AbiTag::Abi3,
            _ => PythonTag::parse(tag)
                .map_or_else(|_| AbiTag::Other(tag.to_owned()), AbiTag::CPython),
        };
        if parsed.to_string() == tag {
            parsed
        } else {
            AbiTag::Other(tag.to_owned())
        }
    }

    /// The CPython build of a `cp3<minor>[t]` ABI.
    pub fn cpython(&self) -> Option<PythonTag> {
        match self {
            AbiTag::CPython(python) => Some(*python),
            _ => None,
        }
    }
}

impl fmt::Display for AbiTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AbiTag::None => f.write_str("none"),
            AbiTag::Abi3 => f.write_str("abi3"),
            AbiTag::CPython(python) => write!(f, "{python}"),
            AbiTag::Other(tag) => f.write_str(tag),
        }
    }
}

/// Tags joined as a wheel name's compressed tag set writes them (`py2.py3`).
pub fn join<T: fmt::Display>(tags: &[T]) -> String {
    tags.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tag_renders_back_to_what_was_read() {
        for tag in [
            "cp311", "py3", "py2", "py38", "pp310", "cp313t", "cp3", "py", "cp03",
        ] {
            assert_eq!(LanguageTag::parse(tag).to_string(), tag);
        }
        for tag in [
            "cp311",
            "cp313t",
            "abi3",
            "none",
            "cp39m",
            "pypy310_pp73",
            "cp311t",
        ] {
            assert_eq!(AbiTag::parse(tag).to_string(), tag);
        }
        assert_eq!(AbiTag::parse("cp311t"), AbiTag::Other("cp311t".into()));
        assert_eq!(
            LanguageTag::parse("cp313t"),
            LanguageTag::Other("cp313t".into())
        );
    }

    #[test]
    fn tags_say_their_cpython() {
        let cp313t = PythonTag::parse("cp313t").unwrap();
        assert_eq!(AbiTag::parse("cp313t").cpython(), Some(cp313t));
        assert_eq!(AbiTag::parse("abi3"), AbiTag::Abi3);
        assert_eq!(
            LanguageTag::parse("cp311").cpython(),
            PythonTag::parse("cp311").ok()
        );
        assert!(LanguageTag::parse("py3").is_any_python3());
        assert!(!LanguageTag::parse("py2").is_any_python3());
        assert!(!LanguageTag::parse("cp311").is_any_python3());
    }
}
