//! Analysis: what wheels and binaries say, and the policies they are judged by — the
//! facts a binary shows (`facts`: what it needs, its C library, its minimum macOS), the
//! manylinux and musllinux policies its symbols allow (`manylinux`), where a vendored file
//! came from (`provenance`), whether a macOS wheel can load (`loadcheck`) and the
//! `crosswheel inspect` report. They read and judge; they never edit.

pub mod facts;
pub mod inspect;
pub mod loadcheck;
pub mod manylinux;
pub mod provenance;
