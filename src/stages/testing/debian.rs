//! Test requirements the index has no target wheel of (numpy, scipy, pyyaml, pillow on
//! ppc64le), taken from the target CPython's own Debian release: `python3-numpy` and its
//! libraries go into a target tree of their own, and the test venv sees that tree's
//! `dist-packages` through a `.pth` file, after its own `site-packages`.
//!
//! The host pip resolves with `--target`, which ignores anything installed, so it is told
//! what Debian provides through placeholder wheels: one empty `py3-none-any` wheel per
//! distribution in the tree, at Debian's version, offered with `--find-links`. pip then
//! checks the requirement's specifier against Debian's version itself, resolves the
//! rest, and "installs" the placeholder, whose metadata folder is removed afterwards.

use std::fs;
use std::path::{Path, PathBuf};

use crate::formats::wheel::{Contents, WheelName, WriteOptions, write_wheel};
use crate::package_name::requirement_name;
use crate::support::host::Network;
use crate::support::sysroot::python_packages::{
    self, DIST_PACKAGES, ProvidedDistribution, debian_package, normalize,
};

use super::TestError;
use super::emulator::Emulator;
use super::pip_output::{Unsatisfied, unsatisfied};
use super::requirement_build::{BuiltRequirement, RequirementBuilder};
use super::run::Log;
use super::venv::{InstalledBy, TargetEnv};

/// Variables by name.
type Vars = std::collections::BTreeMap<String, String>;

/// The emulated test venv for `requirements`: on `emulator`'s tree when the index has a
/// target wheel of everything, else on a tree that adds the Debian packages of what it
/// lacks (one more package per round, as pip names them one at a time). What neither
/// provides is built here from its sdist when `builder` is given (once per requirement),
/// else left to the installation, which builds it under emulation or says why not.
pub(crate) fn emulated_env(
    mut env: TargetEnv,
    emulator: &Emulator,
    requirements: &[String],
    vars: &Vars,
    sources: &Sources<'_>,
    log: &mut Log,
) -> Result<TargetEnv, TestError> {
    let root = env.root().to_path_buf();
    let arch = emulator.sysroot().arch();
    let mut asked: Vec<String> = Vec::new();
    let mut not_in_debian: Vec<String> = Vec::new();
    let mut built: Vec<(String, BuiltRequirement)> = Vec::new();
    loop {
        let probe = env.probe(requirements, vars, log)?;
        if probe.status.success() {
            return Ok(env);
        }
        let Some(missing) = unsatisfied(&probe.tail()) else {
            return Ok(env);
        };
        let Some(name) = requirement_name(&missing.requirement) else {
            return Ok(env);
        };
        let name = name.as_ref();
        let package = debian_package(name);
        let too_old = env
            .debian()
            .and_then(|debian| Some((debian.provides(name)?.clone(), debian.release.clone())));
        if too_old.is_some() || not_in_debian.contains(&package) || asked.contains(&package) {
            let asker = Asker::of(&missing, requirements);
            let Some(builder) = sources.builder else {
                return match too_old {
                    Some((provided, release)) => {
                        Err(asker.debian_too_old(&provided, release, arch))
                    }
                    None => Ok(env),
                };
            };
            if built
                .iter()
                .any(|(requirement, _)| *requirement == missing.requirement)
            {
                // Built, and pip still finds nothing that fits: the installation says why.
                return Ok(env);
            }
            let debian = too_old.map(|(provided, release)| (provided.version, release));
            let wheel = build_here(builder, &missing, &asker, debian, emulator, log)?;
            env.add_built(wheel.clone())?;
            built.push((missing.requirement.clone(), wheel));
            continue;
        }
        log.note(&format!(
            "the index has no {arch} wheel of {}: trying Debian's {package} for CPython {}",
            missing.requirement,
            emulator.sysroot().python_version().interpreter_version()
        ))?;
        let mut packages = asked.clone();
        packages.extend(python_packages::with_companions(&package));
        let with_packages = match emulator.with_debian_packages(
            sources.cache,
            &packages,
            sources.network,
        ) {
            Ok(Some(found)) => found,
            Ok(None) => {
                log.note("the target CPython is the user's (target-python): Debian's packages were not built for it")?;
                not_in_debian.push(package);
                continue;
            }
            Err(TestError::Sysroot(crate::support::sysroot::SysrootError::Apt {
                detail, ..
            })) => {
                log.note(&format!("Debian has no {package} for {arch} ({detail})"))?;
                not_in_debian.push(package);
                continue;
            }
            Err(TestError::Sysroot(
                error @ crate::support::sysroot::SysrootError::NotForPython { .. },
            )) => {
                log.note(&format!(
                    "Debian's {package} does not serve this CPython: {error}"
                ))?;
                not_in_debian.push(package);
                continue;
            }
            Err(other) => return Err(other),
        };
        asked = packages;
        fs::remove_dir_all(&root).map_err(TestError::io("remove", &root))?;
        env = TargetEnv::emulated(&root, &with_packages)?;
        for (_, wheel) in &built {
            env.add_built(wheel.clone())?;
        }
        let sysroot = with_packages.sysroot();
        let versions: Vec<(String, String)> = sysroot
            .tree()
            .map(|tree| {
                tree.manifest()
                    .packages
                    .iter()
                    .map(|p| (p.name.clone(), p.version.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let placeholders = root.with_file_name("debian-placeholders");
        let _ = fs::remove_dir_all(&placeholders);
        let debian = DebianPython::from_tree(
            sysroot.root(),
            &asked,
            &versions,
            sysroot.release().unwrap_or("Debian"),
            &placeholders,
        )?;
        log.note(&format!(
            "target tree with Debian's Python packages: {}",
            sysroot.root().display()
        ))?;
        env.use_debian(debian)?;
    }
}

/// Where test requirements may come from besides the index.
pub(crate) struct Sources<'a> {
    /// crosswheel's cache (Debian trees).
    pub cache: &'a Path,
    /// Whether Debian's packages may be downloaded, and from which mirror.
    pub network: &'a Network,
    /// Builds what neither the index nor Debian has; `None`: nothing is built here.
    pub builder: Option<&'a dyn RequirementBuilder>,
}

/// Builds `missing` for the emulator's target and CPython, saying so in the log and on
/// the terminal; a failure is an error naming who asked, what Debian has and why the
/// build failed.
fn build_here(
    builder: &dyn RequirementBuilder,
    missing: &Unsatisfied,
    asker: &Asker,
    debian: Option<(String, String)>,
    emulator: &Emulator,
    log: &mut Log,
) -> Result<BuiltRequirement, TestError> {
    let arch = emulator.sysroot().arch();
    let python = emulator.sysroot().python_version();
    let why = match &debian {
        Some((version, release)) => format!("Debian {release} has {version}"),
        None => "Debian has none".to_string(),
    };
    let line = format!(
        "{}: the index has no {arch} wheel and {why}: building it here from its sdist (crosswheel's build and repair, no tests)",
        asker.asked
    );
    tracing::info!("{line}");
    log.note(&line)?;
    // Debian's trees are glibc's: this route serves manylinux targets.
    let target = crate::target::Target::linux(arch, crate::target::Libc::Glibc)
        .expect("config/targets.toml has a glibc target of every architecture Debian has");
    match builder.build(
        &missing.requirement,
        &target,
        python,
        crate::support::host::BuildPurpose::Install,
    ) {
        Ok(wheel) => {
            log.note(&format!(
                "built {}: {}",
                missing.requirement,
                built_source(&wheel)
            ))?;
            Ok(wheel)
        }
        Err(failure) => Err(TestError::RequirementBuild {
            asked: asker.asked.clone(),
            arch,
            debian: why,
            failure,
        }),
    }
}

/// "built here from its sdist in 12.3 s" (or "... cached, built in 12.3 s").
pub(crate) fn built_source(wheel: &BuiltRequirement) -> String {
    let file = wheel
        .wheel
        .file_name()
        .map_or_else(String::new, |name| name.to_string_lossy().into_owned());
    let when = if wheel.cached {
        "cached here; its build took"
    } else {
        "built here from its sdist in"
    };
    format!(
        "{} {} ({when} {:.1} s): {file}",
        wheel.name,
        wheel.version,
        wheel.took.as_secs_f64()
    )
}

/// Who asked for a requirement pip could not satisfy, as an error names it.
pub(crate) struct Asker {
    /// `contourpy 1.3.3 requires numpy>=1.25` or `the test requirement numpy>=99`.
    pub asked: String,
    /// The user's own test requirement, which an override may relax.
    pub test_requirement: bool,
}

impl Asker {
    /// `requirements[0]` is the tested wheel (a path, maybe with extras).
    pub fn of(missing: &Unsatisfied, requirements: &[String]) -> Self {
        let Some(by) = &missing.required_by else {
            return Asker {
                asked: format!("the test requirement {}", missing.requirement),
                test_requirement: true,
            };
        };
        let tested = requirements.first().and_then(|wheel| {
            let path = wheel
                .split_once(".whl[")
                .map_or(wheel.as_str(), |(stem, _)| stem);
            let file = Path::new(path).file_name()?.to_string_lossy().into_owned();
            let file = if file.ends_with(".whl") {
                file
            } else {
                format!("{file}.whl")
            };
            WheelName::parse(&file).ok()
        });
        let by_name = by.split_whitespace().next().unwrap_or(by);
        let own = tested.is_some_and(|wheel| normalize(&wheel.distribution) == normalize(by_name));
        let asked = if own {
            format!(
                "{by} requires {} (the wheel's own Requires-Dist)",
                missing.requirement
            )
        } else {
            format!("{by} requires {}", missing.requirement)
        };
        Asker {
            asked,
            test_requirement: false,
        }
    }

    fn debian_too_old(
        &self,
        provided: &ProvidedDistribution,
        release: String,
        arch: crate::support::sysroot::LinuxArch,
    ) -> TestError {
        let advice = if self.test_requirement {
            format!(
                "relax the requirement for this target (test-requires in an override) or provide a {arch} wheel (PIP_FIND_LINKS)"
            )
        } else {
            format!(
                "a requirement of a wheel, not of test-requires, so no override relaxes it: provide a {arch} wheel (PIP_FIND_LINKS)"
            )
        };
        TestError::DebianVersion {
            asked: self.asked.clone(),
            package: debian_package(&provided.name),
            version: provided.version.clone(),
            release,
            arch,
            advice,
        }
    }
}

/// Written into each placeholder's metadata folder, naming the Debian package.
const PLACEHOLDER_MARKER: &str = "CROSSWHEEL-DEBIAN-PACKAGE";

/// The `.pth` file that puts Debian's `dist-packages` on the venv's path.
const PTH_NAME: &str = "_crosswheel_debian.pth";

/// What a target tree with Debian's Python packages provides to a test venv.
#[derive(Debug, Clone)]
pub(crate) struct DebianPython {
    /// The tree's `dist-packages`.
    pub dist_packages: PathBuf,
    /// Every distribution there, at the version Debian ships.
    pub provided: Vec<ProvidedDistribution>,
    /// The packages asked for, with Debian's full version (`1:1.24.2-1+deb12u1`).
    pub packages: Vec<(String, String)>,
    /// The Debian release they come from.
    pub release: String,
    /// Placeholder wheels for pip's `--find-links`.
    pub placeholders: PathBuf,
}

impl DebianPython {
    /// Reads what the tree at `root` provides and writes a placeholder wheel for each
    /// distribution into `placeholders`.
    pub fn from_tree(
        root: &Path,
        asked: &[String],
        versions: &[(String, String)],
        release: &str,
        placeholders: &Path,
    ) -> Result<Self, TestError> {
        let provided = python_packages::provided_distributions(root)?;
        fs::create_dir_all(placeholders).map_err(TestError::io("create", placeholders))?;
        for distribution in &provided {
            let package = debian_package(&distribution.name);
            write_placeholder(placeholders, distribution, &package)?;
        }
        let packages = asked
            .iter()
            .map(|package| {
                let version = versions
                    .iter()
                    .find(|(name, _)| name == package)
                    .map_or_else(|| "?".to_string(), |(_, version)| version.clone());
                (package.clone(), version)
            })
            .collect();
        Ok(DebianPython {
            dist_packages: root.join(DIST_PACKAGES),
            provided,
            packages,
            release: release.to_string(),
            placeholders: placeholders.to_path_buf(),
        })
    }

    /// The distribution `name` as Debian provides it, if it does.
    pub fn provides(&self, name: &str) -> Option<&ProvidedDistribution> {
        let wanted = normalize(name);
        self.provided.iter().find(|d| normalize(&d.name) == wanted)
    }

    /// "Debian package python3-numpy 1:1.24.2-1+deb12u1 (bookworm)" for distribution `name`.
    pub fn source_of(&self, name: &str) -> Option<String> {
        let distribution = self.provides(name)?;
        let package = debian_package(&distribution.name);
        let version = self
            .packages
            .iter()
            .find(|(asked, _)| *asked == package)
            .map_or(distribution.version.as_str(), |(_, version)| version);
        Some(format!(
            "Debian package {package} {version} ({})",
            self.release
        ))
    }

    /// Puts Debian's `dist-packages` on `site_packages`' path, after it.
    pub fn link_into(&self, site_packages: &Path) -> Result<(), TestError> {
        let pth = site_packages.join(PTH_NAME);
        fs::write(&pth, format!("{}\n", self.dist_packages.display()))
            .map_err(TestError::io("write", &pth))
    }
}

/// One line per test requirement saying where it came from.
pub(crate) fn requirement_sources(
    test_requires: &[String],
    env: &TargetEnv,
    installed_by: &InstalledBy,
) -> Vec<String> {
    let debian = env.debian();
    let mut lines = Vec::new();
    let mut named = Vec::new();
    for requirement in test_requires {
        let Some(name) = requirement_name(requirement) else {
            continue;
        };
        let name = name.as_ref();
        named.push(normalize(name));
        let built = env
            .built()
            .iter()
            .find(|built| normalize(&built.name) == normalize(name));
        let source = built
            .map(built_source)
            .or_else(|| debian.and_then(|debian| debian.source_of(name)))
            .unwrap_or_else(|| match installed_by {
                InstalledBy::HostPip => "target wheel from the index".to_string(),
                InstalledBy::InterpreterPip { built }
                    if built.iter().any(|b| normalize(b) == normalize(name)) =>
                {
                    "built from source by pip under the target interpreter".to_string()
                }
                InstalledBy::InterpreterPip { .. } => {
                    "wheel from the index, installed by pip under the target interpreter"
                        .to_string()
                }
            });
        lines.push(format!("test requirement {requirement}: {source}"));
    }
    // What was built here or Debian provided for a dependency rather than a named test
    // requirement (numpy for contourpy's wheel).
    for built in env.built() {
        if !named.contains(&normalize(&built.name)) {
            lines.push(format!(
                "dependency {}: {}",
                built.name,
                built_source(built)
            ));
        }
    }
    named.extend(env.built().iter().map(|built| normalize(&built.name)));
    for (package, _) in debian.map(|d| d.packages.as_slice()).unwrap_or_default() {
        let Some(distribution) = debian.and_then(|d| {
            d.provided
                .iter()
                .find(|p| debian_package(&p.name) == *package)
        }) else {
            continue;
        };
        if !named.contains(&normalize(&distribution.name)) {
            let source = debian
                .and_then(|d| d.source_of(&distribution.name))
                .unwrap_or_default();
            lines.push(format!("dependency {}: {source}", distribution.name));
        }
    }
    lines
}

/// An empty wheel standing for Debian's `distribution`, so pip counts it as available.
fn write_placeholder(
    dir: &Path,
    distribution: &ProvidedDistribution,
    package: &str,
) -> Result<(), TestError> {
    let escaped = normalize(&distribution.name).replace('-', "_");
    let file_name = format!("{escaped}-{}-py3-none-any.whl", distribution.version);
    // A Debian version pip cannot read as a wheel version is skipped: pip would ignore
    // the file, and the requirement is then reported as unsatisfied by Debian.
    let Ok(name) = WheelName::parse(&file_name) else {
        return Ok(());
    };
    let info = format!("{escaped}-{}.dist-info", distribution.version);
    let text = |text: String| Contents::Bytes {
        data: text.into_bytes(),
        mode: 0o644,
    };
    let entries = vec![
        (
            format!("{info}/METADATA"),
            text(format!(
                "Metadata-Version: 2.1\nName: {}\nVersion: {}\nSummary: provided by Debian's {package}\n",
                distribution.name, distribution.version
            )),
        ),
        (
            format!("{info}/WHEEL"),
            text("Wheel-Version: 1.0\nGenerator: crosswheel\nRoot-Is-Purelib: true\nTag: py3-none-any\n".into()),
        ),
        (format!("{info}/{PLACEHOLDER_MARKER}"), text(format!("{package}\n"))),
    ];
    write_wheel(dir, &name, entries, &WriteOptions { epoch: Some(0) })
        .map(|_| ())
        .map_err(|err| TestError::Placeholder(err.to_string()))
}

/// Removes the metadata folders placeholders left in `site_packages`, so that Debian's
/// own metadata (in `dist-packages`) is what the tests see.
pub(crate) fn remove_placeholders(site_packages: &Path) -> Result<(), TestError> {
    let Ok(entries) = fs::read_dir(site_packages) else {
        return Ok(());
    };
    for entry in entries {
        let path = entry.map_err(TestError::io("list", site_packages))?.path();
        if path.join(PLACEHOLDER_MARKER).is_file() {
            fs::remove_dir_all(&path).map_err(TestError::io("remove", &path))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn missing(requirement: &str, by: Option<&str>) -> Unsatisfied {
        Unsatisfied {
            requirement: requirement.into(),
            required_by: by.map(str::to_string),
        }
    }

    const TESTED: &str = "/w/contourpy-1.3.3-cp311-cp311-manylinux_2_17_ppc64le.whl[test]";

    #[test]
    fn the_wheels_own_requirement_is_named_as_such_not_as_a_test_requirement() {
        let numpy = ProvidedDistribution {
            name: "numpy".into(),
            version: "1.24.2".into(),
        };
        let own = Asker::of(
            &missing("numpy>=1.25", Some("contourpy 1.3.3")),
            &[TESTED.into(), "numpy".into()],
        );
        let error = own
            .debian_too_old(
                &numpy,
                "bookworm".into(),
                crate::support::sysroot::LinuxArch::Ppc64le,
            )
            .to_string();
        assert!(
            error.starts_with(
                "contourpy 1.3.3 requires numpy>=1.25 (the wheel's own Requires-Dist); Debian bookworm has 1.24.2 for ppc64le (python3-numpy)"
            ),
            "{error}"
        );
        assert!(!error.contains("test-requires in an override"), "{error}");
        assert!(!error.contains('\n'), "{error}");

        let test = Asker::of(&missing("numpy>=99", None), &[TESTED.into()]);
        let error = test
            .debian_too_old(
                &numpy,
                "bookworm".into(),
                crate::support::sysroot::LinuxArch::Ppc64le,
            )
            .to_string();
        assert!(
            error.starts_with("the test requirement numpy>=99; Debian bookworm has 1.24.2"),
            "{error}"
        );
        assert!(error.contains("test-requires in an override"), "{error}");

        let other = Asker::of(
            &missing("numpy>=1.25", Some("scipy 1.16.0")),
            &[TESTED.into()],
        );
        assert_eq!(other.asked, "scipy 1.16.0 requires numpy>=1.25");
        assert!(!other.test_requirement);
    }

    #[test]
    fn placeholders_carry_debians_version_and_are_removed_after_install() {
        let dir = tempfile::tempdir().unwrap();
        let numpy = ProvidedDistribution {
            name: "numpy".into(),
            version: "1.24.2".into(),
        };
        write_placeholder(dir.path(), &numpy, "python3-numpy").unwrap();
        let wheel = dir.path().join("numpy-1.24.2-py3-none-any.whl");
        let archive = crate::formats::wheel::WheelArchive::open(&wheel).unwrap();
        let marker = archive
            .read(&format!("numpy-1.24.2.dist-info/{PLACEHOLDER_MARKER}"))
            .unwrap();
        assert_eq!(marker, b"python3-numpy\n");

        let site = dir.path().join("site-packages");
        let info = site.join("numpy-1.24.2.dist-info");
        fs::create_dir_all(&info).unwrap();
        fs::write(info.join(PLACEHOLDER_MARKER), "python3-numpy\n").unwrap();
        fs::create_dir_all(site.join("pytest-9.0.dist-info")).unwrap();
        remove_placeholders(&site).unwrap();
        assert!(!info.exists());
        assert!(site.join("pytest-9.0.dist-info").exists());
    }
}
