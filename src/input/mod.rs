//! Input: what to build, read once from `pyproject.toml` (`[tool.crosswheel]` over
//! `[tool.cibuildwheel]`), `CROSSWHEEL_*`/`CIBW_*` variables and the command line, and
//! handed on typed (`Plan`, `BuildSpec`, `BuildOptions`). It leans on the build machine
//! and Debian trees (support) and never calls a stage.

pub mod options;
