//! Support: the build machine (tools, caches, interpreters), Debian's target trees, the
//! target C libraries built from source, and the options that say what to build. Stages
//! lean on these; these never call a stage.

pub mod host;
pub mod options;
pub mod sysroot;
pub mod target_libraries;
