//! ELF editing.
