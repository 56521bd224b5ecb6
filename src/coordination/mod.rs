//! Coordination: the only callers of the stages in order. `pipeline` runs a plan's builds
//! through every stage; `commands` are the subcommands, each a short walk over the stages
//! it needs.

pub mod commands;
pub mod pipeline;
