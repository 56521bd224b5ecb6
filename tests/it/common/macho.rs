//! Shared by the `macho_*` integration tests: fixture wheels, zig builds and
//! independent readings of Mach-O files by LLVM's tools.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// A fixture wheel pinned in tests/fixtures.lock; panics with the fetch command when
/// it is missing.
pub use super::fixture;

/// Every `.so`/`.dylib` member of a wheel, with its bytes.
pub fn wheel_binaries(wheel: &Path) -> Vec<(String, Vec<u8>)> {
    let file = std::fs::File::open(wheel).unwrap();
    let mut archive = zip::ZipArchive::new(file).unwrap();
    let mut binaries = Vec::new();
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).unwrap();
        let name = entry.name().unwrap().to_string();
        if name.ends_with(".so") || name.ends_with(".dylib") {
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).unwrap();
            binaries.push((name, bytes));
        }
    }
    assert!(
        !binaries.is_empty(),
        "{} holds no binaries",
        wheel.display()
    );
    binaries
}

pub fn wheel_member(wheel: &str, member: &str) -> Vec<u8> {
    wheel_binaries(&fixture(wheel))
        .into_iter()
        .find(|(name, _)| name == member)
        .unwrap_or_else(|| panic!("{wheel} has no member {member}"))
        .1
}

/// Path of an LLVM tool; panics with the install command when missing.
pub fn llvm_tool(name: &str) -> PathBuf {
    let tool = format!("{name}-14");
    let found = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(&tool))
        .find(|path| path.is_file());
    found.unwrap_or_else(|| panic!("{tool} is missing: install it with `apt-get install llvm-14`"))
}

pub fn run(command: &mut Command) -> String {
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("cannot run {command:?}: {error}"));
    assert!(
        output.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// What `llvm-otool -l` says about one thin Mach-O.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct OtoolReading {
    pub install_id: Option<String>,
    /// (load command name, install name) in load-command order.
    pub dependencies: Vec<(String, String)>,
    pub rpaths: Vec<String>,
    pub minos: Option<String>,
    pub sdk: Option<String>,
    /// (dataoff, datasize) of LC_CODE_SIGNATURE.
    pub code_signature: Option<(u64, u64)>,
}

/// Reads every slice of `path` with llvm-otool (which only reads the first
/// slice of a fat file, so fat files are split with llvm-lipo first).
pub fn otool_slices(path: &Path) -> BTreeMap<String, OtoolReading> {
    let archs = run(Command::new(llvm_tool("llvm-lipo")).arg("-archs").arg(path));
    let archs: Vec<&str> = archs.split_whitespace().collect();
    if archs.len() == 1 {
        return BTreeMap::from([(archs[0].to_string(), otool_thin(path))]);
    }
    let dir = tempfile::tempdir().unwrap();
    archs
        .iter()
        .map(|arch| {
            let thin = dir.path().join(arch);
            run(Command::new(llvm_tool("llvm-lipo"))
                .arg("-thin")
                .arg(arch)
                .arg(path)
                .arg("-output")
                .arg(&thin));
            (arch.to_string(), otool_thin(&thin))
        })
        .collect()
}

pub fn otool_thin(path: &Path) -> OtoolReading {
    let text = run(Command::new(llvm_tool("llvm-otool")).arg("-l").arg(path));
    let mut reading = OtoolReading::default();
    let mut command = String::new();
    let mut dataoff = None;
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let (Some(key), rest) = (words.next(), words.collect::<Vec<_>>()) else {
            continue;
        };
        let value = rest.first().copied().unwrap_or_default().to_string();
        match key {
            "Load" => command.clear(),
            "cmd" => command = value,
            "name" if command == "LC_ID_DYLIB" => reading.install_id = Some(value),
            "name" if command.contains("DYLIB") && command != "LC_ID_DYLINKER" => {
                reading.dependencies.push((command.clone(), value))
            }
            "path" if command == "LC_RPATH" => reading.rpaths.push(value),
            "minos" if command == "LC_BUILD_VERSION" => reading.minos = Some(value),
            "version" if command == "LC_VERSION_MIN_MACOSX" => reading.minos = Some(value),
            "sdk" if command == "LC_BUILD_VERSION" || command == "LC_VERSION_MIN_MACOSX" => {
                reading.sdk = Some(value)
            }
            "dataoff" if command == "LC_CODE_SIGNATURE" => dataoff = value.parse::<u64>().ok(),
            "datasize" if command == "LC_CODE_SIGNATURE" => {
                reading.code_signature = Some((dataoff.unwrap(), value.parse().unwrap()))
            }
            _ => {}
        }
    }
    reading
}

/// The same facts, as crosswheel reads them.
pub fn our_reading(slice: &crosswheel::formats::macho::Slice<'_>) -> OtoolReading {
    use crosswheel::formats::macho::DependencyKind;
    let version = |v: crosswheel::formats::macho::Version| {
        if v.packed() == 0 {
            "n/a".to_string()
        } else {
            v.to_string()
        }
    };
    OtoolReading {
        install_id: slice.install_id.clone(),
        dependencies: slice
            .dependencies
            .iter()
            .map(|dependency| {
                let command = match dependency.kind {
                    DependencyKind::Load => "LC_LOAD_DYLIB",
                    DependencyKind::Weak => "LC_LOAD_WEAK_DYLIB",
                    DependencyKind::Reexport => "LC_REEXPORT_DYLIB",
                    DependencyKind::Upward => "LC_LOAD_UPWARD_DYLIB",
                    DependencyKind::Lazy => "LC_LAZY_LOAD_DYLIB",
                };
                (command.to_string(), dependency.install_name.clone())
            })
            .collect(),
        rpaths: slice.rpaths.clone(),
        minos: slice.deployment_target.map(|target| version(target.minos)),
        sdk: slice.deployment_target.map(|target| version(target.sdk)),
        code_signature: slice
            .code_signature
            .map(|location| (location.offset, location.size)),
    }
}

pub fn zig_available() -> Vec<String> {
    let probe = Command::new("python3")
        .args(["-m", "ziglang", "version"])
        .output();
    match probe {
        Ok(output) if output.status.success() => {
            vec!["python3".into(), "-m".into(), "ziglang".into()]
        }
        _ => panic!("zig is missing: install it with `pip install ziglang`"),
    }
}

/// Compiles C source into a Mach-O dylib with zig: `target` like
/// `aarch64-macos.11.0`, `extra` further linker arguments.
pub fn zig_dylib(dir: &Path, name: &str, source: &str, target: &str, extra: &[&str]) -> PathBuf {
    let zig = zig_available();
    let source_path = dir.join(format!("{name}.c"));
    std::fs::write(&source_path, source).unwrap();
    let output = dir.join(name);
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("zig-cache");
    run(Command::new(&zig[0])
        .args(&zig[1..])
        .args([
            "cc",
            "-target",
            target,
            "-O2",
            "-shared",
            "-undefined",
            "dynamic_lookup",
        ])
        .args(extra)
        .arg("-o")
        .arg(&output)
        .arg(&source_path)
        .env("ZIG_GLOBAL_CACHE_DIR", cache));
    output
}

pub struct Built {
    /// `@rpath/libfoo.dylib`, minos 11.0, max header padding.
    pub libfoo: Vec<u8>,
    /// Extension linked against libfoo, rpath `@loader_path/../lib`.
    pub extension: Vec<u8>,
    /// A dylib built for macOS 10.15 (below the arm64 floor).
    pub old_target: Vec<u8>,
    pub dir: PathBuf,
}

/// Small images built once per test binary with zig.
pub fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(env!("CARGO_CRATE_NAME"));
        std::fs::create_dir_all(&dir).unwrap();
        let headerpad = "-Wl,-headerpad_max_install_names";
        let libfoo = zig_dylib(
            &dir,
            "libfoo.dylib",
            "int foo_value(void) { return 42; }\n",
            "aarch64-macos.11.0",
            &[headerpad, "-Wl,-install_name,@rpath/libfoo.dylib"],
        );
        let search = format!("-L{}", dir.display());
        let extension = zig_dylib(
            &dir,
            "ext.so",
            "extern int foo_value(void);\nextern void *PyLong_FromLong(long);\n\
             void *PyInit_ext(void) { return PyLong_FromLong(foo_value()); }\n",
            "aarch64-macos.11.0",
            &[
                headerpad,
                &search,
                "-lfoo",
                "-Wl,-rpath,@loader_path/../lib",
            ],
        );
        let old_target = zig_dylib(
            &dir,
            "libold.dylib",
            "int old_value(void) { return 7; }\n",
            "aarch64-macos.10.15",
            &[],
        );
        let read = |path: PathBuf| std::fs::read(path).unwrap();
        Built {
            libfoo: read(libfoo),
            extension: read(extension),
            old_target: read(old_target),
            dir,
        }
    })
}

pub fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let path = built().dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}
