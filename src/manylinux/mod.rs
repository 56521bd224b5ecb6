//! manylinux policies (data in config/) and their evaluation.
