//! Compilers for the targets: zig (default, from the `ziglang` package in a private venv)
//! or a system cross gcc, presented to build systems as plain `cc`/`c++`/`ar`/`ranlib`.

mod cpu_flags;
mod cuda;
mod cxx_runtime;
mod doctor;
mod fortran;
mod gcc;
mod language;
mod macos_sdk;
mod runtime;
mod rust;
mod wrappers;
mod xcrun;
mod zig;

use std::path::{Path, PathBuf};

pub use cpu_flags::{CPU_FLAGS_ERROR, wrapper_errors};
pub use cuda::CudaRequest;
pub use doctor::{DoctorReport, Readiness, TargetDoctor, doctor};
pub use fortran::family as fortran_family;
pub use fortran::for_libraries as fortran_for_libraries;
pub use fortran::runtime_is_a_target_library as fortran_runtime_is_a_target_library;
pub use gcc::{GccProbe, GccTools, apt_install_command, find_gcc, probe_gcc};
pub use language::{
    Compiler, Compilers, Language, LanguageNames, UserFlags, build_machine_program,
};
pub use macos_sdk::{MacosSdk, find_macos_sdk};
pub use wrappers::{
    DEBUG_INFO_MARKER, WRAPPER_NOTES_VAR, WrapperPaths, wrapper_notices, write_zig_wrappers,
};
pub use zig::{Zig, ensure_zig, find_zig, zig_install_command};

use crate::support::host::{Cache, Network};
use crate::target::{Target, ToolchainKind};

#[derive(Debug, thiserror::Error)]
pub enum ToolchainError {
    #[error(
        "zig is not installed in {venv} and --offline forbids installing it: run `{install_command}` (or set CROSSWHEEL_ZIG to a zig executable)"
    )]
    ZigMissingOffline {
        venv: PathBuf,
        install_command: String,
    },
    #[error("installing zig into {venv} failed: {reason}\n  to install by hand: {install_command}")]
    ZigInstallFailed {
        venv: PathBuf,
        reason: String,
        install_command: String,
    },
    #[error("zig at {exe} does not work: {reason}")]
    BrokenZig { exe: PathBuf, reason: String },
    #[error("no cross gcc for {target}: missing {missing}; install with `{install_command}`")]
    GccMissing {
        target: String,
        missing: String,
        install_command: String,
    },
    #[error(
        "{origin} = {path}: not a macOS SDK (no System/Library/Frameworks or usr/lib in it); point it at a MacOSX*.sdk folder"
    )]
    NotAnSdk { origin: &'static str, path: PathBuf },
    #[error("cannot get {package} for {target}, whose libgcc helpers zig lacks: {reason}")]
    Runtime {
        target: String,
        package: String,
        reason: String,
    },
    #[error("cannot get {name} for {target}'s C++ (zig's libc++ lacks its ABI): {reason}")]
    CxxRuntime {
        target: String,
        name: String,
        reason: String,
    },
    #[error("no Rust for {target}: {reason}; install it with `{install_command}`")]
    RustMissing {
        target: String,
        reason: String,
        install_command: String,
    },
    #[error(
        "no Fortran for {target}: {reason}; build this target without Fortran or leave it out (`skip`)"
    )]
    FortranMissing { target: String, reason: String },
    #[error(
        "no CUDA for {target}: {reason}; build this target without CUDA or leave it out (`skip`)"
    )]
    CudaMissing { target: String, reason: String },
    #[error(
        "{target} is not compiled itself: it is built as {slices} and fused; use one of those targets"
    )]
    FusedTarget { target: String, slices: String },
    #[error(transparent)]
    Io(#[from] crate::io_error::IoError),
}

/// The tools of one target: a compiler per language (see [`language`]), and the
/// archiver and binutils every language's objects share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolchain {
    pub kind: ToolchainKind,
    pub target: Target,
    /// C always; C++ unless a gcc toolchain has no g++ installed.
    pub compilers: Compilers,
    pub ar: PathBuf,
    pub ranlib: PathBuf,
    /// The symbol lister, stripper and linker autotools and libtool ask for (`NM`,
    /// `STRIP`, `LD`); a missing one stays unset.
    pub binutils: Binutils,
    /// One line for logs and error messages, e.g. `zig 0.17.1 -target aarch64-linux-gnu.2.17`.
    pub description: String,
}

impl Toolchain {
    /// The program of `language`'s compiler, or, when the toolchain has none, the name a
    /// GNU cross toolchain gives it (`aarch64-linux-gnu-g++`): a build that needs it then
    /// fails with "not found" instead of the build machine's compiler silently building
    /// x86_64 objects.
    pub fn program_or_gnu_name(&self, language: Language) -> String {
        match self.compilers.program(language) {
            Some(program) => program.to_string_lossy().into_owned(),
            None => format!(
                "{}-{}",
                self.target.gnu_triple(),
                language.names().gnu_program
            ),
        }
    }
}

/// `nm`, `strip` and `ld` for the target, where this machine has them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Binutils {
    pub nm: Option<PathBuf>,
    pub strip: Option<PathBuf>,
    pub ld: Option<PathBuf>,
}

/// zig ships no `nm` or `strip`: LLVM's read every target's objects; without them, the
/// build machine's GNU ones read and strip any ELF file (their generic `elf64-little`
/// and `elf64-big` formats), not Mach-O.
fn llvm_or_host_tool(tool: &str, target: &Target) -> Option<PathBuf> {
    let llvm = std::iter::once(format!("llvm-{tool}"))
        .chain(
            (14..=21)
                .rev()
                .map(|version| format!("llvm-{tool}-{version}")),
        )
        .find_map(|name| crate::support::host::find_on_path(&name));
    llvm.or_else(|| {
        (!target.is_macos())
            .then(|| crate::support::host::find_on_path(tool))
            .flatten()
    })
}

/// Finds (and with zig, installs unless `network` is offline) the toolchain of `kind` for
/// `target`; Debian's archive, as `network` reaches it, serves the runtime pieces zig lacks.
/// C and C++ always; `extra` names the languages beyond them the build needs (Fortran,
/// Rust, CUDA), whose compilers are found or fetched only then; CUDA is `cuda`'s release
/// and components, or the newest release without components.
pub fn resolve_toolchain(
    kind: ToolchainKind,
    target: &Target,
    cache: &Cache,
    host_python: &Path,
    network: &Network,
    extra: &[Language],
    cuda: Option<&CudaRequest>,
) -> Result<Toolchain, ToolchainError> {
    let mut toolchain = resolve_c_toolchain(kind, target, cache, host_python, network)?;
    if extra.contains(&Language::Rust) {
        let compilers = &toolchain.compilers;
        let c_tools = rust::TargetCTools {
            cc: compilers.program(Language::C).unwrap_or(&toolchain.ar),
            cxx: compilers.program(Language::Cxx),
            ar: &toolchain.ar,
        };
        let rust = rust::rust_compiler(cache, target, &c_tools, network)?;
        toolchain.compilers = Compilers::new(toolchain.compilers.iter().cloned().chain([rust]));
    }
    if extra.contains(&Language::Fortran) {
        let cc = toolchain
            .compilers
            .program(Language::C)
            .unwrap_or(&toolchain.ar);
        let fortran = fortran::fortran_compiler(cache, target, cc, network)?;
        toolchain.compilers = Compilers::new(toolchain.compilers.iter().cloned().chain([fortran]));
    }
    if extra.contains(&Language::Cuda) || cuda.is_some() {
        let cxx = toolchain.compilers.program(Language::Cxx).ok_or_else(|| {
            ToolchainError::CudaMissing {
                target: target.id().to_string(),
                reason: "nvcc needs the toolchain's C++ compiler and this gcc toolchain has no g++"
                    .to_string(),
            }
        })?;
        let newest = CudaRequest::newest();
        let cuda = cuda::cuda_compiler(
            cache,
            target,
            cxx,
            kind == ToolchainKind::Zig,
            cuda.unwrap_or(&newest),
            network,
        )?;
        toolchain.compilers = Compilers::new(toolchain.compilers.iter().cloned().chain([cuda]));
    }
    Ok(toolchain)
}

fn resolve_c_toolchain(
    kind: ToolchainKind,
    target: &Target,
    cache: &Cache,
    host_python: &Path,
    network: &Network,
) -> Result<Toolchain, ToolchainError> {
    if !target.data().fuses.is_empty() {
        return Err(ToolchainError::FusedTarget {
            target: target.id().to_string(),
            slices: target.data().fuses.join(" and "),
        });
    }
    match kind {
        ToolchainKind::Zig => {
            let zig = ensure_zig(cache, host_python, network.offline)?;
            let runtime = runtime::runtime_archive(cache, &zig, target, network)?;
            let cxx = cxx_runtime::cxx_library(cache, target, network)?;
            let wrappers =
                write_zig_wrappers(cache, &zig, target, runtime.as_deref(), cxx.as_ref())?;
            let mut c = Compiler::new(Language::C, wrappers.cc.clone());
            // A macOS runner's xcrun, which builds ask for the SDK and run compilers through.
            if target.is_macos() {
                let bin = wrappers.cc.parent().unwrap_or(Path::new("."));
                let zig_darwin = zig
                    .exe
                    .parent()
                    .unwrap_or(Path::new("."))
                    .join("lib/libc/darwin");
                c.programs_dir = Some(xcrun::write_xcrun(
                    &bin.join("programs"),
                    &wrappers,
                    &zig_darwin,
                )?);
            }
            Ok(Toolchain {
                kind,
                target: target.clone(),
                compilers: Compilers::new([c, Compiler::new(Language::Cxx, wrappers.cxx)]),
                ar: wrappers.ar,
                ranlib: wrappers.ranlib,
                binutils: Binutils {
                    nm: llvm_or_host_tool("nm", target),
                    strip: llvm_or_host_tool("strip", target),
                    ld: wrappers.ld,
                },
                // The flags every compile gets (the CPU, the long double ABI) are part of
                // the description, which keys the target libraries' cache.
                description: std::iter::once(format!(
                    "zig {} -target {}",
                    zig.version,
                    target.zig_triple()
                ))
                .chain(target.data().zig_extra_cflags.iter().cloned())
                .chain(
                    target
                        .data()
                        .zig_cxx_flags
                        .iter()
                        .map(|flag| format!("C++ {flag}")),
                )
                .chain(cxx.map(|cxx| format!("C++: {}", cxx.name)))
                .collect::<Vec<_>>()
                .join(" "),
            })
        }
        ToolchainKind::Gcc => {
            let tools = find_gcc(target)?;
            let sibling = |tool: &str| {
                crate::support::host::find_on_path(&format!("{}-{tool}", target.gnu_triple()))
            };
            Ok(Toolchain {
                binutils: Binutils {
                    nm: sibling("nm"),
                    strip: sibling("strip"),
                    ld: sibling("ld"),
                },
                kind,
                target: target.clone(),
                description: format!("system gcc {}", tools.cc.display()),
                compilers: Compilers::new(
                    std::iter::once(Compiler::new(Language::C, tools.cc))
                        .chain(tools.cxx.map(|cxx| Compiler::new(Language::Cxx, cxx))),
                ),
                ar: tools.ar,
                ranlib: tools.ranlib,
            })
        }
    }
}
