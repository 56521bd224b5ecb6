//! Wheel model: names, metadata, RECORD, safe reading, deterministic writing.
