//! Writing universal (fat) files, as `lipo -create` does: a big-endian fat header, then
//! each architecture's image at an offset aligned as lipo aligns it (see
//! [`fat_alignment_shift`]), smaller alignments first; and `lipo -thin`. The slices' own bytes, signatures included, are copied
//! unchanged: a code signature covers its slice, not the file it sits in.

use super::bytes::{align_up, le_u32};
use super::constants::*;
use super::error::MachOError;
use super::facts::{Arch, MachOFile, Slice};

/// One image to place in a universal file.
struct Part<'a> {
    bytes: &'a [u8],
    arch: Arch,
    cpu_type: u32,
    cpu_subtype: u32,
    align_shift: u32,
}

/// The alignment `lipo -create` gives a slice, as a power of two: the largest alignment
/// its segment addresses show (the lowest set bit of each vmaddr; address 0 allows any),
/// at most 2^14; for an image without segments, its architecture's page (2^12 for x86,
/// 2^14 otherwise). Every dylib, bundle and executable has a segment at 0 or at a 4 GiB
/// boundary, so lipo aligns x86_64 slices at 2^14 like arm64 ones: so do the universal2
/// files of Apple's tools (delocate's test libraries, pyzmq's wheel), byte for byte.
pub fn fat_alignment_shift(slice: &Slice<'_>) -> u32 {
    const MAX_SHIFT: u32 = 14;
    let from_segments = slice
        .segments
        .iter()
        .map(|segment| match segment.vm_address {
            0 => MAX_SHIFT,
            address => address.trailing_zeros().clamp(2, MAX_SHIFT),
        })
        .max();
    from_segments.unwrap_or(match slice.arch {
        Arch::X86_64 | Arch::X86_64h | Arch::I386 => 12,
        _ => MAX_SHIFT,
    })
}

/// lipo's order of slices: ascending alignment, Intel before Arm among equals (as in
/// every universal2 file Apple's tools write), the order given otherwise.
fn order_key(part: &Part<'_>) -> (u32, bool) {
    let arm = !matches!(part.arch, Arch::X86_64 | Arch::X86_64h | Arch::I386);
    (part.align_shift, arm)
}

/// Fuses thin or universal Mach-O files into one universal file holding every slice of
/// each. Two slices of one architecture are an error: which one dyld should pick cannot
/// be decided here. The result is parsed back and checked slice by slice.
pub fn fuse_slices(files: &[&[u8]]) -> Result<Vec<u8>, MachOError> {
    let mut parts: Vec<Part<'_>> = Vec::new();
    for data in files {
        for slice in MachOFile::parse(data)?.slices {
            let bytes = slice.bytes();
            if let Some(twin) = parts.iter().find(|part| part.arch == slice.arch) {
                return Err(MachOError::Unsupported {
                    reason: format!(
                        "two {} slices to fuse ({} and {} bytes); a universal file holds one per architecture",
                        slice.arch,
                        twin.bytes.len(),
                        bytes.len()
                    ),
                });
            }
            parts.push(Part {
                bytes,
                arch: slice.arch,
                cpu_type: le_u32(bytes, 4).unwrap_or_default(),
                cpu_subtype: le_u32(bytes, 8).unwrap_or_default(),
                align_shift: fat_alignment_shift(&slice),
            });
        }
    }
    if parts.is_empty() {
        return Err(MachOError::Unsupported {
            reason: "no slices to fuse".into(),
        });
    }
    parts.sort_by_key(order_key);
    let out = layout(&parts)?;

    let parsed = MachOFile::parse(&out)?;
    let same = parsed.slices.len() == parts.len()
        && parsed
            .slices
            .iter()
            .zip(&parts)
            .all(|(slice, part)| slice.arch == part.arch && slice.bytes() == part.bytes);
    if !same {
        return Err(MachOError::Unsupported {
            reason: "the universal file written does not read back as its slices".into(),
        });
    }
    Ok(out)
}

/// The header and padded slices; 64-bit fat entries only where a slice ends past 4 GiB.
fn layout(parts: &[Part<'_>]) -> Result<Vec<u8>, MachOError> {
    let count = parts.len() as u64;
    let narrow_header = FAT_HEADER_SIZE + count * FAT_ARCH_SIZE;
    let offsets = |header: u64| -> Option<Vec<u64>> {
        let mut end = header;
        parts
            .iter()
            .map(|part| {
                let offset = align_up(end, 1 << part.align_shift)?;
                end = offset.checked_add(part.bytes.len() as u64)?;
                Some(offset)
            })
            .collect()
    };
    let too_large = || MachOError::Unsupported {
        reason: "the slices do not fit a universal file".into(),
    };
    let mut placed = offsets(narrow_header).ok_or_else(too_large)?;
    let end = |placed: &[u64]| {
        placed.last().copied().unwrap_or_default()
            + parts.last().map_or(0, |part| part.bytes.len() as u64)
    };
    let wide = end(&placed) > u64::from(u32::MAX);
    if wide {
        placed = offsets(FAT_HEADER_SIZE + count * FAT_ARCH_64_SIZE).ok_or_else(too_large)?;
    }

    let mut out = Vec::with_capacity(end(&placed) as usize);
    let magic = if wide { FAT_MAGIC_64 } else { FAT_MAGIC };
    out.extend_from_slice(&magic.to_be_bytes());
    out.extend_from_slice(&(count as u32).to_be_bytes());
    for (part, &offset) in parts.iter().zip(&placed) {
        out.extend_from_slice(&part.cpu_type.to_be_bytes());
        out.extend_from_slice(&part.cpu_subtype.to_be_bytes());
        let size = part.bytes.len() as u64;
        if wide {
            out.extend_from_slice(&offset.to_be_bytes());
            out.extend_from_slice(&size.to_be_bytes());
            out.extend_from_slice(&part.align_shift.to_be_bytes());
            out.extend_from_slice(&0u32.to_be_bytes());
        } else {
            out.extend_from_slice(&(offset as u32).to_be_bytes());
            out.extend_from_slice(&(size as u32).to_be_bytes());
            out.extend_from_slice(&part.align_shift.to_be_bytes());
        }
    }
    for (part, &offset) in parts.iter().zip(&placed) {
        out.resize(offset as usize, 0);
        out.extend_from_slice(part.bytes);
    }
    Ok(out)
}

/// The image of `arch` in a thin or universal file, as `lipo -thin` extracts it.
pub fn thin_slice(data: &[u8], arch: Arch) -> Result<Vec<u8>, MachOError> {
    let file = MachOFile::parse(data)?;
    let arches: Vec<String> = file.slices.iter().map(|s| s.arch.to_string()).collect();
    file.slices
        .iter()
        .find(|slice| slice.arch == arch)
        .map(|slice| slice.bytes().to_vec())
        .ok_or_else(|| MachOError::Unsupported {
            reason: format!("no {arch} slice (only {})", arches.join(", ")),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal 64-bit image of `cpu_type`: a header with no load commands, then
    /// `body` bytes of a recognisable pattern.
    fn thin(cpu_type: u32, cpu_subtype: u32, body: usize) -> Vec<u8> {
        let mut data = Vec::new();
        for word in [MH_MAGIC_64, cpu_type, cpu_subtype, 0x6, 0, 0, 0, 0] {
            data.extend_from_slice(&word.to_le_bytes());
        }
        data.extend((0..body).map(|i| (i % 251) as u8));
        data
    }

    const X86_64: u32 = CPU_TYPE_X86 | CPU_ARCH_ABI64;
    const ARM64: u32 = CPU_TYPE_ARM | CPU_ARCH_ABI64;

    fn be(data: &[u8], at: usize) -> u32 {
        u32::from_be_bytes(data[at..at + 4].try_into().unwrap())
    }

    /// Without segments to read an alignment from, the page of the architecture decides:
    /// 2^12 for x86_64, 2^14 for arm64.
    #[test]
    fn fuses_x86_64_and_arm64_at_lipos_alignments_and_reads_back() {
        let arm = thin(ARM64, 0, 5000);
        let intel = thin(X86_64, 3, 7000);
        let fat = fuse_slices(&[&arm, &intel]).unwrap();
        assert_eq!(be(&fat, 0), FAT_MAGIC);
        assert_eq!(be(&fat, 4), 2);
        // x86_64 first (2^12), then arm64 (2^14), as lipo orders them.
        assert_eq!(
            (be(&fat, 8), be(&fat, 16), be(&fat, 24)),
            (X86_64, 4096, 12)
        );
        assert_eq!(
            (be(&fat, 28), be(&fat, 36), be(&fat, 44)),
            (ARM64, 16384, 14)
        );
        assert_eq!(be(&fat, 20) as usize, intel.len());
        let parsed = MachOFile::parse(&fat).unwrap();
        assert!(parsed.is_fat);
        assert_eq!(thin_slice(&fat, Arch::Arm64).unwrap(), arm);
        assert_eq!(thin_slice(&fat, Arch::X86_64).unwrap(), intel);
        assert_eq!(fat.len(), 16384 + arm.len());
    }

    #[test]
    fn a_slice_past_16_kib_pushes_the_next_to_the_following_boundary() {
        let intel = thin(X86_64, 3, 20_000);
        let fat = fuse_slices(&[&intel, &thin(ARM64, 0, 10)]).unwrap();
        assert_eq!(be(&fat, 36), 32768);
        assert_eq!(be(&fat, 36) % (1 << 14), 0);
    }

    #[test]
    fn fusing_a_universal_file_again_with_its_own_slices_is_refused() {
        let fat = fuse_slices(&[&thin(ARM64, 0, 10), &thin(X86_64, 3, 10)]).unwrap();
        let error = fuse_slices(&[&fat, &thin(ARM64, 0, 20)]).unwrap_err();
        assert!(error.to_string().contains("two arm64 slices"), "{error}");
        // Its slices, fused again, give the same bytes.
        let again = fuse_slices(&[
            &thin_slice(&fat, Arch::X86_64).unwrap(),
            &thin_slice(&fat, Arch::Arm64).unwrap(),
        ])
        .unwrap();
        assert_eq!(again, fat);
    }

    #[test]
    fn the_capability_bits_of_a_subtype_are_kept() {
        let arm64e = thin(ARM64, 0x8000_0002, 10);
        let fat = fuse_slices(&[&arm64e]).unwrap();
        assert_eq!(be(&fat, 12), 0x8000_0002);
        assert_eq!(MachOFile::parse(&fat).unwrap().slices[0].arch, Arch::Arm64e);
        let missing = thin_slice(&fat, Arch::X86_64).unwrap_err().to_string();
        assert!(missing.contains("only arm64e"), "{missing}");
    }
}
