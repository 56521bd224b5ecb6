//! ELF editing (placeholder until the editor lands; same API).
use std::collections::BTreeMap;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ElfEdits {
    pub soname: Option<String>,
    pub replace_needed: BTreeMap<String, String>,
    pub runpath: Option<Vec<String>>,
}

#[derive(Debug, thiserror::Error)]
pub enum ElfEditError {
    #[error("ELF editing is not available in this build")]
    Unavailable,
}

pub fn apply_edits(_data: &[u8], _edits: &ElfEdits) -> Result<Vec<u8>, ElfEditError> {
    Err(ElfEditError::Unavailable)
}
