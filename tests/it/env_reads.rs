//! Every environment variable that configures crosswheel is read in `src/input/options` (or, for
//! the machine itself, `src/support/host`), so that it has one parser, one error message and one
//! line in docs/configuration.md. Elsewhere the process environment is read only where a
//! stage hands it on to a program it runs or follows a convention of the tools it stands in
//! for; each such read is listed below with its reason, by file and by what it reads. A new
//! read fails this test until it is routed through options or listed here.

use std::path::Path;

use crate::common::sources;

/// Folders whose reads are the configuration layer itself.
const CONFIGURATION: [&str; 2] = ["src/input/options/", "src/support/host/"];

/// (file, what is read, why it is not configuration read behind the options' back).
const ALLOWED: &[(&str, &str, &str)] = &[
    (
        "src/coordination/commands/build.rs",
        "vars_os()",
        "the process edge: hands the variables' names to options::env_var_warnings, which says which look like misspelt option variables",
    ),
    (
        "src/formats/wheel/writer.rs",
        "var_os(\"SOURCE_DATE_EPOCH\")",
        "the reproducible-builds convention every wheel writer follows; wheel::source_date_epoch is its one reader",
    ),
    (
        "src/formats/wheel/archive.rs",
        "var_os(variable)",
        "the size limits of wheel::open_within_env_limits, for `crosswheel inspect`/`repair` on wheels of unknown origin: a safety limit of the zip reader, named in its error",
    ),
    (
        "src/coordination/pipeline/audit.rs",
        "var_os(\"PATH\")",
        "the PATH audit commands inherit, with the audit's venv put first",
    ),
    (
        "src/stages/backend/hook_env.rs",
        "var(\"PATH\")",
        "the PATH before-build inherits, with the build's own venv put first",
    ),
    (
        "src/stages/backend/cross_vars.rs",
        "var(\"PATH\")",
        "the PATH the backend's processes inherit, with the cross environment's folders put first",
    ),
    (
        "src/stages/crossenv/mod.rs",
        "var(\"PYTHONPATH\")",
        "the PYTHONPATH a build inherits, kept behind the cross environment's folder",
    ),
    (
        "src/stages/toolchain/cuda.rs",
        "var_os(&name)",
        "CUDAARCHS and CUPY_NVCC_GENERATE_CODE: the GPU architectures as CMake and cupy read them; the user's win over the target's default, which is set only where they are unset",
    ),
    (
        "src/stages/toolchain/language.rs",
        "var(name)",
        "each language's flags variable (CFLAGS, CXXFLAGS, ...), CPPFLAGS and LDFLAGS: the compilers' own convention, passed on to the wrappers as the user set them",
    ),
    (
        "src/support/target_libraries/mod.rs",
        "var(name)",
        "CPPFLAGS/LDFLAGS/PKG_CONFIG_LIBDIR/CMAKE_PREFIX_PATH as the user set them, kept after the target prefixes' entries",
    ),
    (
        "src/support/target_libraries/mod.rs",
        "var_os(&name)",
        "a catalogue library's consumer_environment (HDF5_VERSION, ...) yields to the same variable set by the user",
    ),
    (
        "src/stages/backend/cross_vars.rs",
        "var(\"PKG_CONFIG_PATH\")",
        "PKG_CONFIG_PATH as the user set it, kept after the target prefixes' pkg-config folders in the hooks that run on the build machine",
    ),
    (
        "src/coordination/pipeline/environment.rs",
        "vars()",
        "the process environment that the `environment` option is evaluated against, as cibuildwheel evaluates it",
    ),
    (
        "src/coordination/pipeline/environment.rs",
        "var(\"SDKROOT\")",
        "the compilers' convention for a macOS SDK, the fallback of `macos-sdk`",
    ),
    (
        "src/coordination/pipeline/report.rs",
        "var_os(\"GITHUB_ACTIONS\")",
        "where output goes (`::group::` folding), set by the CI service, not by the user",
    ),
    (
        "src/coordination/pipeline/report.rs",
        "var_os(\"GITHUB_STEP_SUMMARY\")",
        "the job summary file the CI service names",
    ),
    (
        "src/stages/testing/mod.rs",
        "vars()",
        "the environment of the test command, which inherits crosswheel's as cibuildwheel's does",
    ),
    (
        "src/stages/testing/venv.rs",
        "var_os(\"PATH\")",
        "the PATH the test venv's commands inherit, under the venv's own bin",
    ),
    (
        "src/stages/testing/source_build.rs",
        "var(\"PATH\")",
        "the PATH of pip's source builds under emulation",
    ),
    (
        "src/stages/testing/emulator.rs",
        "var_os(\"PATH\")",
        "qemu-user found on PATH, as any program is",
    ),
    (
        "src/analysis/facts/linux/search.rs",
        "var_os(\"LD_LIBRARY_PATH\")",
        "auditwheel's library search order, which the Linux repair reproduces",
    ),
    (
        "src/stages/publish/upload.rs",
        "var(key)",
        "TWINE_* credentials and repository, twine's convention that upload replaces",
    ),
];

/// The reads of the process environment in one source, as `var("NAME")`, `vars()`, ...;
/// unit-test modules (from `#[cfg(test)]` on) are not the program.
fn env_reads(source: &str) -> Vec<String> {
    let program = source.split("#[cfg(test)]").next().unwrap_or_default();
    let mut found = Vec::new();
    for line in program.lines() {
        let code = line.split("//").next().unwrap_or_default();
        let mut rest = code;
        while let Some(at) = rest.find("env::var") {
            let call = &rest[at + "env::".len()..];
            let end = call.find(')').map_or(call.len(), |close| close + 1);
            found.push(call[..end].to_string());
            rest = &call[end..];
        }
    }
    found
}

#[test]
fn the_environment_is_read_in_options_or_where_a_listed_reason_says() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    files.sort();
    let mut unexplained = Vec::new();
    let mut seen = Vec::new();
    for path in &files {
        let relative = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if CONFIGURATION
            .iter()
            .any(|folder| relative.starts_with(folder))
        {
            continue;
        }
        let source = std::fs::read_to_string(path).unwrap();
        for read in env_reads(&source) {
            match ALLOWED
                .iter()
                .find(|(file, what, _)| *file == relative && *what == read)
            {
                Some(allowed) => seen.push(allowed),
                None => unexplained.push(format!("{relative}: env::{read}")),
            }
        }
    }
    assert!(
        unexplained.is_empty(),
        "environment read outside src/input/options and src/support/host; read it in options (an EnvSource) and pass the value down, or list it in ALLOWED with the reason:\n{}",
        unexplained.join("\n")
    );
    let stale: Vec<String> = ALLOWED
        .iter()
        .filter(|allowed| !seen.contains(allowed))
        .map(|(file, what, _)| format!("{file}: env::{what}"))
        .collect();
    assert!(
        stale.is_empty(),
        "ALLOWED lists reads the code no longer makes; remove them:\n{}",
        stale.join("\n")
    );
}

#[test]
fn the_scanner_finds_reads_and_skips_comments_and_unit_tests() {
    let source = "let a = std::env::var(\"A\");\n\
                  // std::env::var(\"COMMENTED\")\n\
                  let b = env::var_os(name).or(std::env::vars().next());\n\
                  #[cfg(test)]\nmod tests { fn t() { std::env::var(\"IN_TEST\"); } }\n";
    assert_eq!(env_reads(source), ["var(\"A\")", "var_os(name)", "vars()"]);
}
