//! Opening a wheel: every structural and RECORD check happens in
//! [`WheelArchive::open`], so holding a `WheelArchive` means the wheel is
//! sound and its entries can be copied raw.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use crate::formats::wheel::WheelError;
use crate::formats::wheel::metadata::{self, NameVersion, WheelMetadata};
use crate::formats::wheel::name::{WheelName, same_project};
use crate::formats::wheel::record::Record;
use crate::formats::wheel::scan::scan_entries;
use crate::formats::wheel::verify::{
    check_record_listing, compressed_bytes, read_entry, verify_contents,
};
use crate::formats::wheel::zipformat::{CompressionMethod, DosDateTime};
use crate::io_error::IoError;

/// Zip-bomb guards applied while opening.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Sum of all entries' uncompressed sizes.
    pub max_total_size: u64,
    /// Largest uncompressed:compressed ratio of one entry...
    pub max_compression_ratio: u64,
    /// ...checked only for entries larger than this (small files of zeros
    /// legitimately compress extremely well).
    pub ratio_exempt_size: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_total_size: 8 << 30,
            max_compression_ratio: 1000,
            ratio_exempt_size: 1 << 20,
        }
    }
}

/// Overrides [`Limits::max_total_size`] (bytes).
pub const MAX_UNCOMPRESSED_VAR: &str = "CROSSWHEEL_MAX_UNCOMPRESSED";
/// Overrides [`Limits::max_compression_ratio`].
pub const MAX_RATIO_VAR: &str = "CROSSWHEEL_MAX_RATIO";

impl Limits {
    /// The defaults, with `CROSSWHEEL_MAX_UNCOMPRESSED` and `CROSSWHEEL_MAX_RATIO`
    /// applied: a genuine wheel bigger than the defaults allow needs a way through, and
    /// tests need small limits to exercise the guards without multi-gigabyte inputs.
    pub fn from_env() -> Result<Self, WheelError> {
        let mut limits = Self::default();
        if let Some(value) = limit_from_env(MAX_UNCOMPRESSED_VAR)? {
            limits.max_total_size = value;
        }
        if let Some(value) = limit_from_env(MAX_RATIO_VAR)? {
            limits.max_compression_ratio = value;
        }
        Ok(limits)
    }
}

fn limit_from_env(variable: &'static str) -> Result<Option<u64>, WheelError> {
    let Some(value) = std::env::var_os(variable).filter(|value| !value.is_empty()) else {
        return Ok(None);
    };
    value
        .to_str()
        .and_then(|text| text.trim().parse::<u64>().ok())
        .filter(|&limit| limit > 0)
        .map(Some)
        .ok_or_else(|| WheelError::InvalidLimit {
            variable,
            value: value.to_string_lossy().into_owned(),
        })
}

/// A regular-file entry of the archive (directory entries are dropped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZipEntry {
    pub name: String,
    /// The unix mode from the external attributes, when the archiver set one.
    pub unix_mode: Option<u32>,
    pub size: u64,
    pub crc32: u32,
    pub method: CompressionMethod,
    /// Offset of the compressed bytes in the wheel file.
    pub data_offset: u64,
    pub compressed_size: u64,
    pub modified: DosDateTime,
}

/// An entry's compressed bytes with what a writer needs to copy them
/// unchanged: the central directory facts and the sha256 RECORD verified.
#[derive(Clone, Copy, Debug)]
pub struct RawEntry<'a> {
    pub entry: &'a ZipEntry,
    pub compressed: &'a [u8],
    /// Present when the input RECORD hashed this entry with sha256.
    pub sha256: Option<&'a [u8; 32]>,
}

/// A wheel read into memory and fully verified.
#[derive(Debug)]
pub struct WheelArchive {
    path: PathBuf,
    bytes: Vec<u8>,
    name: WheelName,
    entries: Vec<ZipEntry>,
    verified_sha256: Vec<Option<[u8; 32]>>,
    by_name: HashMap<String, usize>,
    dist_info_dir: String,
    data_dir: Option<String>,
    wheel_metadata: WheelMetadata,
    record: Record,
    name_version: NameVersion,
}

impl WheelArchive {
    pub fn open(path: impl AsRef<Path>) -> Result<Self, WheelError> {
        Self::open_with_limits(path, &Limits::default())
    }

    pub fn open_with_limits(path: impl AsRef<Path>, limits: &Limits) -> Result<Self, WheelError> {
        let path = path.as_ref().to_owned();
        let file_name = path.file_name().unwrap_or_default().to_string_lossy();
        let name = WheelName::parse(&file_name)?;
        let bytes = std::fs::read(&path).map_err(IoError::at("read", &path))?;

        let entries = scan_entries(&path, &bytes, limits)?;
        let by_name: HashMap<String, usize> = entries
            .iter()
            .enumerate()
            .map(|(index, entry)| (entry.name.clone(), index))
            .collect();
        let dist_info_dir =
            find_dist_info_dir(&path, entries.iter().map(|e| e.name.as_str()), &name)?;
        let data_dir = format!("{}.data", dist_info_stem(&dist_info_dir));
        let data_dir_prefix = format!("{data_dir}/");
        let data_dir = entries
            .iter()
            .any(|entry| entry.name.starts_with(&data_dir_prefix))
            .then_some(data_dir);

        let files = DistInfoFiles {
            wheel: &path,
            bytes: &bytes,
            entries: &entries,
            by_name: &by_name,
            dist_info_dir: &dist_info_dir,
        };
        let record = files.parse("RECORD", Record::parse)?;
        let wheel_metadata = files.parse("WHEEL", WheelMetadata::parse)?;
        if wheel_metadata.tags().is_empty() {
            return Err(WheelError::NoWheelTags {
                wheel: path.clone(),
                entry: format!("{dist_info_dir}/WHEEL"),
            });
        }
        let name_version = files.parse("METADATA", NameVersion::parse)?;
        check_record_listing(&path, &entries, &record, &dist_info_dir)?;
        let verified_sha256 = verify_contents(&path, &bytes, &entries, &record)?;
        Ok(Self {
            path,
            bytes,
            name,
            entries,
            verified_sha256,
            by_name,
            dist_info_dir,
            data_dir,
            wheel_metadata,
            record,
            name_version,
        })
    }

    /// The path the wheel was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn name(&self) -> &WheelName {
        &self.name
    }

    /// Regular-file entries in central-directory order.
    pub fn entries(&self) -> &[ZipEntry] {
        &self.entries
    }

    pub fn entry(&self, name: &str) -> Option<&ZipEntry> {
        self.by_name
            .get(name)
            .and_then(|&index| self.entries.get(index))
    }

    /// The decompressed contents of an entry.
    pub fn read(&self, name: &str) -> Result<Vec<u8>, WheelError> {
        read_entry(&self.path, &self.bytes, self.entry_or_error(name)?)
    }

    /// An entry as stored, for copying into another wheel unchanged.
    pub fn raw_entry(&self, name: &str) -> Result<RawEntry<'_>, WheelError> {
        let index = *self.by_name.get(name).ok_or_else(|| self.not_found(name))?;
        self.raw_entry_at(index).ok_or_else(|| self.not_found(name))
    }

    /// Every entry as stored, in central-directory order.
    pub fn raw_entries(&self) -> impl Iterator<Item = RawEntry<'_>> + '_ {
        (0..self.entries.len()).filter_map(|index| self.raw_entry_at(index))
    }

    /// The `{name}-{version}.dist-info` directory, as spelled in the archive.
    pub fn dist_info_dir(&self) -> &str {
        &self.dist_info_dir
    }

    /// The `{name}-{version}.data` directory, if the wheel has one.
    pub fn data_dir(&self) -> Option<&str> {
        self.data_dir.as_deref()
    }

    pub fn wheel_metadata(&self) -> &WheelMetadata {
        &self.wheel_metadata
    }

    pub fn record(&self) -> &Record {
        &self.record
    }

    /// `Name` and `Version` from METADATA.
    pub fn metadata_name_version(&self) -> &NameVersion {
        &self.name_version
    }

    fn raw_entry_at(&self, index: usize) -> Option<RawEntry<'_>> {
        let entry = self.entries.get(index)?;
        Some(RawEntry {
            entry,
            compressed: compressed_bytes(&self.path, &self.bytes, entry).ok()?,
            sha256: self.verified_sha256.get(index).and_then(Option::as_ref),
        })
    }

    fn entry_or_error(&self, name: &str) -> Result<&ZipEntry, WheelError> {
        self.entry(name).ok_or_else(|| self.not_found(name))
    }

    fn not_found(&self, name: &str) -> WheelError {
        WheelError::EntryNotFound {
            wheel: self.path.clone(),
            entry: name.to_owned(),
        }
    }
}

/// The dist-info files read while opening, before the archive exists.
struct DistInfoFiles<'a> {
    wheel: &'a Path,
    bytes: &'a [u8],
    entries: &'a [ZipEntry],
    by_name: &'a HashMap<String, usize>,
    dist_info_dir: &'a str,
}

impl DistInfoFiles<'_> {
    fn parse<T>(
        &self,
        file: &str,
        parse: impl FnOnce(&str) -> Result<T, metadata::ParseError>,
    ) -> Result<T, WheelError> {
        let entry = format!("{}/{file}", self.dist_info_dir);
        let Some(zip_entry) = self.by_name.get(&entry).and_then(|&i| self.entries.get(i)) else {
            return Err(WheelError::MissingDistInfoFile {
                wheel: self.wheel.to_owned(),
                entry,
            });
        };
        let contents = read_entry(self.wheel, self.bytes, zip_entry)?;
        metadata::utf8(&contents)
            .and_then(parse)
            .map_err(|source| WheelError::Malformed {
                wheel: self.wheel.to_owned(),
                entry,
                source,
            })
    }
}

/// Finds the one top-level `*.dist-info` directory among `names` and checks
/// it belongs to the wheel `name`.
pub(crate) fn find_dist_info_dir<'a>(
    wheel: &Path,
    names: impl Iterator<Item = &'a str>,
    name: &WheelName,
) -> Result<String, WheelError> {
    let candidates: BTreeSet<&str> = names
        .filter_map(|entry| entry.split_once('/').map(|(top, _)| top))
        .filter(|top| top.ends_with(".dist-info"))
        .collect();
    let mut candidates = candidates.into_iter();
    let found = candidates.next().ok_or_else(|| WheelError::NoDistInfo {
        wheel: wheel.to_owned(),
    })?;
    if let Some(second) = candidates.next() {
        return Err(WheelError::MultipleDistInfo {
            wheel: wheel.to_owned(),
            first: found.to_owned(),
            second: second.to_owned(),
        });
    }
    if !same_project(dist_info_stem(found), name) {
        return Err(WheelError::DistInfoMismatch {
            wheel: wheel.to_owned(),
            found: found.to_owned(),
            expected: name.dist_info_stem(),
        });
    }
    Ok(found.to_owned())
}

fn dist_info_stem(dist_info_dir: &str) -> &str {
    dist_info_dir
        .strip_suffix(".dist-info")
        .unwrap_or(dist_info_dir)
}
