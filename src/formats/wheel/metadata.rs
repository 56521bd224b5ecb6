//! The `.dist-info/WHEEL` and `.dist-info/METADATA` files: email-header style
//! `Key: value` lines, up to the first blank line.

use std::fmt;

/// Why a dist-info text file (WHEEL, METADATA, RECORD) could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number, when the problem is on one line.
    pub line: Option<usize>,
    pub kind: ParseErrorKind,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    #[error("the file is not valid UTF-8")]
    NotUtf8,
    #[error("header line has no `:`")]
    MissingColon,
    #[error("continuation line before any header")]
    UnexpectedContinuation,
    #[error("required field `{0}` is missing")]
    MissingField(&'static str),
    #[error("quoted field is not closed")]
    UnterminatedQuote,
    #[error("expected 3 comma-separated fields (path,hash,size), found {0}")]
    FieldCount(usize),
    #[error("empty path")]
    EmptyPath,
    #[error("`{0}` is listed more than once")]
    DuplicatePath(String),
    #[error("hash `{0}` is not of the form `algorithm=digest`")]
    MalformedHash(String),
    #[error("hash algorithm `{0}` is forbidden by PEP 427 (use sha256)")]
    ForbiddenHashAlgorithm(String),
    #[error("unknown hash algorithm `{0}` (expected sha256, sha384 or sha512)")]
    UnknownHashAlgorithm(String),
    #[error("digest `{0}` is not urlsafe base64 of the algorithm's length")]
    BadDigest(String),
    #[error("size `{0}` is not a non-negative integer")]
    BadSize(String),
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.kind),
            None => write!(f, "{}", self.kind),
        }
    }
}

impl std::error::Error for ParseError {}

impl ParseError {
    pub(crate) fn at(line: usize, kind: ParseErrorKind) -> Self {
        Self {
            line: Some(line),
            kind,
        }
    }

    pub(crate) fn whole_file(kind: ParseErrorKind) -> Self {
        Self { line: None, kind }
    }
}

/// Decodes a dist-info file, which PEP 427 requires to be UTF-8.
pub(crate) fn utf8(bytes: &[u8]) -> Result<&str, ParseError> {
    std::str::from_utf8(bytes).map_err(|_| ParseError::whole_file(ParseErrorKind::NotUtf8))
}

/// One line of an email-header file, kept with its line ending so untouched
/// lines serialize back byte for byte.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Line {
    raw: String,
    header: Option<(String, String)>,
}

/// The parsed `WHEEL` file. Header order and every byte of lines we do not
/// change are preserved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WheelMetadata {
    lines: Vec<Line>,
    /// Index of the blank line ending the headers (or `lines.len()`).
    header_end: usize,
}

impl WheelMetadata {
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let mut lines = Vec::new();
        let mut header_end = None;
        for (index, raw) in text.split_inclusive('\n').enumerate() {
            let content = strip_line_ending(raw);
            let header = if header_end.is_some() {
                None
            } else if content.is_empty() {
                header_end = Some(index);
                None
            } else if content.starts_with([' ', '\t']) {
                if index == 0 {
                    return Err(ParseError::at(1, ParseErrorKind::UnexpectedContinuation));
                }
                None
            } else {
                let (key, value) = content
                    .split_once(':')
                    .ok_or_else(|| ParseError::at(index + 1, ParseErrorKind::MissingColon))?;
                Some((key.trim().to_owned(), value.trim().to_owned()))
            };
            lines.push(Line {
                raw: raw.to_owned(),
                header,
            });
        }
        let header_end = header_end.unwrap_or(lines.len());
        Ok(Self { lines, header_end })
    }

    /// `(key, value)` pairs in file order; repeated keys appear repeatedly.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &str)> {
        self.lines
            .iter()
            .filter_map(|line| line.header.as_ref())
            .map(|(key, value)| (key.as_str(), value.as_str()))
    }

    /// The first value of `key` (case-insensitive, like email headers).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.headers()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, value)| value)
    }

    pub fn get_all<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers()
            .filter(move |(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, value)| value)
    }

    pub fn tags(&self) -> Vec<&str> {
        self.get_all("Tag").collect()
    }

    /// `Root-Is-Purelib`, if present and spelled `true`/`false` (any case).
    pub fn root_is_purelib(&self) -> Option<bool> {
        let value = self.get("Root-Is-Purelib")?;
        if value.eq_ignore_ascii_case("true") {
            Some(true)
        } else if value.eq_ignore_ascii_case("false") {
            Some(false)
        } else {
            None
        }
    }

    pub fn build(&self) -> Option<&str> {
        self.get("Build")
    }

    pub fn wheel_version(&self) -> Option<&str> {
        self.get("Wheel-Version")
    }

    /// Replaces every `Tag` line by one line per tag, placed where the first
    /// `Tag` line was (or at the end of the headers when there was none).
    pub fn replace_tags<S: AsRef<str>>(&mut self, tags: &[S]) {
        let is_tag = |line: &Line| {
            line.header
                .as_ref()
                .is_some_and(|(key, _)| key.eq_ignore_ascii_case("Tag"))
        };
        let first_tag = self.lines.iter().position(is_tag);
        let (insert_at, line_ending) = match first_tag {
            // A last `Tag` line without a newline (meson-python writes WHEEL so) must not
            // run the new lines together.
            Some(index) => match line_ending_of(&self.lines[index].raw) {
                "" => (index, self.header_line_ending()),
                ending => (index, ending),
            },
            None => (self.header_end, self.header_line_ending()),
        };
        // A header section whose last line lacks a newline must get one
        // before new lines follow it.
        if first_tag.is_none()
            && let Some(previous) = insert_at.checked_sub(1).and_then(|i| self.lines.get_mut(i))
            && line_ending_of(&previous.raw).is_empty()
        {
            previous.raw.push_str(line_ending);
        }
        let new_lines = tags.iter().map(|tag| Line {
            raw: format!("Tag: {}{line_ending}", tag.as_ref()),
            header: Some(("Tag".to_owned(), tag.as_ref().to_owned())),
        });
        let mut lines = Vec::with_capacity(self.lines.len() + tags.len());
        lines.extend(
            self.lines[..insert_at]
                .iter()
                .filter(|l| !is_tag(l))
                .cloned(),
        );
        lines.extend(new_lines);
        lines.extend(
            self.lines[insert_at..]
                .iter()
                .filter(|l| !is_tag(l))
                .cloned(),
        );
        let removed_before = self.lines[..self.header_end]
            .iter()
            .filter(|line| is_tag(line))
            .count();
        self.header_end = self.header_end - removed_before + tags.len();
        self.lines = lines;
    }

    fn header_line_ending(&self) -> &'static str {
        self.lines
            .first()
            .map(|line| line_ending_of(&line.raw))
            .filter(|ending| !ending.is_empty())
            .unwrap_or("\n")
    }
}

impl fmt::Display for WheelMetadata {
    /// The file's bytes: untouched lines exactly as read.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.lines
            .iter()
            .try_for_each(|line| f.write_str(&line.raw))
    }
}

/// `Name` and `Version` from a `METADATA` file's header section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameVersion {
    pub name: String,
    pub version: String,
}

impl NameVersion {
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let (mut name, mut version) = (None, None);
        for raw in text.split_inclusive('\n') {
            let content = strip_line_ending(raw);
            if content.is_empty() {
                break;
            }
            let Some((key, value)) = content.split_once(':') else {
                continue;
            };
            let key = key.trim();
            if name.is_none() && key.eq_ignore_ascii_case("Name") {
                name = Some(value.trim().to_owned());
            } else if version.is_none() && key.eq_ignore_ascii_case("Version") {
                version = Some(value.trim().to_owned());
            }
        }
        let missing = |field| ParseError::whole_file(ParseErrorKind::MissingField(field));
        Ok(Self {
            name: name
                .filter(|n| !n.is_empty())
                .ok_or_else(|| missing("Name"))?,
            version: version
                .filter(|v| !v.is_empty())
                .ok_or_else(|| missing("Version"))?,
        })
    }
}

fn strip_line_ending(raw: &str) -> &str {
    let without_lf = raw.strip_suffix('\n').unwrap_or(raw);
    without_lf.strip_suffix('\r').unwrap_or(without_lf)
}

fn line_ending_of(raw: &str) -> &'static str {
    if raw.ends_with("\r\n") {
        "\r\n"
    } else if raw.ends_with('\n') {
        "\n"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NUMPY_WHEEL: &str = "Wheel-Version: 1.0\nGenerator: meson\nRoot-Is-Purelib: false\n\
        Tag: cp311-cp311-manylinux_2_17_aarch64\nTag: cp311-cp311-manylinux2014_aarch64\n\n";

    #[test]
    fn parses_wheel_headers_in_order_with_repeated_tags() {
        let wheel = WheelMetadata::parse(NUMPY_WHEEL).unwrap();
        let keys: Vec<&str> = wheel.headers().map(|(key, _)| key).collect();
        assert_eq!(
            keys,
            [
                "Wheel-Version",
                "Generator",
                "Root-Is-Purelib",
                "Tag",
                "Tag"
            ]
        );
        assert_eq!(
            wheel.tags(),
            [
                "cp311-cp311-manylinux_2_17_aarch64",
                "cp311-cp311-manylinux2014_aarch64"
            ]
        );
        assert_eq!(wheel.root_is_purelib(), Some(false));
        assert_eq!(wheel.wheel_version(), Some("1.0"));
        assert_eq!(wheel.build(), None);
    }

    #[test]
    fn serializes_unchanged_file_byte_for_byte() {
        let odd =
            "Wheel-Version:1.0\r\nGenerator:  x  \r\nBuild: 7\r\nTag: py3-none-any\r\n\r\nbody";
        assert_eq!(WheelMetadata::parse(odd).unwrap().to_string(), odd);
        assert_eq!(
            WheelMetadata::parse(NUMPY_WHEEL).unwrap().to_string(),
            NUMPY_WHEEL
        );
    }

    #[test]
    fn replaces_tags_where_the_first_tag_was() {
        let text = "Wheel-Version: 1.0\nTag: a-b-c\nGenerator: g\nTag: d-e-f\nBuild: 1\n";
        let mut wheel = WheelMetadata::parse(text).unwrap();
        wheel.replace_tags(&["x-y-z1", "x-y-z2"]);
        assert_eq!(
            wheel.to_string(),
            "Wheel-Version: 1.0\nTag: x-y-z1\nTag: x-y-z2\nGenerator: g\nBuild: 1\n"
        );
        assert_eq!(wheel.tags(), ["x-y-z1", "x-y-z2"]);
    }

    #[test]
    fn replacing_tags_keeps_crlf_line_endings_and_trailing_body() {
        let text = "Wheel-Version: 1.0\r\nTag: a-b-c\r\n\r\nTag: not-a-header\r\n";
        let mut wheel = WheelMetadata::parse(text).unwrap();
        wheel.replace_tags(&["p-q-r"]);
        assert_eq!(
            wheel.to_string(),
            "Wheel-Version: 1.0\r\nTag: p-q-r\r\n\r\nTag: not-a-header\r\n"
        );
    }

    #[test]
    fn adds_tags_at_end_of_headers_when_there_were_none() {
        let mut wheel = WheelMetadata::parse("Wheel-Version: 1.0\n\nbody\n").unwrap();
        wheel.replace_tags(&["p-q-r"]);
        assert_eq!(
            wheel.to_string(),
            "Wheel-Version: 1.0\nTag: p-q-r\n\nbody\n"
        );

        let mut unterminated = WheelMetadata::parse("Wheel-Version: 1.0").unwrap();
        unterminated.replace_tags(&["p-q-r"]);
        assert_eq!(unterminated.to_string(), "Wheel-Version: 1.0\nTag: p-q-r\n");
    }

    #[test]
    fn a_last_tag_line_without_a_newline_becomes_lines_of_their_own() {
        let mut wheel = WheelMetadata::parse(
            "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp313-cp313t-linux_aarch64",
        )
        .unwrap();
        wheel.replace_tags(&[
            "cp313-cp313t-manylinux_2_17_aarch64",
            "cp313-cp313t-manylinux2014_aarch64",
        ]);
        assert_eq!(
            wheel.tags(),
            [
                "cp313-cp313t-manylinux_2_17_aarch64",
                "cp313-cp313t-manylinux2014_aarch64"
            ]
        );
        let reparsed = WheelMetadata::parse(&wheel.to_string()).unwrap();
        assert_eq!(reparsed.tags(), wheel.tags(), "{wheel}");
    }

    #[test]
    fn replacing_tags_twice_is_stable() {
        let mut wheel = WheelMetadata::parse(NUMPY_WHEEL).unwrap();
        wheel.replace_tags(&["a-b-c"]);
        wheel.replace_tags(&["d-e-f", "g-h-i"]);
        assert_eq!(wheel.tags(), ["d-e-f", "g-h-i"]);
        assert!(wheel.to_string().ends_with("Tag: d-e-f\nTag: g-h-i\n\n"));
    }

    #[test]
    fn rejects_wheel_header_line_without_colon() {
        let error = WheelMetadata::parse("Wheel-Version: 1.0\nnonsense\n").unwrap_err();
        assert_eq!(error, ParseError::at(2, ParseErrorKind::MissingColon));
    }

    #[test]
    fn reads_name_and_version_from_metadata_headers_only() {
        let text = "Metadata-Version: 2.1\nName: numpy\nVersion: 2.2.6\n\nName: not-this\n";
        let parsed = NameVersion::parse(text).unwrap();
        assert_eq!(
            parsed,
            NameVersion {
                name: "numpy".into(),
                version: "2.2.6".into()
            }
        );
    }

    #[test]
    fn rejects_metadata_whose_version_is_only_in_the_body() {
        let error = NameVersion::parse("Name: x\n\nVersion: 1.0\n").unwrap_err();
        assert_eq!(error.kind, ParseErrorKind::MissingField("Version"));
    }
}
