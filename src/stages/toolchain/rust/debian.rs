//! Debian's Rust: rustc and cargo for the build machine, and the target's standard
//! library, of one version from one suite (config/rust-toolchain.toml).
//!
//! A glibc Linux target gets Debian's build of its standard library (`libstd-rust-dev`
//! for its architecture). A macOS or musl target, which Debian builds none for, gets the
//! library's source (`rust-src`, which carries the crates the library depends on): cargo compiles it
//! for the target as part of the build (`-Zbuild-std`), the way `rustup target add`'s
//! library was compiled, from the same version's sources.

use std::path::{Path, PathBuf};

use super::{BUILD_ARCH, BUILD_TRIPLE, RustTools, config, missing};
use crate::io_error::IoError;
use crate::stages::toolchain::ToolchainError;
use crate::stages::toolchain::wrappers::write_script;
use crate::support::host::{Cache, Network, shell_quote_path};
use crate::support::sysroot::{self, PackageTree, TreeSpec};
use crate::target::{Libc, Target};

/// Where the target's standard library comes from.
enum TargetStd {
    /// Debian's build of it: `usr/lib/rustlib/<triple>` in this tree.
    Built(PackageTree),
    /// Its source and an `llvm-objcopy` (rustc strips Apple binaries with it), in this tree.
    Source(PackageTree),
}

/// What Debian's archive gave for one target: rustc and cargo, their libraries (the build
/// machine's standard library among them), and the target's standard library or its source.
struct Provisioned {
    /// The rustc package's version, which every other package is pinned to.
    version: String,
    tools: PackageTree,
    libraries: PackageTree,
    std: TargetStd,
}

/// Debian's rustc and cargo for the build machine, its standard library for the build
/// machine (build scripts, proc-macros), and the target's standard library or its source.
pub(super) fn from_debian(
    cache: &Cache,
    target: &Target,
    triple: &str,
    why_not_path: &str,
    network: &Network,
) -> Result<RustTools, ToolchainError> {
    tracing::info!(
        "{why_not_path}: taking Debian's Rust from {}",
        config().debian_release
    );
    let provisioned = provision(cache, target, triple, network)?;
    install(cache, target, triple, &provisioned)
}

/// Fetches (once: the trees are cached and verified like every Debian tree) what the target
/// needs from `debian_release`, every package of the rustc package's version.
fn provision(
    cache: &Cache,
    target: &Target,
    triple: &str,
    network: &Network,
) -> Result<Provisioned, ToolchainError> {
    let config = config();
    let release = &config.debian_release;
    // Debian builds the standard library for its own (glibc) architectures only.
    let std_arch = match (target.linux_arch(), target.libc()) {
        (Some(arch), Some(Libc::Glibc)) => Some(arch),
        _ => None,
    };
    let failed = |what: &str, err: sysroot::SysrootError| {
        missing(
            target,
            triple,
            format!("cannot get Debian's {what} from {release}: {err}"),
        )
    };
    let tree = |arch, packages: Vec<String>, with_dependencies, name: &str| {
        sysroot::provision(
            cache.root(),
            &TreeSpec::release_packages(arch, release, packages, with_dependencies, name, network),
        )
    };
    let started = std::time::Instant::now();
    let tools = tree(
        BUILD_ARCH,
        config.tools.clone(),
        false,
        &format!("rust-tools-{}-{release}", BUILD_ARCH.debian()),
    )
    .map_err(|err| failed("rustc and cargo", err))?;
    let Some(version) = package_version(&tools, "rustc") else {
        return Err(missing(
            target,
            triple,
            format!("{} has no rustc package", tools.root().display()),
        ));
    };
    let pinned = |packages: &[String]| -> Vec<String> {
        packages
            .iter()
            .map(|package| package.replace("{version}", &version))
            .collect()
    };
    let folder_version = folder_version(&version);
    let libraries = tree(
        BUILD_ARCH,
        pinned(&config.libraries),
        true,
        &format!("rust-libraries-{}-{folder_version}", BUILD_ARCH.debian()),
    )
    .map_err(|err| failed(&format!("Rust {version} libraries"), err))?;
    let std = match std_arch {
        Some(arch) if arch == BUILD_ARCH => TargetStd::Built(libraries.clone()),
        Some(arch) => TargetStd::Built(
            tree(
                arch,
                pinned(std::slice::from_ref(&config.target_std)),
                false,
                &format!("rust-std-{}-{folder_version}", arch.debian()),
            )
            .map_err(|err| {
                failed(
                    &format!("libstd-rust-dev {version} for {}", arch.debian()),
                    err,
                )
            })?,
        ),
        None => TargetStd::Source(
            tree(
                BUILD_ARCH,
                pinned(&config.std_source),
                false,
                &format!("rust-src-{folder_version}"),
            )
            .map_err(|err| failed(&format!("Rust {version}'s source"), err))?,
        ),
    };
    let std_tree = match &std {
        TargetStd::Built(tree) | TargetStd::Source(tree) => tree,
    };
    if tools.downloaded() || libraries.downloaded() || std_tree.downloaded() {
        tracing::info!(
            "fetched Debian's Rust {version} for {} in {:.1} s",
            target.id(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(Provisioned {
        version,
        tools,
        libraries,
        std,
    })
}

/// A Debian version as a folder name.
fn folder_version(version: &str) -> String {
    version.replace(['+', '~', ':'], "_")
}

/// The sysroot rustc is run with (the build machine's library, and the target's or its
/// source, linked in from the trees) and the scripts that run rustc, cargo and, for a
/// library built from source, `rust-objcopy`, each through the loader of Debian's tree.
fn install(
    cache: &Cache,
    target: &Target,
    triple: &str,
    provisioned: &Provisioned,
) -> Result<RustTools, ToolchainError> {
    let Provisioned {
        version,
        tools,
        libraries,
        std,
    } = provisioned;
    let config = config();
    let folder = cache
        .toolchains()
        .join("rust")
        .join(format!("debian-{}", folder_version(version)));
    let sysroot = folder.join("sysroot");
    let host_lib = rustlib(libraries, BUILD_TRIPLE);
    require_dir(target, triple, &host_lib.join("lib"), version)?;
    link(&sysroot.join("lib/rustlib").join(BUILD_TRIPLE), &host_lib)?;
    let loader = Loader {
        libdir: libraries.root().join("usr/lib/x86_64-linux-gnu"),
    };
    let run = |program: &Path| loader.exec(program);
    let bin = folder.join("bin");
    create_dir(&bin)?;
    let builds_std = link_target_std(std, &sysroot, &bin, &loader, (target, triple), version)?;
    let rustc = bin.join("rustc");
    let cargo = bin.join("cargo");
    write_script(
        &rustc,
        &format!(
            "#!/bin/sh\n# Generated by crosswheel: Debian's rustc {version}, run by its own loader.\n{} --sysroot {} \"$@\"\n",
            run(&tools.root().join("usr/bin/rustc")),
            shell_quote_path(&sysroot)
        ),
    )?;
    // cargo takes `CARGO` as its own path (build scripts run `$CARGO`), which under the
    // loader would otherwise be the loader's.
    write_script(
        &cargo,
        &format!(
            "#!/bin/sh\n# Generated by crosswheel: Debian's cargo {version}, run by its own loader.\n\
             CARGO={}\nexport CARGO\nRUSTC=\"${{RUSTC:-{}}}\"\nexport RUSTC\n{} \"$@\"\n",
            shell_quote_path(&cargo),
            shell_quote_path(&rustc),
            run(&tools.root().join("usr/bin/cargo"))
        ),
    )?;
    let std_origin = if builds_std {
        format!(", the standard library for {triple} built from its source (rust-src) by cargo")
    } else {
        String::new()
    };
    Ok(RustTools {
        rustc,
        cargo,
        programs_dir: Some(bin),
        builds_std,
        origin: format!(
            "Debian's rustc {version} from {} ({}){std_origin}",
            config.debian_release,
            folder.display()
        ),
    })
}

/// Debian's loader and libraries, which run its rustc, cargo and llvm-objcopy on any
/// build machine's C library.
struct Loader {
    libdir: PathBuf,
}

impl Loader {
    /// The shell line that runs `program` through the loader with its arguments to come.
    fn exec(&self, program: &Path) -> String {
        format!(
            "exec {} --library-path {} {}",
            shell_quote_path(&self.libdir.join("ld-linux-x86-64.so.2")),
            shell_quote_path(&self.libdir),
            shell_quote_path(program)
        )
    }
}

/// Puts the target's standard library, or its source and `rust-objcopy`, where rustc and
/// cargo look for them; whether cargo builds the library (`-Zbuild-std`).
fn link_target_std(
    std: &TargetStd,
    sysroot: &Path,
    bin: &Path,
    loader: &Loader,
    (target, triple): (&Target, &str),
    version: &str,
) -> Result<bool, ToolchainError> {
    let config = config();
    Ok(match std {
        TargetStd::Built(tree) => {
            let target_lib = rustlib(tree, triple);
            require_dir(target, triple, &target_lib.join("lib"), version)?;
            link(&sysroot.join("lib/rustlib").join(triple), &target_lib)?;
            false
        }
        TargetStd::Source(tree) => {
            // Where cargo's -Zbuild-std looks: `$(rustc --print sysroot)/lib/rustlib/src/rust`.
            let source = tree.root().join("usr/lib/rustlib/src/rust");
            require_dir(target, triple, &source.join("library/std"), version)?;
            link(&sysroot.join("lib/rustlib/src/rust"), &source)?;
            // rustc still names the target's library folder to the linker (`-L`), and a
            // missing one is a linker warning in every build.
            create_dir(&sysroot.join("lib/rustlib").join(triple).join("lib"))?;
            // rustc runs `rust-objcopy` (rustup's name for llvm-objcopy), found on PATH,
            // to strip what the profile says of an Apple binary.
            let objcopy = tree.root().join(&config.objcopy);
            if !objcopy.is_file() {
                return Err(missing(
                    target,
                    triple,
                    format!(
                        "Debian's {} has no {}",
                        config.std_source.join(", "),
                        objcopy.display()
                    ),
                ));
            }
            write_script(
                &bin.join("rust-objcopy"),
                &format!(
                    "#!/bin/sh\n# Generated by crosswheel: Debian's llvm-objcopy, run by its own loader.\n{} \"$@\"\n",
                    loader.exec(&objcopy)
                ),
            )?;
            true
        }
    })
}

fn require_dir(
    target: &Target,
    triple: &str,
    dir: &Path,
    version: &str,
) -> Result<(), ToolchainError> {
    if dir.is_dir() {
        return Ok(());
    }
    Err(missing(
        target,
        triple,
        format!("Debian's Rust {version} has no {}", dir.display()),
    ))
}

fn package_version(tree: &PackageTree, package: &str) -> Option<String> {
    tree.manifest()
        .packages
        .iter()
        .find(|p| p.name == package)
        .map(|p| p.version.clone())
}

fn rustlib(tree: &PackageTree, triple: &str) -> PathBuf {
    tree.root().join("usr/lib/rustlib").join(triple)
}

pub(super) fn create_dir(path: &Path) -> Result<(), ToolchainError> {
    std::fs::create_dir_all(path)
        .map_err(|err| ToolchainError::Io(IoError::new("create", path.to_path_buf(), err)))
}

/// `at` as a symbolic link to `to`, replaced in one rename so a concurrent build never
/// sees it missing.
fn link(at: &Path, to: &Path) -> Result<(), ToolchainError> {
    if std::fs::read_link(at).is_ok_and(|existing| existing == to) {
        return Ok(());
    }
    let parent = at.parent().unwrap_or(Path::new("."));
    create_dir(parent)?;
    let temp = parent.join(format!(
        ".{}.{}",
        at.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    let _ = std::fs::remove_file(&temp);
    std::os::unix::fs::symlink(to, &temp)
        .and_then(|()| std::fs::rename(&temp, at))
        .map_err(|err| ToolchainError::Io(IoError::new("link", at.to_path_buf(), err)))
}
