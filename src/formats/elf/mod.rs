//! ELF facts (read) and edits (write). Knows nothing of wheels.
mod check;
pub mod edit;
pub mod facts;
mod layout;
pub mod visibility;
