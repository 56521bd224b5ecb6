//! Core metadata (`METADATA` in wheels, `PKG-INFO` in sdists) read in full:
//! folded header values and the long description, which the upload form
//! needs and `wheel::NameVersion` deliberately skips.

/// Metadata versions an index accepts (the core metadata specifications).
pub const KNOWN_METADATA_VERSIONS: [&str; 7] = ["1.0", "1.1", "1.2", "2.1", "2.2", "2.3", "2.4"];

/// The headers of a core metadata file in file order, and its description.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoreMetadata {
    headers: Vec<(String, String)>,
    description: Option<String>,
}

impl CoreMetadata {
    /// Parses the email-header format leniently: lines without `:` are
    /// ignored (the strict checks are [`crate::stages::publish::check_distribution`]'s job).
    /// The description is the body after the first blank line (metadata
    /// 2.1+) or, failing that, a `Description` header with its
    /// `        |`-prefixed continuation lines (what setuptools writes).
    pub fn parse(text: &str) -> Self {
        let mut headers: Vec<(String, String)> = Vec::new();
        let mut lines = text.split_inclusive('\n');
        for raw in lines.by_ref() {
            let line = raw.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                break;
            }
            if line.starts_with([' ', '\t']) {
                if let Some((_, value)) = headers.last_mut() {
                    value.push('\n');
                    value.push_str(unfold_continuation(line));
                }
                continue;
            }
            if let Some((key, value)) = line.split_once(':') {
                headers.push((key.trim().to_owned(), value.trim().to_owned()));
            }
        }
        let body: String = lines.collect();
        let description = if body.trim().is_empty() {
            header_value(&headers, "Description").map(str::to_owned)
        } else {
            Some(body)
        };
        Self {
            headers,
            description,
        }
    }

    /// The first value of `key` (case-insensitive, like email headers).
    pub fn get(&self, key: &str) -> Option<&str> {
        header_value(&self.headers, key)
    }

    pub fn get_all<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, value)| value.as_str())
    }

    /// `(key, value)` pairs in file order; the body is not among them.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &str)> {
        self.headers
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_str()))
    }

    pub fn metadata_version(&self) -> Option<&str> {
        self.get("Metadata-Version")
            .filter(|value| !value.is_empty())
    }

    pub fn name(&self) -> Option<&str> {
        self.get("Name").filter(|value| !value.is_empty())
    }

    pub fn version(&self) -> Option<&str> {
        self.get("Version").filter(|value| !value.is_empty())
    }

    /// The long description, if there is a non-blank one.
    pub fn description(&self) -> Option<&str> {
        self.description
            .as_deref()
            .filter(|text| !text.trim().is_empty())
    }

    /// `Description-Content-Type`, if declared.
    pub fn description_content_type(&self) -> Option<&str> {
        self.get("Description-Content-Type")
            .filter(|value| !value.is_empty())
    }
}

fn header_value<'a>(headers: &'a [(String, String)], key: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, value)| value.as_str())
}

/// setuptools folds multi-line values as `\n` + 8 spaces + `|`; other
/// writers indent with any whitespace.
fn unfold_continuation(line: &str) -> &str {
    let trimmed = line.trim_start_matches([' ', '\t']);
    trimmed.strip_prefix('|').unwrap_or(trimmed)
}

/// A valid project name (core metadata `Name`): ASCII letters and digits,
/// with `.`, `_`, `-` allowed inside.
pub(crate) fn is_valid_project_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let inner_ok = bytes
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    inner_ok
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_description_from_body_after_headers() {
        let metadata = CoreMetadata::parse(
            "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n\nHello\n=====\n",
        );
        assert_eq!(metadata.description(), Some("Hello\n=====\n"));
        assert_eq!(metadata.metadata_version(), Some("2.1"));
    }

    #[test]
    fn reads_folded_description_header_as_setuptools_writes_it() {
        let metadata = CoreMetadata::parse(
            "Metadata-Version: 1.1\nName: demo\nDescription: Title\n        |=====\n        |\n        |text\nVersion: 2\n",
        );
        assert_eq!(metadata.description(), Some("Title\n=====\n\ntext"));
        assert_eq!(metadata.version(), Some("2"));
    }

    #[test]
    fn keeps_repeated_headers_in_order() {
        let metadata =
            CoreMetadata::parse("Name: x\nClassifier: A\nClassifier: B\nclassifier: C\n");
        assert_eq!(
            metadata.get_all("Classifier").collect::<Vec<_>>(),
            ["A", "B", "C"]
        );
    }

    #[test]
    fn validates_project_names() {
        for good in ["a", "demo", "zope.interface", "A_b-9"] {
            assert!(is_valid_project_name(good), "{good}");
        }
        for bad in ["", "-a", "a-", "a b", "dé", "a/b"] {
            assert!(!is_valid_project_name(bad), "{bad}");
        }
    }
}
