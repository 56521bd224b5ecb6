//! The integration tests: one test binary, so the library and its dependencies are
//! linked once, not once per test file. Each file of this folder is a module; what they
//! share (the pinned fixtures, tool lookups, wheel builders, the helper programs they
//! compile or run) is in `common/`.
//!
//! Plain `cargo test` runs the fast tier, which needs nothing but Rust; tests marked
//! `#[ignore = "needs <what>: scripts/test sets it up"]` (fixtures, zig, python3, test venv
//! tools) or `#[ignore = "slow: ..."]` (zig builds, qemu, Debian downloads, real builds) are
//! the rest, which `scripts/test` sets up and adds with `--include-ignored`. Which test goes
//! where, and why: docs/testing.md.

mod common;

mod action_install;
mod actions_pinned;
mod backend_hook_environment;
mod build_blasdot;
mod build_examples;
mod build_from_sdist;
mod build_frontend;
mod build_numpy;
mod build_progress;
mod build_tools;
mod cache_concurrency;
mod cibuildwheel_build;
mod cibuildwheel_corpus;
mod compat_slice;
mod conformance;
mod crash_safety;
mod cross_properties;
mod crossenv_configure;
mod crossenv_headers;
mod crossenv_reports_target;
mod ctypes_bridge;
mod dependency_rule;
mod determinism;
mod elf_edit;
mod elf_facts;
mod env_reads;
mod exit_codes;
mod fixtures;
mod free_threaded;
mod free_threaded_python;
mod hook_installs;
mod host_cpython_build;
mod hostile_fuzz_regressions;
mod hostile_inputs;
mod inspect_linux;
mod inspect_macos;
mod loadcheck_macos_real;
mod macho_malformed;
mod macho_sign_real;
mod macho_wheels;
mod macho_zig;
mod macos_sdk;
mod macos_universal2;
mod manylinux_policy;
mod openmp;
mod options_both_tables;
mod options_cibuildwheel;
mod options_consumed;
mod options_docs;
mod options_errors;
mod options_pyproject;
mod options_selection;
mod output_messages;
mod package_index;
mod peers;
mod pinned_downloads;
mod pipeline_blasdot;
mod pipeline_cuda;
mod pipeline_examples;
mod pipeline_fortran;
mod pipeline_gcc;
mod pipeline_prepare;
mod pipeline_rust;
mod pipeline_versions;
mod project_paths;
mod publish_attestations;
mod publish_check;
mod publish_trusted;
mod publish_upload;
mod readme_quick_start;
mod release_wheel;
mod repair_auditwheel_data;
mod repair_delocate_data;
mod repair_linux_errors;
mod repair_linux_graft;
mod repair_linux_musl;
mod repair_linux_noop;
mod repair_macos_bad_input;
mod repair_macos_cli;
mod repair_macos_real;
mod repair_macos_zig;
mod rust_toolchain;
mod sbom_repair;
mod symbol_check;
mod sysroot_provision;
mod target_cpython_smoke;
mod target_headers;
mod target_imports;
mod target_libraries;
mod target_libraries_openblas;
mod target_libraries_pillow;
mod target_libraries_services;
mod target_programs;
mod test_command;
mod test_requirements_built;
mod test_tiers;
mod test_timeout;
mod testing_debian_requirements;
mod testing_linux;
mod ubuntu_host;
mod wheel_archive;
mod wheel_real;
mod wheel_writer;
mod zig_cpu_flags;
mod zig_wrappers;
