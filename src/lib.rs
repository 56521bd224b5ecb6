//! crosswheel: build, repair and test Python wheels for macOS and manylinux targets from a
//! Linux x86_64 host.
//!
//! The folders are the layers of docs/architecture.md, lowest first; a module names only
//! modules of lower layers (held by tests/it/dependency_rule.rs):
//!
//! - the crate root: the foundation every layer names (the target model, the Python tag,
//!   project names, I/O errors, logging, the command-line flags);
//! - [`formats`]: ELF, Mach-O, wheels, SBOM documents, knowing nothing of each other;
//! - [`support`]: the build machine, Debian trees, target libraries;
//! - [`input`]: the options, read once and handed on typed;
//! - [`analysis`]: facts read from wheels and binaries, and the policies that judge them;
//! - [`stages`]: toolchain, cross environment, backend, repair, testing, publish;
//! - [`coordination`]: the pipeline and the commands.

pub mod cli;
pub mod io_error;
pub mod logging;
pub mod package_name;
pub mod python_tag;
pub mod target;

pub mod analysis;
pub mod coordination;
pub mod formats;
pub mod input;
pub mod stages;
pub mod support;
