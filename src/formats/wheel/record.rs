//! The `.dist-info/RECORD` file: CSV rows `path,algorithm=digest,size`.
//!
//! Reading follows Python's `csv` module (excel dialect); writing quotes a
//! field only when it must, like `csv.writer(..., lineterminator="\n")`.

use std::collections::HashMap;
use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::{URL_SAFE_NO_PAD, URL_SAFE_NO_PAD_INDIFFERENT};
use sha2::Digest;

use crate::formats::wheel::metadata::{ParseError, ParseErrorKind};

/// Hash algorithms PEP 427 allows in RECORD (md5 and sha1 are forbidden).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HashAlgorithm {
    Sha256,
    Sha384,
    Sha512,
}

impl HashAlgorithm {
    pub fn name(self) -> &'static str {
        match self {
            Self::Sha256 => "sha256",
            Self::Sha384 => "sha384",
            Self::Sha512 => "sha512",
        }
    }

    fn digest_len(self) -> usize {
        match self {
            Self::Sha256 => 32,
            Self::Sha384 => 48,
            Self::Sha512 => 64,
        }
    }

    pub fn hasher(self) -> Hasher {
        match self {
            Self::Sha256 => Hasher::Sha256(sha2::Sha256::new()),
            Self::Sha384 => Hasher::Sha384(sha2::Sha384::new()),
            Self::Sha512 => Hasher::Sha512(sha2::Sha512::new()),
        }
    }
}

/// An incremental hasher for one of the [`HashAlgorithm`]s.
#[derive(Clone)]
pub enum Hasher {
    Sha256(sha2::Sha256),
    Sha384(sha2::Sha384),
    Sha512(sha2::Sha512),
}

impl Hasher {
    pub fn update(&mut self, data: &[u8]) {
        match self {
            Self::Sha256(h) => h.update(data),
            Self::Sha384(h) => h.update(data),
            Self::Sha512(h) => h.update(data),
        }
    }

    pub fn finish(self) -> RecordHash {
        let (algorithm, digest) = match self {
            Self::Sha256(h) => (HashAlgorithm::Sha256, h.finalize().to_vec()),
            Self::Sha384(h) => (HashAlgorithm::Sha384, h.finalize().to_vec()),
            Self::Sha512(h) => (HashAlgorithm::Sha512, h.finalize().to_vec()),
        };
        RecordHash { algorithm, digest }
    }
}

/// A RECORD hash field: `sha256=<urlsafe base64 without padding>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RecordHash {
    pub algorithm: HashAlgorithm,
    pub digest: Vec<u8>,
}

impl RecordHash {
    pub fn sha256(data: &[u8]) -> Self {
        Self {
            algorithm: HashAlgorithm::Sha256,
            digest: sha2::Sha256::digest(data).to_vec(),
        }
    }

    pub fn parse(field: &str) -> Result<Self, ParseErrorKind> {
        let (name, encoded) = field
            .split_once('=')
            .ok_or_else(|| ParseErrorKind::MalformedHash(field.to_owned()))?;
        let algorithm = match name.to_ascii_lowercase().as_str() {
            "sha256" => HashAlgorithm::Sha256,
            "sha384" => HashAlgorithm::Sha384,
            "sha512" => HashAlgorithm::Sha512,
            "md5" | "sha1" => return Err(ParseErrorKind::ForbiddenHashAlgorithm(name.to_owned())),
            _ => return Err(ParseErrorKind::UnknownHashAlgorithm(name.to_owned())),
        };
        // Some generators pad the digest; the padding carries no information.
        let digest = URL_SAFE_NO_PAD_INDIFFERENT
            .decode(encoded)
            .ok()
            .filter(|digest| digest.len() == algorithm.digest_len())
            .ok_or_else(|| ParseErrorKind::BadDigest(encoded.to_owned()))?;
        Ok(Self { algorithm, digest })
    }
}

impl fmt::Display for RecordHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={}",
            self.algorithm.name(),
            URL_SAFE_NO_PAD.encode(&self.digest)
        )
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordRow {
    pub path: String,
    /// Absent only for RECORD itself and its signatures.
    pub hash: Option<RecordHash>,
    pub size: Option<u64>,
}

/// The rows of a RECORD file, in file order, with lookup by path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Record {
    rows: Vec<RecordRow>,
    by_path: HashMap<String, usize>,
}

impl Record {
    /// Builds a record; a path listed twice is an error.
    pub fn from_rows(rows: Vec<RecordRow>) -> Result<Self, ParseError> {
        let mut by_path = HashMap::with_capacity(rows.len());
        for (index, row) in rows.iter().enumerate() {
            if by_path.insert(row.path.clone(), index).is_some() {
                return Err(ParseError::whole_file(ParseErrorKind::DuplicatePath(
                    row.path.clone(),
                )));
            }
        }
        Ok(Self { rows, by_path })
    }

    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let mut rows = Vec::new();
        let mut by_path = HashMap::new();
        for (line, fields) in CsvRows::new(text) {
            let fields = fields.map_err(|kind| ParseError::at(line, kind))?;
            if fields.is_empty() {
                continue;
            }
            let [path, hash, size] = <[String; 3]>::try_from(fields)
                .map_err(|fields| ParseError::at(line, ParseErrorKind::FieldCount(fields.len())))?;
            if path.is_empty() {
                return Err(ParseError::at(line, ParseErrorKind::EmptyPath));
            }
            let hash = (!hash.is_empty())
                .then(|| RecordHash::parse(&hash))
                .transpose()
                .map_err(|kind| ParseError::at(line, kind))?;
            let size = (!size.is_empty())
                .then(|| {
                    size.parse::<u64>()
                        .map_err(|_| ParseErrorKind::BadSize(size.clone()))
                })
                .transpose()
                .map_err(|kind| ParseError::at(line, kind))?;
            if by_path.insert(path.clone(), rows.len()).is_some() {
                return Err(ParseError::at(line, ParseErrorKind::DuplicatePath(path)));
            }
            rows.push(RecordRow { path, hash, size });
        }
        Ok(Self { rows, by_path })
    }

    pub fn rows(&self) -> &[RecordRow] {
        &self.rows
    }

    pub fn get(&self, path: &str) -> Option<&RecordRow> {
        self.by_path
            .get(path)
            .and_then(|&index| self.rows.get(index))
    }
}

impl fmt::Display for Record {
    /// The RECORD file as `csv.writer(..., lineterminator="\n")` writes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for row in &self.rows {
            write_csv_field(f, &row.path)?;
            f.write_str(",")?;
            if let Some(hash) = &row.hash {
                write!(f, "{hash}")?;
            }
            f.write_str(",")?;
            if let Some(size) = row.size {
                write!(f, "{size}")?;
            }
            f.write_str("\n")?;
        }
        Ok(())
    }
}

/// Quotes like `csv.QUOTE_MINIMAL`; `\r` is quoted too (CPython 3.11 does
/// not when the line terminator is `\n`, yet its reader splits rows on it).
fn write_csv_field(f: &mut fmt::Formatter<'_>, field: &str) -> fmt::Result {
    if field.contains([',', '"', '\n', '\r']) {
        write!(f, "\"{}\"", field.replace('"', "\"\""))
    } else {
        f.write_str(field)
    }
}

/// Iterates CSV rows as Python's `csv.reader` (excel dialect) splits them:
/// `"` opens a quoted field only at its start, `""` inside is one quote,
/// quoted fields may span lines, `\n`, `\r\n` and `\r` end rows. Yields the
/// 1-based line on which each row starts.
struct CsvRows<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    line: usize,
}

impl<'a> CsvRows<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            chars: text.chars().peekable(),
            line: 1,
        }
    }

    fn end_line(&mut self, c: char) {
        if c == '\r' {
            self.chars.next_if_eq(&'\n');
        }
        self.line += 1;
    }
}

impl Iterator for CsvRows<'_> {
    type Item = (usize, Result<Vec<String>, ParseErrorKind>);

    fn next(&mut self) -> Option<Self::Item> {
        self.chars.peek()?;
        let start_line = self.line;
        let mut fields = Vec::new();
        let mut field = String::new();
        let mut at_field_start = true;
        let mut in_quotes = false;
        loop {
            let Some(c) = self.chars.next() else {
                if in_quotes {
                    return Some((start_line, Err(ParseErrorKind::UnterminatedQuote)));
                }
                if !at_field_start || !fields.is_empty() || !field.is_empty() {
                    fields.push(field);
                }
                return Some((start_line, Ok(fields)));
            };
            if in_quotes {
                match c {
                    '"' if self.chars.next_if_eq(&'"').is_some() => field.push('"'),
                    '"' => in_quotes = false,
                    '\n' | '\r' => {
                        field.push(c);
                        if c == '\r' && self.chars.next_if_eq(&'\n').is_some() {
                            field.push('\n');
                        }
                        self.line += 1;
                    }
                    _ => field.push(c),
                }
                continue;
            }
            match c {
                '"' if at_field_start => {
                    in_quotes = true;
                    at_field_start = false;
                }
                ',' => {
                    fields.push(std::mem::take(&mut field));
                    at_field_start = true;
                }
                '\n' | '\r' => {
                    self.end_line(c);
                    if !at_field_start || !fields.is_empty() {
                        fields.push(field);
                    }
                    return Some((start_line, Ok(fields)));
                }
                _ => {
                    field.push(c);
                    at_field_start = false;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(path: &str, data: &[u8]) -> RecordRow {
        RecordRow {
            path: path.to_owned(),
            hash: Some(RecordHash::sha256(data)),
            size: Some(data.len() as u64),
        }
    }

    #[test]
    fn parses_rows_and_records_own_row_without_hash() {
        let text = "pkg/__init__.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n\
                    pkg-1.0.dist-info/RECORD,,\n";
        let record = Record::parse(text).unwrap();
        assert_eq!(
            record.rows(),
            [
                row("pkg/__init__.py", b""),
                RecordRow {
                    path: "pkg-1.0.dist-info/RECORD".into(),
                    hash: None,
                    size: None
                }
            ]
        );
        assert!(record.get("pkg/__init__.py").is_some());
    }

    #[test]
    fn parses_quoted_paths_with_commas_quotes_and_newlines() {
        let text = "\"a,b.py\",,\r\n\"say \"\"hi\"\".txt\",,\n\"two\nlines\",,\nlast,,\n";
        let record = Record::parse(text).unwrap();
        let paths: Vec<&str> = record.rows().iter().map(|r| r.path.as_str()).collect();
        assert_eq!(paths, ["a,b.py", "say \"hi\".txt", "two\nlines", "last"]);
    }

    #[test]
    fn serializes_with_minimal_quoting_and_lf_endings() {
        let record = Record::from_rows(vec![
            row("plain dir/x.py", b"x"),
            row("a,b.py", b""),
            row("q\"uote", b""),
            RecordRow {
                path: "p-1.dist-info/RECORD".into(),
                hash: None,
                size: None,
            },
        ])
        .unwrap();
        assert_eq!(
            record.to_string(),
            "plain dir/x.py,sha256=LXEWQrcmsEQBYnyp-6wy9chTD7GQPMTbAiWHF5IaSIE,1\n\
             \"a,b.py\",sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n\
             \"q\"\"uote\",sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n\
             p-1.dist-info/RECORD,,\n"
        );
        assert_eq!(Record::parse(&record.to_string()).unwrap(), record);
    }

    #[test]
    fn accepts_sha384_and_sha512() {
        for algorithm in [HashAlgorithm::Sha384, HashAlgorithm::Sha512] {
            let mut hasher = algorithm.hasher();
            hasher.update(b"abc");
            let hash = hasher.finish();
            assert_eq!(RecordHash::parse(&hash.to_string()).unwrap(), hash);
        }
    }

    #[test]
    fn rejects_md5_and_sha1_as_forbidden() {
        for field in [
            "md5=1B2M2Y8AsgTpgAmY7PhCfg",
            "sha1=2jmj7l5rSw0yVb_vlWAYkK_YBwk",
        ] {
            assert!(matches!(
                RecordHash::parse(field),
                Err(ParseErrorKind::ForbiddenHashAlgorithm(_))
            ));
        }
    }

    #[test]
    fn rejects_digest_of_wrong_length() {
        let error = Record::parse("a,sha256=AAAA,1\n").unwrap_err();
        assert_eq!(
            error,
            ParseError::at(1, ParseErrorKind::BadDigest("AAAA".into()))
        );
    }

    #[test]
    fn rejects_rows_with_wrong_field_count_duplicate_paths_and_bad_sizes() {
        let too_few = Record::parse("a,,\nb,\n").unwrap_err();
        assert_eq!(too_few, ParseError::at(2, ParseErrorKind::FieldCount(2)));
        let duplicate = Record::parse("a,,\na,,\n").unwrap_err();
        assert_eq!(
            duplicate,
            ParseError::at(2, ParseErrorKind::DuplicatePath("a".into()))
        );
        let size = Record::parse("a,,-1\n").unwrap_err();
        assert_eq!(
            size,
            ParseError::at(1, ParseErrorKind::BadSize("-1".into()))
        );
        let quote = Record::parse("\"a,,\n").unwrap_err();
        assert_eq!(quote, ParseError::at(1, ParseErrorKind::UnterminatedQuote));
    }

    #[test]
    fn skips_blank_lines_like_the_csv_module() {
        let record = Record::parse("\na,,\n\n\r\nb,,").unwrap();
        assert_eq!(record.rows().len(), 2);
    }
}
