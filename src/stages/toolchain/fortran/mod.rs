//! The Fortran compiler of a target, behind the one seam every language uses
//! ([`super::language::Compiler`]): Debian's cross gfortran for manylinux targets
//! ([`gfortran`]), LLVM flang for macOS ([`flang`]). Either way a Fortran compiler only
//! compiles: every link goes through the target's C compiler (zig), so Fortran objects
//! bind to the same C library, deployment target and signing as the C code, and the
//! script crosswheel writes adds the Fortran runtime the wheel will vendor.
//! config/fortran-toolchain.toml says where each part comes from and why.

mod flang;
mod gfortran;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::ToolchainError;
use super::language::Compiler;
use crate::io_error::IoError;
use crate::support::host::{Cache, Network};
use crate::support::sysroot::{self, LinuxArch, TreeSpec};
#[cfg(doc)]
use crate::support::target_libraries::FLANG_RUNTIME_LIBRARY;
use crate::support::target_libraries::FortranFamily;
use crate::target::Target;

const FORTRAN_TOOLCHAIN_TOML: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/config/fortran-toolchain.toml"
));

/// config/fortran-toolchain.toml (the file's comments describe the fields).
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FortranConfig {
    debian_release: String,
    libraries: Vec<String>,
    runtime_project: String,
    target: Vec<gfortran::FortranTarget>,
    flang: flang::FlangConfig,
}

fn config() -> &'static FortranConfig {
    static CONFIG: OnceLock<FortranConfig> = OnceLock::new();
    CONFIG.get_or_init(|| match toml::from_str(FORTRAN_TOOLCHAIN_TOML) {
        Ok(config) => config,
        // The file is compiled in; the unit test `the_bundled_file_parses` guards it.
        Err(err) => panic!("config/fortran-toolchain.toml is invalid: {err}"),
    })
}

/// The Fortran compiler of `target`, linking through `cc` (the toolchain's C compiler).
pub(super) fn fortran_compiler(
    cache: &Cache,
    target: &Target,
    cc: &Path,
    network: &Network,
) -> Result<Compiler, ToolchainError> {
    match family(target) {
        FortranFamily::Flang => flang::flang_compiler(cache, target, cc, network),
        FortranFamily::Gfortran => gfortran::gfortran_compiler(cache, target, cc, network),
    }
}

/// Which compiler `target`'s Fortran is: flang for macOS (no Debian package has a
/// gfortran for Darwin), gfortran for Linux.
pub fn family(target: &Target) -> FortranFamily {
    if target.is_macos() {
        FortranFamily::Flang
    } else {
        FortranFamily::Gfortran
    }
}

/// Whether `target`'s Fortran runtime is the catalogue's `flang-runtime`, built for the
/// target like any library ([`FLANG_RUNTIME_LIBRARY`]), rather than one the compiler
/// brings.
pub fn runtime_is_a_target_library(target: &Target) -> bool {
    family(target) == FortranFamily::Flang
}

/// The target's Fortran compiler and runtime as the record of a library built with them
/// names them (the catalogue's OpenBLAS compiles LAPACK from its Fortran where this is
/// `Ok`), or why its libraries get none: flang for macOS, with the catalogue's
/// `flang-runtime`, which the library's build comes after; gfortran's manylinux targets,
/// built against a glibc the runtime fits.
pub fn for_libraries(target: &Target) -> Result<String, String> {
    match family(target) {
        FortranFamily::Flang => Ok(flang::for_libraries()),
        FortranFamily::Gfortran => gfortran::for_libraries(target),
    }
}

/// Fortran compilers' programs are Debian's amd64 builds.
const BUILD_ARCH: LinuxArch = LinuxArch::X86_64;

/// A compiler's programs from Debian, with the libraries they load that build machines
/// rarely have, ready to run on the build machine's own C library.
struct DebianCompiler {
    root: PathBuf,
    /// `LD_LIBRARY_PATH` for the programs: the library folders of both trees.
    library_path: Vec<PathBuf>,
    /// Whether anything was downloaded now (the fetch's time is then said).
    downloaded: bool,
}

/// What to fetch for a [`DebianCompiler`]: `packages` (reduced to `keep` unless empty)
/// into `tools/<name>`, and `libraries` into `tools/<libraries_name>`, from `release`.
struct DebianCompilerSpec<'a> {
    compiler: &'a str,
    release: &'a str,
    packages: &'a [String],
    keep: &'a [String],
    name: &'a str,
    libraries: &'a [String],
    libraries_name: &'a str,
}

impl DebianCompilerSpec<'_> {
    fn fetch(&self, cache: &Cache, network: &Network) -> Result<DebianCompiler, String> {
        let release = self.release;
        let tree = |packages: &[String], keep: &[String], name: &str| TreeSpec {
            keep_only: keep.to_vec(),
            ..TreeSpec::release_packages(
                BUILD_ARCH,
                release,
                packages.to_vec(),
                false,
                name,
                network,
            )
        };
        let compiler = sysroot::provision(cache.root(), &tree(self.packages, self.keep, self.name))
            .map_err(|err| {
                format!(
                    "cannot get Debian's {} from {release}: {err}",
                    self.compiler
                )
            })?;
        let libraries = sysroot::provision(
            cache.root(),
            &tree(self.libraries, &[], self.libraries_name),
        )
        .map_err(|err| {
            format!(
                "cannot get the libraries {} loads from {release}: {err}",
                self.compiler
            )
        })?;
        Ok(DebianCompiler {
            root: compiler.root().to_path_buf(),
            library_path: [&compiler, &libraries]
                .iter()
                .map(|tree| tree.root().join("usr/lib/x86_64-linux-gnu"))
                .collect(),
            downloaded: compiler.downloaded() || libraries.downloaded(),
        })
    }
}

/// `<cache>/toolchains/fortran/<folder>/bin/<program>`, its folder made: where a Fortran
/// script is written.
fn script_path(cache: &Cache, folder: &str, program: &str) -> Result<PathBuf, ToolchainError> {
    let bin = cache.toolchains().join("fortran").join(folder).join("bin");
    std::fs::create_dir_all(&bin)
        .map_err(|err| ToolchainError::Io(IoError::new("create", bin.clone(), err)))?;
    Ok(bin.join(program))
}

/// The part of a Fortran script that sorts its arguments: `link=0` for a command that does
/// not link, `shared=1` for a shared object, `sources=1` when Fortran sources are named.
const ARGUMENT_SCAN: &str = "\
link=1
shared=0
sources=0
for arg in \"$@\"; do
  case \"$arg\" in
    -c|-S|-E|-M|-MM|--version|-v|--help|-dumpversion|-dumpfullversion|-dumpmachine|-print-*|-###|-fsyntax-only) link=0 ;;
    -shared|-dynamiclib|-bundle) shared=1 ;;
    -*) ;;
    *.[fF]|*.[fF]90|*.[fF]95|*.[fF]03|*.[fF]08|*.for|*.ftn|*.fpp) sources=1 ;;
  esac
done
";

/// The part of a Fortran script that turns a link naming Fortran sources (meson's checks
/// compile and link in one command) into a compile of each source, by the script's
/// `fortran` function with the options that are not the link's, and a link of the
/// objects with the options that are.
const SPLIT_COMPILE_AND_LINK: &str = "\
quote() { printf \"'%s' \" \"$(printf '%s' \"$1\" | sed \"s/'/'\\\\\\\\''/g\")\"; }
if [ \"$sources\" = 1 ]; then
  objects=$(mktemp -d) || exit 1
  trap 'rm -rf \"$objects\"' EXIT
  compile=
  next=
  for arg in \"$@\"; do
    case \"$next\" in
      compile) compile=\"$compile$(quote \"$arg\")\"; next=; continue ;;
      skip) next=; continue ;;
    esac
    case \"$arg\" in
      -o) next=skip ;;
      -I|-J|-D|-U|-x|-include|-isystem|-module-dir) compile=\"$compile$(quote \"$arg\")\"; next=compile ;;
      -l*|-L*|-Wl,*|-shared|-dynamiclib|-bundle|-static-lib*|-pthread) ;;
      -*) compile=\"$compile$(quote \"$arg\")\" ;;
    esac
  done
  count=0
  next=
  for arg do
    shift
    case \"$next\" in
      keep) set -- \"$@\" \"$arg\"; next=; continue ;;
      drop) next=; continue ;;
    esac
    case \"$arg\" in
      -o) next=keep; set -- \"$@\" \"$arg\" ;;
      -I|-J|-D|-U|-x|-include|-isystem|-module-dir) next=drop ;;
      -l*|-L*|-Wl,*|-shared|-dynamiclib|-bundle|-pthread|-fPIC|-fpic|-fopenmp) set -- \"$@\" \"$arg\" ;;
      -*) ;;
      *.[fF]|*.[fF]90|*.[fF]95|*.[fF]03|*.[fF]08|*.for|*.ftn|*.fpp)
        count=$((count + 1))
        eval \"fortran $compile -c \\\"\\$arg\\\" -o \\\"\\$objects/$count.o\\\"\" || exit $?
        set -- \"$@\" \"$objects/$count.o\" ;;
      *) set -- \"$@\" \"$arg\" ;;
    esac
  done
fi
";

/// The answer to `-print-search-dirs`, whose `libraries:` line meson turns into `-L`
/// options when another language's compiler links Fortran objects: `runtime` (a shell
/// word) is the folder to search, not the build machine's /usr/lib.
fn print_search_dirs(runtime: &str) -> String {
    format!(
        "for arg in \"$@\"; do\n  \
           case \"$arg\" in\n    \
             -print-search-dirs|--print-search-dirs)\n      \
               printf 'install: %s/\\nprograms: =\\nlibraries: =%s\\n' {runtime} {runtime}; exit 0 ;;\n  \
           esac\n\
         done\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::OsVersion;

    #[test]
    fn libraries_compile_fortran_where_the_targets_c_library_fits_the_gfortran_runtime() {
        let at_2_28 = |id: &str| {
            let target = Target::parse(id).unwrap();
            for_libraries(&Target::at_least(target.data(), OsVersion::new(2, 28)))
        };
        for id in [
            "linux-aarch64",
            "linux-ppc64le",
            "linux-s390x",
            "linux-x86_64",
        ] {
            let description = at_2_28(id).unwrap_or_else(|why| panic!("{id}: {why}"));
            assert!(description.contains("gfortran-9"), "{description}");
            // The runtime needs glibc 2.27: at the targets' lowest glibc a library's
            // Fortran would raise every wheel linking it to manylinux_2_27.
            let lowest = for_libraries(&Target::parse(id).unwrap()).unwrap_err();
            assert!(lowest.contains("below the glibc 2.27"), "{lowest}");
        }
        // musllinux builds link musl 1.2, which the runtime needs; riscv64's runtime needs
        // glibc 2.38, above the target's lowest.
        assert!(for_libraries(&Target::parse("musllinux-aarch64").unwrap()).is_ok());
        assert!(for_libraries(&Target::parse("musllinux-x86_64").unwrap()).is_ok());
        let riscv64 = Target::parse("linux-riscv64").unwrap();
        let lowest = for_libraries(&riscv64).unwrap_err();
        assert!(lowest.contains("below the glibc 2.38"), "{lowest}");
        assert!(for_libraries(&Target::at_least(riscv64.data(), OsVersion::new(2, 39))).is_ok());
        // armv7l's and i686's runtime (Debian's) needs glibc 2.29: armv7l's manylinux_2_31
        // image takes it, i686's lowest glibc does not.
        for id in ["linux-i686", "linux-armv7l"] {
            let target = Target::parse(id).unwrap();
            let lowest = for_libraries(&target).unwrap_err();
            assert!(lowest.contains("below the glibc 2.29"), "{id}: {lowest}");
            let at_2_31 = Target::at_least(target.data(), OsVersion::new(2, 31));
            assert!(for_libraries(&at_2_31).is_ok(), "{id}");
        }
        assert!(for_libraries(&Target::parse("musllinux-armv7l").unwrap()).is_err());
        // macOS's libraries compile Fortran with flang, whose runtime is a catalogue library.
        let macos = for_libraries(&Target::parse("macos-arm64").unwrap()).unwrap();
        assert!(
            macos.contains("flang-19") && macos.contains("flang-runtime"),
            "{macos}"
        );
    }

    /// The split runs the compiles through `sh`: a script whose compile options were lost
    /// (an undefined helper) would still link.
    #[test]
    fn a_compile_and_link_keeps_the_compile_options_for_the_compile() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let script = dir.path().join("fc");
        let text = format!(
            "#!/bin/sh\n{ARGUMENT_SCAN}fortran() {{ echo \"compile $*\" >> '{log}'; touch \"$(eval echo \\${{$#}})\"; }}\n\
             {SPLIT_COMPILE_AND_LINK}echo \"link $*\" >> '{log}'\n",
            log = log.display()
        );
        std::fs::write(&script, text).unwrap();
        let status = std::process::Command::new("sh")
            .arg(&script)
            .args([
                "-O2", "-I", "inc dir", "-DX=1", "a.f90", "-shared", "-o", "out.so", "-lm",
            ])
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(status.success());
        let log = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 2, "{log}");
        assert!(
            lines[0].starts_with("compile -O2 -I inc dir -DX=1 -c a.f90 -o "),
            "{log}"
        );
        assert!(lines[1].starts_with("link "), "{log}");
        assert!(lines[1].ends_with("/1.o -shared -o out.so -lm"), "{log}");
    }

    #[test]
    fn search_dirs_name_the_runtime() {
        let text = print_search_dirs("/rt");
        assert!(text.contains("printf 'install: %s/\\nprograms: =\\nlibraries: =%s\\n' /rt /rt"));
    }
}
