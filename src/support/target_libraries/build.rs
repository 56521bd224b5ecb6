//! Building one catalogue library for one target: unpack its Debian orig tarball, run its
//! configure command with the target's toolchain, `make install` into a staging folder,
//! check the install, and rename it into its final prefix in the cache.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::catalogue::{FortranRoute, LibraryEntry};
use super::{DebianSource, LibraryRecord, RECORD_NAME, TargetLibraryError, record_of};
use crate::io_error::IoError;
use crate::support::build_tools;
use crate::support::host::Network;
use crate::support::host::run_folder::staging_in;
use crate::support::host::{Cache, cache_key};
use crate::support::sysroot::{OrigTarball, orig_tarball};
use crate::target::Target;

/// The cross build environment a library is configured in.
#[derive(Debug, Clone)]
pub struct CrossBuild {
    pub target: Target,
    /// The toolchain as logs name it; part of the cache key.
    pub toolchain: String,
    /// CC, CXX, AR, RANLIB, NM, STRIP, LD, CPPFLAGS, LDFLAGS, PKG_CONFIG_LIBDIR, ...
    pub vars: BTreeMap<String, String>,
    /// `make -j`.
    pub jobs: usize,
    /// Whether sources may be downloaded, and from which Debian mirror.
    pub network: Network,
    /// The build machine's CPython of the version being built, for an entry that builds
    /// CPython itself (`{build_python}`); `None` for libraries.
    pub build_python: Option<PathBuf>,
    /// The folder of the cache the prefix is built in: [`TARGET_LIBRARIES`], or
    /// `host-cpython` for the CPythons the build machine builds for itself.
    pub cache_folder: &'static str,
    /// The line announcing a build, instead of the usual `building <library> for
    /// <target>`; `None`: that one.
    pub announcement: Option<String>,
    /// The target's Fortran compiler for an entry with a [`FortranRoute`], or why its
    /// libraries have none (such an entry then takes its route without Fortran, and its
    /// record says why).
    pub fortran: Result<LibraryFortran, String>,
}

/// The Fortran compiler of a target, as a library's build gets it.
#[derive(Debug, Clone)]
pub struct LibraryFortran {
    /// What the build runs (`{fc}`); it links through the target's C compiler.
    pub program: PathBuf,
    /// The runtime it links (`libgfortran.so.5`). A library built with it gets a copy in
    /// its own `lib`, as the index's scipy-openblas wheels carry theirs: whatever links the
    /// library (and the repair vendoring it) finds the runtime beside it.
    pub runtime_dir: PathBuf,
    /// The compiler and runtime as the record and the cache key name them.
    pub description: String,
    /// Which compiler it is: gfortran and flang take different flags.
    pub family: FortranFamily,
}

/// The Fortran compilers crosswheel has for libraries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FortranFamily {
    /// Debian's cross gfortran (Linux targets).
    Gfortran,
    /// LLVM flang (macOS), whose runtime is the catalogue's `flang-runtime`.
    Flang,
}

/// The cache folder of the libraries and CPythons built for targets.
pub const TARGET_LIBRARIES: &str = "target-libraries";

/// A library ready in its prefix.
#[derive(Debug, Clone)]
pub struct BuiltLibrary {
    pub prefix: PathBuf,
    pub record: LibraryRecord,
    /// How long it took to build now; `None` when it came from the cache.
    pub built_in: Option<Duration>,
}

/// The variables that change what a build produces, for the cache key.
const KEYED_VARIABLES: &[&str] = &["CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "SDKROOT"];

/// `entry` built for `cross.target`, from the cache when it was built before with the
/// same toolchain and flags.
pub fn ensure_library(
    cache: &Cache,
    entry: &LibraryEntry,
    cross: &CrossBuild,
) -> Result<BuiltLibrary, TargetLibraryError> {
    ensure_verified_library(cache, entry, cross, &|_| Ok(()))
}

/// A check of a finished install, run where it was installed before it enters the cache:
/// `Err` says what is wrong in one line (and may name a log of its own).
pub type InstallCheck<'a> = &'a dyn Fn(&Path) -> Result<(), String>;

/// [`ensure_library`] with `verify` run on a fresh install first: an install that fails it
/// never enters the cache, so the next run builds it again instead of trusting it.
pub fn ensure_verified_library(
    cache: &Cache,
    entry: &LibraryEntry,
    cross: &CrossBuild,
    verify: InstallCheck<'_>,
) -> Result<BuiltLibrary, TargetLibraryError> {
    let target = &cross.target;
    let (prefix, key) = prefix_and_key(cache, entry, cross);
    let root = cache.root().join(cross.cache_folder);
    if let Some(record) = record_of(&prefix) {
        return Ok(BuiltLibrary {
            prefix,
            record,
            built_in: None,
        });
    }
    // The machine's tools, with what it lacks provided from the cache, after its own.
    let machine_path = cross
        .vars
        .get("PATH")
        .map(std::ffi::OsString::from)
        .unwrap_or_else(crate::support::host::search_path);
    let tools = build_tools::provide(cache, &programs_run(entry), &machine_path, &cross.network)?;
    if let Some(tool) = tools.missing.first() {
        return Err(TargetLibraryError::ToolMissing {
            library: entry.name.clone(),
            tool: tool.clone(),
        });
    }
    let path = tools.path_after(&machine_path);
    if let Some(missing) = missing_assembler(entry, target, &crate::support::host::search_path()) {
        return Err(missing);
    }
    // The source first: offline without it, nothing is announced as built.
    let tarball = orig_tarball(
        cache.root(),
        &OrigTarball {
            package: &entry.debian_source,
            version: &entry.debian_version,
            file_name: &entry.orig,
            sha256: &entry.sha256,
            release: entry.debian_release.as_deref(),
            from_pool: entry.from_pool,
        },
        &cross.network,
    )?;
    let index_sdists = entry
        .index_sources
        .iter()
        .map(|source| super::index_source::index_sdist(cache.root(), source, None, &cross.network))
        .collect::<Result<Vec<_>, _>>()?;
    let started = Instant::now();
    match &cross.announcement {
        Some(line) => tracing::info!("{line}"),
        None => tracing::info!(
            "building {} {} for {} from Debian's {} {} (once; cached in {})",
            entry.name,
            entry.version,
            target.id(),
            entry.debian_source,
            entry.debian_version,
            prefix.display()
        ),
    }
    let record = LibraryRecord {
        name: entry.name.clone(),
        version: entry.version.clone(),
        licence: entry.licence.clone(),
        source: DebianSource {
            package: entry.debian_source.clone(),
            version: entry.debian_version.clone(),
            file: entry.orig.clone(),
            sha256: entry.sha256.clone(),
        },
        index_sources: entry.index_sources.clone(),
        target: target.id().to_string(),
        toolchain: cross.toolchain.clone(),
        notes: entry
            .fortran
            .as_ref()
            .map(|route| route_note(route, &cross.fortran)),
    };
    let logs = root.join("logs");
    std::fs::create_dir_all(&logs).map_err(IoError::at("create", &logs))?;
    let log = logs.join(format!("{}-{}-{}.log", entry.name, target.id(), key));
    let staging = staging_in(&root, &format!(".build-{}-", entry.name))
        .map_err(IoError::at("create a temporary folder in", &root))?;
    // No wrapper notes folder (`CROSSWHEEL_WRAPPER_NOTES`) for a library: through it one
    // compile's `-g` (autotools' default CFLAGS) makes every link keep debug info, which
    // names the build folder in the cache.
    let build = Build {
        entry,
        cross,
        prefix: &prefix,
        log: &log,
        path: &path,
    };
    let installed = build.run(&tarball, &index_sdists, staging.path())?;
    verify(&installed).map_err(|problem| TargetLibraryError::FailedCheck {
        library: entry.name.clone(),
        target: target.id().to_string(),
        problem,
    })?;
    let record_path = installed.join(RECORD_NAME);
    let text = serde_json::to_string_pretty(&record).map_err(|error| {
        IoError::new("write", record_path.clone(), std::io::Error::other(error))
    })?;
    std::fs::write(&record_path, text).map_err(IoError::at("write", &record_path))?;
    if let Err(error) = std::fs::rename(&installed, &prefix) {
        // Another run finished the same library first: its prefix is as good as ours.
        if record_of(&prefix).is_none() {
            return Err(IoError::new("move the finished library to", prefix, error).into());
        }
    }
    let took = started.elapsed();
    tracing::info!(
        "built {} for {} in {:.1} s",
        entry.name,
        target.id(),
        took.as_secs_f64()
    );
    Ok(BuiltLibrary {
        prefix,
        record,
        built_in: Some(took),
    })
}

/// What a library's record says of the route its build took.
fn route_note(route: &FortranRoute, fortran: &Result<LibraryFortran, String>) -> String {
    match route_taken(route, fortran) {
        Ok((_, note, fortran)) => format!("{note} ({})", fortran.description),
        Err(why) => format!("{}: {why}", route.without_note),
    }
}

/// The assignments and note of the route `route` takes with `fortran`, or why it takes
/// the one without Fortran.
fn route_taken<'a>(
    route: &'a FortranRoute,
    fortran: &'a Result<LibraryFortran, String>,
) -> Result<(&'a [String], &'a str, &'a LibraryFortran), String> {
    let fortran = fortran.as_ref().map_err(Clone::clone)?;
    match fortran.family {
        FortranFamily::Gfortran => Ok((&route.with, &route.with_note, fortran)),
        FortranFamily::Flang => match &route.flang {
            Some(flang) => Ok((&flang.with, &flang.note, fortran)),
            None => Err("the catalogue's entry has no route for flang".to_string()),
        },
    }
}

/// Copies the shared runtime in `runtime_dir` under the names a program loads it by
/// (`libgfortran.so.5`, `libquadmath.so.0`; not the link-time `libgfortran.so`, nor the
/// file behind a Debian tree's `libgfortran.so.5` link, `libgfortran.so.5.0.0`) into
/// `lib`. flang's
/// `libFortranRuntime.dylib` is not copied: it is a catalogue library of its own, whose
/// absolute install name the library records and the repair follows.
fn copy_runtime(runtime_dir: &Path, lib: &Path) -> Result<(), TargetLibraryError> {
    let entries = std::fs::read_dir(runtime_dir).map_err(IoError::at("read", runtime_dir))?;
    for entry in entries {
        let entry = entry.map_err(IoError::at("read", runtime_dir))?;
        let name = entry.file_name();
        let loaded_name = name
            .to_string_lossy()
            .split_once(".so.")
            .is_some_and(|(_, version)| !version.contains('.'));
        if !loaded_name {
            continue;
        }
        let to = lib.join(&name);
        std::fs::copy(entry.path(), &to).map_err(IoError::at("write", &to))?;
    }
    Ok(())
}

/// The build machine's programs `entry`'s steps run by name: each step's program (past
/// `env`'s assignments), `make` where a step names it or the default steps run it, and
/// the entry's `tools`. A shell step's other commands are the entry's to list in `tools`.
fn programs_run(entry: &LibraryEntry) -> Vec<String> {
    let default_make = entry.build.is_none() || entry.install.is_none();
    let steps = [
        Some(&entry.bootstrap),
        Some(&entry.configure),
        entry.build.as_ref(),
        entry.install.as_ref(),
    ];
    let mut programs: Vec<String> = Vec::new();
    let mut add = |program: &str| {
        // `./configure` and other paths are the source's own.
        if !program.is_empty()
            && !program.contains('/')
            && !programs.iter().any(|known| known == program)
        {
            programs.push(program.to_string());
        }
    };
    let mut names_make = default_make;
    for step in steps.into_iter().flatten() {
        let mut words = step.iter().map(String::as_str);
        let mut program = words.next().unwrap_or("");
        if program == "env" {
            program = words.find(|word| !word.contains('=')).unwrap_or("");
        }
        add(program);
        names_make |= step
            .iter()
            .any(|arg| arg.split_whitespace().any(|word| word == "make"));
    }
    if names_make {
        add("make");
    }
    for tool in &entry.tools {
        add(tool);
    }
    programs
}

/// Makes `entry`'s source edits in the unpacked `source`, each checked against the number
/// of occurrences it expects.
fn apply_source_edits(entry: &LibraryEntry, source: &Path) -> Result<(), TargetLibraryError> {
    for edit in &entry.source_edits {
        let path = source.join(&edit.file);
        let text = std::fs::read_to_string(&path).map_err(IoError::at("read", &path))?;
        let found = text.matches(&edit.find).count();
        if found != edit.occurrences {
            return Err(TargetLibraryError::SourceEditMismatch {
                library: entry.name.clone(),
                file: edit.file.clone(),
                expected: edit.occurrences,
                found,
            });
        }
        let edited = text.replace(&edit.find, &edit.replace);
        std::fs::write(&path, edited).map_err(IoError::at("write", &path))?;
    }
    Ok(())
}

/// The error for a build of `entry` for `target` that needs the target's GNU assembler
/// (`gnu_assembler_for`) where `path` (a `PATH` value) has none.
fn missing_assembler(
    entry: &LibraryEntry,
    target: &Target,
    path: &std::ffi::OsStr,
) -> Option<TargetLibraryError> {
    let needed = entry
        .gnu_assembler_for
        .iter()
        .any(|arch| arch == target.arch());
    let gnu = target.data().gnu_assembler.as_ref().filter(|_| needed)?;
    crate::support::host::find_in_path(&gnu.program, path)
        .is_none()
        .then(|| TargetLibraryError::AssemblerMissing {
            library: entry.name.clone(),
            target: target.id().to_string(),
            program: gnu.program.clone(),
            package: gnu.package.clone(),
        })
}

/// The prefix `entry` is (or would be) built into for `cross`: a usable build when
/// [`record_of`] finds its record there.
pub fn library_prefix(cache: &Cache, entry: &LibraryEntry, cross: &CrossBuild) -> PathBuf {
    prefix_and_key(cache, entry, cross).0
}

/// The prefix and its cache key, made from everything that changes what the build
/// produces: the entry, the target, the toolchain and the flags.
fn prefix_and_key(cache: &Cache, entry: &LibraryEntry, cross: &CrossBuild) -> (PathBuf, String) {
    let target = &cross.target;
    let mut parts: Vec<Vec<u8>> = vec![
        entry.cache_identity(target).into_bytes(),
        target.id().as_bytes().to_vec(),
        target.os_version().to_string().into_bytes(),
        cross.toolchain.as_bytes().to_vec(),
    ];
    if let Some(route) = &entry.fortran {
        let description = match route_taken(route, &cross.fortran) {
            Ok((_, _, fortran)) => fortran.description.as_str(),
            Err(_) => "none",
        };
        parts.push(format!("Fortran: {description}").into_bytes());
    }
    for name in KEYED_VARIABLES {
        parts.push(format!("{name}={:?}", cross.vars.get(*name)).into_bytes());
    }
    let borrowed: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    let key = cache_key(&borrowed);
    tracing::debug!(
        "{} for {}: cache key {key} of {:?}",
        entry.name,
        target.id(),
        parts[3..]
            .iter()
            .map(|part| String::from_utf8_lossy(part))
            .collect::<Vec<_>>()
    );
    let prefix = cache.root().join(cross.cache_folder).join(format!(
        "{}-{}-{}-{}",
        entry.name,
        entry.version,
        target.id(),
        key
    ));
    (prefix, key)
}

struct Build<'a> {
    entry: &'a LibraryEntry,
    cross: &'a CrossBuild,
    prefix: &'a Path,
    log: &'a Path,
    /// PATH for every step: the build's own, then the tools provided from the cache.
    path: &'a std::ffi::OsStr,
}

impl Build<'_> {
    /// Unpacks, configures, builds and installs under `staging`; returns the installed
    /// prefix there.
    fn run(
        &self,
        tarball: &Path,
        index_sdists: &[PathBuf],
        staging: &Path,
    ) -> Result<PathBuf, TargetLibraryError> {
        let unpacked = staging.join("src");
        std::fs::create_dir_all(&unpacked).map_err(IoError::at("create", &unpacked))?;
        let mut tar = Command::new("tar");
        tar.arg("-xf").arg(tarball).arg("-C").arg(&unpacked);
        if !self.entry.unpack.is_empty() {
            // `*` stands for the tarball's one top folder, whose name the entry does not
            // state, and matches no `/`: a folder of that name deeper down is not unpacked.
            tar.args(["--wildcards", "--no-wildcards-match-slash"]);
            tar.args(self.entry.unpack.iter().map(|folder| format!("*/{folder}")));
        }
        self.step("tar -xf", tar, false)?;
        let source = single_folder(&unpacked)?;
        for (sdist, index_source) in index_sdists.iter().zip(&self.entry.index_sources) {
            super::index_source::add_to_source(
                sdist,
                index_source,
                &source,
                &staging.join("index-sources"),
            )?;
        }
        apply_source_edits(self.entry, &source)?;
        let host = self.cross.target.gnu_triple();
        let cc = self.cross.vars.get("CC").map_or("cc", String::as_str);
        let ar = self.cross.vars.get("AR").map_or("ar", String::as_str);
        let ranlib = self
            .cross
            .vars
            .get("RANLIB")
            .map_or("ranlib", String::as_str);
        // An entry that sets LDFLAGS itself extends the build's own (the prefixes of the
        // libraries it depends on) instead of replacing them.
        let ldflags = self.cross.vars.get("LDFLAGS").map_or("", String::as_str);
        let cflags = self.cross.vars.get("CFLAGS").map_or("", String::as_str);
        let rpaths = rpaths_of(ldflags);
        let configure_target = self.configure_target()?;
        let build = build_triple(&self.cross.target);
        let build_python = self
            .cross
            .build_python
            .as_ref()
            .map(|python| python.to_string_lossy().into_owned())
            .unwrap_or_default();
        let fill = |text: &str| {
            text.replace("{host}", host)
                .replace("{build}", &build)
                .replace("{build_python}", &build_python)
                .replace("{cc}", cc)
                .replace("{ar}", ar)
                .replace("{ranlib}", ranlib)
                .replace("{ldflags}", ldflags)
                .replace("{cflags}", cflags)
                .replace("{rpaths}", &rpaths)
                .replace("{prefix}", &self.prefix.to_string_lossy())
                .replace("{configure_target}", configure_target)
        };
        if let Some((program, args)) = self.entry.bootstrap.split_first() {
            // A tool of the build machine: the cross variables are not its business.
            let mut bootstrap = Command::new(program);
            bootstrap
                .current_dir(&source)
                .args(args)
                .env("PATH", self.path);
            self.step(&self.entry.bootstrap.join(" "), bootstrap, true)?;
        }
        let macos = self.cross.target.is_macos();
        if !self.entry.configure.is_empty() {
            let os_args = if macos {
                &self.entry.macos_configure_args
            } else {
                &[][..]
            };
            let configure: Vec<String> = self
                .entry
                .configure
                .iter()
                .chain(os_args)
                .map(|arg| fill(arg))
                .collect();
            let mut command = self.command(&configure[0], &source);
            command.args(&configure[1..]);
            let os_env = if macos {
                &self.entry.macos_configure_env
            } else {
                &self.entry.linux_configure_env
            };
            for (name, value) in self.entry.configure_env.iter().chain(os_env) {
                command.env(name, fill(value));
            }
            self.step(&configure.join(" "), command, true)?;
        }
        let mut make_vars: Vec<String> = if macos {
            self.entry
                .macos_make_vars
                .iter()
                .map(|(name, value)| format!("{name}={}", fill(value)))
                .collect()
        } else {
            Vec::new()
        };
        if !self.entry.make_vars_by_arch.is_empty() {
            let arch = self.cross.target.arch();
            let vars = self
                .entry
                .make_vars_by_arch
                .get(arch)
                .ok_or_else(|| self.unsupported("make_vars_by_arch"))?;
            make_vars.extend(vars.iter().map(|var| fill(var)));
        }
        let mut fortran = None;
        if let Some(route) = &self.entry.fortran {
            let (vars, fc, runtime) = match route_taken(route, &self.cross.fortran) {
                Ok((vars, _, taken)) => {
                    fortran = Some(taken);
                    (
                        vars,
                        taken.program.to_string_lossy(),
                        taken.runtime_dir.to_string_lossy(),
                    )
                }
                Err(_) => (route.without.as_slice(), "".into(), "".into()),
            };
            make_vars.extend(vars.iter().map(|var| {
                fill(var)
                    .replace("{fc}", &fc)
                    .replace("{fortran_runtime}", &runtime)
            }));
        }
        let destination = staging.join("dest");
        let jobs = self.cross.jobs.max(1).to_string();
        let fill_step = |text: &str| {
            fill(text)
                .replace("{jobs}", &jobs)
                .replace("{destdir}", &destination.to_string_lossy())
        };
        let default_build = || vec!["make".to_string(), "-j{jobs}".to_string()];
        let default_install = || {
            ["make", "install", "DESTDIR={destdir}"]
                .map(str::to_string)
                .to_vec()
        };
        for step in [
            self.entry.build.clone().unwrap_or_else(default_build),
            self.entry.install.clone().unwrap_or_else(default_install),
        ] {
            let argv: Vec<String> = step.iter().map(|arg| fill_step(arg)).collect();
            let Some((program, args)) = argv.split_first() else {
                continue;
            };
            let mut command = self.command(program, &source);
            command.args(args);
            // Every make, so the install does not rebuild with what configure wrote.
            if program == "make" {
                command.args(&make_vars);
            }
            self.step(&argv.join(" "), command, true)?;
        }
        let relative = self.prefix.strip_prefix("/").unwrap_or(self.prefix);
        let installed = destination.join(relative);
        if let Some(fortran) = fortran {
            copy_runtime(&fortran.runtime_dir, &installed.join("lib"))?;
        }
        self.check(&installed)?;
        Ok(installed)
    }

    /// The target as the library's own configure script names it; "" for a library
    /// whose configure needs no such name.
    fn configure_target(&self) -> Result<&str, TargetLibraryError> {
        if self.entry.configure_target.is_empty() {
            return Ok("");
        }
        let target = &self.cross.target;
        let key = format!("{}-{}", target.platform().name(), target.arch());
        self.entry
            .configure_target
            .get(&key)
            .map(String::as_str)
            .ok_or_else(|| self.unsupported("configure_target"))
    }

    fn unsupported(&self, table: &'static str) -> TargetLibraryError {
        TargetLibraryError::UnsupportedArch {
            library: self.entry.name.clone(),
            target: self.cross.target.id().to_string(),
            arch: self.cross.target.arch().to_string(),
            table,
        }
    }

    fn command(&self, program: &str, dir: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(dir)
            .envs(&self.cross.vars)
            .env("PATH", self.path)
            .env_remove(crate::support::host::WRAPPER_NOTES_VAR)
            .stdin(std::process::Stdio::null());
        command
    }

    /// Runs one step with its output appended to the log.
    fn step(
        &self,
        name: &str,
        mut command: Command,
        logged: bool,
    ) -> Result<(), TargetLibraryError> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log)
            .map_err(IoError::at("write", self.log))?;
        if logged {
            use std::io::Write;
            let mut header = &log;
            let _ = writeln!(header, "==> {name}");
        }
        let err = log.try_clone().map_err(IoError::at("write", self.log))?;
        command.stdout(log).stderr(err);
        let program = name.split(' ').next().unwrap_or(name).to_string();
        let status = command.status().map_err(|error| {
            if error.kind() == std::io::ErrorKind::NotFound {
                TargetLibraryError::ToolMissing {
                    library: self.entry.name.clone(),
                    tool: program.clone(),
                }
            } else {
                IoError::new("run", PathBuf::from(&program), error).into()
            }
        })?;
        if status.success() {
            return Ok(());
        }
        Err(TargetLibraryError::BuildFailed {
            library: self.entry.name.clone(),
            target: self.cross.target.id().to_string(),
            step: name.to_string(),
            status: status.to_string(),
            log: self.log.to_path_buf(),
        })
    }

    /// The install has the files the catalogue names; libtool's `.la` files, which
    /// carry the build's paths and mislead later links, are removed.
    fn check(&self, installed: &Path) -> Result<(), TargetLibraryError> {
        let checks = if self.cross.target.is_macos() {
            &self.entry.check.macos
        } else {
            &self.entry.check.linux
        };
        for file in checks {
            if !installed.join(file).exists() {
                return Err(TargetLibraryError::Incomplete {
                    library: self.entry.name.clone(),
                    target: self.cross.target.id().to_string(),
                    missing: file.clone(),
                    log: self.log.to_path_buf(),
                });
            }
        }
        let lib = installed.join("lib");
        for entry in std::fs::read_dir(&lib).map_err(IoError::at("list", &lib))? {
            let path = entry.map_err(IoError::at("list", &lib))?.path();
            if path.extension().is_some_and(|ext| ext == "la") {
                std::fs::remove_file(&path).map_err(IoError::at("remove", &path))?;
            }
        }
        Ok(())
    }
}

/// `-Wl,-rpath,<dir>` for every `-L<dir>` of `ldflags`: the prefixes of the catalogue
/// libraries a build links, which stay where they were built, in the cache.
fn rpaths_of(ldflags: &str) -> String {
    ldflags
        .split_whitespace()
        .filter_map(|flag| flag.strip_prefix("-L"))
        .filter(|dir| !dir.is_empty())
        .map(|dir| format!("-Wl,-rpath,{dir}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The build machine's GNU triple with the target's C library (`x86_64-pc-linux-musl` when
/// building for musl): what CPython 3.11's configure reads its platform triplet from.
fn build_triple(target: &Target) -> String {
    let os = match target.libc() {
        Some(crate::target::Libc::Musl) => "linux-musl",
        _ => "linux-gnu",
    };
    format!("{}-pc-{os}", std::env::consts::ARCH)
}

/// The one folder a source tarball unpacks to.
fn single_folder(dir: &Path) -> Result<PathBuf, TargetLibraryError> {
    let mut folders = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(IoError::at("list", dir))? {
        let path = entry.map_err(IoError::at("list", dir))?.path();
        if path.is_dir() {
            folders.push(path);
        }
    }
    match folders.as_slice() {
        [one] => Ok(one.clone()),
        _ => Ok(dir.to_path_buf()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cross_build(target: &str, fortran: Result<LibraryFortran, String>) -> CrossBuild {
        CrossBuild {
            target: Target::parse(target).unwrap(),
            toolchain: "zig".into(),
            vars: BTreeMap::new(),
            jobs: 2,
            network: Network::new(true, None),
            build_python: None,
            cache_folder: TARGET_LIBRARIES,
            announcement: None,
            fortran,
        }
    }

    #[test]
    fn a_library_with_a_fortran_route_is_keyed_and_recorded_by_the_route_it_takes() {
        let openblas = super::super::catalogue::catalogue()
            .library("openblas")
            .unwrap();
        let route = openblas
            .fortran
            .as_ref()
            .expect("OpenBLAS has a Fortran route");
        let cache = Cache::at("/cache");
        let gfortran = |description: &str| LibraryFortran {
            program: "/cache/gfortran".into(),
            runtime_dir: "/cache/runtime".into(),
            description: description.into(),
            family: FortranFamily::Gfortran,
        };
        let without = cross_build("linux-aarch64", Err("glibc 2.17 is too old".into()));
        let with = cross_build("linux-aarch64", Ok(gfortran("gfortran 9")));
        let newer = cross_build("linux-aarch64", Ok(gfortran("gfortran 10")));
        let key = |cross: &CrossBuild| prefix_and_key(&cache, openblas, cross).1;
        assert_ne!(key(&without), key(&with));
        assert_ne!(key(&with), key(&newer), "another compiler is another build");
        assert_eq!(
            route_note(route, &without.fortran),
            format!("{}: glibc 2.17 is too old", route.without_note)
        );
        assert!(route.without_note.contains("C translation"));
        assert_eq!(
            route_note(route, &with.fortran),
            format!("{} (gfortran 9)", route.with_note)
        );
        // A library without Fortran keeps its key whatever the target has.
        let zlib = super::super::catalogue::catalogue()
            .library("zlib")
            .unwrap();
        assert_eq!(
            prefix_and_key(&cache, zlib, &without).1,
            prefix_and_key(&cache, zlib, &with).1
        );
    }

    #[test]
    fn with_flang_openblas_takes_the_flang_route_and_a_library_without_one_takes_none() {
        let catalogue = super::super::catalogue::catalogue();
        let openblas = catalogue.library("openblas").unwrap();
        let route = openblas.fortran.as_ref().unwrap();
        let flang_route = route
            .flang
            .as_ref()
            .expect("OpenBLAS has a route for flang");
        let flang = Ok(LibraryFortran {
            program: "/cache/flang".into(),
            runtime_dir: "/cache/flang-runtime/lib".into(),
            description: "flang 19".into(),
            family: FortranFamily::Flang,
        });
        let (vars, note, _) = route_taken(route, &flang).unwrap();
        assert_eq!(vars, flang_route.with.as_slice());
        assert!(
            vars.iter().any(|var| var == "F_COMPILER=GFORTRAN"),
            "{vars:?}"
        );
        assert_eq!(route_note(route, &flang), format!("{note} (flang 19)"));
        let without_flang = FortranRoute {
            flang: None,
            ..route.clone()
        };
        assert_eq!(
            route_note(&without_flang, &flang),
            format!(
                "{}: the catalogue's entry has no route for flang",
                route.without_note
            )
        );
        // The flang route keys macOS builds only.
        let linux = Target::parse("linux-aarch64").unwrap();
        let macos = Target::parse("macos-arm64").unwrap();
        let bare = LibraryEntry {
            fortran: Some(without_flang),
            ..openblas.clone()
        };
        assert_eq!(openblas.cache_identity(&linux), bare.cache_identity(&linux));
        assert_ne!(openblas.cache_identity(&macos), bare.cache_identity(&macos));
    }

    #[test]
    fn the_runtime_a_library_links_is_copied_beside_it_without_the_link_time_name() {
        let runtime = tempfile::tempdir().unwrap();
        for name in [
            "libgfortran.so",
            "libgfortran.so.5",
            "libgfortran.so.5.0.0",
            "libquadmath.so.0",
        ] {
            std::fs::write(runtime.path().join(name), name).unwrap();
        }
        let lib = tempfile::tempdir().unwrap();
        copy_runtime(runtime.path(), lib.path()).unwrap();
        let mut copied: Vec<String> = std::fs::read_dir(lib.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        copied.sort();
        assert_eq!(copied, ["libgfortran.so.5", "libquadmath.so.0"]);
    }

    #[test]
    fn every_library_folder_of_ldflags_becomes_a_run_path() {
        assert_eq!(
            rpaths_of("-L/c/libffi/lib -Wl,--as-needed  -L/c/zlib/lib -L"),
            "-Wl,-rpath,/c/libffi/lib -Wl,-rpath,/c/zlib/lib"
        );
        assert_eq!(rpaths_of(""), "");
    }

    #[test]
    fn openblas_for_ppc64le_needs_the_targets_gnu_assembler_on_path_and_says_how_to_install_it() {
        use std::os::unix::fs::PermissionsExt;
        let openblas = super::super::catalogue::catalogue()
            .library("openblas")
            .unwrap();
        let ppc64le = Target::parse("linux-ppc64le").unwrap();
        let error = missing_assembler(openblas, &ppc64le, std::ffi::OsStr::new("")).unwrap();
        assert_eq!(
            error.to_string(),
            "openblas for linux-ppc64le needs `powerpc64le-linux-gnu-as`, the target's GNU assembler, on the build machine (LLVM's assembler refuses its assembly): install it (Debian/Ubuntu: apt-get install binutils-powerpc64le-linux-gnu)"
        );
        let bin = tempfile::tempdir().unwrap();
        let program = bin.path().join("powerpc64le-linux-gnu-as");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(missing_assembler(openblas, &ppc64le, bin.path().as_os_str()).is_none());
        // aarch64's kernels assemble with LLVM: no GNU assembler asked for.
        let aarch64 = Target::parse("linux-aarch64").unwrap();
        assert!(missing_assembler(openblas, &aarch64, std::ffi::OsStr::new("")).is_none());
    }
}
