//! Wheel analysis: what a wheel's binaries are, need and promise, computed
//! without changing a byte (auditwheel's `wheel_abi.py` to `repair`'s
//! `repair.py`). `repair`, `inspect` and `loadcheck` all read wheels through
//! this module; only `repair` then edits.
//!
//! - [`layout`]: install paths of wheel entries, `$ORIGIN` path arithmetic,
//!   and where vendored libraries go (`<dist>.libs/`, `<package>/.dylibs/`).
//! - [`linux`]: the ELF files of a wheel, the DT_NEEDED graph (one rule for
//!   what is in the wheel, on the system, libpython or external), the search
//!   for external libraries, and the manylinux verdict and tags.
//! - [`macos`]: the Mach-O files of a wheel, install-name resolution as dyld
//!   does it, and macOS platform tags and minimum versions.
//!
//! See docs/analysis.md.

pub mod layout;
pub mod linux;
pub mod macos;
