//! Structural checks of a wheel's zip container: the central directory (read
//! by the `zip` crate), local headers, entry names and types, size limits.
//! Contents are checked later, against RECORD.

use std::collections::HashSet;
use std::io::Cursor;
use std::path::Path;

use crate::formats::wheel::WheelError;
use crate::formats::wheel::archive::{Limits, ZipEntry};
use crate::formats::wheel::zipformat::{
    CENTRAL_HEADER_LEN, CENTRAL_HEADER_SIGNATURE, CompressionMethod, DosDateTime,
    END_OF_CENTRAL_DIRECTORY_LEN, END_OF_CENTRAL_DIRECTORY_SIGNATURE, FLAG_ENCRYPTED,
    LOCAL_HEADER_LEN, LOCAL_HEADER_SIGNATURE, S_IFDIR, S_IFLNK, S_IFMT, S_IFREG, check_entry_name,
    find_case_collision, read_u16, read_u32,
};

/// "Version made by" host system for unix (APPNOTE 4.4.2.2).
const SYSTEM_UNIX: u16 = 3;
/// The archive comment is at most this long, so the end record is within
/// this many bytes of the end of the file.
const MAX_END_RECORD_DISTANCE: usize = END_OF_CENTRAL_DIRECTORY_LEN + u16::MAX as usize;

/// Lists the regular-file entries of a wheel, in central-directory order,
/// after checking everything that can be checked without decompressing.
pub(crate) fn scan_entries(
    wheel: &Path,
    bytes: &[u8],
    limits: &Limits,
) -> Result<Vec<ZipEntry>, WheelError> {
    let archive = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|source| open_error(wheel, bytes, source))?;
    let central_directory_start = archive.central_directory_start();
    if archive.has_duplicate_names() {
        let entry = first_duplicate_name(bytes, central_directory_start)
            .unwrap_or_else(|| "(unknown)".to_owned());
        return Err(WheelError::DuplicateEntry {
            wheel: wheel.to_owned(),
            entry,
        });
    }

    let mut files = Vec::with_capacity(archive.len());
    let mut extents = Vec::with_capacity(archive.len());
    let mut total_size: u64 = 0;
    for index in 0..archive.len() {
        let entry = archive
            .by_index_data(index)
            .map_err(|source| WheelError::NotAZip {
                wheel: wheel.to_owned(),
                source,
            })?;
        let central = CentralHeader::at(bytes, entry.central_header_start())
            .ok_or_else(|| truncated(wheel, "central directory header out of bounds"))?;
        let Some(name) = file_name(wheel, entry.name_raw(), &central)? else {
            continue;
        };
        let method = compression_method(wheel, name, &central)?;
        let (size, compressed_size) = (entry.size(), entry.compressed_size());
        total_size = total_size.saturating_add(size);
        check_sizes(
            wheel,
            name,
            method,
            (size, compressed_size),
            total_size,
            limits,
        )?;
        let header_start = entry.header_start();
        let (data_offset, data_end) = data_range(
            wheel,
            bytes,
            name,
            header_start,
            central.name,
            compressed_size,
        )?;
        extents.push((header_start, data_end, files.len()));
        files.push(ZipEntry {
            name: name.to_owned(),
            unix_mode: central.unix_mode,
            size,
            crc32: entry.crc32(),
            method,
            data_offset,
            compressed_size,
            modified: central.modified,
        });
    }
    check_no_overlap(wheel, &files, extents, central_directory_start)?;
    check_no_case_collision(wheel, &files)?;
    Ok(files)
}

/// The entry's name, checked: UTF-8, the same name Python's zipfile would
/// extract, a safe path, and a regular file or directory. `None` for a
/// directory (wheels list only files).
fn file_name<'a>(
    wheel: &Path,
    name_raw: &[u8],
    central: &CentralHeader<'a>,
) -> Result<Option<&'a str>, WheelError> {
    let name = std::str::from_utf8(central.name).map_err(|_| WheelError::NonUtf8EntryName {
        wheel: wheel.to_owned(),
        entry: String::from_utf8_lossy(central.name).into_owned(),
    })?;
    if name_raw != central.name {
        // The zip crate applied an Info-ZIP Unicode Path field; Python's
        // zipfile would not, so the two would extract different names.
        return Err(corrupt(
            wheel,
            name,
            "a Unicode Path extra field renames it",
        ));
    }
    let kind = entry_kind(wheel, name, central.unix_mode)?;
    let checked_name = match kind {
        EntryKind::Directory => name.strip_suffix('/').unwrap_or(name),
        EntryKind::File => name,
    };
    check_entry_name(checked_name).map_err(|problem| WheelError::UnsafeEntryName {
        wheel: wheel.to_owned(),
        entry: name.to_owned(),
        problem,
    })?;
    Ok((kind == EntryKind::File).then_some(name))
}

/// Stored or deflated, and not encrypted: all an installer must support.
fn compression_method(
    wheel: &Path,
    name: &str,
    central: &CentralHeader<'_>,
) -> Result<CompressionMethod, WheelError> {
    if central.flags & FLAG_ENCRYPTED != 0 {
        return Err(WheelError::EncryptedEntry {
            wheel: wheel.to_owned(),
            entry: name.to_owned(),
        });
    }
    match central.method {
        0 => Ok(CompressionMethod::Stored),
        8 => Ok(CompressionMethod::Deflated),
        method => Err(WheelError::UnsupportedCompression {
            wheel: wheel.to_owned(),
            entry: name.to_owned(),
            method,
        }),
    }
}

/// The entry's declared sizes: consistent for a stored entry, within the
/// total size limit (`total` counts this entry), and not a zip bomb's ratio.
fn check_sizes(
    wheel: &Path,
    name: &str,
    method: CompressionMethod,
    (size, compressed_size): (u64, u64),
    total: u64,
    limits: &Limits,
) -> Result<(), WheelError> {
    if method == CompressionMethod::Stored && size != compressed_size {
        return Err(corrupt(
            wheel,
            name,
            "stored entry's compressed and uncompressed sizes differ",
        ));
    }
    if total > limits.max_total_size {
        return Err(WheelError::TotalSizeLimit {
            wheel: wheel.to_owned(),
            total,
            limit: limits.max_total_size,
        });
    }
    if size > limits.ratio_exempt_size
        && size > compressed_size.saturating_mul(limits.max_compression_ratio)
    {
        return Err(WheelError::CompressionRatioLimit {
            wheel: wheel.to_owned(),
            entry: name.to_owned(),
            size,
            compressed: compressed_size,
            limit: limits.max_compression_ratio,
        });
    }
    Ok(())
}

/// Where the entry's data starts and ends, both inside the file.
fn data_range(
    wheel: &Path,
    bytes: &[u8],
    name: &str,
    header_start: u64,
    central_name: &[u8],
    compressed_size: u64,
) -> Result<(u64, u64), WheelError> {
    let data_offset = local_data_offset(bytes, header_start, central_name).map_err(|detail| {
        WheelError::BadLocalHeader {
            wheel: wheel.to_owned(),
            entry: name.to_owned(),
            detail,
        }
    })?;
    let data_end = data_offset
        .checked_add(compressed_size)
        .filter(|&end| usize::try_from(end).is_ok_and(|end| end <= bytes.len()))
        .ok_or_else(|| {
            truncated(
                wheel,
                &format!("entry `{name}` extends past the end of the file"),
            )
        })?;
    Ok((data_offset, data_end))
}

fn corrupt(wheel: &Path, name: &str, detail: &str) -> WheelError {
    WheelError::CorruptEntry {
        wheel: wheel.to_owned(),
        entry: name.to_owned(),
        detail: detail.to_owned(),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum EntryKind {
    File,
    Directory,
}

/// Directories are named with a trailing `/` (that is all Python's zipfile
/// looks at); anything that is neither a directory nor a regular file is
/// refused, because installers would create it as an ordinary file.
fn entry_kind(wheel: &Path, name: &str, unix_mode: Option<u32>) -> Result<EntryKind, WheelError> {
    let file_type = unix_mode.map_or(0, |mode| mode & S_IFMT);
    let named_as_directory = name.ends_with('/');
    match file_type {
        S_IFLNK => Err(WheelError::SymlinkEntry {
            wheel: wheel.to_owned(),
            entry: name.to_owned(),
        }),
        0 | S_IFREG | S_IFDIR if named_as_directory => Ok(EntryKind::Directory),
        0 | S_IFREG => Ok(EntryKind::File),
        _ => Err(WheelError::UnsupportedEntryType {
            wheel: wheel.to_owned(),
            entry: name.to_owned(),
            mode: file_type,
        }),
    }
}

/// The fields of a central directory header that the `zip` crate does not
/// expose raw (or interprets), read straight from the file.
struct CentralHeader<'a> {
    flags: u16,
    method: u16,
    modified: DosDateTime,
    unix_mode: Option<u32>,
    name: &'a [u8],
}

impl<'a> CentralHeader<'a> {
    fn at(bytes: &'a [u8], offset: u64) -> Option<Self> {
        let header = bytes.get(usize::try_from(offset).ok()?..)?;
        if read_u32(header, 0)? != CENTRAL_HEADER_SIGNATURE {
            return None;
        }
        let system = read_u16(header, 4)? >> 8;
        let external_attributes = read_u32(header, 38)?;
        // Some non-unix archivers still put a mode in the high half.
        let mode = external_attributes >> 16;
        let unix_mode = (system == SYSTEM_UNIX || mode != 0)
            .then_some(mode)
            .filter(|&m| m != 0);
        let name_len = usize::from(read_u16(header, 28)?);
        Some(Self {
            flags: read_u16(header, 8)?,
            method: read_u16(header, 10)?,
            modified: DosDateTime {
                time: read_u16(header, 12)?,
                date: read_u16(header, 14)?,
            },
            unix_mode,
            name: header.get(CENTRAL_HEADER_LEN..CENTRAL_HEADER_LEN + name_len)?,
        })
    }
}

/// Where an entry's data starts, from its local header, which must carry
/// the same name as the central directory (Python's zipfile insists).
fn local_data_offset(bytes: &[u8], header_start: u64, name: &[u8]) -> Result<u64, &'static str> {
    let header = usize::try_from(header_start)
        .ok()
        .and_then(|start| bytes.get(start..))
        .ok_or("it starts past the end of the file")?;
    if read_u32(header, 0) != Some(LOCAL_HEADER_SIGNATURE) {
        return Err("no local header signature where the central directory points");
    }
    let name_len = read_u16(header, 26).ok_or("it is cut short")?;
    let extra_len = read_u16(header, 28).ok_or("it is cut short")?;
    let local_name = header
        .get(LOCAL_HEADER_LEN..LOCAL_HEADER_LEN + usize::from(name_len))
        .ok_or("its name is cut short")?;
    if local_name != name {
        return Err("its name differs from the central directory's");
    }
    let header_len = LOCAL_HEADER_LEN as u64 + u64::from(name_len) + u64::from(extra_len);
    header_start
        .checked_add(header_len)
        .ok_or("its offset overflows")
}

/// Two entries sharing bytes is the classic way to multiply a zip bomb.
fn check_no_overlap(
    wheel: &Path,
    files: &[ZipEntry],
    mut extents: Vec<(u64, u64, usize)>,
    central_directory_start: u64,
) -> Result<(), WheelError> {
    extents.sort_unstable();
    let name = |index: usize| {
        files
            .get(index)
            .map_or_else(String::new, |f| f.name.clone())
    };
    for pair in extents.windows(2) {
        if let [(_, end, first), (start, _, second)] = *pair
            && end > start
        {
            return Err(WheelError::OverlappingEntries {
                wheel: wheel.to_owned(),
                entry: name(first),
                other: name(second),
            });
        }
    }
    if let Some(&(_, end, last)) = extents.last()
        && end > central_directory_start
    {
        return Err(WheelError::OverlappingEntries {
            wheel: wheel.to_owned(),
            entry: name(last),
            other: "(central directory)".to_owned(),
        });
    }
    Ok(())
}

fn check_no_case_collision(wheel: &Path, files: &[ZipEntry]) -> Result<(), WheelError> {
    match find_case_collision(files.iter().map(|file| file.name.as_str())) {
        Some((entry, other)) => Err(WheelError::CaseCollision {
            wheel: wheel.to_owned(),
            entry: entry.to_owned(),
            other: other.to_owned(),
        }),
        None => Ok(()),
    }
}

/// The `zip` crate only reports that names repeat; walk the central
/// directory to say which one.
fn first_duplicate_name(bytes: &[u8], central_directory_start: u64) -> Option<String> {
    let mut seen = HashSet::new();
    let mut offset = usize::try_from(central_directory_start).ok()?;
    loop {
        let header = bytes.get(offset..)?;
        if read_u32(header, 0)? != CENTRAL_HEADER_SIGNATURE {
            return None;
        }
        let name_len = usize::from(read_u16(header, 28)?);
        let other_len = usize::from(read_u16(header, 30)?) + usize::from(read_u16(header, 32)?);
        let name = header.get(CENTRAL_HEADER_LEN..CENTRAL_HEADER_LEN + name_len)?;
        if !seen.insert(name) {
            return Some(String::from_utf8_lossy(name).into_owned());
        }
        offset = offset.checked_add(CENTRAL_HEADER_LEN + name_len + other_len)?;
    }
}

/// A file that starts like a zip but has no end record was cut short.
fn open_error(wheel: &Path, bytes: &[u8], source: zip::result::ZipError) -> WheelError {
    let starts_like_zip = read_u32(bytes, 0) == Some(LOCAL_HEADER_SIGNATURE);
    let tail = &bytes[bytes.len().saturating_sub(MAX_END_RECORD_DISTANCE)..];
    let has_end_record = tail
        .windows(4)
        .any(|window| window == END_OF_CENTRAL_DIRECTORY_SIGNATURE.to_le_bytes());
    if starts_like_zip && !has_end_record {
        truncated(wheel, "no end of central directory record")
    } else {
        WheelError::NotAZip {
            wheel: wheel.to_owned(),
            source,
        }
    }
}

fn truncated(wheel: &Path, detail: &str) -> WheelError {
    WheelError::TruncatedZip {
        wheel: wheel.to_owned(),
        detail: detail.to_owned(),
    }
}
