//! ELF facts (read) and edits (write). Knows nothing of wheels.
pub mod edit;
pub mod facts;
