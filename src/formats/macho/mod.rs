//! Mach-O facts, edits and code signatures. Knows nothing of wheels.
//!
//! - [`MachOFile::parse`] reads thin and universal files into per-slice facts.
//! - [`verify_signature`] recomputes an embedded signature's hashes.
//! - [`edit_load_commands`] rewrites install names, rpaths and minos inside
//!   the header padding.
//! - [`sign_adhoc`] replaces every slice's signature with an ad-hoc one.
//! - [`fuse_slices`] writes a universal file of thin ones (`lipo -create`), and
//!   [`thin_slice`] takes one architecture out (`lipo -thin`).
//! - [`is_system_library`] tells which install names macOS itself provides.
//! - [`is_macho`] checks the magic, to pick candidate files before parsing.

mod binds;
mod bytes;
mod code_directory;
mod constants;
mod edit;
mod error;
mod facts;
mod fat;
mod load_commands;
mod parse;
mod sign;
mod signature;
mod symbols;
mod system_libs;

pub use edit::{LoadCommandEdit, edit_load_commands};
pub use error::MachOError;
pub use facts::{
    Arch, CodeSignatureLocation, Dependency, DependencyKind, DeploymentTarget,
    DeploymentTargetSource, FileType, ImportedSymbol, LibraryOrdinal, MachOFile, Section, Segment,
    Slice, Version, is_macho,
};
pub use fat::{fat_alignment_shift, fuse_slices, thin_slice};
pub use sign::sign_adhoc;
pub use signature::{SignatureStatus, verify_signature};
pub use system_libs::{SystemLibraries, is_system_library};
