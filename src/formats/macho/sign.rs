//! Ad-hoc signing: what `codesign --force --sign -` does, in process.
//!
//! arm64 macOS refuses to map an image whose page hashes do not match, and
//! every load-command edit changes hashed bytes, so a repair re-signs each
//! edited file. Ad-hoc signatures carry no certificate and no timestamp, so
//! the same input always gives the same bytes.
//!
//! Per slice: the signature goes where the old one was (or, for an unsigned
//! image, 16-aligned after `__LINKEDIT`, with a new LC_CODE_SIGNATURE in the
//! header padding); LC_CODE_SIGNATURE and `__LINKEDIT` are sized for it before
//! the pages are hashed, since they lie in the first hashed page. A universal
//! file's slices are then laid out again at their alignments.

use super::bytes::{align_up, be_u32, le_u32, slice_at};
use super::code_directory::{CarriedOver, SignaturePlan};
use super::constants::*;
use super::error::MachOError;
use super::facts::{Arch, FileType, MachOFile, Slice, Version};
use super::signature::{SignatureStatus, embedded_info_plist, verify_signature};

/// The largest slice alignment a universal file may ask for: 64 KiB, four times
/// the arm64 page.
const MAX_FAT_ALIGN_SHIFT: u32 = 16;

/// The signature region is padded to this, as ld64 and codesign do.
const SIGNATURE_ALIGNMENT: u64 = 16;

/// Signs every slice of `data` ad hoc and returns the signed file.
///
/// `identifier` becomes the CodeDirectory identifier (codesign uses the file
/// name). Entitlements, hardened-runtime flags and, for old deployment targets,
/// the extra SHA-1 CodeDirectory are carried over from the existing signature.
/// The output is checked with [`verify_signature`] before it is returned.
pub fn sign_adhoc(data: &[u8], identifier: &str) -> Result<Vec<u8>, MachOError> {
    let input = MachOFile::parse(data)?;
    // A signature that is merely stale — pages edited, file grown — is re-signed;
    // one whose structure is broken is refused: whatever it carried (entitlements,
    // runtime flags) could not be carried over.
    for slice in &input.slices {
        if let SignatureStatus::Invalid(reason) = verify_signature(slice)
            && !(reason.contains("does not match") || reason.contains("codeLimit"))
        {
            return Err(signing(format!(
                "its existing {} code signature is malformed ({reason}); rebuild the file or strip the signature",
                slice.arch
            )));
        }
    }

    let signed_slices = input
        .slices
        .iter()
        .map(|slice| sign_slice(slice, identifier))
        .collect::<Result<Vec<_>, _>>()?;
    let signed = if input.is_fat {
        relayout_fat(data, &input.slices, signed_slices)?
    } else {
        signed_slices.into_iter().next().unwrap_or_default()
    };

    let parsed = MachOFile::parse(&signed)
        .map_err(|error| signing(format!("the signed output does not parse: {error}")))?;
    for slice in &parsed.slices {
        match verify_signature(slice) {
            SignatureStatus::Valid { adhoc: true, .. } => {}
            other => {
                return Err(signing(format!(
                    "the new signature of the {} slice does not verify: {other:?}",
                    slice.arch
                )));
            }
        }
    }
    Ok(signed)
}

fn signing(reason: String) -> MachOError {
    MachOError::Signing { reason }
}

/// Where a slice's load commands and `__LINKEDIT` live, as the signer needs them.
struct SliceLayout {
    /// Offset of LC_CODE_SIGNATURE, or `None` when one must be added.
    signature_command: Option<u64>,
    linkedit_command: u64,
    linkedit_file_offset: u64,
    linkedit_vm_size: u64,
    signature_offset: u64,
}

fn sign_slice(slice: &Slice<'_>, identifier: &str) -> Result<Vec<u8>, MachOError> {
    let data = slice.data;
    let magic = le_u32(data, 0).unwrap_or_default();
    if magic != MH_MAGIC && magic != MH_MAGIC_64 {
        return Err(signing(format!(
            "the {} slice is big-endian; only little-endian Mach-O files are signed",
            slice.arch
        )));
    }
    let layout = slice_layout(slice)?;
    let carried = slice
        .code_signature
        .and_then(|location| slice_at(data, location.offset, location.size))
        .map(CarriedOver::from_signature)
        .unwrap_or_default();
    let exec_seg = slice
        .segment("__TEXT")
        .map_or((0, 0), |text| (text.file_offset, text.file_size));
    let needs_sha1 = slice
        .deployment_target
        .is_some_and(|target| target.is_macos() && target.minos < Version::new(10, 11, 4));
    let plan = SignaturePlan {
        identifier,
        needs_sha1,
        carried,
        is_main_binary: slice.file_type == FileType::Execute,
        exec_seg,
        code_limit: layout.signature_offset,
        info_plist: embedded_info_plist(slice),
    };
    let signature_len = plan.signature_len() as u64;
    let region_len = align_up(signature_len, SIGNATURE_ALIGNMENT).unwrap_or(signature_len);
    let to_u32 = |value: u64, what: &str| {
        u32::try_from(value).map_err(|_| {
            signing(format!(
                "the {} slice's {what} does not fit 32 bits",
                slice.arch
            ))
        })
    };

    let mut out = data[..data.len().min(layout.signature_offset as usize)].to_vec();
    out.resize(layout.signature_offset as usize, 0);
    let dataoff = to_u32(layout.signature_offset, "signature offset")?;
    let datasize = to_u32(region_len, "signature size")?;
    match layout.signature_command {
        Some(at) => {
            put_u32(&mut out, at + 8, dataoff);
            put_u32(&mut out, at + 12, datasize);
        }
        None => add_signature_command(&mut out, slice, dataoff, datasize)?,
    }
    let linkedit_file_size = layout.signature_offset + region_len - layout.linkedit_file_offset;
    let page = if matches!(slice.arch, Arch::Arm64 | Arch::Arm64e) {
        0x4000
    } else {
        0x1000
    };
    let linkedit_vm_size = layout
        .linkedit_vm_size
        .max(align_up(linkedit_file_size, page).unwrap_or(linkedit_file_size));
    if slice.is_64_bit {
        put_u64(&mut out, layout.linkedit_command + 32, linkedit_vm_size);
        put_u64(&mut out, layout.linkedit_command + 48, linkedit_file_size);
    } else {
        put_u32(
            &mut out,
            layout.linkedit_command + 28,
            to_u32(linkedit_vm_size, "__LINKEDIT size")?,
        );
        put_u32(
            &mut out,
            layout.linkedit_command + 36,
            to_u32(linkedit_file_size, "__LINKEDIT size")?,
        );
    }

    let signature = plan.build(&out);
    out.extend_from_slice(&signature);
    out.resize((layout.signature_offset + region_len) as usize, 0);
    Ok(out)
}

fn slice_layout(slice: &Slice<'_>) -> Result<SliceLayout, MachOError> {
    let segment_cmd = if slice.is_64_bit {
        LC_SEGMENT_64
    } else {
        LC_SEGMENT
    };
    let linkedit_command = slice
        .load_commands
        .iter()
        .find(|command| {
            command.cmd == segment_cmd
                && slice_at(slice.data, command.offset + 8, 16)
                    .is_some_and(|name| name.split(|&b| b == 0).next() == Some(b"__LINKEDIT"))
        })
        .map(|command| command.offset)
        .ok_or_else(|| {
            signing(format!(
                "the {} slice has no __LINKEDIT segment to hold a signature",
                slice.arch
            ))
        })?;
    let linkedit = slice.segment("__LINKEDIT").ok_or_else(|| {
        signing(format!(
            "the {} slice has no __LINKEDIT segment",
            slice.arch
        ))
    })?;
    let linkedit_end = linkedit.file_offset + linkedit.file_size;
    if let Some(other) = slice.segments.iter().find(|segment| {
        segment.name != "__LINKEDIT"
            && segment.file_size > 0
            && segment.file_offset + segment.file_size > linkedit.file_offset
    }) {
        return Err(signing(format!(
            "the {} slice's {} segment lies after __LINKEDIT, where the signature must go",
            slice.arch, other.name
        )));
    }
    let signature_command = slice
        .load_commands
        .iter()
        .find(|command| command.cmd == LC_CODE_SIGNATURE)
        .map(|command| command.offset);
    let signature_offset = match slice.code_signature {
        Some(old) if old.offset >= linkedit.file_offset => old.offset,
        Some(old) => {
            return Err(signing(format!(
                "the {} slice's signature at {} lies before __LINKEDIT",
                slice.arch, old.offset
            )));
        }
        None => {
            if (slice.data.len() as u64) > linkedit_end {
                return Err(signing(format!(
                    "the {} slice holds {} bytes after __LINKEDIT; an unsigned image must end with it",
                    slice.arch,
                    slice.data.len() as u64 - linkedit_end
                )));
            }
            align_up(linkedit_end, SIGNATURE_ALIGNMENT).unwrap_or(linkedit_end)
        }
    };
    Ok(SliceLayout {
        signature_command,
        linkedit_command,
        linkedit_file_offset: linkedit.file_offset,
        linkedit_vm_size: linkedit.vm_size,
        signature_offset,
    })
}

/// Appends LC_CODE_SIGNATURE to the load commands, inside the header padding.
fn add_signature_command(
    out: &mut [u8],
    slice: &Slice<'_>,
    dataoff: u32,
    datasize: u32,
) -> Result<(), MachOError> {
    if slice.header_padding < LINKEDIT_DATA_COMMAND_SIZE {
        return Err(signing(format!(
            "the {} slice has {} bytes of header padding; LC_CODE_SIGNATURE needs {LINKEDIT_DATA_COMMAND_SIZE}",
            slice.arch, slice.header_padding
        )));
    }
    let at = slice.header_size + slice.load_commands_size;
    put_u32(out, at, LC_CODE_SIGNATURE);
    put_u32(out, at + 4, LINKEDIT_DATA_COMMAND_SIZE as u32);
    put_u32(out, at + 8, dataoff);
    put_u32(out, at + 12, datasize);
    let commands = le_u32(out, 16).unwrap_or_default();
    put_u32(out, 16, commands + 1);
    put_u32(
        out,
        20,
        (slice.load_commands_size + LINKEDIT_DATA_COMMAND_SIZE) as u32,
    );
    Ok(())
}

/// Lays the signed slices of a universal file out again: same fat header and
/// order, each slice at the next offset its alignment allows.
fn relayout_fat(
    data: &[u8],
    slices: &[Slice<'_>],
    signed: Vec<Vec<u8>>,
) -> Result<Vec<u8>, MachOError> {
    let magic = be_u32(data, 0).unwrap_or_default();
    let (entry_size, wide) = match magic {
        FAT_MAGIC => (FAT_ARCH_SIZE, false),
        FAT_MAGIC_64 => (FAT_ARCH_64_SIZE, true),
        _ => return Err(signing("the universal header changed while signing".into())),
    };
    let first_offset = slices.first().map_or(0, |slice| slice.offset);
    let mut out = data[..first_offset as usize].to_vec();
    for (index, slice_bytes) in signed.into_iter().enumerate() {
        let entry = FAT_HEADER_SIZE + index as u64 * entry_size;
        let align_shift = be_u32(data, entry + if wide { 24 } else { 16 }).unwrap_or(0);
        if align_shift > MAX_FAT_ALIGN_SHIFT {
            // Real slices align to a page (2^12 or 2^14); padding to 2^30 would
            // turn a small file into gigabytes.
            return Err(signing(format!(
                "the universal header aligns slice {index} to 2^{align_shift} bytes (at most 2^{MAX_FAT_ALIGN_SHIFT} is plausible)"
            )));
        }
        let offset = align_up(out.len() as u64, 1 << align_shift).unwrap_or(out.len() as u64);
        out.resize(offset as usize, 0);
        let size = slice_bytes.len() as u64;
        out.extend_from_slice(&slice_bytes);
        if wide {
            out[entry as usize + 8..entry as usize + 16].copy_from_slice(&offset.to_be_bytes());
            out[entry as usize + 16..entry as usize + 24].copy_from_slice(&size.to_be_bytes());
        } else {
            let narrow = |value: u64| {
                u32::try_from(value).map_err(|_| {
                    signing("the signed universal file outgrows 32-bit slice offsets".into())
                })
            };
            out[entry as usize + 8..entry as usize + 12]
                .copy_from_slice(&narrow(offset)?.to_be_bytes());
            out[entry as usize + 12..entry as usize + 16]
                .copy_from_slice(&narrow(size)?.to_be_bytes());
        }
    }
    Ok(out)
}

fn put_u32(out: &mut [u8], at: u64, value: u32) {
    out[at as usize..at as usize + 4].copy_from_slice(&value.to_le_bytes());
}

fn put_u64(out: &mut [u8], at: u64, value: u64) {
    out[at as usize..at as usize + 8].copy_from_slice(&value.to_le_bytes());
}
