//! A deterministic wheel writer: same inputs, same bytes.
//!
//! Entries are sorted by name with the dist-info directory last and RECORD
//! the very last; every entry carries the same timestamp; no extra fields,
//! data descriptors or zip64. Copied entries keep their compressed bytes.

use std::borrow::Cow;
use std::ffi::OsString;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use rayon::prelude::*;

use crate::formats::wheel::WheelError;
use crate::formats::wheel::archive::{RawEntry, find_dist_info_dir};
use crate::formats::wheel::name::WheelName;
use crate::formats::wheel::record::{HashAlgorithm, Record, RecordHash, RecordRow};
use crate::formats::wheel::verify::{UNLISTED_RECORD_FILES, inflate};
use crate::formats::wheel::zipformat::{
    CENTRAL_HEADER_LEN, CENTRAL_HEADER_SIGNATURE, CompressionMethod, DosDateTime,
    END_OF_CENTRAL_DIRECTORY_LEN, END_OF_CENTRAL_DIRECTORY_SIGNATURE, FLAG_UTF8, LOCAL_HEADER_LEN,
    LOCAL_HEADER_SIGNATURE, S_IFREG, check_entry_name, find_case_collision,
};
use crate::io_error::IoError;

/// zlib's default level, which Python's `wheel` uses too.
const DEFLATE_LEVEL: u32 = 6;
/// "Version made by": unix (3) and zip specification 2.0.
const VERSION_MADE_BY: u16 = (3 << 8) | 20;
const DEFAULT_FILE_MODE: u32 = 0o644;
/// Largest size or offset a zip header holds without zip64.
const MAX_ZIP32: u64 = u32::MAX as u64;

/// What to put in one entry of the new wheel.
#[derive(Clone, Debug)]
pub enum Contents<'a> {
    /// Copied as compressed in another wheel: no recompression, no rehash.
    Raw(RawEntry<'a>),
    /// New contents (permission bits in `mode`), deflated at a fixed level.
    Bytes { data: Vec<u8>, mode: u32 },
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Seconds since the unix epoch stamped on every entry, usually from
    /// [`source_date_epoch`]. Without it, the newest timestamp among the
    /// copied entries is used, so the output still depends only on inputs.
    pub epoch: Option<u64>,
}

/// `SOURCE_DATE_EPOCH` from the environment: `None` when unset or empty.
pub fn source_date_epoch() -> Result<Option<u64>, WheelError> {
    parse_source_date_epoch(std::env::var_os("SOURCE_DATE_EPOCH"))
}

fn parse_source_date_epoch(value: Option<OsString>) -> Result<Option<u64>, WheelError> {
    let Some(value) = value else {
        return Ok(None);
    };
    let invalid = || WheelError::InvalidSourceDateEpoch {
        value: value.to_string_lossy().into_owned(),
    };
    let text = value.to_str().ok_or_else(invalid)?.trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse::<u64>().map(Some).map_err(|_| invalid())
}

/// Writes `out_dir/{name.file_name()}` atomically (temporary file, then
/// rename) and returns its path. RECORD is generated here: an input entry
/// `*.dist-info/RECORD` (or its signatures, which the new RECORD would
/// invalidate) is dropped. On error nothing is left in `out_dir`.
///
/// An existing file of the same name is replaced; callers that must not
/// overwrite an input wheel should write elsewhere.
pub fn write_wheel(
    out_dir: &Path,
    name: &WheelName,
    entries: Vec<(String, Contents<'_>)>,
    options: &WriteOptions,
) -> Result<PathBuf, WheelError> {
    let file_name = name.file_name();
    if WheelName::parse(&file_name)? != *name {
        return Err(WheelError::InvalidFileName {
            file_name,
            reason: "a tag is empty or contains a character a wheel file name cannot carry",
        });
    }
    let out_path = out_dir.join(&file_name);
    let dist_info_dir =
        find_dist_info_dir(&out_path, entries.iter().map(|(n, _)| n.as_str()), name)?;
    let record_path = format!("{dist_info_dir}/RECORD");
    let mut entries: Vec<(String, Contents<'_>)> = entries
        .into_iter()
        .filter(|(entry, _)| !is_record_or_signature(entry, &dist_info_dir))
        .collect();
    check_names(&out_path, &entries)?;
    let modified = match options.epoch {
        Some(epoch) => DosDateTime::from_unix(epoch),
        None => newest_raw_timestamp(&entries).unwrap_or(DosDateTime::MIN),
    };

    let dist_info_prefix = format!("{dist_info_dir}/");
    entries.sort_by(|(a, _), (b, _)| {
        (a.starts_with(&dist_info_prefix), a).cmp(&(b.starts_with(&dist_info_prefix), b))
    });
    let mut prepared = entries
        .into_par_iter()
        .map(|(entry, contents)| Prepared::new(&out_path, entry, contents))
        .collect::<Result<Vec<_>, _>>()?;

    let mut rows: Vec<RecordRow> = prepared.iter().map(Prepared::record_row).collect();
    rows.push(RecordRow {
        path: record_path.clone(),
        hash: None,
        size: None,
    });
    let record = Record::from_rows(rows).map_err(|source| WheelError::Malformed {
        wheel: out_path.clone(),
        entry: record_path.clone(),
        source,
    })?;
    let record = Contents::Bytes {
        data: record.to_string().into_bytes(),
        mode: DEFAULT_FILE_MODE,
    };
    prepared.push(Prepared::new(&out_path, record_path, record)?);

    write_atomically(out_dir, &out_path, |out| {
        write_zip(&out_path, out, &prepared, modified)
    })?;
    Ok(out_path)
}

fn is_record_or_signature(entry: &str, dist_info_dir: &str) -> bool {
    entry
        .strip_prefix(dist_info_dir)
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|file| UNLISTED_RECORD_FILES.contains(&file))
}

/// The same name rules the reader enforces, so our output always opens.
fn check_names(wheel: &Path, entries: &[(String, Contents<'_>)]) -> Result<(), WheelError> {
    let mut seen = std::collections::HashSet::with_capacity(entries.len());
    for (entry, _) in entries {
        check_entry_name(entry).map_err(|problem| WheelError::UnsafeEntryName {
            wheel: wheel.to_owned(),
            entry: entry.clone(),
            problem,
        })?;
        if entry.len() > usize::from(u16::MAX) {
            return Err(WheelError::EntryNameTooLong {
                wheel: wheel.to_owned(),
                entry: entry.clone(),
            });
        }
        if !seen.insert(entry.as_str()) {
            return Err(WheelError::DuplicateEntry {
                wheel: wheel.to_owned(),
                entry: entry.clone(),
            });
        }
    }
    if let Some((entry, other)) = find_case_collision(entries.iter().map(|(n, _)| n.as_str())) {
        return Err(WheelError::CaseCollision {
            wheel: wheel.to_owned(),
            entry: entry.to_owned(),
            other: other.to_owned(),
        });
    }
    Ok(())
}

fn newest_raw_timestamp(entries: &[(String, Contents<'_>)]) -> Option<DosDateTime> {
    entries
        .iter()
        .filter_map(|(_, contents)| match contents {
            Contents::Raw(raw) => Some(raw.entry.modified),
            Contents::Bytes { .. } => None,
        })
        .max()
}

/// An entry ready to be written: compressed bytes and the facts its
/// headers and RECORD row need.
struct Prepared<'a> {
    name: String,
    method: CompressionMethod,
    crc32: u32,
    size: u64,
    data: Cow<'a, [u8]>,
    mode: u32,
    sha256: RecordHash,
}

impl<'a> Prepared<'a> {
    fn new(wheel: &Path, name: String, contents: Contents<'a>) -> Result<Self, WheelError> {
        let prepared = match contents {
            Contents::Raw(raw) => Self {
                method: raw.entry.method,
                crc32: raw.entry.crc32,
                size: raw.entry.size,
                data: Cow::Borrowed(raw.compressed),
                mode: raw.entry.unix_mode.unwrap_or(DEFAULT_FILE_MODE),
                sha256: match raw.sha256 {
                    Some(digest) => RecordHash {
                        algorithm: HashAlgorithm::Sha256,
                        digest: digest.to_vec(),
                    },
                    None => rehash(wheel, &name, &raw)?,
                },
                name,
            },
            Contents::Bytes { data, mode } => {
                // Hashing runs beside the (chunked, parallel) deflate rather than
                // after it: for a 30 MB library that is the serial tail of the write.
                let (compressed, (crc32, sha256)) = rayon::join(
                    || deflate(&data),
                    || (crc32fast::hash(&data), RecordHash::sha256(&data)),
                );
                let compressed = compressed.map_err(IoError::at("write", wheel))?;
                let size = data.len() as u64;
                let (method, stored) = if compressed.len() < data.len() {
                    (CompressionMethod::Deflated, compressed)
                } else {
                    (CompressionMethod::Stored, data)
                };
                Self {
                    name,
                    method,
                    crc32,
                    size,
                    data: Cow::Owned(stored),
                    mode,
                    sha256,
                }
            }
        };
        if prepared.size > MAX_ZIP32 || prepared.data.len() as u64 > MAX_ZIP32 {
            return Err(WheelError::EntryTooLarge {
                wheel: wheel.to_owned(),
                entry: prepared.name,
                size: prepared.size,
            });
        }
        Ok(prepared)
    }

    fn record_row(&self) -> RecordRow {
        RecordRow {
            path: self.name.clone(),
            hash: Some(self.sha256.clone()),
            size: Some(self.size),
        }
    }
}

/// A copied entry whose input RECORD used sha384/sha512 still needs sha256.
fn rehash(wheel: &Path, name: &str, raw: &RawEntry<'_>) -> Result<RecordHash, WheelError> {
    let mut hasher = HashAlgorithm::Sha256.hasher();
    let mut buffer = vec![0u8; 256 * 1024];
    inflate(raw.entry, raw.compressed, &mut buffer, |chunk| {
        hasher.update(chunk)
    })
    .map_err(|detail| WheelError::CorruptEntry {
        wheel: wheel.to_owned(),
        entry: name.to_owned(),
        detail,
    })?;
    Ok(hasher.finish())
}

/// Entries larger than this are deflated in independent chunks on all cores.
const PARALLEL_DEFLATE_CHUNK: usize = 1 << 20;

/// Deflates `data`. A large entry (a vendored OpenBLAS is ~30 MB) is cut
/// into fixed 1 MiB chunks compressed in parallel, the way pigz does: each
/// chunk but the last ends with a sync flush (an empty stored block that
/// realigns to a byte boundary), so their concatenation is one valid deflate
/// stream. Chunk boundaries are fixed, so the output stays deterministic;
/// the cost is a few hundred bytes per chunk of lost back-references.
fn deflate(data: &[u8]) -> std::io::Result<Vec<u8>> {
    if data.len() <= 2 * PARALLEL_DEFLATE_CHUNK {
        let mut encoder = flate2::write::DeflateEncoder::new(
            Vec::with_capacity(data.len() / 2),
            Compression::new(DEFLATE_LEVEL),
        );
        encoder.write_all(data)?;
        return encoder.finish();
    }
    let chunks: Vec<&[u8]> = data.chunks(PARALLEL_DEFLATE_CHUNK).collect();
    let last = chunks.len() - 1;
    let parts: Vec<std::io::Result<Vec<u8>>> = chunks
        .par_iter()
        .enumerate()
        .map(|(index, chunk)| {
            let mut compressor = flate2::Compress::new(Compression::new(DEFLATE_LEVEL), false);
            let flush = if index == last {
                flate2::FlushCompress::Finish
            } else {
                flate2::FlushCompress::Sync
            };
            let mut out = Vec::with_capacity(chunk.len() / 2 + 1024);
            loop {
                let consumed = usize::try_from(compressor.total_in()).unwrap_or(usize::MAX);
                let rest = chunk.get(consumed..).unwrap_or_default();
                if out.capacity() - out.len() < 1024 {
                    out.reserve(out.capacity().max(64 * 1024));
                }
                let status = compressor
                    .compress_vec(rest, &mut out, flush)
                    .map_err(std::io::Error::other)?;
                let done_input = compressor.total_in() as usize == chunk.len();
                match status {
                    flate2::Status::StreamEnd => break,
                    // A sync flush is complete once all input is in and output space was left over.
                    flate2::Status::Ok | flate2::Status::BufError
                        if done_input && index != last && out.capacity() - out.len() >= 1024 =>
                    {
                        break;
                    }
                    _ => {}
                }
            }
            Ok(out)
        })
        .collect();
    let mut joined = Vec::with_capacity(data.len() / 2);
    for part in parts {
        joined.extend_from_slice(&part?);
    }
    Ok(joined)
}

/// Runs `write` on a temporary file in `out_dir`, then renames it to
/// `out_path`; on failure the temporary file is removed.
fn write_atomically(
    out_dir: &Path,
    out_path: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<(), WheelError>,
) -> Result<(), WheelError> {
    let write_error = |source| IoError::new("write", out_path, source);
    let temporary = tempfile::NamedTempFile::new_in(out_dir).map_err(write_error)?;
    {
        let mut out = BufWriter::with_capacity(1 << 20, temporary.as_file());
        write(&mut out)?;
        out.flush().map_err(write_error)?;
    }
    // Temporary files are created 0600; a wheel is an ordinary file.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let permissions = std::fs::Permissions::from_mode(0o644);
        temporary
            .as_file()
            .set_permissions(permissions)
            .map_err(write_error)?;
    }
    temporary
        .persist(out_path)
        .map_err(|error| write_error(error.error))?;
    Ok(())
}

/// Lays out local headers and data, then the central directory.
fn write_zip(
    wheel: &Path,
    out: &mut dyn Write,
    entries: &[Prepared<'_>],
    modified: DosDateTime,
) -> Result<(), WheelError> {
    let too_large = || WheelError::ArchiveTooLarge {
        wheel: wheel.to_owned(),
    };
    let write_error = |source| IoError::new("write", wheel, source);
    let entry_count = u16::try_from(entries.len()).map_err(|_| too_large())?;
    let mut central_directory = Vec::new();
    let mut offset: u64 = 0;
    for entry in entries {
        let local_offset = u32::try_from(offset).map_err(|_| too_large())?;
        let header = entry_header(entry, modified);
        let mut local = Vec::with_capacity(LOCAL_HEADER_LEN + entry.name.len());
        put_u32(&mut local, LOCAL_HEADER_SIGNATURE);
        local.extend_from_slice(&header);
        put_u16(&mut local, 0); // extra field length
        local.extend_from_slice(entry.name.as_bytes());
        out.write_all(&local).map_err(write_error)?;
        out.write_all(&entry.data).map_err(write_error)?;
        offset += (local.len() + entry.data.len()) as u64;

        put_u32(&mut central_directory, CENTRAL_HEADER_SIGNATURE);
        put_u16(&mut central_directory, VERSION_MADE_BY);
        central_directory.extend_from_slice(&header);
        put_u16(&mut central_directory, 0); // extra field length
        put_u16(&mut central_directory, 0); // comment length
        put_u16(&mut central_directory, 0); // disk number
        put_u16(&mut central_directory, 0); // internal attributes
        put_u32(
            &mut central_directory,
            (S_IFREG | (entry.mode & 0o7777)) << 16,
        );
        put_u32(&mut central_directory, local_offset);
        central_directory.extend_from_slice(entry.name.as_bytes());
    }
    debug_assert_eq!(
        central_directory.len(),
        entries
            .iter()
            .map(|e| CENTRAL_HEADER_LEN + e.name.len())
            .sum::<usize>()
    );
    let central_directory_offset = u32::try_from(offset).map_err(|_| too_large())?;
    let central_directory_len = u32::try_from(central_directory.len()).map_err(|_| too_large())?;
    if offset + u64::from(central_directory_len) > MAX_ZIP32 {
        return Err(too_large());
    }
    let mut end = Vec::with_capacity(END_OF_CENTRAL_DIRECTORY_LEN);
    put_u32(&mut end, END_OF_CENTRAL_DIRECTORY_SIGNATURE);
    put_u16(&mut end, 0); // this disk
    put_u16(&mut end, 0); // disk with the central directory
    put_u16(&mut end, entry_count);
    put_u16(&mut end, entry_count);
    put_u32(&mut end, central_directory_len);
    put_u32(&mut end, central_directory_offset);
    put_u16(&mut end, 0); // comment length
    out.write_all(&central_directory).map_err(write_error)?;
    out.write_all(&end).map_err(write_error)?;
    Ok(())
}

/// The fields local and central headers share, from "version needed" to
/// the file name length. Sizes were checked to fit 32 bits when prepared.
fn entry_header(entry: &Prepared<'_>, modified: DosDateTime) -> Vec<u8> {
    let mut header = Vec::with_capacity(24);
    put_u16(&mut header, entry.method.version_needed());
    put_u16(
        &mut header,
        if entry.name.is_ascii() { 0 } else { FLAG_UTF8 },
    );
    put_u16(&mut header, entry.method.code());
    put_u16(&mut header, modified.time);
    put_u16(&mut header, modified.date);
    put_u32(&mut header, entry.crc32);
    put_u32(&mut header, entry.data.len() as u32);
    put_u32(&mut header, entry.size as u32);
    put_u16(&mut header, entry.name.len() as u16);
    header
}

fn put_u16(out: &mut Vec<u8>, value: u16) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put_u32(out: &mut Vec<u8>, value: u32) {
    out.extend_from_slice(&value.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inflate_all(compressed: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::DeflateDecoder::new(compressed), &mut out)
            .unwrap();
        out
    }

    #[test]
    fn large_entries_deflate_in_parallel_chunks_to_one_valid_stream() {
        // Compressible but not trivial, and not a multiple of the chunk size.
        let data: Vec<u8> = (0..5 * PARALLEL_DEFLATE_CHUNK + 12345)
            .map(|i| ((i * 7919) % 251) as u8 ^ (i >> 13) as u8)
            .collect();
        let compressed = deflate(&data).unwrap();
        assert!(compressed.len() < data.len());
        assert!(inflate_all(&compressed) == data, "round trip differs");
        assert_eq!(deflate(&data).unwrap(), compressed, "not deterministic");
    }

    #[test]
    fn incompressible_large_entries_round_trip() {
        let mut state: u64 = 0x9e3779b97f4a7c15;
        let data: Vec<u8> = (0..3 * PARALLEL_DEFLATE_CHUNK)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        assert!(inflate_all(&deflate(&data).unwrap()) == data);
    }

    #[test]
    fn source_date_epoch_unset_or_empty_means_none() {
        assert_eq!(parse_source_date_epoch(None).unwrap(), None);
        assert_eq!(parse_source_date_epoch(Some(" ".into())).unwrap(), None);
    }

    #[test]
    fn source_date_epoch_parses_seconds() {
        assert_eq!(
            parse_source_date_epoch(Some("1700000000".into())).unwrap(),
            Some(1_700_000_000)
        );
    }

    #[test]
    fn source_date_epoch_rejects_non_integers_with_a_clear_error() {
        for value in ["yesterday", "-5", "1.5"] {
            let error = parse_source_date_epoch(Some(value.into())).unwrap_err();
            assert!(matches!(error, WheelError::InvalidSourceDateEpoch { .. }));
            assert!(
                error
                    .to_string()
                    .contains(&format!("SOURCE_DATE_EPOCH=`{value}`")),
                "{error}"
            );
        }
    }
}
