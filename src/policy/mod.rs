//! Policy and analysis: facts read from wheels and binaries (what a binary needs, which
//! manylinux policy its symbols allow, where a vendored file came from, whether a macOS
//! wheel can load). They read and judge; they never edit.

pub mod analysis;
pub mod inspect;
pub mod loadcheck;
pub mod manylinux;
pub mod provenance;
