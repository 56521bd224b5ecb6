//! The Rust compiler of a target: rustc and cargo, the target's standard library, and the
//! variables that make cargo (under maturin or setuptools-rust) cross-compile with the
//! toolchain's C compiler as its linker.
//!
//! rustc compiles for every target it has a standard library for; what differs per target
//! is that library. The build machine's rustc is taken when it has the target's (rustup
//! installs it with `rustup target add`); otherwise Debian's rustc and cargo and the
//! target architecture's `libstd-rust-dev` (a macOS target: the library's source, which
//! cargo compiles in the build) of the same version come from one suite of Debian's
//! archive (config/rust-toolchain.toml) into the cache: see [`debian`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::ToolchainError;
use super::language::{Compiler, Language, build_machine_program};
use super::wrappers::{write_data, write_script};
use crate::support::host::{Cache, Network, cache_key, find_on_path, shell_quote_path};
use crate::support::sysroot::{self, LinuxArch};
use crate::target::{Libc, Target};

mod debian;
use debian::{create_dir, from_debian};

const RUST_TOOLCHAIN_TOML: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/config/rust-toolchain.toml"
));

/// config/rust-toolchain.toml (the file's comments describe the fields).
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RustConfig {
    debian_release: String,
    tools: Vec<String>,
    libraries: Vec<String>,
    target_std: String,
    std_source: Vec<String>,
    objcopy: String,
}

fn config() -> &'static RustConfig {
    static CONFIG: OnceLock<RustConfig> = OnceLock::new();
    CONFIG.get_or_init(|| match toml::from_str(RUST_TOOLCHAIN_TOML) {
        Ok(config) => config,
        // The file is compiled in; the unit test `the_bundled_file_parses` guards it.
        Err(err) => panic!("config/rust-toolchain.toml is invalid: {err}"),
    })
}

/// The build machine's Rust name; crosswheel runs on x86_64 Linux.
const BUILD_TRIPLE: &str = "x86_64-unknown-linux-gnu";
const BUILD_ARCH: LinuxArch = LinuxArch::X86_64;

/// What the toolchain's C side gives the Rust one: the target's compilers and archiver.
pub(super) struct TargetCTools<'a> {
    pub cc: &'a Path,
    pub cxx: Option<&'a Path>,
    pub ar: &'a Path,
}

/// rustc and cargo able to build for one target.
#[derive(Debug, Clone)]
struct RustTools {
    rustc: PathBuf,
    cargo: PathBuf,
    /// Where they came from, for the log: `rustc 1.95.0 on PATH`.
    origin: String,
    /// Their folder when PATH does not have them (Debian's), for front ends that run
    /// `cargo` by name.
    programs_dir: Option<PathBuf>,
    /// Whether cargo compiles the target's standard library from its source
    /// (`-Zbuild-std`), for a target that has no built one.
    builds_std: bool,
}

/// The Rust compiler of `target`: the build machine's when it has the target's standard
/// library (after `rustup target add` where rustup can), else Debian's.
pub(super) fn rust_compiler(
    cache: &Cache,
    target: &Target,
    c_tools: &TargetCTools<'_>,
    network: &Network,
) -> Result<Compiler, ToolchainError> {
    let Some(triple) = target.rust_triple() else {
        return Err(missing(target, "", "it has no Rust target".into()));
    };
    let tools = match from_path(triple, network.offline) {
        Ok(tools) => tools,
        Err(why_not) => from_debian(cache, target, triple, &why_not, network)?,
    };
    tracing::info!("Rust for {}: {}", target.id(), tools.origin);
    let libgcc_s = system_libgcc_s(cache, target, network);
    let shims = write_shims(cache, triple, &tools, c_tools, libgcc_s.as_deref())?;
    let environment = cargo_variables(triple, &tools, &shims, c_tools);
    let mut compiler = Compiler::new(Language::Rust, shims.target_rustc);
    compiler.environment = environment;
    compiler.programs_dir = tools.programs_dir;
    Ok(compiler)
}

fn missing(target: &Target, triple: &str, reason: String) -> ToolchainError {
    ToolchainError::RustMissing {
        target: target.id().to_string(),
        reason,
        install_command: if triple.is_empty() {
            "build this target without Rust".into()
        } else {
            format!("rustup target add {triple}")
        },
    }
}

/// The rustc on PATH when it has `triple`'s standard library, installing it with rustup
/// first when rustup is there and may download; else why not.
fn from_path(triple: &str, offline: bool) -> Result<RustTools, String> {
    let (Some(rustc), Some(cargo)) = (find_on_path("rustc"), find_on_path("cargo")) else {
        return Err("PATH has no rustc and cargo".into());
    };
    let has_std = |rustc: &Path| {
        target_libdir(rustc, triple).is_some_and(|dir| {
            std::fs::read_dir(dir).is_ok_and(|entries| {
                entries.flatten().any(|entry| {
                    let name = entry.file_name();
                    let name = name.to_string_lossy();
                    name.starts_with("libstd-") && name.ends_with(".rlib")
                })
            })
        })
    };
    let found = |rustc: PathBuf| {
        let version = rustc_version(&rustc).unwrap_or_else(|| "rustc".into());
        RustTools {
            origin: format!("{version} on PATH ({})", rustc.display()),
            rustc,
            cargo: cargo.clone(),
            programs_dir: None,
            builds_std: false,
        }
    };
    if has_std(&rustc) {
        return Ok(found(rustc));
    }
    let lacks = format!(
        "the rustc on PATH ({}) has no standard library for {triple}",
        rustc.display()
    );
    let Some(rustup) = find_on_path("rustup") else {
        return Err(lacks);
    };
    if offline {
        return Err(format!("{lacks} and --offline forbids `rustup target add`"));
    }
    tracing::info!("installing Rust's standard library for {triple}: rustup target add {triple}");
    let added = duct::cmd(&rustup, ["target", "add", triple])
        .stderr_to_stdout()
        .stdout_capture()
        .unchecked()
        .run();
    match added {
        Ok(output) if output.status.success() && has_std(&rustc) => Ok(found(rustc)),
        Ok(output) => {
            let text = String::from_utf8_lossy(&output.stdout);
            let last = text.lines().rev().find(|line| !line.trim().is_empty());
            Err(format!(
                "{lacks} and `rustup target add {triple}` failed ({})",
                last.unwrap_or("no reason given").trim()
            ))
        }
        Err(err) => Err(format!("{lacks} and rustup cannot run ({err})")),
    }
}

fn target_libdir(rustc: &Path, triple: &str) -> Option<PathBuf> {
    let output = duct::cmd(rustc, ["--print", "target-libdir", "--target", triple])
        .stderr_null()
        .stdout_capture()
        .unchecked()
        .run()
        .ok()?;
    output
        .status
        .success()
        .then(|| PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()))
}

fn rustc_version(rustc: &Path) -> Option<String> {
    let output = duct::cmd(rustc, ["--version"])
        .stderr_null()
        .stdout_capture()
        .unchecked()
        .run()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    // `rustc 1.95.0 (59807616e 2026-04-14)`: the first two words.
    Some(
        text.split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// The target's `libgcc_s.so.1` from Debian (the repair's system libraries, fetched once),
/// for glibc targets: rustc links Rust's unwinder as `-lgcc_s`, which zig replaces with
/// its own libunwind linked into the extension, and on ppc64le that libunwind's messages
/// call glibc 2.32's `__fprintfieee128` (a `manylinux_2_34` wheel). Linked by path, the
/// system's library is a `NEEDED libgcc_s.so.1` with `GCC_3.0` symbols, as rustc and gcc
/// link it and as every manylinux policy allows. `None` (the shim then leaves it to zig)
/// when it cannot be had.
fn system_libgcc_s(cache: &Cache, target: &Target, network: &Network) -> Option<PathBuf> {
    let arch = target.linux_arch()?;
    if target.libc() != Some(Libc::Glibc) {
        return None;
    }
    let root = sysroot::system_libraries(cache.root(), arch, network)
        .map_err(|err| {
            tracing::info!("Rust's unwinder for {} comes from zig: {err}", target.id());
        })
        .ok()?;
    // The tree holds one architecture: its multiarch folder is the one with the library.
    ["lib", "usr/lib"]
        .iter()
        .filter_map(|dir| std::fs::read_dir(root.join(dir)).ok())
        .flat_map(|entries| entries.flatten())
        .map(|entry| entry.path().join("libgcc_s.so.1"))
        .find(|path| path.is_file())
}

/// The scripts cargo and the `cc` crate run for the target.
struct Shims {
    /// rustc bound to the target and its linker: what meson's cross file names.
    target_rustc: PathBuf,
    linker: PathBuf,
    cc: PathBuf,
    cxx: Option<PathBuf>,
}

/// Arguments cargo and the `cc` crate add that the toolchain's C compiler must not see:
/// `--target=<rust triple>` (the `cc` crate's, for clang), which zig cannot parse and
/// which would replace the wrappers' own target; linker options zig's lld refuses or warns
/// about (`-O1`, which rustc passes and lld calls deprecated). `-lgcc_s` becomes
/// `libgcc_s`, the target's library by path, when there is one (see [`system_libgcc_s`]):
/// Debian's refers to newer glibc symbols (`_dl_find_object`, 2.35) than the wrappers'
/// glibc stubs define, which lld refuses in an executable (a build script when the target
/// is the build machine's x86_64) unless told that the library's own needs are the
/// running system's, as they are: the target's `libgcc_s.so.1` is loaded at run time.
fn filter_loop(libgcc_s: Option<&Path>) -> String {
    let gcc_s = libgcc_s
        .map(|path| {
            format!(
                "    -lgcc_s) set -- \"$@\" -Wl,--allow-shlib-undefined; arg={} ;;\n",
                shell_quote_path(path)
            )
        })
        .unwrap_or_default();
    format!(
        "for arg do\n  shift\n  case \"$arg\" in\n    \
         --target=*|-Wl,--no-undefined-version|-Wl,-znostart-stop-gc|-Wl,-O1) continue ;;\n\
         {gcc_s}  esac\n  set -- \"$@\" \"$arg\"\ndone\n"
    )
}

/// What an SDK has for `-liconv`, for a macOS link without one (zig ships libSystem's
/// stubs, not libiconv's): a text stub of `/usr/lib/libiconv.2.dylib`, which every macOS
/// carries. Rust's standard library for Apple targets asks for libiconv without importing
/// from it, so the stub lists no symbols: a crate that really calls iconv fails its link
/// rather than making a wheel that cannot load. (scripts/release-wheels does the same.)
const LIBICONV_STUB: &str = "--- !tapi-tbd
tbd-version:     4
targets:         [ x86_64-macos, arm64-macos ]
install-name:    '/usr/lib/libiconv.2.dylib'
current-version: 7
compatibility-version: 7
...
";

fn write_shims(
    cache: &Cache,
    triple: &str,
    tools: &RustTools,
    c_tools: &TargetCTools<'_>,
    libgcc_s: Option<&Path>,
) -> Result<Shims, ToolchainError> {
    // `before_exec`: shell lines the script runs after the filter, before the compiler.
    let shim = |program: &Path, libgcc_s: Option<&Path>, before_exec: &str| {
        format!(
            "#!/bin/sh\n# Generated by crosswheel: cargo's view of the target's C toolchain.\n{}{before_exec}exec {} \"$@\"\n",
            filter_loop(libgcc_s),
            shell_quote_path(program)
        )
    };
    let cc = shim(c_tools.cc, None, "");
    let cxx = c_tools.cxx.map(|cxx| shim(cxx, None, ""));
    let mut link_setup = String::new();
    if triple.ends_with("-apple-darwin") {
        let stubs = cache.toolchains().join("rust").join("sdk-stubs");
        create_dir(&stubs)?;
        write_data(&stubs.join("libiconv.tbd"), LIBICONV_STUB)?;
        // Without an SDK (whose usr/lib the C wrapper puts on -L itself).
        link_setup = format!(
            "if [ -z \"$SDKROOT\" ]; then set -- \"$@\" -L{}; fi\n",
            shell_quote_path(&stubs)
        );
    }
    let linker = shim(c_tools.cc, libgcc_s, &link_setup);
    let key = cache_key(&[
        cc.as_bytes(),
        linker.as_bytes(),
        cxx.as_deref().unwrap_or_default().as_bytes(),
        tools.rustc.as_os_str().as_encoded_bytes(),
    ]);
    let bin = cache
        .toolchains()
        .join("rust")
        .join("shims")
        .join(format!("{triple}-{}", key.get(..12).unwrap_or(&key)));
    create_dir(&bin)?;
    let shims = Shims {
        target_rustc: bin.join("rustc"),
        linker: bin.join("linker"),
        cc: bin.join("cc"),
        cxx: cxx.as_ref().map(|_| bin.join("c++")),
    };
    write_script(&shims.cc, &cc)?;
    write_script(&shims.linker, &linker)?;
    if let (Some(path), Some(script)) = (&shims.cxx, &cxx) {
        write_script(path, script)?;
    }
    write_script(
        &shims.target_rustc,
        &format!(
            "#!/bin/sh\n# Generated by crosswheel: rustc for {triple}.\nexec {} --target {triple} -C linker={} \"$@\"\n",
            shell_quote_path(&tools.rustc),
            shell_quote_path(&shims.linker)
        ),
    )?;
    Ok(shims)
}

/// What cargo, the `cc` crate and build scripts read: the target, its linker and C
/// compilers, the build machine's C compiler for build scripts, rustc and cargo.
fn cargo_variables(
    triple: &str,
    tools: &RustTools,
    shims: &Shims,
    c_tools: &TargetCTools<'_>,
) -> BTreeMap<String, String> {
    let path = |path: &Path| path.to_string_lossy().into_owned();
    let lower = triple.replace('-', "_");
    let upper = lower.to_uppercase();
    let mut vars = BTreeMap::from([
        ("RUSTC".to_string(), path(&tools.rustc)),
        ("CARGO".to_string(), path(&tools.cargo)),
        ("CARGO_BUILD_TARGET".to_string(), triple.to_string()),
        (format!("CARGO_TARGET_{upper}_LINKER"), path(&shims.linker)),
        (format!("CC_{lower}"), path(&shims.cc)),
        (format!("AR_{lower}"), path(c_tools.ar)),
        ("HOST_CC".to_string(), build_machine_program(Language::C)),
        ("HOST_CXX".to_string(), build_machine_program(Language::Cxx)),
        // The `pkg-config` crate (openssl-sys, libz-sys, ...) refuses to answer for
        // another target unless told it may: the build's PKG_CONFIG_LIBDIR holds only
        // the target's folders (catalogue libraries, target wheels), so its answer is
        // the target's.
        (format!("PKG_CONFIG_ALLOW_CROSS_{lower}"), "1".to_string()),
    ]);
    if let Some(cxx) = &shims.cxx {
        vars.insert(format!("CXX_{lower}"), path(cxx));
    }
    if tools.builds_std {
        // cargo's `[unstable] build-std`, as a variable so that maturin's and
        // setuptools-rust's cargo commands stay theirs; a released rustc and cargo take
        // unstable options only with RUSTC_BOOTSTRAP.
        vars.insert(
            "CARGO_UNSTABLE_BUILD_STD".to_string(),
            "std,panic_abort".to_string(),
        );
        vars.insert("RUSTC_BOOTSTRAP".to_string(), "1".to_string());
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_file_parses() {
        let config = config();
        assert!(!config.debian_release.is_empty());
        assert!(config.target_std.contains("{version}"));
    }

    /// rustc and cargo under /r, the shims under /s, the C toolchain's wrappers under /w.
    fn example_tools() -> (RustTools, Shims, TargetCTools<'static>) {
        let tools = RustTools {
            rustc: "/r/rustc".into(),
            cargo: "/r/cargo".into(),
            origin: String::new(),
            programs_dir: None,
            builds_std: false,
        };
        let shims = Shims {
            target_rustc: "/s/rustc".into(),
            linker: "/s/linker".into(),
            cc: "/s/cc".into(),
            cxx: Some("/s/c++".into()),
        };
        let c_tools = TargetCTools {
            cc: Path::new("/w/cc"),
            cxx: Some(Path::new("/w/c++")),
            ar: Path::new("/w/ar"),
        };
        (tools, shims, c_tools)
    }

    #[test]
    fn cargo_gets_the_target_its_linker_and_per_target_c_compilers() {
        let (tools, shims, c_tools) = example_tools();
        let vars = cargo_variables("aarch64-unknown-linux-gnu", &tools, &shims, &c_tools);
        assert_eq!(vars["CARGO_BUILD_TARGET"], "aarch64-unknown-linux-gnu");
        assert_eq!(
            vars["CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER"],
            "/s/linker"
        );
        assert_eq!(vars["CC_aarch64_unknown_linux_gnu"], "/s/cc");
        assert_eq!(vars["CXX_aarch64_unknown_linux_gnu"], "/s/c++");
        assert_eq!(vars["AR_aarch64_unknown_linux_gnu"], "/w/ar");
        assert_eq!(vars["RUSTC"], "/r/rustc");
        assert!(vars.contains_key("HOST_CC"));
        assert_eq!(
            vars["PKG_CONFIG_ALLOW_CROSS_aarch64_unknown_linux_gnu"],
            "1"
        );
    }

    /// A target whose standard library comes as source is compiled by cargo in the build
    /// (`-Zbuild-std`, through the variable, so the front end's cargo command is its own);
    /// one with a built library gets no unstable switch at all.
    #[test]
    fn only_a_standard_library_from_source_turns_on_build_std() {
        let (mut tools, shims, c_tools) = example_tools();
        let built = cargo_variables("aarch64-apple-darwin", &tools, &shims, &c_tools);
        assert!(!built.contains_key("CARGO_UNSTABLE_BUILD_STD"));
        assert!(!built.contains_key("RUSTC_BOOTSTRAP"));
        tools.builds_std = true;
        let from_source = cargo_variables("aarch64-apple-darwin", &tools, &shims, &c_tools);
        assert_eq!(from_source["CARGO_UNSTABLE_BUILD_STD"], "std,panic_abort");
        assert_eq!(from_source["RUSTC_BOOTSTRAP"], "1");
    }

    #[test]
    fn the_bundled_libiconv_stub_names_the_macos_library_and_no_symbol() {
        assert!(LIBICONV_STUB.contains("install-name:    '/usr/lib/libiconv.2.dylib'"));
        assert!(LIBICONV_STUB.contains("arm64-macos") && LIBICONV_STUB.contains("x86_64-macos"));
        assert!(!LIBICONV_STUB.contains("symbols"));
    }

    #[test]
    fn the_shims_drop_what_zig_cannot_take() {
        let script = format!(
            "set -- --target=x86_64-unknown-linux-gnu -lgcc_s -Wl,-O1 -O2\n{}echo \"$@\"\n",
            filter_loop(Some(Path::new("/t/libgcc_s.so.1")))
        );
        let output = std::process::Command::new("sh")
            .args(["-c", &script])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&output.stdout).trim(),
            "-Wl,--allow-shlib-undefined /t/libgcc_s.so.1 -O2"
        );
    }
}
