//! The Fortran compiler of a Linux target: Debian's cross gfortran compiles, the target's
//! C compiler links, and the runtime a wheel vendors is the one cibuildwheel's
//! manylinux_2_28 image gives (config/fortran-toolchain.toml says why each part comes
//! from where).
//!
//! A link through gfortran's own driver would take the crt files and C library of
//! Debian's cross packages (glibc 2.31) and bind a Fortran `exp` to `exp@GLIBC_2.29`; the
//! C compiler links against the target's glibc floor, so Fortran objects keep the tag the
//! C code has. The `gfortran` script crosswheel writes sends compiles (and version
//! queries, which meson and CMake identify the compiler by) to gfortran, and links to the
//! C compiler with the runtime's folder and `-lgfortran` added.

mod runtime;

use std::path::{Path, PathBuf};

use self::runtime::{DebianRuntime, describe, runtime_dir, runtime_floor};
use super::super::ToolchainError;
use super::super::language::{Compiler, Language};
use super::super::wrappers::write_script;
use super::{
    ARGUMENT_SCAN, BUILD_ARCH, DebianCompilerSpec, SPLIT_COMPILE_AND_LINK, config,
    print_search_dirs, script_path,
};
use crate::support::host::{Cache, Network, cache_key, shell_quote, shell_quote_path};
use crate::target::{Libc, Target};

/// One row of config/fortran-toolchain.toml's `[[target]]`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FortranTarget {
    debian_arch: String,
    /// The C library of the targets the row serves: Debian's gfortran compiles for either,
    /// but the runtime is built for one.
    #[serde(default = "glibc")]
    libc: Libc,
    packages: Vec<String>,
    gfortran: String,
    /// The runtime: a wheel of `runtime_project`, pinned by SHA-256...
    runtime_wheel: Option<String>,
    runtime_sha256: Option<String>,
    /// ...or Debian's packages, where the index has no such wheel.
    runtime_debian: Option<DebianRuntime>,
}

fn glibc() -> Libc {
    Libc::Glibc
}

/// The row of `target`, or why it has none.
fn row_for(target: &Target) -> Result<&'static FortranTarget, String> {
    let served = |libc: Libc| {
        config()
            .target
            .iter()
            .filter(|row| row.libc == libc)
            .map(|row| row.debian_arch.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (Some(arch), Some(libc)) = (target.linux_arch(), target.libc()) else {
        return Err(format!("{} is not a Linux target", target.id()));
    };
    let row = config()
        .target
        .iter()
        .find(|row| row.debian_arch == arch.debian() && row.libc == libc);
    // The records of libraries built without Fortran quote these lines, and caches keep
    // them: the first words stay.
    row.ok_or_else(|| match libc {
        Libc::Glibc => format!(
            "crosswheel has gfortran only for the manylinux targets of Debian's {} architectures and the musllinux targets of {}",
            served(Libc::Glibc),
            served(Libc::Musl),
        ),
        Libc::Musl => format!(
            "crosswheel has Fortran only for manylinux targets (gfortran, for Debian's {} architectures), musllinux targets (for {}) and macOS (flang), not for {}",
            served(Libc::Glibc),
            served(Libc::Musl),
            target.id()
        ),
    })
}

/// gfortran and its runtime for `target` as a library's record names them, or why the
/// target's libraries get no Fortran: it has no gfortran, or it builds against a glibc
/// older than the runtime needs. A library is optional Fortran (OpenBLAS's LAPACK has a C
/// translation): raising every wheel that links it to the runtime's tag would break the
/// promise of the policy the build asked for.
pub(super) fn for_libraries(target: &Target) -> Result<String, String> {
    let row = row_for(target)?;
    let needs = runtime_floor(row)?;
    let version = target.os_version();
    if version < needs {
        let libc = row.libc.name();
        return Err(format!(
            "{} builds against {libc} {version}, below the {libc} {needs} its gfortran runtime needs; a build against {libc} {needs} or newer gets it (`{}-{}-image`)",
            target.id(),
            row.libc.identifier_prefix(),
            target.arch(),
        ));
    }
    Ok(format!(
        "Debian {}'s {}, {}",
        config().debian_release,
        row.packages[0],
        describe(row)?
    ))
}

/// The Fortran compiler of `target`: the `gfortran` script over Debian's gfortran, linking
/// through `cc` (the toolchain's C compiler) against the pinned runtime.
pub(super) fn gfortran_compiler(
    cache: &Cache,
    target: &Target,
    cc: &Path,
    network: &Network,
) -> Result<Compiler, ToolchainError> {
    let missing = |reason: String| ToolchainError::FortranMissing {
        target: target.id().to_string(),
        reason,
    };
    let row = row_for(target).map_err(missing)?;
    let config = config();
    let release = &config.debian_release;
    let started = std::time::Instant::now();
    let name = format!(
        "fortran-{}-{release}-{}",
        row.debian_arch,
        cache_key(&[row.packages.join(" ").as_bytes()])
    );
    let fetched = DebianCompilerSpec {
        compiler: "gfortran",
        release,
        packages: &row.packages,
        keep: &[],
        name: &name,
        libraries: &config.libraries,
        libraries_name: &format!("fortran-libraries-{}-{release}", BUILD_ARCH.debian()),
    }
    .fetch(cache, network)
    .map_err(missing)?;
    let gfortran = fetched.root.join(&row.gfortran);
    if !gfortran.is_file() {
        return Err(missing(format!(
            "Debian's packages {} hold no {}",
            row.packages.join(" "),
            row.gfortran
        )));
    }
    let arch = target
        .linux_arch()
        .ok_or_else(|| missing(format!("{} is not a Linux target", target.id())))?;
    let runtime = runtime_dir(cache, row, arch, network).map_err(missing)?;
    if fetched.downloaded {
        tracing::info!(
            "fetched Debian's gfortran for {} in {:.1} s",
            target.id(),
            started.elapsed().as_secs_f64()
        );
    }
    // One script per C compiler and runtime: a run may build one architecture for two C
    // library floors, or for glibc and musl, at once.
    let script_folder = format!(
        "{name}-{}",
        cache_key(&[
            cc.as_os_str().as_encoded_bytes(),
            runtime.as_os_str().as_encoded_bytes()
        ])
    );
    let script = script_path(cache, &script_folder, "gfortran")?;
    write_script(
        &script,
        &gfortran_script(&gfortran, &fetched.library_path, cc, &runtime),
    )?;
    tracing::info!(
        "Fortran for {}: Debian's {} from {release}, {}",
        target.id(),
        row.packages[0],
        describe(row).map_err(missing)?
    );
    let mut compiler = Compiler::new(Language::Fortran, script);
    compiler.runtime_dir = Some(runtime);
    Ok(compiler)
}

/// The `gfortran` script: compiles and queries go to Debian's gfortran (its programs find
/// their libraries through `library_path`), links to `cc` with the runtime.
fn gfortran_script(gfortran: &Path, library_path: &[PathBuf], cc: &Path, runtime: &Path) -> String {
    let library_path = library_path
        .iter()
        .map(|dir| dir.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(":");
    let runtime = shell_quote_path(runtime);
    format!(
        "#!/bin/sh\n\
         # Generated by crosswheel; rewritten on every run. Debian's gfortran compiles; a link goes\n\
         # through the target's C compiler, which links against the target's glibc floor, with the\n\
         # Fortran runtime the wheel will vendor (config/fortran-toolchain.toml).\n\
         {ARGUMENT_SCAN}\
         fortran() {{\n  \
           if [ -n \"$CROSSWHEEL_SOURCE_DIR\" ]; then\n    \
             set -- \"-ffile-prefix-map=$CROSSWHEEL_SOURCE_DIR=.\" \"-ffile-prefix-map=$PWD=.\" \"$@\"\n  \
           fi\n  \
           LD_LIBRARY_PATH={library_path}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}} {gfortran} -B{programs} \"$@\"\n\
         }}\n\
         {search_dirs}\
         if [ \"$link\" = 0 ]; then fortran \"$@\"; exit $?; fi\n\
         {SPLIT_COMPILE_AND_LINK}\
         # The runtime is linked as a shared library, as gfortran links it: drop the flags that\n\
         # ask for its static archive, which Debian builds as PIE and a shared object cannot hold.\n\
         for arg do\n  \
           shift\n  \
           case \"$arg\" in\n    \
             -static-libgfortran|-static-libquadmath) ;;\n    \
             *) set -- \"$@\" \"$arg\" ;;\n  \
           esac\n\
         done\n\
         # A program (meson's and CMake's sanity checks, run under qemu) finds the runtime where\n\
         # it is; an extension module gets it from the wheel the repair makes.\n\
         if [ \"$shared\" = 0 ]; then set -- \"$@\" -Wl,-rpath,{runtime}; fi\n\
         {cc} \"$@\" -L{runtime} -lgfortran -lm\n",
        search_dirs = print_search_dirs(&runtime),
        library_path = shell_quote(&library_path),
        gfortran = shell_quote_path(gfortran),
        programs = shell_quote_path(&programs_prefix(gfortran)),
        cc = shell_quote_path(cc),
    )
}

/// What `-B` gives gfortran's driver so it runs the assembler of its own packages
/// (`usr/bin/<triple>-as`) and never the build machine's `as`: the compiler's path up to
/// `gfortran-9`.
fn programs_prefix(gfortran: &Path) -> PathBuf {
    let text = gfortran.to_string_lossy();
    match text.rfind("gfortran") {
        Some(end) => PathBuf::from(&text[..end]),
        None => gfortran.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::OsVersion;

    #[test]
    fn the_bundled_file_parses() {
        assert!(!config().target.is_empty());
        for row in &config().target {
            match row.runtime().unwrap() {
                runtime::RuntimeSource::Wheel(wheel) => {
                    assert_eq!(wheel.sha256.len(), 64, "{}", wheel.file)
                }
                runtime::RuntimeSource::Debian(_) => runtime_floor(row).map(|_| ()).unwrap(),
            }
            assert!(
                row.gfortran.starts_with("usr/bin/") && row.gfortran.ends_with("-gfortran-9"),
                "{}",
                row.gfortran
            );
        }
    }

    #[test]
    fn manylinux_and_musllinux_targets_get_the_runtime_built_for_their_c_library() {
        for (id, libc, tag) in [
            ("linux-aarch64", Libc::Glibc, "manylinux_2_27_aarch64"),
            ("linux-ppc64le", Libc::Glibc, "manylinux_2_27_ppc64le"),
            ("linux-s390x", Libc::Glibc, "manylinux_2_27_s390x"),
            ("linux-x86_64", Libc::Glibc, "manylinux_2_27_x86_64"),
            ("linux-riscv64", Libc::Glibc, "manylinux_2_38_riscv64"),
            ("musllinux-aarch64", Libc::Musl, "musllinux_1_2_aarch64"),
            ("musllinux-x86_64", Libc::Musl, "musllinux_1_2_x86_64"),
            (
                "linux-armv7l",
                Libc::Glibc,
                "Debian bullseye's libgfortran5 for armhf",
            ),
            (
                "linux-i686",
                Libc::Glibc,
                "Debian bullseye's libgfortran5 libquadmath0 for i386",
            ),
        ] {
            let row = row_for(&Target::parse(id).unwrap()).unwrap();
            assert_eq!(row.libc, libc, "{id}");
            let runtime = describe(row).unwrap();
            assert!(runtime.contains(tag), "{id}: {runtime}");
        }
    }

    #[test]
    fn the_runtime_needs_the_c_library_of_its_wheels_first_tag_or_what_debians_needs() {
        let floor = |id: &str| runtime_floor(row_for(&Target::parse(id).unwrap()).unwrap());
        assert_eq!(floor("linux-aarch64"), Ok(OsVersion::new(2, 27)));
        assert_eq!(floor("linux-armv7l"), Ok(OsVersion::new(2, 29)));
        assert_eq!(floor("linux-i686"), Ok(OsVersion::new(2, 29)));
        assert_eq!(floor("linux-riscv64"), Ok(OsVersion::new(2, 38)));
        assert_eq!(floor("musllinux-aarch64"), Ok(OsVersion::new(1, 2)));
        assert_eq!(floor("musllinux-x86_64"), Ok(OsVersion::new(1, 2)));
    }

    #[test]
    fn a_target_without_fortran_says_which_have_it() {
        let reason = row_for(&Target::parse("musllinux-ppc64le").unwrap()).unwrap_err();
        assert!(
            reason.contains("arm64, ppc64el, s390x, amd64, riscv64, armhf, i386 architectures), musllinux targets (for arm64, amd64) and macOS (flang), not for musllinux-ppc64le"),
            "{reason}"
        );
    }

    #[test]
    fn links_go_through_the_c_compiler_with_the_runtime_and_compiles_to_gfortran() {
        let script = gfortran_script(
            Path::new("/t/usr/bin/aarch64-linux-gnu-gfortran-9"),
            &[PathBuf::from("/t/usr/lib/x86_64-linux-gnu")],
            Path::new("/w/cc"),
            Path::new("/rt"),
        );
        assert!(
            script.contains("/w/cc \"$@\" -L/rt -lgfortran -lm\n"),
            "{script}"
        );
        assert!(
            script.contains(
                "/t/usr/bin/aarch64-linux-gnu-gfortran-9 -B/t/usr/bin/aarch64-linux-gnu- \"$@\""
            ),
            "{script}"
        );
        assert!(script.contains("-c|-S|-E|"), "{script}");
        assert!(
            script.contains("-static-libgfortran|-static-libquadmath) ;;"),
            "{script}"
        );
    }
}
