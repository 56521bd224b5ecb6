//! Wheel model: names, metadata, RECORD, safe reading, deterministic writing
//! (PEP 427 / PEP 491). Knows nothing of the binaries inside.

mod archive;
mod metadata;
mod name;
mod platform_tag;
mod python_tags;
mod record;
mod scan;
mod verify;
mod writer;
mod zipformat;

use std::path::{Path, PathBuf};

pub use archive::{Limits, MAX_RATIO_VAR, MAX_UNCOMPRESSED_VAR, RawEntry, WheelArchive, ZipEntry};
pub use metadata::{NameVersion, ParseError, ParseErrorKind, WheelMetadata};
pub use name::{WheelName, same_project};
pub use platform_tag::{PlatformTag, join as join_platform_tags};
pub use python_tags::{AbiTag, LanguageTag, join as join_tags};
pub use record::{HashAlgorithm, Hasher, Record, RecordHash, RecordRow};
pub use writer::{Contents, WriteOptions, source_date_epoch, write_wheel};
pub use zipformat::{CompressionMethod, DosDateTime, UnsafeName, check_entry_name};

/// Opens a wheel crosswheel did not write with the zip-bomb limits that `CROSSWHEEL_MAX_*`
/// may raise or lower: how every command and the pipeline open such wheels.
pub fn open_within_env_limits(path: &Path) -> Result<WheelArchive, WheelError> {
    WheelArchive::open_with_limits(path, &Limits::from_env()?)
}

/// Everything that can be wrong with a wheel we read or write. Each message
/// is one line naming the wheel file and, where there is one, the entry.
#[derive(Debug, thiserror::Error)]
pub enum WheelError {
    #[error(
        "invalid wheel file name `{file_name}`: {reason} \
         (PEP 427: name-version[-build]-python-abi-platform.whl)"
    )]
    InvalidFileName {
        file_name: String,
        reason: &'static str,
    },

    #[error(transparent)]
    Io(#[from] crate::io_error::IoError),

    #[error("{}: not a zip archive ({source}); is this really a wheel?", wheel.display())]
    NotAZip {
        wheel: PathBuf,
        source: zip::result::ZipError,
    },

    #[error("{}: truncated zip archive ({detail}); download or build it again", wheel.display())]
    TruncatedZip { wheel: PathBuf, detail: String },

    #[error("{}: unsafe entry name `{}`: it {problem}", wheel.display(), entry.escape_debug())]
    UnsafeEntryName {
        wheel: PathBuf,
        entry: String,
        problem: UnsafeName,
    },

    #[error("{}: entry name `{entry}` is not valid UTF-8", wheel.display())]
    NonUtf8EntryName { wheel: PathBuf, entry: String },

    #[error("{}: entry `{entry}` appears more than once", wheel.display())]
    DuplicateEntry { wheel: PathBuf, entry: String },

    #[error(
        "{}: entries `{entry}` and `{other}` differ only by case and would collide \
         on case-insensitive file systems",
        wheel.display()
    )]
    CaseCollision {
        wheel: PathBuf,
        entry: String,
        other: String,
    },

    #[error("{}: entry `{entry}` is a symbolic link; wheels may contain only regular files", wheel.display())]
    SymlinkEntry { wheel: PathBuf, entry: String },

    #[error(
        "{}: entry `{entry}` has file type {mode:#o}; wheels may contain only regular files",
        wheel.display()
    )]
    UnsupportedEntryType {
        wheel: PathBuf,
        entry: String,
        mode: u32,
    },

    #[error("{}: entry `{entry}` is encrypted, which wheels never are", wheel.display())]
    EncryptedEntry { wheel: PathBuf, entry: String },

    #[error(
        "{}: entry `{entry}` uses compression method {method}; only stored and deflated are supported",
        wheel.display()
    )]
    UnsupportedCompression {
        wheel: PathBuf,
        entry: String,
        method: u16,
    },

    #[error("{}: entry `{entry}`: bad local header: {detail}", wheel.display())]
    BadLocalHeader {
        wheel: PathBuf,
        entry: String,
        detail: &'static str,
    },

    #[error("{}: entries `{entry}` and `{other}` overlap in the archive (zip bomb?)", wheel.display())]
    OverlappingEntries {
        wheel: PathBuf,
        entry: String,
        other: String,
    },

    #[error(
        "{}: entries total {total} bytes uncompressed, over the {limit}-byte limit (zip bomb?)",
        wheel.display()
    )]
    TotalSizeLimit {
        wheel: PathBuf,
        total: u64,
        limit: u64,
    },

    #[error(
        "{}: entry `{entry}` expands {size} bytes from {compressed}, over the {limit}:1 \
         compression-ratio limit (zip bomb?)",
        wheel.display()
    )]
    CompressionRatioLimit {
        wheel: PathBuf,
        entry: String,
        size: u64,
        compressed: u64,
        limit: u64,
    },

    #[error("{}: no top-level `*.dist-info` directory", wheel.display())]
    NoDistInfo { wheel: PathBuf },

    #[error("{}: more than one `*.dist-info` directory: `{first}` and `{second}`", wheel.display())]
    MultipleDistInfo {
        wheel: PathBuf,
        first: String,
        second: String,
    },

    #[error(
        "{}: `{found}` does not match the file name, which wants `{expected}.dist-info`; \
         rename the wheel or fix its metadata",
        wheel.display()
    )]
    DistInfoMismatch {
        wheel: PathBuf,
        found: String,
        expected: String,
    },

    #[error("{}: required file `{entry}` is missing", wheel.display())]
    MissingDistInfoFile { wheel: PathBuf, entry: String },

    #[error("{}: `{entry}` has no `Tag` line", wheel.display())]
    NoWheelTags { wheel: PathBuf, entry: String },

    #[error("{}: `{entry}` is malformed: {source}", wheel.display())]
    Malformed {
        wheel: PathBuf,
        entry: String,
        source: ParseError,
    },

    #[error("{}: entry `{entry}` is not listed in RECORD", wheel.display())]
    UnlistedEntry { wheel: PathBuf, entry: String },

    #[error("{}: RECORD lists `{entry}`, which is not in the archive", wheel.display())]
    MissingEntry { wheel: PathBuf, entry: String },

    #[error("{}: RECORD has no hash for `{entry}`", wheel.display())]
    MissingHash { wheel: PathBuf, entry: String },

    #[error(
        "{}: entry `{entry}` does not match its RECORD hash (RECORD says {expected}, content is {actual})",
        wheel.display()
    )]
    HashMismatch {
        wheel: PathBuf,
        entry: String,
        expected: String,
        actual: String,
    },

    #[error(
        "{}: entry `{entry}` is {actual} bytes but RECORD says {expected}",
        wheel.display()
    )]
    SizeMismatch {
        wheel: PathBuf,
        entry: String,
        expected: u64,
        actual: u64,
    },

    #[error("{}: entry `{entry}` is corrupt: {detail}", wheel.display())]
    CorruptEntry {
        wheel: PathBuf,
        entry: String,
        detail: String,
    },

    #[error("{}: no entry `{entry}`", wheel.display())]
    EntryNotFound { wheel: PathBuf, entry: String },

    #[error(
        "{}: entry `{entry}` is {size} bytes; entries of 4 GiB or more need zip64, \
         which crosswheel does not write",
        wheel.display()
    )]
    EntryTooLarge {
        wheel: PathBuf,
        entry: String,
        size: u64,
    },

    #[error("{}: entry name `{entry}` is longer than 65535 bytes", wheel.display())]
    EntryNameTooLong { wheel: PathBuf, entry: String },

    #[error(
        "{}: the archive would exceed 4 GiB or 65535 entries, which needs zip64; \
         crosswheel does not write zip64",
        wheel.display()
    )]
    ArchiveTooLarge { wheel: PathBuf },

    #[error(
        "{variable}=`{value}` is not a positive whole number; set it to a limit such as 1000 or unset it"
    )]
    InvalidLimit {
        variable: &'static str,
        value: String,
    },

    #[error(
        "SOURCE_DATE_EPOCH=`{value}` is not a number of seconds since 1970-01-01; \
         set it to an integer such as `$(git log -1 --format=%ct)` or unset it"
    )]
    InvalidSourceDateEpoch { value: String },
}
