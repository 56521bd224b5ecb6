//! The environment the backend's `build_wheel` runs in: the cross environment's variables,
//! the target-form requirements on pkg-config's path, and the user's `environment` on top,
//! with the target's sysconfig kept first on PYTHONPATH.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::project::{Backend, Project};
use super::{BuildError, BuildRequest, io_error, prepare_target_site};

/// The cross environment's variables for the backend, with the target-form requirements'
/// site (`target-requires`) on PKG_CONFIG_LIBDIR and the user's `environment` last.
pub(super) fn cross_variables(
    request: &BuildRequest<'_>,
    project: &Project,
    source_dir: &Path,
    path_var: String,
    header_requires: &[String],
    build_env: &Path,
) -> Result<BTreeMap<String, String>, BuildError> {
    let mut vars = request.cross_env.env_vars();
    if project.build_system.backend == Backend::MesonPython {
        // meson-python turns ARCHFLAGS on a non-mac host into its own cross file with the
        // host `cc -arch arm64`, which overrides ours.
        vars.remove("ARCHFLAGS");
    }
    vars.insert("PATH".to_string(), path_var);
    vars.extend(builder_markers());
    // Read by the compiler wrappers, which map these away in debug info.
    vars.insert(
        "CROSSWHEEL_SOURCE_DIR".to_string(),
        source_dir.to_string_lossy().into_owned(),
    );
    vars.insert(
        "CROSSWHEEL_CROSSENV_DIR".to_string(),
        request.cross_env.root.to_string_lossy().into_owned(),
    );
    let TargetSite { site, headers_kept } = target_site(request, header_requires)?;
    // The pkg-config files of the header packages the build machine's copy stands in for
    // (numpy's `numpy.pc`, which meson's `dependency('numpy')` reads first).
    let kept_dirs: Vec<PathBuf> = super::target_installs::site_packages_of(build_env)
        .map(|build_site| {
            headers_kept
                .iter()
                .flat_map(|package| pkgconfig_dirs_under(&build_site.join(package)))
                .collect()
        })
        .unwrap_or_default();
    if site.is_some() || !kept_dirs.is_empty() {
        let mut pkgconfig_dirs = site
            .as_deref()
            .map(pkgconfig_dirs_under)
            .unwrap_or_default();
        pkgconfig_dirs.extend(kept_dirs);
        pkgconfig_dirs.push(request.cross_env.pkgconfig_dir.clone());
        let joined = std::env::join_paths(&pkgconfig_dirs).map_err(|err| {
            io_error(
                "put on PKG_CONFIG_LIBDIR the pkg-config folders of",
                site.as_deref().unwrap_or(build_env),
                std::io::Error::other(err.to_string()),
            )
        })?;
        vars.insert(
            "PKG_CONFIG_LIBDIR".to_string(),
            joined.to_string_lossy().into_owned(),
        );
    }
    if let Some(site) = site {
        vars.insert(
            "CROSSWHEEL_TARGET_SITE".to_string(),
            site.to_string_lossy().into_owned(),
        );
    }
    vars.extend(
        request
            .environment
            .iter()
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    let compilers = &request.cross_env.toolchain().compilers;
    for line in target_compilers_for_plain_names(&mut vars, request.environment, compilers) {
        tracing::info!("{line}");
    }
    keep_cross_path_first(&mut vars, &request.cross_env.sysconfig_dir);
    crate::support::target_libraries::add_prefix_variables(&mut vars, request.target_prefixes);
    Ok(vars)
}

/// A user's `environment` that names a compiler by a plain name (`CC = "gcc"`,
/// `CXX = "clang++ -stdlib=libc++"`) names, in the container or on the runner
/// cibuildwheel builds in, the compiler of the target. Here the same name is the build
/// machine's compiler, which would compile x86_64 objects for an aarch64 wheel (or fail:
/// a musllinux configuration's `CC = "clang"` after `apk add clang`). Each such variable
/// gets the target's compiler of the language in place of the name, the rest
/// of the value (flags) kept. A path or any other name is the user's own choice and stays.
/// Returns one line per variable changed.
fn target_compilers_for_plain_names(
    vars: &mut BTreeMap<String, String>,
    user: &BTreeMap<String, String>,
    compilers: &crate::stages::toolchain::Compilers,
) -> Vec<String> {
    let mut lines = Vec::new();
    for compiler in compilers.iter() {
        let names = compiler.language.names();
        let target = compiler.program.display();
        for variable in &names.variables {
            let Some(value) = user.get(variable) else {
                continue;
            };
            let trimmed = value.trim_start();
            let (program, rest) =
                trimmed.split_at(trimmed.find(char::is_whitespace).unwrap_or(trimmed.len()));
            if !names.native_names.iter().any(|name| name == program) {
                continue;
            }
            vars.insert(variable.clone(), format!("{target}{rest}"));
            lines.push(format!(
                "environment: {variable}={program} names the container's {} compiler; the target's is used ({target})",
                names.name
            ));
        }
    }
    lines
}

/// The variables that say which builder runs the build. As cibuildwheel sets it for every
/// step: projects use it to make a failed extension build fatal instead of falling back to
/// a pure wheel, and setup.py often checks it at import, in `get_requires_for_build_wheel`.
fn builder_markers() -> [(String, String); 2] {
    [
        ("CIBUILDWHEEL".to_string(), "1".to_string()),
        ("CROSSWHEEL".to_string(), "1".to_string()),
    ]
}

/// The environment of the hooks that run on the host (`get_requires_for_build_wheel`):
/// the host venv first on PATH, the builder markers, the build machine's copy of a
/// language's SDK (CUDA's toolkit) and the user's `environment`, as `build_wheel` sees
/// them, without the cross environment. The target libraries' `*-config` scripts come
/// first on PATH, and their pkg-config files first on `PKG_CONFIG_PATH`, all the same: a
/// setup.py that asks `pg_config` or `pkg-config` at import must hear of the same
/// libraries here as in `build_wheel`.
pub(super) fn host_variables(
    request: &BuildRequest<'_>,
    path_var: String,
) -> BTreeMap<String, String> {
    let mut vars = BTreeMap::from([("PATH".to_string(), path_var)]);
    vars.extend(builder_markers());
    vars.extend(
        request
            .cross_env
            .toolchain()
            .compilers
            .build_machine_environment()
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    vars.extend(
        request
            .environment
            .iter()
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    // After the user's `environment`: a `PATH` or `PKG_CONFIG_PATH` set there is kept,
    // behind the target libraries', as `build_wheel` has it.
    target_libraries_first(
        &mut vars,
        request.target_prefixes,
        std::env::var("PKG_CONFIG_PATH").ok(),
    );
    vars
}

/// The target libraries of `roots` first: their `*-config` folders on `PATH`, their
/// pkg-config folders on `PKG_CONFIG_PATH`, before what `vars` has (or, for
/// `PKG_CONFIG_PATH`, what the process `inherited` when `vars` has none).
fn target_libraries_first(
    vars: &mut BTreeMap<String, String>,
    roots: &[PathBuf],
    inherited: Option<String>,
) {
    let scripts = crate::support::target_libraries::config_script_folders(roots);
    if !scripts.is_empty() {
        let mut path: Vec<String> = scripts
            .iter()
            .map(|folder| folder.display().to_string())
            .collect();
        path.extend(vars.get("PATH").cloned());
        vars.insert("PATH".to_string(), path.join(":"));
    }
    let user = vars.get("PKG_CONFIG_PATH").cloned().or(inherited);
    if let Some(value) =
        crate::support::target_libraries::host_pkg_config_path(roots, user.as_deref())
    {
        vars.insert("PKG_CONFIG_PATH".to_string(), value);
    }
}

/// The target's wheels of `target-requires` and of the build requirements whose headers
/// are per platform (numpy), unpacked; `None` when there are none. A header package
/// without a wheel for the target (numpy on ppc64le) is built for it from its sdist where
/// the pipeline gave a builder (Linux targets; musllinux for its headers alone); elsewhere the build machine's copy
/// stays in place, said in one line.
fn target_site(
    request: &BuildRequest<'_>,
    header_requires: &[String],
) -> Result<TargetSite, BuildError> {
    let target = &request.cross_env.target;
    let prepare = |requires: &[String], find_links: &[PathBuf]| {
        let mut requires = requires.to_vec();
        // The same set, however it was spelt, must map to the same cached site.
        requires.sort();
        requires.dedup();
        if requires.is_empty() {
            return Ok(None);
        }
        prepare_target_site(
            request.cache,
            target,
            request.python,
            &requires,
            find_links,
            request.offline,
        )
        .map(Some)
    };
    if header_requires.is_empty() {
        return prepare(request.target_requires, &[]).map(TargetSite::all_from_target);
    }
    let all: Vec<String> = request
        .target_requires
        .iter()
        .chain(header_requires)
        .cloned()
        .collect();
    match prepare(&all, &[]) {
        Ok(site) => {
            tracing::info!(
                "{} among the build requirements ship per-platform headers or libraries: the build compiles and links against their {target} wheels (config/target-installs.toml)",
                header_requires.join(", ")
            );
            Ok(TargetSite::all_from_target(site))
        }
        Err(BuildError::TargetRequires { .. }) => {
            // The user's own `target-requires` without a target wheel is an error, as it
            // always was; only the header group may fall back.
            let own = prepare(request.target_requires, &[])?;
            without_target_wheels(request, header_requires, own, &prepare)
        }
        // Offline, a header package built here earlier is in the cache of such builds,
        // with the site made from it, although the index's site never was.
        Err(error @ BuildError::OfflineTargetRequires { .. })
            if header_builder(request).is_some()
                && header_requires
                    .iter()
                    .any(|requirement| super::target_wheels::is_header_package(requirement)) =>
        {
            let own = prepare(request.target_requires, &[])?;
            // The builder's own refusal (nothing cached to build offline) says more.
            without_target_wheels(request, header_requires, own, &prepare).map_err(|fallback| {
                match fallback {
                    BuildError::HeaderBuild { .. } => fallback,
                    _ => error,
                }
            })
        }
        Err(error) => Err(error),
    }
}

/// Prepares the target site of a set of requirements, with folders of wheels built here
/// beside the index; `None` for an empty set.
type PrepareSite<'a> = dyn Fn(&[String], &[PathBuf]) -> Result<Option<PathBuf>, BuildError> + 'a;

/// The site when some of `header_requires` have no target wheel: header packages (numpy)
/// are built for the target from their sdist where the pipeline gave a builder, unless the
/// index has wheels of them all and a library wheel was what it lacked; the rest keep the
/// build machine's copy, said in one line.
fn without_target_wheels(
    request: &BuildRequest<'_>,
    header_requires: &[String],
    own: Option<PathBuf>,
    prepare: &PrepareSite<'_>,
) -> Result<TargetSite, BuildError> {
    let target = &request.cross_env.target;
    let can_build = header_builder(request).is_some();
    let (buildable, kept): (Vec<String>, Vec<String>) = header_requires
        .iter()
        .cloned()
        .partition(|requirement| can_build && super::target_wheels::is_header_package(requirement));
    if !kept.is_empty() {
        tracing::warn!(
            "no {target} wheel of {} to take headers from: the build uses the build machine's (list it in `target-requires` to make this an error)",
            kept.join(", ")
        );
    }
    let headers_kept = kept
        .iter()
        .filter_map(|requirement| crate::package_name::requirement_name(requirement))
        .map(|name| name.to_string())
        .collect();
    if buildable.is_empty() {
        return Ok(TargetSite {
            site: own,
            headers_kept,
        });
    }
    let with_headers: Vec<String> = request
        .target_requires
        .iter()
        .chain(&buildable)
        .cloned()
        .collect();
    // All of `header_requires` already failed together; a smaller set may not.
    if !kept.is_empty() {
        match prepare(&with_headers, &[]) {
            Ok(site) => return Ok(TargetSite { site, headers_kept }),
            Err(BuildError::TargetRequires { .. } | BuildError::OfflineTargetRequires { .. }) => {}
            Err(error) => return Err(error),
        }
    }
    let built = built_header_packages(request, &buildable)?;
    let site = prepare(&with_headers, &built)?;
    Ok(TargetSite { site, headers_kept })
}

/// The builder of header packages, where the pipeline gave one (Linux targets).
fn header_builder<'a>(
    request: &BuildRequest<'a>,
) -> Option<&'a dyn crate::support::host::RequirementBuilder> {
    request
        .header_builder
        .filter(|_| request.cross_env.target.linux_arch().is_some())
}

/// How a header package is built for `target`. A glibc target's build is the package's
/// own, into the cache a test requirement comes from (numpy's tests on ppc64le need that
/// same build). A musllinux target's is for its headers alone (`headers_only` in
/// `config/target-headers.toml`): numpy's own configuration links a BLAS the index has no
/// musllinux ppc64le or s390x wheel of, and a musl CPython's test requirements never come
/// from this cache.
fn header_build_purpose(
    target: &crate::target::Target,
    requirement: &str,
) -> crate::support::host::BuildPurpose<'static> {
    use crate::support::host::BuildPurpose;
    match (
        target.libc(),
        super::target_wheels::headers_only_options(requirement),
    ) {
        (Some(crate::target::Libc::Musl), Some(options)) => BuildPurpose::HeadersOnly(options),
        _ => BuildPurpose::Install,
    }
}

/// Each of `header_requires` built for the target from its sdist (or taken from the cache
/// of such builds): the folders of their wheels, for pip to find beside the index.
fn built_header_packages(
    request: &BuildRequest<'_>,
    header_requires: &[String],
) -> Result<Vec<PathBuf>, BuildError> {
    let target = &request.cross_env.target;
    let builder = header_builder(request).expect("called only with a header builder");
    let mut folders = Vec::new();
    for requirement in header_requires {
        let purpose = header_build_purpose(target, requirement);
        let wheel = builder
            .build(requirement, target, request.python.target_python(), purpose)
            .map_err(|failure| BuildError::HeaderBuild {
                target: target.id().to_string(),
                requirement: requirement.clone(),
                reason: failure.to_string(),
            })?
            .wheel;
        let file = wheel
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let alone = match purpose {
            crate::support::host::BuildPurpose::HeadersOnly(_) => {
                " for its headers alone (config/target-headers.toml)"
            }
            crate::support::host::BuildPurpose::Install => "",
        };
        tracing::info!(
            "the index has no {target} wheel of {requirement}: the build compiles against {file}, built for {target} from its sdist{alone} (once; cached)",
            target = target.id(),
        );
        if let Some(folder) = wheel.parent() {
            folders.push(folder.to_path_buf());
        }
    }
    Ok(folders)
}

/// The target's wheels a build sees, and the header packages whose build-machine copy
/// stands in for a target wheel the index lacks (by import name: `numpy`).
struct TargetSite {
    site: Option<PathBuf>,
    headers_kept: Vec<String>,
}

impl TargetSite {
    fn all_from_target(site: Option<PathBuf>) -> TargetSite {
        TargetSite {
            site,
            headers_kept: Vec::new(),
        }
    }
}

/// A user's `PYTHONPATH=...` in `environment` replaces the variable; the cross
/// environment's folder (the target's sysconfig) must stay first on it, or the build sees
/// the host again.
fn keep_cross_path_first(vars: &mut BTreeMap<String, String>, sysconfig_dir: &Path) {
    let ours = sysconfig_dir.to_string_lossy().into_owned();
    let current = vars.get("PYTHONPATH").cloned().unwrap_or_default();
    if current.split(':').next() != Some(ours.as_str()) {
        let rest: Vec<&str> = current
            .split(':')
            .filter(|entry| !entry.is_empty() && *entry != ours)
            .collect();
        let mut value = ours;
        for entry in rest {
            value.push(':');
            value.push_str(entry);
        }
        vars.insert("PYTHONPATH".to_string(), value);
    }
}

/// `dirs`, in order, before the PATH crosswheel runs with.
pub(super) fn prepend_path<'a>(dirs: impl IntoIterator<Item = &'a Path>) -> String {
    let mut entries: Vec<String> = dirs
        .into_iter()
        .map(|dir| dir.to_string_lossy().into_owned())
        .collect();
    match std::env::var("PATH") {
        Ok(existing) if !existing.is_empty() => entries.push(existing),
        _ => {}
    }
    entries.join(":")
}

fn pkgconfig_dirs_under(site: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = walkdir::WalkDir::new(site)
        .max_depth(4)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_dir() && entry.file_name() == "pkgconfig")
        .map(|entry| entry.into_path())
        .collect();
    dirs.sort();
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// numpy for a musllinux target is built for its headers alone, without its BLAS and
    /// the before-build that installs it; for a glibc target, whole, as a test needs it.
    #[test]
    fn only_a_musllinux_header_build_leaves_numpys_blas_out() {
        use crate::support::host::BuildPurpose;
        let musl = crate::target::Target::parse("musllinux-ppc64le").unwrap();
        let glibc = crate::target::Target::parse("linux-ppc64le").unwrap();
        let BuildPurpose::HeadersOnly(options) = header_build_purpose(&musl, "numpy==2.4.6") else {
            panic!("numpy for musllinux is built for its headers");
        };
        assert_eq!(options.get("before-build").map(String::as_str), Some(""));
        assert!(options["config-settings"].contains("-Dblas=none"));
        assert_eq!(
            header_build_purpose(&glibc, "numpy==2.4.6"),
            BuildPurpose::Install
        );
    }

    #[test]
    fn a_users_pythonpath_keeps_the_cross_environment_first() {
        let ours = Path::new("/cache/crossenv/x/sysconfig");
        let mut vars = BTreeMap::from([(
            "PYTHONPATH".to_string(),
            "/src:/cache/crossenv/x/sysconfig:/lib".to_string(),
        )]);
        keep_cross_path_first(&mut vars, ours);
        assert_eq!(vars["PYTHONPATH"], "/cache/crossenv/x/sysconfig:/src:/lib");
        let mut unset = BTreeMap::new();
        keep_cross_path_first(&mut unset, ours);
        assert_eq!(unset["PYTHONPATH"], "/cache/crossenv/x/sysconfig");
    }

    #[test]
    fn a_users_pkg_config_path_stays_behind_the_target_libraries() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("lib/pkgconfig")).unwrap();
        let ours = root.path().join("lib/pkgconfig").display().to_string();
        let roots = [root.path().to_path_buf()];
        // Set in the user's `environment`: after ours, and the process's value unused.
        let mut vars = BTreeMap::from([("PKG_CONFIG_PATH".to_string(), "/mine".to_string())]);
        target_libraries_first(&mut vars, &roots, Some("/process".to_string()));
        assert_eq!(vars["PKG_CONFIG_PATH"], format!("{ours}:/mine"));
        // Set only in the process.
        let mut vars = BTreeMap::new();
        target_libraries_first(&mut vars, &roots, Some("/process".to_string()));
        assert_eq!(vars["PKG_CONFIG_PATH"], format!("{ours}:/process"));
        // No target libraries: nothing changes.
        let mut vars = BTreeMap::from([("PKG_CONFIG_PATH".to_string(), "/mine".to_string())]);
        target_libraries_first(&mut vars, &[], None);
        assert_eq!(vars["PKG_CONFIG_PATH"], "/mine");
    }

    /// fast-histogram's `CC = "gcc"` for Linux and `CC = "clang"` for musllinux mean the
    /// container's compiler: the target's here, with the user's flags kept. A path, or a
    /// language the toolchain has no compiler for, is left as the user wrote it.
    #[test]
    fn a_compiler_named_plainly_in_the_environment_is_the_targets() {
        use crate::stages::toolchain::{Compiler, Compilers, Language};
        let compilers = Compilers::new([
            Compiler::new(Language::C, "/w/cc".into()),
            Compiler::new(Language::Cxx, "/w/c++".into()),
        ]);
        let ours: BTreeMap<String, String> = compilers.iter().flat_map(|c| c.variables()).collect();
        let user = BTreeMap::from([
            ("CC".to_string(), "gcc".to_string()),
            ("CXX".to_string(), "clang++ -stdlib=libc++".to_string()),
            ("FC".to_string(), "gfortran".to_string()),
        ]);
        let mut vars = ours.clone();
        vars.extend(user.clone());
        let lines = target_compilers_for_plain_names(&mut vars, &user, &compilers);
        assert_eq!(vars["CC"], "/w/cc");
        assert_eq!(vars["CXX"], "/w/c++ -stdlib=libc++");
        assert_eq!(vars["FC"], "gfortran");
        assert_eq!(lines.len(), 2);
        assert!(lines[0].contains("CC=gcc"), "{lines:?}");

        let user = BTreeMap::from([("CC".to_string(), "/opt/gcc-13/bin/gcc".to_string())]);
        let mut vars = ours.clone();
        vars.extend(user.clone());
        assert!(target_compilers_for_plain_names(&mut vars, &user, &compilers).is_empty());
        assert_eq!(vars["CC"], "/opt/gcc-13/bin/gcc");
    }
}
