//! The macOS half of wheel analysis: a wheel's Mach-O files, how each
//! install name resolves (as dyld would, inside the wheel and optionally on
//! this host), and the platform tags and minimum versions they allow.

pub mod binaries;
pub mod resolve;
pub mod tags;

pub use binaries::{MachOBinary, Origin, SliceFacts, wheel_binaries};
pub use resolve::{DependencyLink, Graph, Link, Location, Rules, Via, resolve};
pub use tags::{MacosTag, SliceMinos, TagDecision, TagError, arm64_floor, final_tags, tag_version};
