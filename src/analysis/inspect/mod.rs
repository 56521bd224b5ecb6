//! `inspect`: what a wheel's binaries are and need, as a stable report.

pub mod linux;
pub mod macos;
pub mod sbom;
