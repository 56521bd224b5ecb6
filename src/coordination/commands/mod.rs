//! One module per subcommand: each turns parsed arguments into calls to the
//! stage modules and prints the result. Errors carry `anyhow` context.

pub use crate::coordination::pipeline::exit_code;
/// Every command runs in its run folder (`TMPDIR`), which SIGINT and SIGTERM clean up.
pub use crate::support::host::run_folder::enter as enter_run_folder;

pub mod build;
pub mod help;
pub mod inspect;
pub mod peers;
pub mod publish;
pub mod repair;
pub mod sdist;
pub mod test;
pub mod toolchain;
