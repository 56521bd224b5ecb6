//! The Fortran compiler of a macOS target: LLVM flang, Debian's build for the build
//! machine, compiles to Mach-O for the target; the target's C compiler (zig) links, with
//! flang's runtime built for the target from the same LLVM release (the catalogue's
//! `flang-runtime`, whose prefix a build is given in [`FORTRAN_RUNTIME_VARIABLE`]).
//!
//! gfortran has no macOS target in any Debian package, and GCC's own Darwin support
//! needs Apple's linker and assembler; flang is an LLVM front end, so every LLVM
//! target is in the one binary Debian ships. Its runtime is plain C++ (no LLVM), which
//! zig compiles for macOS as it compiles any C++ library.

use std::path::{Path, PathBuf};

use super::super::ToolchainError;
use super::super::language::{Compiler, Language};
use super::super::wrappers::write_script;
use super::{
    ARGUMENT_SCAN, BUILD_ARCH, DebianCompilerSpec, SPLIT_COMPILE_AND_LINK, config,
    print_search_dirs, script_path,
};
use crate::support::host::{Cache, Network, cache_key, shell_quote, shell_quote_path};
use crate::support::target_libraries::{FLANG_RUNTIME_LIBRARY, FORTRAN_RUNTIME_VARIABLE};
use crate::target::Target;

/// config/fortran-toolchain.toml's `[flang]` table (the file's comments describe it).
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FlangConfig {
    debian_release: String,
    packages: Vec<String>,
    keep: Vec<String>,
    libraries: Vec<String>,
    flang: String,
}

/// The `flang` script for `target`, over Debian's flang-new, linking through `cc`.
pub(super) fn flang_compiler(
    cache: &Cache,
    target: &Target,
    cc: &Path,
    network: &Network,
) -> Result<Compiler, ToolchainError> {
    let missing = |reason: String| ToolchainError::FortranMissing {
        target: target.id().to_string(),
        reason,
    };
    let flang = &config().flang;
    let release = &flang.debian_release;
    let started = std::time::Instant::now();
    let name = format!(
        "flang-{release}-{}",
        cache_key(&[
            flang.packages.join(" ").as_bytes(),
            flang.keep.join(" ").as_bytes()
        ])
    );
    let fetched = DebianCompilerSpec {
        compiler: "flang",
        release,
        packages: &flang.packages,
        keep: &flang.keep,
        name: &name,
        libraries: &flang.libraries,
        libraries_name: &format!("flang-libraries-{}-{release}", BUILD_ARCH.debian()),
    }
    .fetch(cache, network)
    .map_err(missing)?;
    let program = fetched.root.join(&flang.flang);
    let version = flang_version(&program, &fetched.library_path).map_err(missing)?;
    if fetched.downloaded {
        tracing::info!(
            "fetched Debian's flang for {} in {:.1} s",
            target.id(),
            started.elapsed().as_secs_f64()
        );
    }
    let script = script_path(cache, &format!("{name}-{}", target.id()), "flang")?;
    write_script(
        &script,
        &flang_script(&program, &fetched.library_path, &llvm_triple(target), cc),
    )?;
    tracing::info!(
        "Fortran for {}: Debian's {} from {release} ({version}), runtime built for the target from the same LLVM release",
        target.id(),
        flang.packages[0],
    );
    Ok(Compiler::new(Language::Fortran, script))
}

/// flang and its runtime as the record of a library compiled with them names them.
pub(super) fn for_libraries() -> String {
    let flang = &config().flang;
    format!(
        "Debian {}'s {}, runtime the catalogue's {FLANG_RUNTIME_LIBRARY} built for the target from the same LLVM release",
        flang.debian_release, flang.packages[0]
    )
}

/// The triple flang compiles for: the target's architecture and its deployment target,
/// which Mach-O objects record (zig's triple spells the same `aarch64-macos.11.0`).
fn llvm_triple(target: &Target) -> String {
    format!("{}-apple-macos{}", target.zig_arch(), target.os_version())
}

/// `flang-new --version`'s first line, or why flang does not run on this machine (a
/// library it loads that neither the machine nor the fetched ones have).
fn flang_version(program: &Path, library_path: &[PathBuf]) -> Result<String, String> {
    let output = std::process::Command::new(program)
        .arg("--version")
        .env(
            "LD_LIBRARY_PATH",
            std::env::join_paths(library_path).unwrap_or_default(),
        )
        .output()
        .map_err(|err| format!("cannot run {}: {err}", program.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    match stdout.lines().next() {
        Some(line) if output.status.success() => Ok(line.trim().to_string()),
        _ => Err(format!(
            "Debian's flang does not run on this machine: {}",
            String::from_utf8_lossy(&output.stderr)
                .lines()
                .next()
                .unwrap_or("it printed nothing")
        )),
    }
}

/// The `flang` script: compiles and queries go to flang for `triple`; links go to `cc`
/// with the runtime the build was given.
fn flang_script(flang: &Path, library_path: &[PathBuf], triple: &str, cc: &Path) -> String {
    let library_path = library_path
        .iter()
        .map(|dir| dir.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(":");
    format!(
        "#!/bin/sh\n\
         # Generated by crosswheel; rewritten on every run. LLVM flang compiles for {triple}; a link\n\
         # goes through the target's C compiler with flang's runtime built for the target (the\n\
         # catalogue's flang-runtime, whose prefix ${FORTRAN_RUNTIME_VARIABLE} names).\n\
         {ARGUMENT_SCAN}\
         fortran() {{\n  \
           LD_LIBRARY_PATH={library_path}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}} {flang} --target={triple} \"$@\"\n\
         }}\n\
         runtime=${{{FORTRAN_RUNTIME_VARIABLE}:+${FORTRAN_RUNTIME_VARIABLE}/lib}}\n\
         {search_dirs}\
         if [ \"$link\" = 0 ]; then fortran \"$@\"; exit $?; fi\n\
         if [ -z \"$runtime\" ]; then\n  \
           echo \"error: this build was given no Fortran runtime for {triple} ({FORTRAN_RUNTIME_VARIABLE} is unset): crosswheel builds flang-runtime for a project whose meson or CMake files add Fortran; name it in target-libraries\" >&2\n  \
           exit 1\n\
         fi\n\
         {SPLIT_COMPILE_AND_LINK}\
         # gfortran's flags for its static runtime mean nothing to flang's, which is a dylib.\n\
         for arg do\n  \
           shift\n  \
           case \"$arg\" in\n    \
             -static-libgfortran|-static-libquadmath|-static-libgcc) ;;\n    \
             *) set -- \"$@\" \"$arg\" ;;\n  \
           esac\n\
         done\n\
         exec {cc} \"$@\" -L\"$runtime\" -lFortranRuntime\n",
        search_dirs = print_search_dirs("\"$runtime\""),
        library_path = shell_quote(&library_path),
        flang = shell_quote_path(flang),
        cc = shell_quote_path(cc),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flang_compiles_for_the_deployment_target_and_links_through_the_c_compiler() {
        let target = Target::parse("macos-arm64").unwrap();
        assert_eq!(llvm_triple(&target), "aarch64-apple-macos11.0");
        let script = flang_script(
            Path::new("/t/usr/lib/llvm-19/bin/flang-new"),
            &[PathBuf::from("/t/usr/lib/x86_64-linux-gnu")],
            "aarch64-apple-macos11.0",
            Path::new("/w/cc"),
        );
        assert!(
            script.contains(
                "/t/usr/lib/llvm-19/bin/flang-new --target=aarch64-apple-macos11.0 \"$@\""
            ),
            "{script}"
        );
        assert!(
            script.contains("exec /w/cc \"$@\" -L\"$runtime\" -lFortranRuntime\n"),
            "{script}"
        );
        assert!(
            script
                .contains("runtime=${CROSSWHEEL_FORTRAN_RUNTIME:+$CROSSWHEEL_FORTRAN_RUNTIME/lib}"),
            "{script}"
        );
    }

    #[test]
    fn a_link_without_a_runtime_stops_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("flang");
        std::fs::write(
            &script,
            flang_script(
                Path::new("/nonexistent/flang-new"),
                &[],
                "aarch64-apple-macos11.0",
                Path::new("/bin/true"),
            ),
        )
        .unwrap();
        let output = std::process::Command::new("sh")
            .arg(&script)
            .args(["x.o", "-shared", "-o", "x.so"])
            .env_remove(FORTRAN_RUNTIME_VARIABLE)
            .output()
            .unwrap();
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("no Fortran runtime for aarch64-apple-macos11.0"),
            "{stderr}"
        );
    }
}
