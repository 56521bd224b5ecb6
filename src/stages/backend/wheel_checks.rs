//! What the backend's wheel is checked for before it counts as built: a platform tag of
//! the target, and compiled modules when the log shows a failed extension build; and the
//! hint for a build that tried to run a target program directly.

use std::path::{Path, PathBuf};

use super::{BuildError, driver};
use crate::formats::wheel::{AbiTag, PlatformTag, WheelName};
use crate::stages::crossenv::CrossEnv;
use crate::target::Target;

/// The path a linker refused because it is of another architecture: lld's
/// `error: <path> is incompatible with aarch64linux`, GNU ld's
/// `<path>: error adding symbols: file in wrong format`.
fn refused_library(line: &str) -> Option<&str> {
    if let Some((head, _)) = line.split_once(" is incompatible with ") {
        let path = head.rsplit("error: ").next()?.trim().trim_end_matches(':');
        return path.starts_with('/').then_some(path);
    }
    let (path, _) = line.split_once(": error adding symbols: file in wrong format")?;
    let path = path.rsplit(": ").next()?.trim();
    path.starts_with('/').then_some(path)
}

/// The one line for a build that linked a library of another architecture: the library,
/// its architecture, and the distribution and requirement it came from (`origins` names
/// the environments a distribution can be found in).
pub(super) fn foreign_library_line(
    output: &str,
    target: &Target,
    origins: &[(&Path, &str)],
) -> Option<String> {
    let path = Path::new(output.lines().find_map(refused_library)?);
    let arch = match std::fs::read(path) {
        Ok(bytes) => match crate::formats::elf::facts::ElfFacts::parse(&bytes) {
            Ok(facts) => facts.arch.unwrap_or("unknown").to_string(),
            Err(_) if bytes.starts_with(&[0xcf, 0xfa, 0xed, 0xfe]) => "Mach-O".to_string(),
            Err(_) => "non-ELF".to_string(),
        },
        Err(_) => "unreadable".to_string(),
    };
    let came_from = match super::target_installs::owner_of(path) {
        Some(dist) => {
            let origin = origins
                .iter()
                .find(|(root, _)| path.starts_with(root))
                .map_or("installed on the build machine", |(_, origin)| origin);
            format!(
                "from {} {} ({origin}, requirement `{}`), the build machine's wheel of it",
                dist.name, dist.version, dist.name
            )
        }
        None => {
            // A library of the build machine's own (`/usr/lib/x86_64-linux-gnu/libpq.so`):
            // no wheel has it; the catalogue may build it for the target from a line of
            // `before-all`, as a container's package manager would install it.
            let file_name = path.file_name().unwrap_or_default().to_string_lossy();
            let fix = match crate::support::target_libraries::catalogue()
                .providing_library(&file_name)
            {
                Some(entry) => format!(
                    "add `yum install -y {}` to `before-all` (or `{}` to `target-libraries`) and crosswheel builds {} {} for {}",
                    entry
                        .packages
                        .iter()
                        .find(|package| package.ends_with("-devel"))
                        .unwrap_or(&entry.packages[0]),
                    entry.name,
                    entry.name,
                    entry.version,
                    target.id()
                ),
                None => format!(
                    "crosswheel's catalogue of target libraries has none of that name (docs/configuration.md#target-libraries): build it for {} in `before-all` into $CROSSWHEEL_PREFIX",
                    target.id()
                ),
            };
            return Some(format!(
                "the {} build linked {}, an {arch} library of the build machine's own: {fix}",
                target.id(),
                path.display(),
            ));
        }
    };
    Some(format!(
        "the {} build linked {}, an {arch} library {came_from}: a {} build needs that package's {} wheel (name it in `target-requires`)",
        target.id(),
        path.display(),
        target.id(),
        target.id()
    ))
}

/// As cibuildwheel: a platform build whose wheel comes out pure lost its extensions (a
/// failed optional build the project fell back from) or needs no platform build at all;
/// either way it must not pass as a target wheel. A platform-tagged wheel without any
/// compiled module is the same fallback when the log shows a failed compiler or linker.
pub(super) fn check_compiled(
    wheel: &Path,
    output: &str,
    context: impl FnOnce() -> (&'static str, String, PathBuf),
) -> Result<(), BuildError> {
    let name = wheel
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let first_error = driver::first_diagnostic(output);
    let pure = is_pure_wheel(&name);
    if !pure && (first_error.is_none() || has_compiled_module(wheel)?) {
        return Ok(());
    }
    let cause = match (first_error, pure) {
        (Some(line), true) => format!("the extension build failed first: `{line}`"),
        (Some(line), false) => format!("it holds no compiled module; the extension build failed first: `{line}`"),
        (None, _) => "the log shows no failed compiler or linker; a project without extensions needs no cross build (`python -m build --wheel` makes its one wheel)".to_string(),
    };
    let (backend, target, log) = context();
    Err(BuildError::NoExtension {
        backend,
        wheel: name,
        target,
        cause,
        log: Box::new(log),
    })
}

fn has_compiled_module(wheel: &Path) -> Result<bool, BuildError> {
    let archive = crate::formats::wheel::WheelArchive::open(wheel).map_err(|error| {
        BuildError::BadBuiltWheel {
            wheel: wheel.to_path_buf(),
            message: error.to_string(),
        }
    })?;
    Ok(archive.entries().iter().any(|entry| {
        let file = entry.name.rsplit('/').next().unwrap_or_default();
        file.ends_with(".so") || file.ends_with(".dylib") || file.contains(".so.")
    }))
}

/// `py3-none-any` and the like: no ABI, no platform.
fn is_pure_wheel(wheel_name: &str) -> bool {
    WheelName::parse(wheel_name)
        .is_ok_and(|name| name.platform == [PlatformTag::Any] && name.abi == [AbiTag::None])
}

/// A hint for a build that started a target program directly (a code generator compiled
/// for the target, a configure-style test program): the kernel only runs it through
/// binfmt_misc, and a macOS program not at all.
pub(super) fn exec_format_hint(output: &str, cross_env: &CrossEnv) -> Option<String> {
    let line = output
        .lines()
        .find(|line| line.contains("Exec format error"))?;
    let program = line
        .split_once("Exec format error")
        .map(|(_, rest)| {
            rest.trim_start_matches([':', ' '])
                .trim_matches(['\'', '"', ' '])
        })
        .filter(|program| !program.is_empty())
        .unwrap_or("a program");
    let target = &cross_env.target;
    Some(match target.linux_arch() {
        Some(arch) => format!(
            "crosswheel: the build started {program}, a {target} program, directly; the kernel runs such programs only with qemu-user registered in binfmt_misc (as root: `apt-get install qemu-user-static binfmt-support && update-binfmts --enable qemu-{}`), or the build can start it through $CROSSWHEEL_RUN_PROGRAM",
            arch.qemu_name()
        ),
        None => format!(
            "crosswheel: the build started {program}, a {target} program, which cannot run on this Linux build machine: build it for the build machine, or give the build the answer it computes"
        ),
    })
}

/// `config/macos-sdk-headers.toml`.
#[derive(Debug, serde::Deserialize)]
struct SdkHeaders {
    folders: Vec<String>,
    headers: Vec<String>,
}

fn sdk_headers() -> &'static SdkHeaders {
    static HEADERS: std::sync::OnceLock<SdkHeaders> = std::sync::OnceLock::new();
    HEADERS.get_or_init(|| {
        toml::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/config/macos-sdk-headers.toml"
        )))
        .expect("config/macos-sdk-headers.toml is valid")
    })
}

/// A hint for a macOS build without an SDK that failed on a system header zig's bundled
/// headers lack (`'netinet/tcp_fsm.h' file not found`): Apple's SDK has it.
pub(super) fn sdk_header_hint(output: &str, target: &Target, has_sdk: bool) -> Option<String> {
    if !target.is_macos() || has_sdk {
        return None;
    }
    let known = sdk_headers();
    let header = output.lines().find_map(|line| {
        let (_, rest) = line.split_once("fatal error: '")?;
        let (header, _) = rest.split_once("' file not found")?;
        let in_sdk_folder = header
            .split_once('/')
            .is_some_and(|(folder, _)| known.folders.iter().any(|known| known == folder));
        (in_sdk_folder || known.headers.iter().any(|known| known == header)).then_some(header)
    })?;
    Some(format!(
        "crosswheel: `{header}` is a header of Apple's macOS SDK that zig's bundled macOS headers lack: give the build an SDK with the `macos-sdk` option (or SDKROOT), a MacOSX*.sdk folder from Xcode or the Command Line Tools"
    ))
}

/// `name-1.0-cp311-cp311-linux_aarch64.whl` matches `linux_aarch64`; a pure wheel matches
/// any target.
pub(super) fn wheel_platform_matches(wheel_name: &str, expected: &str) -> bool {
    WheelName::parse(wheel_name).is_ok_and(|name| {
        name.platform
            .iter()
            .any(|platform| *platform == expected || *platform == PlatformTag::Any)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_machine_library_the_catalogue_builds_is_answered_with_the_before_all_line() {
        let dir = tempfile::tempdir().unwrap();
        let target = Target::parse("linux-aarch64").unwrap();
        let line_for = |name: &str| {
            let library = dir.path().join(name);
            std::fs::write(&library, b"\x7fELF").unwrap();
            let output = format!(
                "ld.lld: error: {} is incompatible with aarch64linux",
                library.display()
            );
            foreign_library_line(&output, &target, &[]).unwrap()
        };
        let libpq = line_for("libpq.so.5.15");
        assert!(
            libpq.ends_with(
                "library of the build machine's own: add `yum install -y libpq-devel` to \
                 `before-all` (or `libpq` to `target-libraries`) and crosswheel builds libpq \
                 15.18 for linux-aarch64"
            ),
            "{libpq}"
        );
        assert!(!libpq.contains("target-requires"), "{libpq}");
        let unknown = line_for("libnowhere.so");
        assert!(
            unknown.contains("crosswheel's catalogue of target libraries has none of that name"),
            "{unknown}"
        );
    }

    #[test]
    fn the_linkers_wrong_architecture_lines_name_the_library() {
        assert_eq!(
            refused_library(
                "ld.lld: error: /env/site-packages/scipy_openblas32/lib/libscipy_openblas.so is incompatible with aarch64linux"
            ),
            Some("/env/site-packages/scipy_openblas32/lib/libscipy_openblas.so")
        );
        assert_eq!(
            refused_library(
                "/usr/bin/aarch64-linux-gnu-ld: /x/libfoo.so: error adding symbols: file in wrong format"
            ),
            Some("/x/libfoo.so")
        );
        assert_eq!(
            refused_library("ld.lld: error: undefined symbol: foo"),
            None
        );
    }

    const PSUTIL: &str = "psutil/arch/osx/net.c:12:10: fatal error: 'netinet/tcp_fsm.h' file not found\n   12 | #include <netinet/tcp_fsm.h>\n";

    #[test]
    fn a_macos_system_header_zig_lacks_names_apples_sdk_and_the_option() {
        let macos = Target::parse("macos-arm64").unwrap();
        let hint = sdk_header_hint(PSUTIL, &macos, false).unwrap();
        assert!(
            hint.contains("`netinet/tcp_fsm.h`") && hint.contains("`macos-sdk`"),
            "{hint}"
        );
        let libproc = "x.c:1:10: fatal error: 'libproc.h' file not found";
        assert!(sdk_header_hint(libproc, &macos, false).is_some());
    }

    #[test]
    fn no_sdk_hint_with_an_sdk_for_linux_or_for_a_librarys_header() {
        let macos = Target::parse("macos-arm64").unwrap();
        assert_eq!(sdk_header_hint(PSUTIL, &macos, true), None);
        let linux = Target::parse("linux-aarch64").unwrap();
        assert_eq!(sdk_header_hint(PSUTIL, &linux, false), None);
        // A library's header is the target library's business, not the SDK's.
        let ffi = "c/_cffi_backend.c:15:10: fatal error: 'ffi.h' file not found";
        assert_eq!(sdk_header_hint(ffi, &macos, false), None);
    }

    #[test]
    fn wheel_platform_check_reads_compressed_tag_sets() {
        assert!(wheel_platform_matches(
            "a-1-cp311-cp311-linux_aarch64.whl",
            "linux_aarch64"
        ));
        assert!(wheel_platform_matches(
            "a-1-py3-none-any.whl",
            "linux_ppc64le"
        ));
        assert!(wheel_platform_matches(
            "a-1-cp311-cp311-macosx_11_0_arm64.macosx_11_0_universal2.whl",
            "macosx_11_0_arm64"
        ));
        assert!(!wheel_platform_matches(
            "a-1-cp311-cp311-linux_x86_64.whl",
            "linux_aarch64"
        ));
    }

    #[test]
    fn a_wheel_without_abi_and_platform_is_pure() {
        assert!(is_pure_wheel("a-1-py3-none-any.whl"));
        assert!(is_pure_wheel("a-1-py2.py3-none-any.whl"));
        assert!(!is_pure_wheel("a-1-cp311-abi3-linux_aarch64.whl"));
        assert!(!is_pure_wheel("a-1-cp311-cp311-macosx_11_0_arm64.whl"));
    }
}
