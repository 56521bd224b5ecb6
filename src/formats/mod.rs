//! Formats: the binary and archive formats crosswheel reads and writes. Each knows nothing
//! of stages or of the others: the ELF and Mach-O code has never heard of a wheel, and the
//! wheel code has never looked inside a binary.

pub mod elf;
pub mod macho;
pub mod sbom;
pub mod wheel;
