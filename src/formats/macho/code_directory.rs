//! The blobs of an ad-hoc code signature: CodeDirectories, an empty requirement
//! set and the SuperBlob that indexes them — what `codesign --sign -` embeds.
//!
//! Layouts follow Apple's `cs_blobs.h` (xnu): every field is big-endian; a
//! CodeDirectory of version 0x20400 carries the executable-segment fields the
//! arm64 kernel reads; hash slots are indexed from `hashOffset`, special slots
//! (-1, -2, ...) just before it, code slots (0, 1, ...) after it.

use super::bytes::{be_u32, be_u64, u8_at};
use super::constants::*;
use super::signature::{Blob, HashType, field, superblob_entries};

const CSMAGIC_REQUIREMENTS: u32 = 0xfade_0c01;
const CSSLOT_REQUIREMENTS: u32 = 2;
const CSSLOT_ENTITLEMENTS: u32 = 5;
const CSSLOT_DER_ENTITLEMENTS: u32 = 7;
/// `CS_RUNTIME` and friends survive re-signing; these two describe the old signer.
const SIGNER_FLAGS: u32 = CS_ADHOC | CS_LINKER_SIGNED;
const CS_EXECSEG_MAIN_BINARY: u64 = 0x1;
const CODE_DIRECTORY_VERSION: u32 = CS_SUPPORTSEXECSEG;
const CODE_DIRECTORY_HEADER_SIZE: usize = 88;
/// codesign hashes 4 KiB pages unless told otherwise; some arm64 signers use
/// 16 KiB, which a re-signature keeps.
const DEFAULT_PAGE_SHIFT: u8 = 12;
const LARGE_PAGE_SHIFT: u8 = 14;

/// What a re-signature keeps from the signature it replaces.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct CarriedOver {
    /// Flags of the primary CodeDirectory other than the signer's own.
    pub flags: u32,
    pub exec_seg_flags: Option<u64>,
    pub entitlements: Option<Vec<u8>>,
    pub der_entitlements: Option<Vec<u8>>,
    /// The old signature had a SHA-1 CodeDirectory.
    pub sha1: bool,
    /// log2 of the old primary CodeDirectory's page size, when it is 4 or 16 KiB.
    pub page_shift: Option<u8>,
}

impl CarriedOver {
    /// Reads the old signature's settings; a region that does not parse carries nothing.
    pub fn from_signature(region: &[u8]) -> Self {
        let Ok(blobs) = superblob_entries(region) else {
            return Self::default();
        };
        let mut carried = Self::default();
        for Blob { slot, bytes } in blobs {
            match slot {
                CSSLOT_ENTITLEMENTS => carried.entitlements = Some(bytes.to_vec()),
                CSSLOT_DER_ENTITLEMENTS => carried.der_entitlements = Some(bytes.to_vec()),
                slot if is_code_directory(slot) => {
                    if u8_at(bytes, field::HASH_TYPE) == Some(CS_HASHTYPE_SHA1) {
                        carried.sha1 = true;
                    }
                    if slot == CSSLOT_CODEDIRECTORY {
                        carried.flags = be_u32(bytes, field::FLAGS).unwrap_or(0) & !SIGNER_FLAGS;
                        carried.page_shift = u8_at(bytes, field::PAGE_SIZE)
                            .filter(|shift| [DEFAULT_PAGE_SHIFT, LARGE_PAGE_SHIFT].contains(shift));
                        let version = be_u32(bytes, field::VERSION).unwrap_or(0);
                        if version >= CS_SUPPORTSEXECSEG {
                            carried.exec_seg_flags = be_u64(bytes, field::EXEC_SEG_LIMIT + 8);
                        }
                    }
                }
                _ => {}
            }
        }
        carried
    }
}

fn is_code_directory(slot: u32) -> bool {
    slot == CSSLOT_CODEDIRECTORY
        || (CSSLOT_ALTERNATE_CODEDIRECTORIES..CSSLOT_ALTERNATE_CODEDIRECTORY_LIMIT).contains(&slot)
}

/// Everything that goes into one slice's signature except the page hashes.
#[derive(Debug, Clone)]
pub(super) struct SignaturePlan<'a> {
    pub identifier: &'a str,
    /// Add a SHA-1 CodeDirectory: macOS before 10.11.4 knows no other page hash.
    pub needs_sha1: bool,
    pub carried: CarriedOver,
    pub is_main_binary: bool,
    /// `__TEXT`'s file offset and size: the executable segment.
    pub exec_seg: (u64, u64),
    /// Bytes covered by the page hashes: everything before the signature.
    pub code_limit: u64,
    pub info_plist: Option<&'a [u8]>,
}

impl SignaturePlan<'_> {
    /// SHA-256 alone, or a SHA-1 primary with a SHA-256 alternate for old
    /// deployment targets or where the old signature had SHA-1 (as codesign does).
    fn hash_types(&self) -> Vec<HashType> {
        if self.needs_sha1 || self.carried.sha1 {
            vec![HashType::Sha1, HashType::Sha256]
        } else {
            vec![HashType::Sha256]
        }
    }

    fn page_shift(&self) -> u8 {
        self.carried.page_shift.unwrap_or(DEFAULT_PAGE_SHIFT)
    }

    fn page_size(&self) -> usize {
        1 << self.page_shift()
    }

    fn code_slots(&self) -> usize {
        self.code_limit.div_ceil(self.page_size() as u64) as usize
    }

    /// The blobs bound by special slots, in slot order, borrowed from the plan.
    fn special_blobs(&self) -> Vec<(u32, &[u8])> {
        let mut blobs = vec![(CSSLOT_REQUIREMENTS, EMPTY_REQUIREMENTS.as_slice())];
        if let Some(entitlements) = &self.carried.entitlements {
            blobs.push((CSSLOT_ENTITLEMENTS, entitlements));
        }
        if let Some(der) = &self.carried.der_entitlements {
            blobs.push((CSSLOT_DER_ENTITLEMENTS, der));
        }
        blobs
    }

    fn special_slots(&self) -> usize {
        let highest_blob = self.special_blobs().iter().map(|(slot, _)| *slot).max();
        highest_blob
            .unwrap_or(0)
            .max(CSSLOT_INFOSLOT * u32::from(self.info_plist.is_some())) as usize
    }

    fn code_directory_len(&self, hash_type: HashType) -> usize {
        CODE_DIRECTORY_HEADER_SIZE
            + self.identifier.len()
            + 1
            + (self.special_slots() + self.code_slots()) * hash_type.size()
    }

    /// The SuperBlob's exact length, known before any page is hashed: the load
    /// commands that record it are themselves inside the hashed pages.
    pub fn signature_len(&self) -> usize {
        let blobs: usize = self
            .special_blobs()
            .iter()
            .map(|(_, blob)| blob.len())
            .sum::<usize>()
            + self
                .hash_types()
                .into_iter()
                .map(|t| self.code_directory_len(t))
                .sum::<usize>();
        let count = self.special_blobs().len() + self.hash_types().len();
        12 + 8 * count + blobs
    }

    /// The SuperBlob for `code` (the slice's first `code_limit` bytes, final).
    pub fn build(&self, code: &[u8]) -> Vec<u8> {
        debug_assert_eq!(code.len() as u64, self.code_limit);
        let specials = self.special_blobs();
        let directories: Vec<(u32, Vec<u8>)> = self
            .hash_types()
            .into_iter()
            .enumerate()
            .map(|(index, hash_type)| {
                let slot = if index == 0 {
                    CSSLOT_CODEDIRECTORY
                } else {
                    CSSLOT_ALTERNATE_CODEDIRECTORIES + index as u32 - 1
                };
                (slot, self.code_directory(hash_type, code, &specials))
            })
            .collect();
        let mut entries: Vec<(u32, &[u8])> = directories
            .iter()
            .map(|(slot, blob)| (*slot, blob.as_slice()))
            .chain(specials)
            .collect();
        entries.sort_by_key(|(slot, _)| *slot);

        let mut superblob = Vec::with_capacity(self.signature_len());
        push_u32(&mut superblob, CSMAGIC_EMBEDDED_SIGNATURE);
        push_u32(&mut superblob, self.signature_len() as u32);
        push_u32(&mut superblob, entries.len() as u32);
        let mut offset = 12 + 8 * entries.len();
        for (slot, blob) in &entries {
            push_u32(&mut superblob, *slot);
            push_u32(&mut superblob, offset as u32);
            offset += blob.len();
        }
        for (_, blob) in entries {
            superblob.extend_from_slice(blob);
        }
        debug_assert_eq!(superblob.len(), self.signature_len());
        superblob
    }

    fn code_directory(
        &self,
        hash_type: HashType,
        code: &[u8],
        specials: &[(u32, &[u8])],
    ) -> Vec<u8> {
        let hash_size = hash_type.size();
        let special_slots = self.special_slots();
        let ident_offset = CODE_DIRECTORY_HEADER_SIZE;
        let hash_offset = ident_offset + self.identifier.len() + 1 + special_slots * hash_size;
        let length = self.code_directory_len(hash_type);
        let exec_seg_flags = self
            .carried
            .exec_seg_flags
            .unwrap_or(if self.is_main_binary {
                CS_EXECSEG_MAIN_BINARY
            } else {
                0
            });
        let (code_limit_32, code_limit_64) = match u32::try_from(self.code_limit) {
            Ok(limit) => (limit, 0),
            Err(_) => (u32::MAX, self.code_limit),
        };

        let mut cd = Vec::with_capacity(length);
        push_u32(&mut cd, CSMAGIC_CODEDIRECTORY);
        push_u32(&mut cd, length as u32);
        push_u32(&mut cd, CODE_DIRECTORY_VERSION);
        push_u32(&mut cd, self.carried.flags | CS_ADHOC);
        push_u32(&mut cd, hash_offset as u32);
        push_u32(&mut cd, ident_offset as u32);
        push_u32(&mut cd, special_slots as u32);
        push_u32(&mut cd, self.code_slots() as u32);
        push_u32(&mut cd, code_limit_32);
        cd.extend_from_slice(&[hash_size as u8, hash_type.raw(), 0, self.page_shift()]);
        push_u32(&mut cd, 0); // spare2
        push_u32(&mut cd, 0); // scatterOffset
        push_u32(&mut cd, 0); // teamOffset
        push_u32(&mut cd, 0); // spare3
        cd.extend_from_slice(&code_limit_64.to_be_bytes());
        cd.extend_from_slice(&self.exec_seg.0.to_be_bytes());
        cd.extend_from_slice(&self.exec_seg.1.to_be_bytes());
        cd.extend_from_slice(&exec_seg_flags.to_be_bytes());
        debug_assert_eq!(cd.len(), CODE_DIRECTORY_HEADER_SIZE);
        cd.extend_from_slice(self.identifier.as_bytes());
        cd.push(0);

        // Special slots, highest first, so that slot -1 sits right before hashOffset.
        for slot in (1..=special_slots as u32).rev() {
            let bound = specials
                .iter()
                .find(|(blob_slot, _)| *blob_slot == slot)
                .map(|(_, blob)| *blob)
                .or(if slot == CSSLOT_INFOSLOT {
                    self.info_plist
                } else {
                    None
                });
            match bound {
                Some(data) => cd.extend_from_slice(&hash_type.digest(data)),
                None => cd.resize(cd.len() + hash_size, 0),
            }
        }
        debug_assert_eq!(cd.len(), hash_offset);
        let page_hashes = page_hashes(hash_type, code, self.page_size());
        for hash in page_hashes {
            cd.extend_from_slice(&hash);
        }
        debug_assert_eq!(cd.len(), length);
        cd
    }
}

fn page_hashes(hash_type: HashType, code: &[u8], page_size: usize) -> Vec<Vec<u8>> {
    use rayon::prelude::*;
    code.par_chunks(page_size)
        .map(|page| hash_type.digest(page))
        .collect()
}

/// An empty requirement set (magic, length 12, no entries): what codesign writes for
/// ad-hoc signatures.
const EMPTY_REQUIREMENTS: [u8; 12] = {
    let magic = CSMAGIC_REQUIREMENTS.to_be_bytes();
    [
        magic[0], magic[1], magic[2], magic[3], 0, 0, 0, 12, 0, 0, 0, 0,
    ]
};

fn push_u32(out: &mut Vec<u8>, value: u32) {
    out.extend_from_slice(&value.to_be_bytes());
}
