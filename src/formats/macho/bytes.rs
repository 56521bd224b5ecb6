//! Bounds-checked reads. Every offset in a Mach-O file comes from the file
//! itself, so every read goes through here and answers `None` instead of
//! panicking when the file lies.

pub(crate) fn slice_at(data: &[u8], offset: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(offset).ok()?;
    let len = usize::try_from(len).ok()?;
    data.get(start..start.checked_add(len)?)
}

fn array_at<const N: usize>(data: &[u8], offset: u64) -> Option<[u8; N]> {
    slice_at(data, offset, N as u64)?.try_into().ok()
}

pub(crate) fn u8_at(data: &[u8], offset: u64) -> Option<u8> {
    data.get(usize::try_from(offset).ok()?).copied()
}

pub(crate) fn le_u16(data: &[u8], offset: u64) -> Option<u16> {
    array_at(data, offset).map(u16::from_le_bytes)
}

pub(crate) fn le_u32(data: &[u8], offset: u64) -> Option<u32> {
    array_at(data, offset).map(u32::from_le_bytes)
}

pub(crate) fn le_u64(data: &[u8], offset: u64) -> Option<u64> {
    array_at(data, offset).map(u64::from_le_bytes)
}

pub(crate) fn be_u32(data: &[u8], offset: u64) -> Option<u32> {
    array_at(data, offset).map(u32::from_be_bytes)
}

pub(crate) fn be_u64(data: &[u8], offset: u64) -> Option<u64> {
    array_at(data, offset).map(u64::from_be_bytes)
}

/// A NUL-terminated string starting at `offset`; the terminator must lie
/// inside `data`, so a string can never run into the next structure.
pub(crate) fn c_str_at(data: &[u8], offset: u64) -> Option<String> {
    let rest = data.get(usize::try_from(offset).ok()?..)?;
    let len = rest.iter().position(|&b| b == 0)?;
    Some(String::from_utf8_lossy(&rest[..len]).into_owned())
}

/// A fixed-width, NUL-padded name such as a segment or section name.
pub(crate) fn fixed_name(bytes: &[u8]) -> String {
    let len = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..len]).into_owned()
}

/// Reads one ULEB128 value, returning it and the offset just past it.
pub(crate) fn uleb128_at(data: &[u8], mut offset: u64) -> Option<(u64, u64)> {
    let mut value: u64 = 0;
    let mut shift = 0u32;
    loop {
        let byte = u8_at(data, offset)?;
        offset = offset.checked_add(1)?;
        let low = u64::from(byte & 0x7f);
        if shift >= 64 || (shift > 0 && low >> (64 - shift) != 0) {
            return None;
        }
        value |= low << shift;
        if byte & 0x80 == 0 {
            return Some((value, offset));
        }
        shift += 7;
    }
}

pub(crate) fn align_up(value: u64, alignment: u64) -> Option<u64> {
    let mask = alignment.checked_sub(1)?;
    Some(value.checked_add(mask)? & !mask)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_past_the_end_answer_none() {
        let data = [1u8, 2, 3];
        assert_eq!(le_u32(&data, 0), None);
        assert_eq!(le_u16(&data, 1), Some(0x0302));
        assert_eq!(le_u16(&data, u64::MAX), None);
        assert_eq!(slice_at(&data, 2, u64::MAX), None);
    }

    #[test]
    fn c_str_requires_a_terminator_inside_the_data() {
        assert_eq!(c_str_at(b"ab\0cd", 0).as_deref(), Some("ab"));
        assert_eq!(c_str_at(b"ab\0cd", 3), None);
    }

    #[test]
    fn uleb128_decodes_multi_byte_values_and_rejects_overflow() {
        assert_eq!(uleb128_at(&[0xe5, 0x8e, 0x26], 0), Some((624_485, 3)));
        assert_eq!(uleb128_at(&[0x80], 0), None);
        let too_long = [0xffu8; 10]
            .iter()
            .chain(&[0x7f])
            .copied()
            .collect::<Vec<_>>();
        assert_eq!(uleb128_at(&too_long, 0), None);
    }
}
