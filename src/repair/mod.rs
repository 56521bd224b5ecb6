//! Repair stage.
