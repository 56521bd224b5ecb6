//! Checking a wheel's contents against its RECORD: every file listed, every
//! listed file present, sizes and hashes right. Hashing happens while
//! decompressing, in parallel over entries.

use std::io::Read;
use std::path::Path;

use rayon::prelude::*;

use crate::formats::wheel::WheelError;
use crate::formats::wheel::archive::ZipEntry;
use crate::formats::wheel::record::{HashAlgorithm, Record};
use crate::formats::wheel::zipformat::CompressionMethod;

/// Decompression buffer per worker thread: large enough that per-call
/// overhead vanishes, small enough to stay in L2.
const CHUNK_LEN: usize = 256 * 1024;

/// Files in the dist-info directory that RECORD cannot list: itself and
/// its signatures (PEP 427).
pub(crate) const UNLISTED_RECORD_FILES: [&str; 3] = ["RECORD", "RECORD.jws", "RECORD.p7s"];

/// Checks that RECORD and the archive list the same files with the same
/// sizes, without reading any contents.
pub(crate) fn check_record_listing(
    wheel: &Path,
    entries: &[ZipEntry],
    record: &Record,
    dist_info_dir: &str,
) -> Result<(), WheelError> {
    let error_entry = |name: &str| (wheel.to_owned(), name.to_owned());
    for entry in entries {
        let exempt = entry
            .name
            .strip_prefix(dist_info_dir)
            .and_then(|rest| rest.strip_prefix('/'))
            .is_some_and(|file| UNLISTED_RECORD_FILES.contains(&file));
        let Some(row) = record.get(&entry.name) else {
            if exempt {
                continue;
            }
            let (wheel, entry) = error_entry(&entry.name);
            return Err(WheelError::UnlistedEntry { wheel, entry });
        };
        if row.hash.is_none() && !exempt {
            let (wheel, entry) = error_entry(&entry.name);
            return Err(WheelError::MissingHash { wheel, entry });
        }
        if let Some(expected) = row.size
            && expected != entry.size
        {
            let (wheel, entry_name) = error_entry(&entry.name);
            return Err(WheelError::SizeMismatch {
                wheel,
                entry: entry_name,
                expected,
                actual: entry.size,
            });
        }
    }
    let present: std::collections::HashSet<&str> =
        entries.iter().map(|entry| entry.name.as_str()).collect();
    // Some generators list directories; they are not files to check.
    let missing = record
        .rows()
        .iter()
        .find(|row| !row.path.ends_with('/') && !present.contains(row.path.as_str()));
    if let Some(row) = missing {
        let (wheel, entry) = error_entry(&row.path);
        return Err(WheelError::MissingEntry { wheel, entry });
    }
    Ok(())
}

/// One entry's verification: the sha256 RECORD gave, if it gave one.
type Verified = Result<Option<[u8; 32]>, WheelError>;

/// Decompresses every entry, checking its CRC-32, size and RECORD hash.
/// Returns, per entry, the verified sha256 digest when RECORD gives one
/// (so a writer can reuse it). The reported error is the first in archive
/// order, whichever thread finds it.
pub(crate) fn verify_contents(
    wheel: &Path,
    bytes: &[u8],
    entries: &[ZipEntry],
    record: &Record,
) -> Result<Vec<Option<[u8; 32]>>, WheelError> {
    // Largest first: one shared library is often half a wheel, and starting
    // it last would leave the other threads idle at the end.
    let mut order: Vec<(usize, &ZipEntry)> = entries.iter().enumerate().collect();
    order.sort_by_key(|(_, entry)| std::cmp::Reverse(entry.size));
    let mut results: Vec<(usize, Verified)> = order
        .into_par_iter()
        .with_max_len(1)
        .map_init(
            || vec![0u8; CHUNK_LEN],
            |buffer, (index, entry)| (index, verify_entry(wheel, bytes, entry, record, buffer)),
        )
        .collect();
    results.sort_unstable_by_key(|(index, _)| *index);
    results.into_iter().map(|(_, result)| result).collect()
}

fn verify_entry(
    wheel: &Path,
    bytes: &[u8],
    entry: &ZipEntry,
    record: &Record,
    buffer: &mut [u8],
) -> Verified {
    let expected = record.get(&entry.name).and_then(|row| row.hash.as_ref());
    let mut hasher = expected.map(|hash| hash.algorithm.hasher());
    let compressed = compressed_bytes(wheel, bytes, entry)?;
    inflate(entry, compressed, buffer, |chunk| {
        if let Some(hasher) = &mut hasher {
            hasher.update(chunk);
        }
    })
    .map_err(|detail| corrupt(wheel, entry, detail))?;
    let (Some(expected), Some(hasher)) = (expected, hasher) else {
        return Ok(None);
    };
    let actual = hasher.finish();
    if actual != *expected {
        return Err(WheelError::HashMismatch {
            wheel: wheel.to_owned(),
            entry: entry.name.clone(),
            expected: expected.to_string(),
            actual: actual.to_string(),
        });
    }
    Ok((actual.algorithm == HashAlgorithm::Sha256)
        .then(|| actual.digest.as_slice().try_into().ok())
        .flatten())
}

/// The decompressed contents of one entry, CRC-checked.
pub(crate) fn read_entry(
    wheel: &Path,
    bytes: &[u8],
    entry: &ZipEntry,
) -> Result<Vec<u8>, WheelError> {
    let compressed = compressed_bytes(wheel, bytes, entry)?;
    let capacity = usize::try_from(entry.size).unwrap_or(0);
    let mut contents = Vec::with_capacity(capacity);
    let mut buffer = vec![0u8; CHUNK_LEN.min(capacity.saturating_add(1))];
    inflate(entry, compressed, &mut buffer, |chunk| {
        contents.extend_from_slice(chunk)
    })
    .map_err(|detail| corrupt(wheel, entry, detail))?;
    Ok(contents)
}

pub(crate) fn compressed_bytes<'a>(
    wheel: &Path,
    bytes: &'a [u8],
    entry: &ZipEntry,
) -> Result<&'a [u8], WheelError> {
    let start = usize::try_from(entry.data_offset).ok();
    let len = usize::try_from(entry.compressed_size).ok();
    start
        .zip(len)
        .and_then(|(start, len)| bytes.get(start..start.checked_add(len)?))
        .ok_or_else(|| corrupt(wheel, entry, "its data lies outside the file".to_owned()))
}

/// Streams an entry's decompressed bytes to `sink`, failing if they do not
/// match the declared size and CRC-32. Never produces more than the
/// declared size, so a lying header cannot make us inflate a bomb.
pub(crate) fn inflate(
    entry: &ZipEntry,
    compressed: &[u8],
    buffer: &mut [u8],
    mut sink: impl FnMut(&[u8]),
) -> Result<(), String> {
    let mut crc = crc32fast::Hasher::new();
    let produced = match entry.method {
        CompressionMethod::Stored => {
            crc.update(compressed);
            sink(compressed);
            compressed.len() as u64
        }
        CompressionMethod::Deflated => {
            let mut decoder = flate2::bufread::DeflateDecoder::new(compressed);
            let mut produced: u64 = 0;
            loop {
                let read = decoder
                    .read(buffer)
                    .map_err(|error| format!("invalid deflate data ({error})"))?;
                let Some(chunk) = buffer.get(..read).filter(|chunk| !chunk.is_empty()) else {
                    break;
                };
                produced += read as u64;
                if produced > entry.size {
                    return Err(format!(
                        "it decompresses to more than the {} bytes its header declares",
                        entry.size
                    ));
                }
                crc.update(chunk);
                sink(chunk);
            }
            produced
        }
    };
    if produced != entry.size {
        return Err(format!(
            "it decompresses to {produced} bytes but its header declares {}",
            entry.size
        ));
    }
    let actual_crc = crc.finalize();
    if actual_crc != entry.crc32 {
        return Err(format!(
            "CRC-32 is {actual_crc:08x} but its header declares {:08x}",
            entry.crc32
        ));
    }
    Ok(())
}

fn corrupt(wheel: &Path, entry: &ZipEntry, detail: String) -> WheelError {
    WheelError::CorruptEntry {
        wheel: wheel.to_owned(),
        entry: entry.name.clone(),
        detail,
    }
}
