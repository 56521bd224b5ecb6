//! manylinux policies (data in `config/manylinux-policy.toml`) and the
//! judgement of a set of ELF files against them.

mod analysis;
mod policy;

pub use analysis::{
    Analysis, Binary, Blockers, BoundImport, Violation, is_dynamic_loader, provided_names,
};
pub use policy::{CLibrary, PlatRequest, Policies, Policy, PolicyError};
