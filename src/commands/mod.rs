//! One module per subcommand: each turns parsed arguments into calls to the
//! stage modules and prints the result. Errors carry `anyhow` context.

pub mod build;
pub mod inspect;
pub mod publish;
pub mod repair;
pub mod test;
pub mod toolchain;

use std::path::Path;

use crate::wheel::{Limits, WheelArchive, WheelError};

/// Opens a wheel given on the command line, with the zip-bomb limits the
/// environment may raise or lower.
pub(crate) fn open_wheel(path: &Path) -> Result<WheelArchive, WheelError> {
    WheelArchive::open_with_limits(path, &Limits::from_env()?)
}
