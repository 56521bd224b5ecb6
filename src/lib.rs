//! crosswheel: build, repair and test Python wheels for macOS arm64, x86_64 and
//! universal2 and manylinux aarch64/ppc64le from a Linux x86_64 host.
//!
//! Binary-format modules (`elf`, `macho`) know nothing of wheels; `wheel`
//! knows nothing of binaries; the stage modules (`repair`, ...) tie them.

pub mod analysis;
pub mod backend;
pub mod cli;
pub mod commands;
pub mod crossenv;
pub mod elf;
pub mod host;
pub mod inspect;
pub mod io_error;
pub mod loadcheck;
pub mod logging;
pub mod macho;
pub mod manylinux;
pub mod options;
pub mod package_name;
pub mod pipeline;
pub mod provenance;
pub mod publish;
pub mod python_tag;
pub mod repair;
pub mod sbom;
pub mod sysroot;
pub mod target;
pub mod target_libraries;
pub mod testing;
pub mod toolchain;
pub mod wheel;
