//! Verifying an embedded code signature by recomputing what it hashes.
//!
//! This is what macOS checks before mapping an arm64 image: the page hashes of
//! every CodeDirectory must match the file up to the signature, and the
//! special slots must match the blobs they bind. No CMS check: ad-hoc
//! signatures (the only kind a repair produces) carry none.

use rayon::prelude::*;

use super::bytes::{be_u32, be_u64, c_str_at, slice_at, u8_at};
use super::constants::*;
use super::facts::Slice;

/// Outcome of checking one slice's embedded signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignatureStatus {
    /// No LC_CODE_SIGNATURE: macOS refuses to load such an arm64 image.
    Missing,
    /// Every CodeDirectory matches the file. `adhoc` and `linker_signed`
    /// come from the primary CodeDirectory's flags.
    Valid { adhoc: bool, linker_signed: bool },
    /// The signature exists but does not match; the reason says where.
    Invalid(String),
}

/// Checks the embedded signature of one slice.
pub fn verify_signature(slice: &Slice<'_>) -> SignatureStatus {
    let Some(location) = slice.code_signature else {
        return SignatureStatus::Missing;
    };
    match verify(slice, location.offset, location.size) {
        Ok(flags) => SignatureStatus::Valid {
            adhoc: flags & CS_ADHOC != 0,
            linker_signed: flags & CS_LINKER_SIGNED != 0,
        },
        Err(reason) => SignatureStatus::Invalid(reason),
    }
}

pub(super) struct Blob<'a> {
    pub(super) slot: u32,
    pub(super) bytes: &'a [u8],
}

/// Returns the primary CodeDirectory's flags.
fn verify(slice: &Slice<'_>, offset: u64, size: u64) -> Result<u32, String> {
    let in_linkedit = slice.segment("__LINKEDIT").is_some_and(|linkedit| {
        offset >= linkedit.file_offset && offset + size <= linkedit.file_offset + linkedit.file_size
    });
    if !in_linkedit {
        return Err(format!(
            "the signature at {offset}+{size} is not inside __LINKEDIT"
        ));
    }
    let region =
        slice_at(slice.data, offset, size).ok_or("the signature lies past the end of the slice")?;
    let blobs = superblob_entries(region)?;

    let mut primary_flags = None;
    for blob in blobs
        .iter()
        .filter(|blob| is_code_directory_slot(blob.slot))
    {
        let flags = verify_code_directory(slice, offset, blob, &blobs)
            .map_err(|reason| format!("CodeDirectory in slot 0x{:x}: {reason}", blob.slot))?;
        if blob.slot == CSSLOT_CODEDIRECTORY {
            primary_flags = Some(flags);
        }
    }
    primary_flags.ok_or_else(|| "the signature has no CodeDirectory".to_string())
}

fn is_code_directory_slot(slot: u32) -> bool {
    slot == CSSLOT_CODEDIRECTORY
        || (CSSLOT_ALTERNATE_CODEDIRECTORIES..CSSLOT_ALTERNATE_CODEDIRECTORY_LIMIT).contains(&slot)
}

/// Splits the SuperBlob into its indexed blobs, each checked to lie inside it.
pub(super) fn superblob_entries(region: &[u8]) -> Result<Vec<Blob<'_>>, String> {
    let magic = be_u32(region, 0).ok_or("the signature is shorter than a SuperBlob header")?;
    if magic != CSMAGIC_EMBEDDED_SIGNATURE {
        return Err(format!(
            "SuperBlob magic is 0x{magic:08x}, expected 0x{CSMAGIC_EMBEDDED_SIGNATURE:08x}"
        ));
    }
    let length = be_u32(region, 4)
        .map(u64::from)
        .ok_or("truncated SuperBlob header")?;
    let count = be_u32(region, 8)
        .map(u64::from)
        .ok_or("truncated SuperBlob header")?;
    if length < 12 || length > region.len() as u64 {
        return Err(format!(
            "SuperBlob claims {length} bytes but LC_CODE_SIGNATURE gives {}",
            region.len()
        ));
    }
    let superblob = slice_at(region, 0, length).ok_or("SuperBlob length out of range")?;
    if count.saturating_mul(8).saturating_add(12) > length {
        return Err(format!(
            "SuperBlob index of {count} entries overruns its {length} bytes"
        ));
    }
    (0..count)
        .map(|index| {
            let entry = 12 + index * 8;
            let slot = be_u32(superblob, entry).ok_or("truncated SuperBlob index")?;
            let blob_offset = be_u32(superblob, entry + 4).map(u64::from).ok_or("truncated SuperBlob index")?;
            let blob_length = be_u32(superblob, blob_offset + 4)
                .map(u64::from)
                .filter(|&len| len >= 8)
                .ok_or_else(|| format!("blob in slot 0x{slot:x} at {blob_offset} lies outside the SuperBlob"))?;
            let bytes = slice_at(superblob, blob_offset, blob_length)
                .ok_or_else(|| format!("blob in slot 0x{slot:x} claims {blob_length} bytes past the end of the SuperBlob"))?;
            Ok(Blob { slot, bytes })
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum HashType {
    Sha1,
    Sha256,
    Sha256Truncated,
    Sha384,
}

impl HashType {
    pub(super) fn from_raw(raw: u8) -> Option<HashType> {
        match raw {
            CS_HASHTYPE_SHA1 => Some(HashType::Sha1),
            CS_HASHTYPE_SHA256 => Some(HashType::Sha256),
            CS_HASHTYPE_SHA256_TRUNCATED => Some(HashType::Sha256Truncated),
            CS_HASHTYPE_SHA384 => Some(HashType::Sha384),
            _ => None,
        }
    }

    pub(super) fn raw(self) -> u8 {
        match self {
            HashType::Sha1 => CS_HASHTYPE_SHA1,
            HashType::Sha256 => CS_HASHTYPE_SHA256,
            HashType::Sha256Truncated => CS_HASHTYPE_SHA256_TRUNCATED,
            HashType::Sha384 => CS_HASHTYPE_SHA384,
        }
    }

    pub(super) fn size(self) -> usize {
        match self {
            HashType::Sha1 | HashType::Sha256Truncated => 20,
            HashType::Sha256 => 32,
            HashType::Sha384 => 48,
        }
    }

    pub(super) fn digest(self, data: &[u8]) -> Vec<u8> {
        match self {
            HashType::Sha1 => <sha1::Sha1 as sha1::Digest>::digest(data).to_vec(),
            HashType::Sha256 => <sha2::Sha256 as sha2::Digest>::digest(data).to_vec(),
            HashType::Sha256Truncated => {
                <sha2::Sha256 as sha2::Digest>::digest(data)[..20].to_vec()
            }
            HashType::Sha384 => <sha2::Sha384 as sha2::Digest>::digest(data).to_vec(),
        }
    }
}

/// Field offsets of `CS_CodeDirectory` (big-endian).
pub(super) mod field {
    pub(in crate::formats::macho) const VERSION: u64 = 8;
    pub(in crate::formats::macho) const FLAGS: u64 = 12;
    pub(in crate::formats::macho) const HASH_OFFSET: u64 = 16;
    pub(in crate::formats::macho) const IDENT_OFFSET: u64 = 20;
    pub(in crate::formats::macho) const SPECIAL_SLOTS: u64 = 24;
    pub(in crate::formats::macho) const CODE_SLOTS: u64 = 28;
    pub(in crate::formats::macho) const CODE_LIMIT: u64 = 32;
    pub(in crate::formats::macho) const HASH_SIZE: u64 = 36;
    pub(in crate::formats::macho) const HASH_TYPE: u64 = 37;
    pub(in crate::formats::macho) const PAGE_SIZE: u64 = 39;
    pub(in crate::formats::macho) const BASE_END: u64 = 44;
    pub(in crate::formats::macho) const CODE_LIMIT_64: u64 = 56;
    pub(in crate::formats::macho) const EXEC_SEG_BASE: u64 = 64;
    pub(in crate::formats::macho) const EXEC_SEG_LIMIT: u64 = 72;
    pub(in crate::formats::macho) const EXEC_SEG_END: u64 = 88;
}

fn verify_code_directory(
    slice: &Slice<'_>,
    signature_offset: u64,
    cd: &Blob<'_>,
    blobs: &[Blob<'_>],
) -> Result<u32, String> {
    let bytes = cd.bytes;
    let magic = be_u32(bytes, 0).unwrap_or_default();
    if magic != CSMAGIC_CODEDIRECTORY {
        return Err(format!(
            "magic is 0x{magic:08x}, expected 0x{CSMAGIC_CODEDIRECTORY:08x}"
        ));
    }
    let truncated = || format!("{} bytes is too short for its fields", bytes.len());
    let word = |at: u64| be_u32(bytes, at).map(u64::from).ok_or_else(truncated);
    let byte = |at: u64| u8_at(bytes, at).ok_or_else(truncated);
    if (bytes.len() as u64) < field::BASE_END {
        return Err(truncated());
    }
    let version = word(field::VERSION)? as u32;
    let flags = word(field::FLAGS)? as u32;

    let mut code_limit = word(field::CODE_LIMIT)?;
    if version >= CS_SUPPORTSCODELIMIT64 {
        let wide = be_u64(bytes, field::CODE_LIMIT_64).ok_or_else(truncated)?;
        if wide != 0 {
            code_limit = wide;
        }
    }
    if code_limit != signature_offset {
        return Err(format!(
            "codeLimit {code_limit} differs from the signature's offset {signature_offset}"
        ));
    }

    let raw_type = byte(field::HASH_TYPE)?;
    let hash_type =
        HashType::from_raw(raw_type).ok_or_else(|| format!("unknown hash type {raw_type}"))?;
    let hash_size = usize::from(byte(field::HASH_SIZE)?);
    if hash_size != hash_type.size() {
        return Err(format!(
            "hash size {hash_size} does not fit hash type {raw_type}"
        ));
    }

    let page_shift = byte(field::PAGE_SIZE)?;
    let page_size = match page_shift {
        0 => code_limit.max(1),
        1..=30 => 1u64 << page_shift,
        _ => return Err(format!("page size 2^{page_shift} is absurd")),
    };
    let expected_slots = code_limit.div_ceil(page_size);
    let code_slots = word(field::CODE_SLOTS)?;
    if code_slots != expected_slots {
        return Err(format!(
            "{code_slots} code slots, but {code_limit} bytes in pages of {page_size} need {expected_slots}"
        ));
    }

    let special_slots = word(field::SPECIAL_SLOTS)?;
    let hash_offset = word(field::HASH_OFFSET)?;
    let hashes = HashSlots {
        bytes,
        hash_offset,
        hash_size,
    };

    check_identifier(bytes, word(field::IDENT_OFFSET)?)?;
    if version >= CS_SUPPORTSEXECSEG {
        if (bytes.len() as u64) < field::EXEC_SEG_END {
            return Err(truncated());
        }
        check_exec_segment(slice, bytes)?;
    }

    let code =
        slice_at(slice.data, 0, code_limit).ok_or("codeLimit lies past the end of the slice")?;
    check_code_pages(code, page_size, code_slots, hash_type, &hashes)?;
    check_special_slots(slice, hash_type, special_slots, &hashes, blobs)?;
    Ok(flags)
}

/// Each `page_size` page of `code` (the slice up to codeLimit) against its code slot.
fn check_code_pages(
    code: &[u8],
    page_size: u64,
    code_slots: u64,
    hash_type: HashType,
    hashes: &HashSlots<'_>,
) -> Result<(), String> {
    // Hash slots are addressed up front so a lying table fails before any hashing.
    let expected: Vec<&[u8]> = (0..code_slots as i64)
        .map(|slot| hashes.at(slot))
        .collect::<Result<_, _>>()?;
    let mismatch = code
        .par_chunks(page_size as usize)
        .zip(expected.par_iter())
        .enumerate()
        .find_first(|(_, (page, expected))| hash_type.digest(page) != **expected);
    if let Some((page, _)) = mismatch {
        let start = page as u64 * page_size;
        return Err(format!(
            "page {page} (bytes {start}..{}) does not match its hash",
            (start + page_size).min(code.len() as u64)
        ));
    }
    Ok(())
}

/// The hash array of a CodeDirectory: code slots at 0.., special slots at -1, -2, ...
struct HashSlots<'a> {
    bytes: &'a [u8],
    hash_offset: u64,
    hash_size: usize,
}

impl<'a> HashSlots<'a> {
    fn at(&self, slot: i64) -> Result<&'a [u8], String> {
        let start = i128::from(self.hash_offset) + i128::from(slot) * self.hash_size as i128;
        u64::try_from(start)
            .ok()
            .filter(|&start| start >= field::BASE_END)
            .and_then(|start| slice_at(self.bytes, start, self.hash_size as u64))
            .ok_or_else(|| format!("hash slot {slot} lies outside the CodeDirectory"))
    }
}

fn check_identifier(bytes: &[u8], offset: u64) -> Result<(), String> {
    if offset < field::BASE_END || c_str_at(bytes, offset).is_none() {
        return Err(format!(
            "identifier at {offset} is not a string inside the CodeDirectory"
        ));
    }
    Ok(())
}

/// The executable segment fields must lie within __TEXT. ld64 and codesign
/// record __TEXT's start as the base; as the limit, codesign records its file
/// size while newer linkers record the extent of the executable sections, so
/// only "inside __TEXT" is checked.
fn check_exec_segment(slice: &Slice<'_>, bytes: &[u8]) -> Result<(), String> {
    let base = be_u64(bytes, field::EXEC_SEG_BASE).unwrap_or_default();
    let limit = be_u64(bytes, field::EXEC_SEG_LIMIT).unwrap_or_default();
    let (text_offset, text_size) = slice
        .segment("__TEXT")
        .map_or((0, 0), |text| (text.file_offset, text.file_size));
    if base != text_offset || limit > text_offset + text_size {
        return Err(format!(
            "execSeg base/limit {base}/{limit} lie outside __TEXT's file range {text_offset}+{text_size}"
        ));
    }
    Ok(())
}

fn check_special_slots(
    slice: &Slice<'_>,
    hash_type: HashType,
    special_slots: u64,
    hashes: &HashSlots<'_>,
    blobs: &[Blob<'_>],
) -> Result<(), String> {
    for blob in blobs {
        let bound_by_slot =
            blob.slot > CSSLOT_CODEDIRECTORY && blob.slot < CSSLOT_ALTERNATE_CODEDIRECTORIES;
        if bound_by_slot && u64::from(blob.slot) > special_slots {
            return Err(format!(
                "blob in slot {} is not bound by the CodeDirectory",
                blob.slot
            ));
        }
    }
    for slot in 1..=special_slots.min(u64::from(CSSLOT_ALTERNATE_CODEDIRECTORIES)) {
        let stored = hashes.at(-(slot as i64))?;
        let source = blobs
            .iter()
            .find(|blob| u64::from(blob.slot) == slot)
            .map(|blob| blob.bytes)
            .or_else(|| {
                (slot == u64::from(CSSLOT_INFOSLOT))
                    .then(|| embedded_info_plist(slice))
                    .flatten()
            });
        match source {
            Some(data) if hash_type.digest(data) != stored => {
                return Err(format!(
                    "special slot -{slot} does not match the data it binds"
                ));
            }
            Some(_) => {}
            // An unused slot holds zeros. Resource hashes (slot -3) bind files
            // outside the binary, which a lone binary cannot vouch for.
            None if stored.iter().all(|&b| b == 0) => {}
            None if slot == u64::from(CSSLOT_RESOURCEDIR) => {
                return Err("special slot -3 binds bundle resources outside this binary".into());
            }
            None => {
                return Err(format!(
                    "special slot -{slot} has a hash but the signature carries no such blob"
                ));
            }
        }
    }
    Ok(())
}

pub(super) fn embedded_info_plist<'a>(slice: &Slice<'a>) -> Option<&'a [u8]> {
    let section = slice
        .segment("__TEXT")?
        .sections
        .iter()
        .find(|section| section.name == "__info_plist")?;
    slice_at(slice.data, section.file_offset, section.size)
}
