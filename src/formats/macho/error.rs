use thiserror::Error;

/// Everything that can go wrong reading, editing or signing a Mach-O file.
///
/// Messages are one line and name the slice and load command involved; the
/// caller adds the file path.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum MachOError {
    #[error("not a Mach-O file (magic 0x{magic:08x}); expected a thin or universal Mach-O binary")]
    NotMachO { magic: u32 },

    #[error("unsupported Mach-O file: {reason}")]
    Unsupported { reason: String },

    #[error("malformed Mach-O {location}: {reason}; the file is truncated or corrupt, rebuild it")]
    Malformed { location: String, reason: String },

    #[error(
        "not enough header padding in the {arch} slice to rewrite its load commands: \
         {needed} bytes needed, {available} available; relink with -headerpad_max_install_names"
    )]
    HeaderPaddingExhausted {
        arch: String,
        needed: u64,
        available: u64,
    },

    #[error("cannot {edit}: {reason}")]
    EditNotApplicable { edit: String, reason: String },

    #[error("internal error: after editing the {arch} slice, {detail}; please report this bug")]
    EditMismatch { arch: String, detail: String },

    #[error("code signing failed: {reason}")]
    Signing { reason: String },
}

impl MachOError {
    pub(crate) fn malformed(location: impl Into<String>, reason: impl Into<String>) -> Self {
        MachOError::Malformed {
            location: location.into(),
            reason: reason.into(),
        }
    }
}
