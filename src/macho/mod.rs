//! Mach-O facts, edits and code signatures. Knows nothing of wheels.
