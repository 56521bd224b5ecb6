//! ELF reading.
