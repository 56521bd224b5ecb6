//! The Rust compiler a toolchain gets for a project that needs it: cargo, given only the
//! provider's variables, cross-compiles a crate for the target with a build script that
//! runs on the build machine, links it with the target's C toolchain and Rust's unwinder
//! from the target's `libgcc_s.so.1`; a target no source serves stops before any build.

use std::path::Path;

use crosswheel::stages::toolchain::{Language, resolve_toolchain};
use crosswheel::support::host::{Cache, Network};
use crosswheel::target::{Target, ToolchainKind};

/// A cdylib that unwinds (`catch_unwind`), with a build script (compiled for and run on
/// the build machine) that hands the crate a value.
fn write_crate(dir: &Path) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"cwprobe\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [lib]\ncrate-type = [\"cdylib\"]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("build.rs"),
        "fn main() { println!(\"cargo:rustc-env=CW_ANSWER=42\"); }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("src/lib.rs"),
        "#[no_mangle]\npub extern \"C\" fn cw_answer() -> u32 {\n    \
         std::panic::catch_unwind(|| env!(\"CW_ANSWER\").parse::<u32>().unwrap()).unwrap_or(0)\n}\n",
    )
    .unwrap();
}

#[test]
#[ignore = "slow: Rust for aarch64 (rustup's, or a Debian download) and a zig link"]
fn cargo_cross_compiles_a_crate_for_aarch64_with_the_providers_variables_only() {
    let python = crate::common::distribution_python();
    let target = Target::parse("linux-aarch64").unwrap();
    let cache = Cache::from_env().expect("a cache directory");
    let toolchain = resolve_toolchain(
        ToolchainKind::Zig,
        &target,
        &cache,
        &python.executable,
        &Network::default(),
        &[Language::Rust],
        None,
    )
    .unwrap_or_else(|err| panic!("Rust toolchain for linux-aarch64: {err}"));
    let rust = toolchain
        .compilers
        .get(Language::Rust)
        .expect("a Rust compiler in the toolchain");
    assert_eq!(
        rust.environment["CARGO_BUILD_TARGET"],
        "aarch64-unknown-linux-gnu"
    );

    let work = tempfile::tempdir().unwrap();
    let project = work.path().join("probe");
    write_crate(&project);
    let path = std::iter::once(rust.programs_dir.clone())
        .flatten()
        .chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ))
        .collect::<Vec<_>>();
    let output = std::process::Command::new(&rust.environment["CARGO"])
        .args(["build", "--release", "--offline"])
        .current_dir(&project)
        .envs(&rust.environment)
        .env("PATH", std::env::join_paths(path).unwrap())
        .env("CARGO_TARGET_DIR", work.path().join("target"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "cargo build failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let library = work
        .path()
        .join("target/aarch64-unknown-linux-gnu/release/libcwprobe.so");
    let bytes = std::fs::read(&library).unwrap();
    let elf = goblin::elf::Elf::parse(&bytes).unwrap();
    assert_eq!(elf.header.e_machine, goblin::elf::header::EM_AARCH64);
    assert!(
        elf.libraries.contains(&"libgcc_s.so.1"),
        "Rust's unwinder should come from the target's libgcc_s.so.1: {:?}",
        elf.libraries
    );
    assert!(
        elf.dynsyms
            .iter()
            .any(|sym| elf.dynstrtab.get_at(sym.st_name) == Some("cw_answer")),
        "the crate's function is exported"
    );
}

#[test]
#[ignore = "slow: zig (the C side of the toolchain comes first)"]
fn a_target_without_a_rust_standard_library_stops_in_one_line_naming_the_install_command() {
    let python = crate::common::distribution_python();
    // macOS: Debian ships no standard library for it, so only a rustc that has it serves.
    let target = Target::parse("macos-arm64").unwrap();
    let cache = Cache::from_env().expect("a cache directory");
    match resolve_toolchain(
        ToolchainKind::Zig,
        &target,
        &cache,
        &python.executable,
        // Offline: rustup must not add the target, and the error must still be one line.
        &Network::new(true, None),
        &[Language::Rust],
        None,
    ) {
        Ok(toolchain) => {
            // The build machine's rustc already has the target: it is what builds get.
            let rust = toolchain.compilers.get(Language::Rust).unwrap();
            assert_eq!(
                rust.environment["CARGO_BUILD_TARGET"],
                "aarch64-apple-darwin"
            );
        }
        Err(err) => {
            let message = err.to_string();
            assert!(!message.contains('\n'), "{message}");
            assert!(
                message.contains("rustup target add aarch64-apple-darwin"),
                "{message}"
            );
        }
    }
}
