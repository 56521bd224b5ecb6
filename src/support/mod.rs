//! Support: the build machine (tools, caches, interpreters, the network policy), Debian's
//! target trees and the target C libraries built from source. The options, stages and
//! analyses lean on these; these never call them.

pub mod build_tools;
pub mod host;
pub mod sysroot;
pub mod target_libraries;
