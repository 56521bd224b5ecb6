//! What each target gets once, before its first build: the catalogue libraries its
//! configuration names (`target-libraries`, package-manager lines in `before-all`), built
//! for it; a prefix of its own (`CROSSWHEEL_PREFIX`); and its `before-all`, run with the
//! target's cross toolchain exported the way autotools, CMake and meson expect.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::hooks;
use super::usr_local::{self, Isolation};
use crate::input::options::{BuildSpec, Plan};
use crate::io_error::IoError;
use crate::python_tag::PythonTag;
use crate::stages::crossenv::{PythonSource, SetupRequest, TargetSetup};
use crate::stages::toolchain::fortran_runtime_is_a_target_library as runtime_is_a_target_library;
use crate::stages::toolchain::{Language, fortran_family, fortran_for_libraries};
use crate::support::build_tools;
use crate::support::host::{Cache, Network};
use crate::support::target_libraries::{
    CrossBuild, FLANG_RUNTIME_LIBRARY, FortranFamily, LibraryEntry, LibraryFortran, OPENMP_LIBRARY,
    TARGET_LIBRARIES, TargetPrefix, add_prefix_variables, catalogue, ensure_library, linked_by,
    read_before_all, requested_libraries, resolve,
};

/// The prefixes of every target of a run, keyed by [`key_of`]; the user prefixes live in
/// a folder of the run, removed with it.
pub(super) struct Targets {
    /// Each target's preparation, or why it failed: its builds fail with it, the other
    /// targets' go on.
    prepared: BTreeMap<String, Result<Prepared, Unprepared>>,
    _folder: Option<tempfile::TempDir>,
}

/// One target's prefix and the variables its hooks see.
#[derive(Clone, Debug, Default)]
pub(super) struct Prepared {
    pub prefix: TargetPrefix,
    /// CC, CXX, ..., CROSSWHEEL_HOST, CROSSWHEEL_PREFIX: for `before-all` and `before-build`.
    pub hook_variables: BTreeMap<String, String>,
    /// Folders of the build tools `before-all`'s install lines name that crosswheel
    /// provided, the machine lacking them: after PATH for every step of the build.
    pub tool_folders: Vec<PathBuf>,
}

/// Why a target has no builds: the cause (one line), which the summary gives once, on the
/// line of the first identifier that needed the target; the others point there.
#[derive(Clone, Debug)]
struct Unprepared {
    problem: String,
    first: String,
}

/// The builds that share a target's preparation (and `before-all`).
pub(super) fn key_of(spec: &BuildSpec) -> String {
    format!("{} {:?}", spec.target.id(), spec.options.toolchain)
}

impl Targets {
    /// `spec`'s target prepared, or why its preparation failed: the cause for the first
    /// identifier of the target, a pointer to that identifier's line for the others, so
    /// the cause is printed once however many builds share the target.
    pub(super) fn of(&self, spec: &BuildSpec) -> Result<Prepared, String> {
        match self.prepared.get(&key_of(spec)) {
            None => Ok(Prepared::default()),
            Some(Ok(prepared)) => Ok(prepared.clone()),
            Some(Err(unprepared)) if unprepared.first == spec.identifier => {
                Err(unprepared.problem.clone())
            }
            Some(Err(unprepared)) => Err(format!(
                "{} could not be prepared (the cause is on {}'s line)",
                spec.target.id(),
                unprepared.first
            )),
        }
    }
}

/// Prepares each target with builds, in plan order. A target whose catalogue libraries or
/// `before-all` fail has no build (each would run on a machine the project did not
/// prepare, which is why cibuildwheel stops there); the other targets are prepared and
/// built, and the summary lists every identifier. A configuration that cannot be read
/// (an unknown package in a `before-all` line) stops the run: it is the same for all.
pub(super) fn prepare(plan: &Plan, context: &super::context::RunContext<'_>) -> Result<Targets> {
    let mut targets = Targets {
        prepared: BTreeMap::new(),
        _folder: None,
    };
    // Read once per project: every target of it asks the same.
    let mut project_asks: BTreeMap<PathBuf, ProjectAsks> = BTreeMap::new();
    for spec in &plan.builds {
        let key = key_of(spec);
        if targets.prepared.contains_key(&key) {
            continue;
        }
        let before_all = spec
            .options
            .before_all
            .as_deref()
            .map(|command| {
                let origin = spec
                    .options
                    .before_all_origin
                    .as_deref()
                    .unwrap_or("the configuration");
                read_before_all(command, origin)
            })
            .transpose()?;
        let asked = libraries_asked(spec, before_all.as_ref(), &mut project_asks)?;
        let tools = before_all
            .as_ref()
            .map(|read| read.tools.clone())
            .unwrap_or_default();
        let command = before_all.and_then(|read| read.command);
        if asked.is_empty() && command.is_none() && tools.is_empty() {
            targets.prepared.insert(key, Ok(Prepared::default()));
            continue;
        }
        if targets._folder.is_none() {
            targets._folder = Some(
                tempfile::Builder::new()
                    .prefix("crosswheel-prefix-")
                    .tempdir()
                    .map_err(IoError::at("create a folder in", &std::env::temp_dir()))?,
            );
        }
        let folder = targets._folder.as_ref().map(|dir| dir.path().to_path_buf());
        let user = folder.unwrap_or_default().join(spec.target.id());
        let before_all = BeforeAllWork {
            command: command.as_deref(),
            tools: &tools,
            user_prefix: user,
        };
        let prepared = prepare_target(spec, &asked, before_all, context);
        targets.prepared.insert(key, prepared);
    }
    Ok(targets)
}

/// What a project's own build files ask of every target's libraries.
#[derive(Debug, Clone, Copy)]
struct ProjectAsks {
    openmp: bool,
    fortran: bool,
}

impl ProjectAsks {
    fn read(package: &Path) -> ProjectAsks {
        ProjectAsks {
            openmp: crate::stages::backend::requires_openmp(package),
            fortran: crate::stages::backend::requires_fortran(package),
        }
    }
}

/// The catalogue libraries a target's builds need, by name: those the configuration names
/// (`target-libraries`, `before-all`'s install lines); LLVM's OpenMP runtime for a
/// project that asks for OpenMP, as a manylinux container's GCC has libgomp and a macOS
/// runner's Homebrew has libomp; flang's runtime for a project that compiles Fortran for
/// a macOS target, whose Fortran is flang. The versions are chosen once the build's
/// environment (which may pin them) is known. `project_asks` is read once per project.
fn libraries_asked(
    spec: &BuildSpec,
    before_all: Option<&crate::support::target_libraries::BeforeAll>,
    project_asks: &mut BTreeMap<PathBuf, ProjectAsks>,
) -> Result<Vec<&'static LibraryEntry>> {
    let mut asked: Vec<&'static LibraryEntry> =
        requested_libraries(&spec.options.target_libraries)?;
    for entry in before_all.iter().flat_map(|read| read.libraries.iter()) {
        if !asked.iter().any(|known| known.name == entry.name) {
            asked.push(entry);
        }
    }
    let package = &spec.paths.package;
    let asks = *project_asks
        .entry(package.clone())
        .or_insert_with(|| ProjectAsks::read(package));
    let implied = [
        asks.openmp.then_some(OPENMP_LIBRARY),
        (asks.fortran && runtime_is_a_target_library(&spec.target))
            .then_some(FLANG_RUNTIME_LIBRARY),
    ];
    for name in implied.into_iter().flatten() {
        if let Some(entry) = catalogue().library(name)
            && !asked.iter().any(|known| known.name == entry.name)
        {
            asked.push(entry);
        }
    }
    Ok(asked)
}

/// One target prepared for its builds with `asked` at the versions its first build's
/// environment allows, or why it could not be (said in one line now, in full in the
/// summary).
fn prepare_target(
    spec: &BuildSpec,
    asked: &[&'static LibraryEntry],
    before_all: BeforeAllWork<'_>,
    context: &super::context::RunContext<'_>,
) -> Result<Prepared, Unprepared> {
    let (cache, offline, jobs) = (&context.cache, context.offline, context.jobs);
    // The first build's environment, as the first build's options throughout: a target
    // is prepared once, as cibuildwheel runs `before-all` once per container with the
    // options of its first identifier.
    super::environment::build_environment(spec, super::environment::process_environment())
        .and_then(|environment| {
            let resolution = resolve(&spec.options.target_libraries, asked, &environment)?;
            for pin in &resolution.pins {
                if pin.met {
                    tracing::info!("{}: {}", spec.target.id(), pin.message);
                } else {
                    tracing::warn!("{}: {}", spec.target.id(), pin.message);
                }
            }
            let work = TargetWork {
                libraries: &resolution.libraries,
                before_all,
                environment,
            };
            prepare_one(spec, cache, work, offline, jobs)
        })
        .with_context(|| format!("preparing {} for its builds", spec.target.id()))
        .map_err(|error| {
            tracing::error!(
                "{}: could not be prepared, so none of its builds runs; the cause is in the summary",
                spec.target.id()
            );
            Unprepared {
                problem: crate::logging::one_line(&error),
                first: spec.identifier.to_string(),
            }
        })
}

/// What `before-all` asks of one target, besides catalogue libraries.
struct BeforeAllWork<'a> {
    /// `before-all` without its package-manager lines.
    command: Option<&'a str>,
    /// The build tools its install lines name.
    tools: &'a [String],
    /// `CROSSWHEEL_PREFIX`.
    user_prefix: PathBuf,
}

/// What one target is prepared with.
struct TargetWork<'a> {
    /// The catalogue libraries to build, each after those it links.
    libraries: &'a [&'static LibraryEntry],
    before_all: BeforeAllWork<'a>,
    /// The user's `environment`, evaluated as cibuildwheel evaluates it for `before-all`:
    /// in the environment crosswheel runs in.
    environment: BTreeMap<String, String>,
}

fn prepare_one(
    spec: &BuildSpec,
    cache: &Cache,
    work: TargetWork<'_>,
    offline: bool,
    jobs: usize,
) -> Result<Prepared> {
    let TargetWork {
        libraries,
        before_all:
            BeforeAllWork {
                command,
                tools,
                user_prefix,
            },
        environment,
    } = work;
    for sub in ["include", "lib/pkgconfig", "bin"] {
        let dir = user_prefix.join(sub);
        std::fs::create_dir_all(&dir).map_err(IoError::at("create", &dir))?;
    }
    let libraries = &with_flang_runtime_first(&spec.target, libraries);
    // The target's Fortran, fetched only when a library to build compiles Fortran and the
    // target's libraries can have it; the others take their route without it.
    let fortran_description = if libraries.iter().any(|entry| entry.fortran.is_some()) {
        fortran_for_libraries(&spec.target)
    } else {
        Err("no library to build compiles Fortran".to_string())
    };
    let languages: &[Language] = match fortran_description {
        Ok(_) => &[Language::Fortran],
        Err(_) => &[],
    };
    let setup = target_setup(spec, spec.python, cache, offline, languages)?;
    let fortran = fortran_description
        .and_then(|description| library_fortran(&setup, &spec.target, description));
    let mut base = setup.command_variables();
    // Only the entries that take a Fortran route get the compiler, through `{fc}`: the
    // others' own configure scripts would find it and build what their cache key does not
    // say (HDF5's Fortran interface).
    if let Some(compiler) = setup.toolchain.compilers.get(Language::Fortran) {
        for (name, _) in compiler.variables() {
            base.remove(&name);
        }
    }
    base.extend(environment);
    let mut prefix = TargetPrefix {
        user: Some(user_prefix.clone()),
        libraries: Vec::new(),
    };
    let builds = LibraryBuilds {
        spec,
        cache,
        toolchain: &setup.toolchain.description,
        base: &base,
        fortran: &fortran,
        jobs,
        offline,
    };
    for entry in libraries {
        let built = builds.build(entry, libraries, &prefix)?;
        prefix.libraries.push(built);
    }
    let mut hook_variables = base;
    hook_variables.insert(
        "CROSSWHEEL_PREFIX".to_string(),
        user_prefix.to_string_lossy().into_owned(),
    );
    add_prefix_variables(&mut hook_variables, &prefix.roots());
    // The tools a container's package manager would have installed, where this machine
    // lacks them: after its own on PATH, for before-all and every later step.
    let machine_path = hook_variables
        .get("PATH")
        .map(std::ffi::OsString::from)
        .unwrap_or_else(crate::support::host::search_path);
    let tools = build_tools::provide(
        cache,
        &build_tools::programs_of_packages(tools),
        &machine_path,
        &Network::new(offline, spec.options.debian_mirror.clone()),
    )?;
    if !tools.folders.is_empty() {
        hook_variables.insert(
            "PATH".into(),
            tools
                .path_after(&machine_path)
                .to_string_lossy()
                .into_owned(),
        );
    }
    if let Some(command) = command {
        // The peers a configuration calls (`auditwheel`, `abi3audit`, ...) answer for the
        // target here too, as in `before-build` and `repair-wheel-command`.
        let parent = user_prefix.parent().unwrap_or(&user_prefix);
        let hook_variables = hooks::with_peers(hook_variables.clone(), parent, &spec.target)?;
        let isolation = Isolation::choose(&user_prefix)?;
        hooks::run(
            "before-all",
            command,
            isolation.command(command),
            &spec.paths.package,
            &hook_variables,
        )
        .context("`before-all` failed")?;
        if let Isolation::Overlay { upper, .. } = &isolation {
            let moved = usr_local::settle(upper, &user_prefix)?;
            if !moved.is_empty() {
                tracing::info!(
                    "{}: before-all installed {} files into its private /usr/local; they are in {}",
                    spec.target.id(),
                    moved.len(),
                    user_prefix.display()
                );
            }
        }
    }
    Ok(Prepared {
        prefix,
        hook_variables,
        tool_folders: tools.folders,
    })
}

/// The Fortran compiler of `setup`'s toolchain as a library's build gets it, described as
/// its record will say. flang's runtime folder is left empty here: it is the catalogue's
/// `flang-runtime`, built before the libraries that link it, each given its folder then.
fn library_fortran(
    setup: &TargetSetup,
    target: &crate::target::Target,
    description: String,
) -> Result<LibraryFortran, String> {
    let missing = || "the toolchain came without its Fortran compiler".to_string();
    let compiler = setup
        .toolchain
        .compilers
        .get(Language::Fortran)
        .ok_or_else(missing)?;
    let family = fortran_family(target);
    let runtime_dir = match family {
        FortranFamily::Gfortran => compiler.runtime_dir.clone().ok_or_else(missing)?,
        FortranFamily::Flang => PathBuf::new(),
    };
    Ok(LibraryFortran {
        program: compiler.program.clone(),
        runtime_dir,
        description,
        family,
    })
}

/// How one target's catalogue libraries are built, each in turn.
struct LibraryBuilds<'a> {
    spec: &'a BuildSpec,
    cache: &'a Cache,
    /// The C toolchain, as the records name it.
    toolchain: &'a str,
    /// The variables of every library's build (the compilers, the user's `environment`).
    base: &'a BTreeMap<String, String>,
    fortran: &'a Result<LibraryFortran, String>,
    jobs: usize,
    offline: bool,
}

impl LibraryBuilds<'_> {
    /// `entry` built (or taken from the cache) with the prefixes of what it links among
    /// `built`, the libraries `libraries` lists before it.
    fn build(
        &self,
        entry: &'static LibraryEntry,
        libraries: &[&'static LibraryEntry],
        built: &TargetPrefix,
    ) -> Result<crate::support::target_libraries::BuiltLibrary> {
        let target = &self.spec.target;
        let mut vars = self.base.clone();
        // Only what it links: a library's build (and its cache key) does not change with
        // the other libraries a configuration asks for.
        let mut needed = linked_by(entry, libraries);
        // flang's runtime, built first, is what a library compiled with flang links.
        if entry.fortran.is_some() && fortran_family(target) == FortranFamily::Flang {
            needed.push(FLANG_RUNTIME_LIBRARY);
        }
        let roots: Vec<PathBuf> = built
            .libraries
            .iter()
            .filter(|library| needed.contains(&library.record.name.as_str()))
            .map(|library| library.prefix.clone())
            .collect();
        add_prefix_variables(&mut vars, &roots);
        let cross = CrossBuild {
            target: target.clone(),
            toolchain: self.toolchain.to_string(),
            vars,
            jobs: self.jobs,
            network: Network::new(self.offline, self.spec.options.debian_mirror.clone()),
            build_python: None,
            cache_folder: TARGET_LIBRARIES,
            announcement: None,
            fortran: with_its_runtime(self.fortran, built),
        };
        let started = std::time::Instant::now();
        let library = ensure_library(self.cache, entry, &cross)?;
        match library.built_in {
            Some(took) => tracing::info!(
                "{}: {} {} built in {:.1} s",
                target.id(),
                entry.name,
                entry.version,
                took.as_secs_f64()
            ),
            None => tracing::info!(
                "{}: {} {} from the cache in {:.1} ms ({})",
                target.id(),
                entry.name,
                entry.version,
                started.elapsed().as_secs_f64() * 1000.0,
                library.prefix.display()
            ),
        }
        Ok(library)
    }
}

/// `fortran` with its runtime's folder: flang's is the catalogue's `flang-runtime` among
/// the libraries built so far (first, [`with_flang_runtime_first`]).
fn with_its_runtime(
    fortran: &Result<LibraryFortran, String>,
    built: &TargetPrefix,
) -> Result<LibraryFortran, String> {
    let fortran = fortran.clone()?;
    match fortran.family {
        FortranFamily::Gfortran => Ok(fortran),
        FortranFamily::Flang => built
            .libraries
            .iter()
            .find(|library| library.record.name == FLANG_RUNTIME_LIBRARY)
            .map(|runtime| LibraryFortran {
                runtime_dir: runtime.prefix.join("lib"),
                ..fortran
            })
            .ok_or_else(|| format!("{FLANG_RUNTIME_LIBRARY} was not built first")),
    }
}

/// `libraries` in build order, with flang's runtime first where a library compiles
/// Fortran with flang (macOS): their builds link it, and it links nothing.
fn with_flang_runtime_first(
    target: &crate::target::Target,
    libraries: &[&'static LibraryEntry],
) -> Vec<&'static LibraryEntry> {
    let (runtime, mut ordered): (Vec<&'static LibraryEntry>, Vec<&'static LibraryEntry>) =
        libraries
            .iter()
            .partition(|entry| entry.name == FLANG_RUNTIME_LIBRARY);
    let compiles_with_flang = fortran_family(target) == FortranFamily::Flang
        && libraries.iter().any(|entry| {
            entry
                .fortran
                .as_ref()
                .is_some_and(|route| route.flang.is_some())
        });
    let runtime = runtime.into_iter().next().or_else(|| {
        compiles_with_flang
            .then(|| catalogue().library(FLANG_RUNTIME_LIBRARY))
            .flatten()
    });
    ordered.splice(0..0, runtime);
    ordered
}

/// The setup the target's own builds (catalogue libraries, `before-all`, a target CPython)
/// run with: the GIL build python of `python`, whatever ABI the project targets, and no
/// runner (a library's `configure` is told `--host`).
pub(super) fn target_setup(
    spec: &BuildSpec,
    python: PythonTag,
    cache: &Cache,
    offline: bool,
    languages: &[Language],
) -> Result<TargetSetup> {
    let reach = TargetReach::of(spec);
    setup_for(&reach, python, cache, offline, languages)
}

/// A target and how a run reaches what builds for it (its toolchain, Debian's archive):
/// what a build's own libraries and CPythons are made with, outside a build too.
pub(crate) struct TargetReach<'a> {
    pub target: &'a crate::target::Target,
    pub toolchain: crate::target::ToolchainKind,
    pub debian_mirror: Option<String>,
}

impl<'a> TargetReach<'a> {
    pub(super) fn of(spec: &'a BuildSpec) -> TargetReach<'a> {
        TargetReach {
            target: &spec.target,
            toolchain: spec.options.toolchain,
            debian_mirror: spec.options.debian_mirror.clone(),
        }
    }
}

/// [`target_setup`] for `reach`.
pub(super) fn setup_for(
    reach: &TargetReach<'_>,
    python: PythonTag,
    cache: &Cache,
    offline: bool,
    languages: &[Language],
) -> Result<TargetSetup> {
    let purpose = format!("preparing {}", reach.target);
    Ok(TargetSetup::prepare(&SetupRequest {
        purpose: &purpose,
        target: reach.target,
        python: python.with_gil(),
        python_source: PythonSource::FindOrInstall,
        toolchain: reach.toolchain,
        cache,
        network: &Network::new(offline, reach.debian_mirror.clone()),
        runner: None,
        musl_root: None,
        languages,
        cuda: None,
    })?)
}
