//! Support shared by the integration tests: the pinned real wheels of
//! `tests/fixtures.lock`, the external tools a test needs, and the binary under test.
//!
//! Everything here fails loudly instead of skipping: a test whose fixture or tool is
//! missing panics with the command that fixes it, so a green run always means the
//! test really ran.

pub mod macho;
mod peer_data;
pub mod project;

pub use peer_data::{PeerCase, assert_agrees_with_peer, crosswheel_under_test, sdist_members};

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

/// The lock is compiled in, so tests always check against the lock they were built with.
const LOCK: &str = include_str!("../../fixtures.lock");
const LOCK_PATH: &str = "tests/fixtures.lock";
const FETCH_HINT: &str = "run `scripts/fetch-fixtures`";

/// One wheel (or a peer tool's sdist) pinned in `tests/fixtures.lock`.
#[derive(Debug)]
pub struct LockedFixture {
    pub file_name: &'static str,
    pub sha256: &'static str,
    /// The `pip download` arguments that select exactly this file.
    pub pip_args: Vec<&'static str>,
    /// Hashing a large wheel is slow in a debug build: verify each once per process.
    verified: OnceLock<Result<PathBuf, String>>,
}

/// All wheels of the lock, in lock order.
///
/// Panics when the lock is malformed: that is a bug in the repository, not in the
/// environment.
pub fn locked_fixtures() -> &'static [LockedFixture] {
    static FIXTURES: OnceLock<Vec<LockedFixture>> = OnceLock::new();
    FIXTURES.get_or_init(|| {
        let fixtures: Vec<LockedFixture> = LOCK
            .lines()
            .enumerate()
            .filter(|(_, line)| {
                let line = line.trim();
                !line.is_empty() && !line.starts_with('#')
            })
            .map(|(index, line)| parse_lock_line(index + 1, line))
            .collect();
        for (position, fixture) in fixtures.iter().enumerate() {
            let repeated = fixtures[..position]
                .iter()
                .any(|earlier| earlier.file_name == fixture.file_name);
            assert!(
                !repeated,
                "{LOCK_PATH}: {} is listed twice",
                fixture.file_name
            );
        }
        fixtures
    })
}

fn parse_lock_line(line_number: usize, line: &'static str) -> LockedFixture {
    let mut fields = line.split_whitespace();
    let (Some(file_name), Some(sha256)) = (fields.next(), fields.next()) else {
        panic!("{LOCK_PATH}:{line_number}: expected `<file name> <sha256> <pip args>`");
    };
    let pip_args: Vec<&'static str> = fields.collect();
    assert!(
        (file_name.ends_with(".whl")
            || file_name.ends_with(".tar.gz")
            || file_name.ends_with(".zip"))
            && !file_name.contains('/'),
        "{LOCK_PATH}:{line_number}: `{file_name}` is neither a wheel nor an sdist file name"
    );
    assert!(
        sha256.len() == 64
            && sha256
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{LOCK_PATH}:{line_number}: `{sha256}` is not a lowercase hex sha256"
    );
    assert!(
        !pip_args.is_empty(),
        "{LOCK_PATH}:{line_number}: no pip download arguments after the sha256"
    );
    LockedFixture {
        file_name,
        sha256,
        pip_args,
        verified: OnceLock::new(),
    }
}

/// The folder `scripts/fetch-fixtures` downloads into.
pub fn fixtures_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CROSSWHEEL_FIXTURES") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME")
        .expect("neither CROSSWHEEL_FIXTURES nor HOME is set: cannot locate the fixture wheels");
    Path::new(&home).join(".cache/crosswheel-fixtures")
}

impl LockedFixture {
    /// The cached wheel's path once its sha256 matches the lock; otherwise a one-line
    /// description of what is wrong and how to fix it.
    pub fn verify(&self) -> Result<&Path, &str> {
        let verified = self.verified.get_or_init(|| {
            let path = fixtures_dir().join(self.file_name);
            let actual = match sha256_of(&path) {
                Ok(actual) => actual,
                Err(error) if error.kind() == io::ErrorKind::NotFound => {
                    return Err(format!(
                        "fixture {} is missing: {FETCH_HINT}",
                        path.display()
                    ));
                }
                Err(error) => {
                    return Err(format!("cannot read fixture {}: {error}", path.display()));
                }
            };
            if actual != self.sha256 {
                return Err(format!(
                    "fixture {} has sha256 {actual} but {LOCK_PATH} says {}: {FETCH_HINT} \
                     (it replaces the file)",
                    path.display(),
                    self.sha256
                ));
            }
            Ok(path)
        });
        verified.as_deref().map_err(String::as_str)
    }
}

/// The verified path of a locked wheel, by exact file name.
///
/// Panics with the fix when the name is not in the lock, the file was not fetched,
/// or its sha256 differs from the lock.
pub fn fixture(file_name: &str) -> PathBuf {
    let Some(locked) = locked_fixtures()
        .iter()
        .find(|fixture| fixture.file_name == file_name)
    else {
        panic!("{file_name} is not pinned in {LOCK_PATH}: add its line there, then {FETCH_HINT}");
    };
    match locked.verify() {
        Ok(path) => path.to_path_buf(),
        Err(problem) => panic!("{problem}"),
    }
}

/// The verified paths of every locked wheel whose file name matches a glob `pattern`
/// (e.g. `"numpy-*-macosx_*.whl"`), in lock order. Panics when none matches, since a
/// test looping over no fixture would test nothing.
pub fn fixtures_matching(pattern: &str) -> Vec<PathBuf> {
    let glob = glob::Pattern::new(pattern)
        .unwrap_or_else(|error| panic!("invalid fixture pattern `{pattern}`: {error}"));
    let paths: Vec<PathBuf> = locked_fixtures()
        .iter()
        .filter(|locked| glob.matches(locked.file_name))
        .map(|locked| fixture(locked.file_name))
        .collect();
    assert!(
        !paths.is_empty(),
        "no wheel in {LOCK_PATH} matches `{pattern}`"
    );
    paths
}

/// Lowercase hex sha256 of a file, streamed.
pub fn sha256_of(path: &Path) -> io::Result<String> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; 1 << 20];
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(lowercase_hex(&hasher.finalize()))
}

fn lowercase_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// What `scripts/build-target-cpython` builds from; compiled in, like the wheel lock.
const TARGET_CPYTHON_LOCK: &str = include_str!("../../target-cpython.lock");
const TARGET_CPYTHON_SCRIPT: &str = include_str!("../../../scripts/build-target-cpython");
const BUILD_TARGET_CPYTHON_HINT: &str =
    "run `scripts/build-target-cpython` (it builds one in about 6 minutes on 2 cores)";

/// The free-threaded CPython 3.13 for linux aarch64 that `scripts/build-target-cpython`
/// builds into the fixture cache (Debian ships none): a prefix tree holding
/// `bin/python3.13t` and its stdlib, to be run under qemu with Debian's arm64 root.
///
/// Panics with the fix when the tree is missing or was built from another
/// `tests/target-cpython.lock` or script (its `.crosswheel-build` stamp says which).
pub fn free_threaded_target_python() -> PathBuf {
    let tree = fixtures_dir().join("cpython/3.13t-aarch64");
    let python = tree.join("bin/python3.13t");
    assert!(
        python.is_file(),
        "the free-threaded target CPython {} is missing: {BUILD_TARGET_CPYTHON_HINT}",
        python.display()
    );
    let expected = format!(
        "lock {}\nscript {}",
        lowercase_hex(&Sha256::digest(TARGET_CPYTHON_LOCK)),
        lowercase_hex(&Sha256::digest(TARGET_CPYTHON_SCRIPT))
    );
    let stamp = std::fs::read_to_string(tree.join(".crosswheel-build")).unwrap_or_default();
    assert!(
        stamp.trim_end() == expected,
        "{} was not built from this checkout's tests/target-cpython.lock and \
         scripts/build-target-cpython: {BUILD_TARGET_CPYTHON_HINT} (it replaces the tree)",
        tree.display()
    );
    tree
}

/// The path of an executable on `PATH` (or of `name` itself when it contains a `/`).
///
/// Panics naming `install_hint` (e.g. `"apt-get install patchelf"` or
/// `"pip install auditwheel"`) when it is missing.
pub fn require_tool(name: &str, install_hint: &str) -> PathBuf {
    let candidates: Vec<PathBuf> = if name.contains('/') {
        vec![PathBuf::from(name)]
    } else {
        std::env::var_os("PATH")
            .map(|path| {
                std::env::split_paths(&path)
                    .map(|dir| dir.join(name))
                    .collect()
            })
            .unwrap_or_default()
    };
    candidates
        .into_iter()
        .find(|candidate| is_executable(candidate))
        .unwrap_or_else(|| {
            panic!(
                "this test needs `{name}`, which is not on PATH: install it with `{install_hint}`"
            )
        })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
}

/// Every `.rs` file below `dir`, appended to `found` in the order the folders list them.
pub fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

/// Extract every entry of `wheel` below `dir` (created if needed).
pub fn unzip_to(wheel: &Path, dir: &Path) {
    let file = File::open(wheel)
        .unwrap_or_else(|error| panic!("cannot open {}: {error}", wheel.display()));
    let mut archive = zip::ZipArchive::new(file)
        .unwrap_or_else(|error| panic!("{} is not a zip archive: {error}", wheel.display()));
    archive.extract(dir).unwrap_or_else(|error| {
        panic!(
            "cannot extract {} into {}: {error}",
            wheel.display(),
            dir.display()
        )
    });
}

/// The file names of the wheels in `dir`, sorted; none when `dir` does not exist.
pub fn wheel_names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .filter(|name| name.ends_with(".whl"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The `crosswheel` binary Cargo built for this test run.
pub fn crosswheel_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_crosswheel"))
}

/// Writes a wheel holding `files` plus a correct RECORD (unless `files`
/// already has one) with the zip crate, independently of crosswheel's writer.
pub fn make_wheel(dir: &Path, file_name: &str, files: &[(&str, &[u8])]) -> PathBuf {
    use std::io::Write;
    let dist_info = {
        let mut parts = file_name.split('-');
        format!(
            "{}-{}.dist-info",
            parts.next().expect("name"),
            parts.next().expect("version")
        )
    };
    let path = dir.join(file_name);
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).expect("create wheel"));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .unix_permissions(0o755);
    let mut record = String::new();
    for (name, data) in files {
        zip.start_file(*name, options).expect("start entry");
        zip.write_all(data).expect("write entry");
        record.push_str(&record_line(name, data));
    }
    let record_name = format!("{dist_info}/RECORD");
    if !files.iter().any(|(name, _)| *name == record_name) {
        record.push_str(&format!("{record_name},,\n"));
        zip.start_file(record_name, options).expect("start RECORD");
        zip.write_all(record.as_bytes()).expect("write RECORD");
    }
    zip.finish().expect("finish wheel");
    path
}

/// The WHEEL and METADATA files of a minimal wheel for `tag`.
pub fn minimal_metadata(name: &str, version: &str, tag: &str) -> Vec<(String, Vec<u8>)> {
    let dist_info = format!("{name}-{version}.dist-info");
    vec![
        (format!("{dist_info}/WHEEL"), format!("Wheel-Version: 1.0\nGenerator: crosswheel-tests\nRoot-Is-Purelib: false\nTag: {tag}\n").into_bytes()),
        (format!("{dist_info}/METADATA"), format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n").into_bytes()),
    ]
}

/// The RECORD line a correct wheel has for `name` holding `data`.
pub fn record_line(name: &str, data: &[u8]) -> String {
    use base64::Engine;
    let digest = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(data));
    format!("{name},sha256={digest},{}\n", data.len())
}

/// Build interpreters: every kind this machine has.
/// The distribution's CPython 3.11 (Debian 12's own), which every user of a Debian or
/// Ubuntu machine has.
pub fn distribution_python() -> crosswheel::support::host::BuildPython {
    let path = Path::new("/usr/bin/python3.11");
    assert!(
        path.is_file(),
        "this test needs the distribution's CPython at {}: apt-get install python3.11-dev",
        path.display()
    );
    crosswheel::support::host::BuildPython::probe(path).unwrap_or_else(|err| panic!("{err}"))
}

/// A CPython 3.11 that is not the distribution's (plain `pyconfig.h`): pyenv's or uv's.
pub fn plain_header_python() -> Option<crosswheel::support::host::BuildPython> {
    let pyenv_root = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".pyenv")));
    let from_pyenv = pyenv_root.and_then(|root| {
        let mut found: Vec<PathBuf> = std::fs::read_dir(root.join("versions"))
            .ok()?
            .filter_map(Result::ok)
            .filter(|entry| entry.file_name().to_string_lossy().starts_with("3.11."))
            .map(|entry| entry.path().join("bin/python3.11"))
            .filter(|path| path.is_file())
            .collect();
        found.sort();
        found.pop()
    });
    let from_uv = || {
        let output = std::process::Command::new("uv")
            .args(["python", "find", "--no-project", "3.11"])
            .output()
            .ok()?;
        let path = PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
        (output.status.success() && !path.starts_with("/usr/")).then_some(path)
    };
    let path = from_pyenv.or_else(from_uv)?;
    Some(crosswheel::support::host::BuildPython::probe(&path).unwrap_or_else(|err| panic!("{err}")))
}

pub fn build_pythons() -> Vec<crosswheel::support::host::BuildPython> {
    let mut pythons = vec![distribution_python()];
    match plain_header_python() {
        Some(python) => pythons.push(python),
        // The slow tier fails without what it needs rather than testing less.
        None => panic!(
            "this test needs a CPython 3.11 with a plain header besides the distribution's: \
             pyenv's, or `uv python install 3.11`"
        ),
    }
    pythons
}

/// crosswheel's zig toolchain for `target` (`linux-aarch64`) and `python`, from crosswheel's
/// usual cache, as builds get it (zig installed on first use).
pub fn zig_toolchain(
    python: &crosswheel::support::host::BuildPython,
    target: &str,
) -> crosswheel::stages::toolchain::Toolchain {
    use crosswheel::stages::toolchain::resolve_toolchain;
    use crosswheel::support::host::Cache;
    use crosswheel::target::ToolchainKind;
    let parsed = crosswheel::target::Target::parse(target).unwrap();
    let cache = Cache::from_env().expect("a cache directory");
    resolve_toolchain(
        ToolchainKind::Zig,
        &parsed,
        &cache,
        &python.executable,
        &crosswheel::support::host::Network::default(),
        &[],
        None,
    )
    .unwrap_or_else(|err| panic!("zig toolchain for {target}: {err}"))
}

/// The real zig compiler wrapper of `target`, `c++` when `cxx`, else `cc`, installed for
/// the distribution's CPython the way builds get it.
pub fn zig_wrapper(target: &str, cxx: bool) -> PathBuf {
    use crosswheel::stages::toolchain::Language;
    let toolchain = zig_toolchain(&distribution_python(), target);
    let language = if cxx { Language::Cxx } else { Language::C };
    toolchain
        .compilers
        .program(language)
        .unwrap_or_else(|| panic!("the zig toolchain for {target} has no {language} compiler"))
        .to_path_buf()
}

/// The C compiler of a cross environment's toolchain.
pub fn c_compiler(env: &crosswheel::stages::crossenv::CrossEnv) -> PathBuf {
    use crosswheel::stages::toolchain::Language;
    env.toolchain()
        .compilers
        .program(Language::C)
        .expect("every toolchain has a C compiler")
        .to_path_buf()
}

/// The zig cross environment of `target` (`linux-aarch64`) for `python`, from crosswheel's
/// usual cache (zig installed on first use).
pub fn zig_cross_env(
    python: &crosswheel::support::host::BuildPython,
    target: &str,
) -> crosswheel::stages::crossenv::CrossEnv {
    let toolchain = zig_toolchain(python, target);
    let parsed = crosswheel::target::Target::parse(target).unwrap();
    let cache = crosswheel::support::host::Cache::from_env().expect("a cache directory");
    // A target this machine runs itself needs no emulator, as in the pipeline.
    let runner = parsed
        .linux_arch()
        .filter(|_| !parsed.runs_natively_here())
        .map(|arch| target_runner(&cache, arch));
    crosswheel::stages::crossenv::CrossEnv::create(&cache, python, &toolchain, runner, None)
        .unwrap_or_else(|err| panic!("cross environment for {target}: {err}"))
}

/// qemu-user and the default Debian target tree of `arch`, as the pipeline gives a Linux
/// build.
pub fn target_runner(
    cache: &crosswheel::support::host::Cache,
    arch: crosswheel::target::LinuxArch,
) -> crosswheel::stages::crossenv::TargetRunner {
    let python = crosswheel::support::sysroot::archive::default_python_for(arch);
    let emulator = crosswheel::stages::testing::Emulator::new(
        cache.root(),
        arch,
        python,
        None,
        &crosswheel::support::host::Network::default(),
        None,
    )
    .unwrap_or_else(|err| panic!("qemu-user and a target tree for {arch}: {err}"));
    crosswheel::stages::crossenv::TargetRunner {
        qemu: emulator.qemu().to_path_buf(),
        root: emulator.sysroot().root().to_path_buf(),
        python: emulator.sysroot().python(),
        python_tag: python,
        cpu: emulator.cpu().map(str::to_string),
    }
}

/// Runs crosswheel's build stage on `project` in `env` with default options, as the
/// pipeline does for a project without configuration.
pub fn build_in(
    env: &crosswheel::stages::crossenv::CrossEnv,
    python: &crosswheel::support::host::BuildPython,
    project: &Path,
    out_dir: &Path,
) -> Result<crosswheel::stages::backend::BuiltWheel, crosswheel::stages::backend::BuildError> {
    let cache = crosswheel::support::host::Cache::from_env().expect("a cache directory");
    crosswheel::stages::backend::build_wheel(&crosswheel::stages::backend::BuildRequest {
        project_dir: project,
        out_dir,
        cross_env: env,
        python,
        cache: &cache,
        config_settings: &[],
        target_prefixes: &[],
        target_requires: &[],
        environment: &Default::default(),
        offline: false,
        verbosity: 0,
        constraints: &[],
        frontend: &Default::default(),
        hook_env: None,
        log_file: None,
        progress: None,
        header_builder: None,
    })
}

/// examples/blasdot copied into `dir` (without earlier outputs), its `[tool.crosswheel]`
/// table replaced by `table` (a `[tool.cibuildwheel]` one, as a cibuildwheel user has).
pub fn blasdot_with_table(dir: &Path, table: &str) {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/blasdot");
    for entry in walkdir::WalkDir::new(&example) {
        let entry = entry.unwrap();
        let relative = entry.path().strip_prefix(&example).unwrap();
        let skip = relative.components().next().is_some_and(|first| {
            matches!(
                first.as_os_str().to_str(),
                Some("build" | "wheelhouse" | "dist")
            )
        });
        if skip {
            continue;
        }
        let to = dir.join(relative);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            std::fs::copy(entry.path(), &to).unwrap();
        }
    }
    let pyproject = std::fs::read_to_string(example.join("pyproject.toml")).unwrap();
    let start = pyproject
        .find("[tool.crosswheel]")
        .expect("blasdot has a [tool.crosswheel] table");
    let kept = pyproject.get(..start).unwrap_or_default();
    std::fs::write(dir.join("pyproject.toml"), format!("{kept}{table}")).unwrap();
}

/// Removes the caller's option variables (`CIBW_*` but `CIBW_BUILD`, `CROSSWHEEL_*` but the
/// cache and fixtures folders) from `command`, so only the test's configuration counts.
pub fn without_option_variables(command: &mut std::process::Command) {
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let option_variable =
            (name.starts_with("CIBW_") && name != "CIBW_BUILD") || name.starts_with("CROSSWHEEL_");
        if option_variable && !matches!(name.as_ref(), "CROSSWHEEL_CACHE" | "CROSSWHEEL_FIXTURES") {
            command.env_remove(name.as_ref());
        }
    }
}

/// A throwaway setuptools project `name` (version 1.0) in `root`: its pyproject.toml,
/// `setup_py`, an empty `name/__init__.py` and `files` (path in the project, content).
pub fn setuptools_project(
    root: &Path,
    name: &str,
    setup_py: &str,
    files: &[(String, String)],
) -> PathBuf {
    let project = root.join(name);
    std::fs::create_dir_all(project.join(name)).unwrap();
    let pyproject = format!(
        "[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"setuptools.build_meta\"\n\n\
         [project]\nname = \"{name}\"\nversion = \"1.0\"\n"
    );
    std::fs::write(project.join("pyproject.toml"), pyproject).unwrap();
    std::fs::write(project.join("setup.py"), setup_py).unwrap();
    std::fs::write(project.join(name).join("__init__.py"), "").unwrap();
    for (path, content) in files {
        std::fs::write(project.join(path), content).unwrap();
    }
    project
}

/// Where a `crosswheel build` run that printed `text` keeps the wheel of `identifier` that
/// failed after it was built: `failed/<identifier>/` of the run's log folder, which the run
/// names in its `logs of this run: DIR` line.
pub fn failed_folder(text: &str, identifier: &str) -> PathBuf {
    let logs = text
        .lines()
        .find_map(|line| {
            line.split_once("logs of this run: ")
                .map(|(_, dir)| dir.trim())
        })
        .unwrap_or_else(|| panic!("the run did not name its log folder:\n{text}"));
    PathBuf::from(logs).join("failed").join(identifier)
}

/// scripts/compat with `args` (the cells to run, timeouts), this test run's crosswheel
/// binary, no reference downloads and its report in a temporary folder: the process's
/// output and the report's text (empty when it wrote none).
pub fn run_compat(args: &[&str]) -> (std::process::Output, String) {
    let python = require_tool("python3", "apt-get install python3");
    let report_dir = tempfile::tempdir().expect("a temporary folder");
    let report = report_dir.path().join("COMPATIBILITY.md");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/compat");
    let output = std::process::Command::new(python)
        .arg(&script)
        .args(args)
        .arg("--crosswheel")
        .arg(crosswheel_bin())
        .arg("--report")
        .arg(&report)
        .arg("--no-reference")
        .output()
        .expect("scripts/compat runs");
    let text = std::fs::read_to_string(&report).unwrap_or_default();
    (output, text)
}

/// The names a thin Mach-O file exports (`_cblas_dgemm`).
pub fn macho_exports(bytes: &[u8]) -> Vec<String> {
    goblin::mach::MachO::parse(bytes, 0)
        .expect("a thin Mach-O file")
        .exports()
        .expect("its export trie")
        .into_iter()
        .map(|export| export.name)
        .collect()
}

/// The functions an ELF shared library defines and exports (`cblas_dgemm`).
pub fn elf_exported_functions(bytes: &[u8]) -> Vec<String> {
    let elf = goblin::elf::Elf::parse(bytes).expect("an ELF file");
    elf.dynsyms
        .iter()
        .filter(|symbol| {
            symbol.st_shndx != 0
                && symbol.st_type() == goblin::elf::sym::STT_FUNC
                && symbol.st_bind() != goblin::elf::sym::STB_LOCAL
        })
        .filter_map(|symbol| elf.dynstrtab.get_at(symbol.st_name).map(str::to_string))
        .collect()
}

/// Writes `files` (path relative to `root`, text) under `root`, with their folders: a
/// project a test makes on the spot.
pub fn write_project(root: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("a file has a folder")).unwrap();
        std::fs::write(&path, text).unwrap();
    }
}

/// `crosswheel build <project> -w <out>`, as it ended.
pub fn build(project: &Path, out: &Path) -> std::process::Output {
    Command::new(crosswheel_bin())
        .arg("build")
        .arg(project)
        .arg("-w")
        .arg(out)
        .output()
        .expect("run crosswheel build")
}

/// `crosswheel build <project> -w <out>`, which must succeed: its stdout (the summary).
pub fn build_succeeds(project: &Path, out: &Path) -> String {
    let output = build(project, out);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    stdout
}

/// The host CPython `version` (`"3.13"`, `"3.13t"`) that the pipeline builds with, found or
/// provided as the pipeline provides it (`BuildPython::find_or_install`: the machine's,
/// the one crosswheel built before, `uv python install`, or built from Debian's source
/// into the default cache). A slow test fails without it rather than skipping.
pub fn host_python(version: &str) -> crosswheel::support::host::BuildPython {
    use crosswheel::support::host::{BuildPython, Cache, Network};
    let tag = crosswheel::python_tag::PythonTag::parse_version(version).unwrap();
    let cache = Cache::from_env().expect("a cache directory");
    BuildPython::find_or_install(tag, &cache, &Network::new(false, None)).unwrap_or_else(|error| {
        panic!("this test needs a host CPython {version} (on PATH, pyenv's, `uv python install {version}`, or built from Debian's source): {error}")
    })
}
