//! Zip format pieces shared by the reader and the writer: record layouts,
//! DOS timestamps, unix modes and the rules for safe entry names.

use std::fmt;

pub(crate) const LOCAL_HEADER_SIGNATURE: u32 = 0x0403_4b50;
pub(crate) const CENTRAL_HEADER_SIGNATURE: u32 = 0x0201_4b50;
pub(crate) const END_OF_CENTRAL_DIRECTORY_SIGNATURE: u32 = 0x0605_4b50;
pub(crate) const LOCAL_HEADER_LEN: usize = 30;
pub(crate) const CENTRAL_HEADER_LEN: usize = 46;
pub(crate) const END_OF_CENTRAL_DIRECTORY_LEN: usize = 22;
/// General-purpose flag bit 11: the name is UTF-8.
pub(crate) const FLAG_UTF8: u16 = 0x0800;
/// General-purpose flag bit 0: the entry is encrypted.
pub(crate) const FLAG_ENCRYPTED: u16 = 0x0001;

pub(crate) const S_IFMT: u32 = 0o170_000;
pub(crate) const S_IFREG: u32 = 0o100_000;
pub(crate) const S_IFDIR: u32 = 0o040_000;
pub(crate) const S_IFLNK: u32 = 0o120_000;

/// How an entry's bytes are stored; wheels use nothing else.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompressionMethod {
    Stored,
    Deflated,
}

impl CompressionMethod {
    pub fn code(self) -> u16 {
        match self {
            Self::Stored => 0,
            Self::Deflated => 8,
        }
    }

    /// The "version needed to extract" for this method (APPNOTE 4.4.3.2).
    pub(crate) fn version_needed(self) -> u16 {
        match self {
            Self::Stored => 10,
            Self::Deflated => 20,
        }
    }
}

/// An MS-DOS date and time as stored in zip headers (2-second resolution,
/// years 1980–2107, no time zone). Ordering is chronological.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DosDateTime {
    // Field order makes the derived ordering chronological.
    pub date: u16,
    pub time: u16,
}

impl DosDateTime {
    /// 1980-01-01 00:00:00, the earliest representable time.
    pub const MIN: DosDateTime = DosDateTime {
        date: (1 << 5) | 1,
        time: 0,
    };
    /// 2107-12-31 23:59:58, the latest representable time.
    pub const MAX: DosDateTime = DosDateTime {
        date: (127 << 9) | (12 << 5) | 31,
        time: (23 << 11) | (59 << 5) | 29,
    };

    /// The UTC time `seconds` after the unix epoch, clamped to the DOS range
    /// (as `SOURCE_DATE_EPOCH` handling in Python's `wheel` does).
    pub fn from_unix(seconds: u64) -> Self {
        const SECONDS_PER_DAY: u64 = 86_400;
        let days = seconds / SECONDS_PER_DAY;
        let second_of_day = seconds % SECONDS_PER_DAY;
        let (year, month, day) = civil_from_days(days);
        if year < 1980 {
            return Self::MIN;
        }
        if year > 2107 {
            return Self::MAX;
        }
        let (hour, minute, second) = (
            second_of_day / 3600,
            second_of_day % 3600 / 60,
            second_of_day % 60,
        );
        // Every value is bounded by the checks above, so the casts are exact.
        Self {
            date: (((year - 1980) << 9) | (month << 5) | day) as u16,
            time: ((hour << 11) | (minute << 5) | (second / 2)) as u16,
        }
    }
}

impl fmt::Display for DosDateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
            1980 + (self.date >> 9),
            (self.date >> 5) & 0xf,
            self.date & 0x1f,
            self.time >> 11,
            (self.time >> 5) & 0x3f,
            (self.time & 0x1f) * 2
        )
    }
}

/// Howard Hinnant's `civil_from_days` for days since 1970-01-01 (unsigned:
/// we never need dates before the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// Why an entry name could escape the install directory or mean different
/// files on different systems.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UnsafeName {
    #[error("contains a NUL byte")]
    Nul,
    #[error("contains a control character")]
    ControlCharacter,
    #[error("contains a backslash")]
    Backslash,
    #[error("is an absolute path")]
    Absolute,
    #[error("starts with a drive letter")]
    DriveLetter,
    #[error("has a `..` component")]
    ParentComponent,
    #[error("has a `.` component")]
    CurrentComponent,
    #[error("has an empty component")]
    EmptyComponent,
}

/// Checks a file entry's name (for a directory, without its trailing `/`).
pub fn check_entry_name(name: &str) -> Result<(), UnsafeName> {
    if name.contains('\0') {
        return Err(UnsafeName::Nul);
    }
    // Newlines and escape sequences in names corrupt RECORD readers and
    // terminals that print them.
    if name.contains(|c: char| c.is_control()) {
        return Err(UnsafeName::ControlCharacter);
    }
    if name.contains('\\') {
        return Err(UnsafeName::Backslash);
    }
    if name.starts_with('/') {
        return Err(UnsafeName::Absolute);
    }
    let bytes = name.as_bytes();
    if bytes.first().is_some_and(u8::is_ascii_alphabetic) && bytes.get(1) == Some(&b':') {
        return Err(UnsafeName::DriveLetter);
    }
    for component in name.split('/') {
        match component {
            ".." => return Err(UnsafeName::ParentComponent),
            "." => return Err(UnsafeName::CurrentComponent),
            "" => return Err(UnsafeName::EmptyComponent),
            _ => {}
        }
    }
    Ok(())
}

/// Two names that are the same file on a case-insensitive file system.
pub(crate) fn find_case_collision<'a>(
    names: impl Iterator<Item = &'a str>,
) -> Option<(&'a str, &'a str)> {
    let mut seen = std::collections::HashMap::new();
    for name in names {
        if let Some(other) = seen.insert(name.to_lowercase(), name) {
            return Some((name, other));
        }
    }
    None
}

/// Little-endian field access into a header, bounds-checked.
pub(crate) fn read_u16(bytes: &[u8], at: usize) -> Option<u16> {
    let field = bytes.get(at..at.checked_add(2)?)?;
    field.try_into().ok().map(u16::from_le_bytes)
}

pub(crate) fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let field = bytes.get(at..at.checked_add(4)?)?;
    field.try_into().ok().map(u32::from_le_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_unix_time_to_dos_time_in_utc() {
        // 2025-05-17 15:29:23 UTC: seconds round down to even.
        let dos = DosDateTime::from_unix(1_747_495_763);
        assert_eq!(dos.to_string(), "2025-05-17 15:29:22");
        assert_eq!(
            DosDateTime::from_unix(315_532_800).to_string(),
            "1980-01-01 00:00:00"
        );
        assert_eq!(
            DosDateTime::from_unix(951_782_400).to_string(),
            "2000-02-29 00:00:00"
        );
    }

    #[test]
    fn clamps_unix_time_to_dos_range() {
        assert_eq!(DosDateTime::from_unix(0), DosDateTime::MIN);
        assert_eq!(DosDateTime::from_unix(315_532_799), DosDateTime::MIN);
        assert_eq!(DosDateTime::from_unix(u64::MAX / 2), DosDateTime::MAX);
        assert_eq!(DosDateTime::MAX.to_string(), "2107-12-31 23:59:58");
        assert_eq!(DosDateTime::from_unix(4_354_819_199), DosDateTime::MAX);
    }

    #[test]
    fn dos_time_orders_chronologically() {
        assert!(DosDateTime::from_unix(1_000_000_000) < DosDateTime::from_unix(1_000_000_002));
        assert!(
            DosDateTime::from_unix(999_999_999 + 86_400) > DosDateTime::from_unix(1_000_000_000)
        );
    }

    #[test]
    fn accepts_ordinary_entry_names() {
        for name in [
            "a",
            "pkg/mod.py",
            "pkg-1.0.dist-info/RECORD",
            "x/..y/z..",
            "ab:c/d",
        ] {
            assert_eq!(check_entry_name(name), Ok(()), "{name}");
        }
    }

    #[test]
    fn rejects_each_unsafe_entry_name_with_its_reason() {
        for (name, problem) in [
            ("a/../b", UnsafeName::ParentComponent),
            ("..", UnsafeName::ParentComponent),
            ("/etc/passwd", UnsafeName::Absolute),
            ("a\\b", UnsafeName::Backslash),
            ("C:/x", UnsafeName::DriveLetter),
            ("c:x", UnsafeName::DriveLetter),
            ("a\0b", UnsafeName::Nul),
            ("a\nb", UnsafeName::ControlCharacter),
            ("a\u{1b}[31mb", UnsafeName::ControlCharacter),
            ("a//b", UnsafeName::EmptyComponent),
            ("", UnsafeName::EmptyComponent),
            ("a/", UnsafeName::EmptyComponent),
            ("./a", UnsafeName::CurrentComponent),
        ] {
            assert_eq!(check_entry_name(name), Err(problem), "{name:?}");
        }
    }
}
