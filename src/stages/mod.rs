//! Stages of the pipeline, in order: the toolchain, the cross environment, the build
//! backend, the repair, the tests, the upload. A stage names only the type its
//! predecessor hands it (crossenv the `Toolchain`, backend the `CrossEnv`); the order is
//! the coordination layer's.

pub mod backend;
pub mod crossenv;
pub mod publish;
pub mod repair;
pub mod testing;
pub mod toolchain;
