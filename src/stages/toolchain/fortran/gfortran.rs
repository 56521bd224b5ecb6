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

use std::path::{Path, PathBuf};

use super::super::ToolchainError;
use super::super::language::{Compiler, Language};
use super::super::wrappers::write_script;
use super::{
    ARGUMENT_SCAN, BUILD_ARCH, DebianCompilerSpec, SPLIT_COMPILE_AND_LINK, config,
    print_search_dirs, script_path,
};
use crate::formats::elf::edit::{ElfEdits, apply_edits};
use crate::io_error::IoError;
use crate::support::host::{
    Cache, Network, cache_key, package_index, shell_quote, shell_quote_path,
};
use crate::target::{Libc, OsVersion, Target};

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
    runtime_wheel: String,
    runtime_sha256: String,
}

fn glibc() -> Libc {
    Libc::Glibc
}

/// The runtime's libraries as gfortran links them, whatever the wheel named them.
const LIBGFORTRAN: &str = "libgfortran.so.5";
const LIBQUADMATH: &str = "libquadmath.so.0";
/// GCC's support library, which a musl runtime links by name: musl systems may lack it, so
/// the runtime's wheel vendors it and so does the repair.
const LIBGCC_S: &str = "libgcc_s.so.1";

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
        "Debian {}'s {}, runtime from {} (sha256 {})",
        config().debian_release,
        row.packages[0],
        row.runtime_wheel,
        &row.runtime_sha256[..12]
    ))
}

/// The C library the runtime needs: its wheel's first tag of the row's C library
/// (`..._manylinux_2_27_aarch64.manylinux_2_28_aarch64.whl`, `..._musllinux_1_2_aarch64.whl`).
fn runtime_floor(row: &FortranTarget) -> Result<OsVersion, String> {
    let stem = format!("{}_", row.libc.identifier_prefix());
    let tag = row.runtime_wheel.split(['-', '.']).find_map(|part| {
        let mut numbers = part.strip_prefix(&stem)?.split('_');
        Some(OsVersion::new(
            numbers.next()?.parse().ok()?,
            numbers.next()?.parse().ok()?,
        ))
    });
    tag.ok_or_else(|| {
        format!(
            "the runtime wheel {} names no {stem}X_Y tag",
            row.runtime_wheel
        )
    })
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
    let runtime = runtime_dir(cache, row, network).map_err(missing)?;
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
        "Fortran for {}: Debian's {} from {release}, runtime from {} ({})",
        target.id(),
        row.packages[0],
        config.runtime_project,
        row.runtime_wheel
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

/// The folder holding the runtime as gfortran links it (`libgfortran.so` for the link,
/// `libgfortran.so.5` and, where the wheel has it, `libquadmath.so.0`), made once from
/// the pinned wheel.
fn runtime_dir(cache: &Cache, row: &FortranTarget, network: &Network) -> Result<PathBuf, String> {
    let folder = cache.toolchains().join("fortran").join(format!(
        "runtime-{}-{}",
        row.debian_arch,
        &row.runtime_sha256[..12]
    ));
    if folder.join(LIBGFORTRAN).is_file() {
        return Ok(folder);
    }
    let parent = cache.toolchains().join("fortran");
    std::fs::create_dir_all(&parent)
        .map_err(|err| IoError::new("create", parent.clone(), err).to_string())?;
    let scratch = tempfile::Builder::new()
        .prefix(".runtime-")
        .tempdir_in(&parent)
        .map_err(|err| IoError::new("create a folder in", parent.clone(), err).to_string())?;
    let wheel = scratch.path().join(&row.runtime_wheel);
    fetch_wheel(row, &wheel, network)?;
    let staged = scratch.path().join("runtime");
    extract_runtime(&wheel, &staged)?;
    match std::fs::rename(&staged, &folder) {
        Ok(()) => Ok(folder),
        // Another build made it first: theirs is the same bytes.
        Err(_) if folder.join(LIBGFORTRAN).is_file() => Ok(folder),
        Err(err) => Err(IoError::new("move into place", folder, err).to_string()),
    }
}

/// Downloads the pinned wheel, refusing it unless the index publishes the pinned SHA-256
/// and the bytes have it.
fn fetch_wheel(row: &FortranTarget, destination: &Path, network: &Network) -> Result<(), String> {
    tracing::info!(
        "downloading the {} Fortran runtime for {}: {} (sha256 {})",
        row.libc.name(),
        row.debian_arch,
        row.runtime_wheel,
        row.runtime_sha256
    );
    package_index::download_pinned(
        &config().runtime_project,
        &row.runtime_wheel,
        &row.runtime_sha256,
        destination,
        network,
    )
}

/// Writes the wheel's `libgfortran-<hash>.so.5*`, `libquadmath-<hash>.so.0*` and
/// `libgcc_s-<hash>.so.1` (musl's wheels) into `to`
/// under the names gfortran links (their SONAMEs and the reference between them renamed
/// back), with `libgfortran.so` for the linker.
fn extract_runtime(wheel: &Path, to: &Path) -> Result<(), String> {
    let file = std::fs::File::open(wheel)
        .map_err(|err| IoError::new("open", wheel.to_path_buf(), err).to_string())?;
    let mut archive = zip::ZipArchive::new(file)
        .map_err(|err| format!("{} is not a wheel: {err}", wheel.display()))?;
    let mut members: Vec<(String, &str, Vec<u8>)> = Vec::new();
    for index in 0..archive.len() {
        let mut entry = archive
            .by_index(index)
            .map_err(|err| format!("cannot read {}: {err}", wheel.display()))?;
        let name = entry
            .name()
            .map_err(|err| format!("cannot read {}: {err}", wheel.display()))?
            .into_owned();
        let base = name.rsplit('/').next().unwrap_or("").to_string();
        let wanted = if base.starts_with("libgfortran") && base.contains(".so.5") {
            LIBGFORTRAN
        } else if base.starts_with("libquadmath") && base.contains(".so.0") {
            LIBQUADMATH
        } else if base.starts_with("libgcc_s") && base.contains(".so.1") {
            LIBGCC_S
        } else {
            continue;
        };
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut data)
            .map_err(|err| format!("cannot read {base} in {}: {err}", wheel.display()))?;
        members.push((base, wanted, data));
    }
    if !members.iter().any(|(_, wanted, _)| *wanted == LIBGFORTRAN) {
        return Err(format!("{} holds no libgfortran", wheel.display()));
    }
    let renames: std::collections::BTreeMap<String, String> = members
        .iter()
        .map(|(base, wanted, _)| (base.clone(), wanted.to_string()))
        .collect();
    std::fs::create_dir_all(to)
        .map_err(|err| IoError::new("create", to.to_path_buf(), err).to_string())?;
    for (base, wanted, data) in &members {
        let edits = ElfEdits {
            soname: Some(wanted.to_string()),
            replace_needed: renames.clone(),
            ..ElfEdits::default()
        };
        let edited =
            apply_edits(data, &edits).map_err(|err| format!("cannot rename {base}: {err}"))?;
        let path = to.join(wanted);
        std::fs::write(&path, edited)
            .map_err(|err| IoError::new("write", path.clone(), err).to_string())?;
    }
    record_origin(to, wheel, &members)?;
    let link = to.join("libgfortran.so");
    std::os::unix::fs::symlink(LIBGFORTRAN, &link)
        .map_err(|err| IoError::new("link", link, err).to_string())
}

/// The distribution the files came from, as an installed wheel records it (one
/// `*.dist-info` per file, for their licences differ from the distribution's own), so the
/// SBOM of a wheel that vendors them names the wheel and the licence.
fn record_origin(
    to: &Path,
    wheel: &Path,
    members: &[(String, &str, Vec<u8>)],
) -> Result<(), String> {
    let file_name = wheel.file_name().unwrap_or_default().to_string_lossy();
    let version = file_name.split('-').nth(1).unwrap_or("0");
    for (_, wanted, _) in members {
        let licence = if *wanted == LIBQUADMATH {
            "LGPL-2.1-or-later"
        } else {
            "GPL-3.0-or-later WITH GCC-exception-3.1"
        };
        let stem = wanted.split('.').next().unwrap_or(wanted);
        let folder = to.join(format!("{stem}-{version}.dist-info"));
        std::fs::create_dir_all(&folder)
            .map_err(|err| IoError::new("create", folder.clone(), err).to_string())?;
        let metadata = format!(
            "Metadata-Version: 2.4\nName: {}\nVersion: {version}\nLicense-Expression: {licence}\n",
            config().runtime_project
        );
        for (file, text) in [("METADATA", metadata), ("RECORD", format!("{wanted},,\n"))] {
            let path = folder.join(file);
            std::fs::write(&path, text)
                .map_err(|err| IoError::new("write", path.clone(), err).to_string())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_file_parses() {
        assert!(!config().target.is_empty());
        for row in &config().target {
            assert_eq!(row.runtime_sha256.len(), 64, "{}", row.runtime_wheel);
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
        ] {
            let row = row_for(&Target::parse(id).unwrap()).unwrap();
            assert_eq!(row.libc, libc, "{id}");
            assert!(
                row.runtime_wheel.contains(tag),
                "{id}: {}",
                row.runtime_wheel
            );
        }
    }

    #[test]
    fn the_runtime_needs_the_c_library_of_its_wheels_first_tag() {
        let floor = |id: &str| runtime_floor(row_for(&Target::parse(id).unwrap()).unwrap());
        assert_eq!(floor("linux-aarch64"), Ok(OsVersion::new(2, 27)));
        assert_eq!(floor("linux-riscv64"), Ok(OsVersion::new(2, 38)));
        assert_eq!(floor("musllinux-aarch64"), Ok(OsVersion::new(1, 2)));
    }

    #[test]
    fn a_target_without_fortran_says_which_have_it() {
        for id in ["linux-i686", "linux-armv7l"] {
            let reason = row_for(&Target::parse(id).unwrap()).unwrap_err();
            assert_eq!(
                reason,
                "crosswheel has gfortran only for the manylinux targets of Debian's arm64, ppc64el, s390x, amd64, riscv64 architectures and the musllinux targets of arm64"
            );
        }
        let reason = row_for(&Target::parse("musllinux-x86_64").unwrap()).unwrap_err();
        assert!(
            reason.contains("arm64, ppc64el, s390x, amd64, riscv64 architectures), musllinux targets (for arm64) and macOS (flang), not for musllinux-x86_64"),
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
