//! The CPython the test stage builds for a target Debian has no CPython of that version
//! for (every musl target; riscv64 before 3.13): its catalogue libraries, its build, and
//! the smoke test under qemu that a build passes before it enters the cache.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::targets::{TargetReach, setup_for};
use crate::python_tag::PythonTag;
use crate::stages::testing::SmokeTest;
use crate::support::host::{Cache, Network};
use crate::support::target_libraries::{
    CrossBuild, TARGET_LIBRARIES, add_prefix_variables, catalogue, ensure_library,
    ensure_verified_library, target_cpythons,
};

/// The catalogue libraries a built CPython links: libffi for ctypes, zlib for zlib, gzip
/// and zipfile.
const TARGET_CPYTHON_LIBRARIES: &[&str] = &["libffi", "zlib"];

/// The root of CPython `python` for the target, built once from Debian's source package
/// with the target's toolchain (config/target-cpython.toml), smoke-tested under qemu, and
/// kept in the cache. `None` when the catalogue has no CPython of that version.
pub(crate) fn built_target_cpython(
    reach: &TargetReach<'_>,
    python: PythonTag,
    cache: &Cache,
    offline: bool,
) -> Result<Option<PathBuf>> {
    let target = reach.target;
    let Some(entry) = target_cpythons().for_version(&python.version()) else {
        return Ok(None);
    };
    if target.linux_arch().is_none() {
        return Ok(None);
    }
    let jobs = std::thread::available_parallelism().map_or(1, usize::from);
    let network = Network::new(offline, reach.debian_mirror.clone());
    let setup = setup_for(reach, python, cache, offline, &[])?;
    let base = setup.command_variables();
    let mut roots: Vec<PathBuf> = Vec::new();
    let mut cross = CrossBuild {
        target: target.clone(),
        toolchain: setup.toolchain.description.clone(),
        vars: base.clone(),
        jobs,
        network: network.clone(),
        build_python: None,
        cache_folder: TARGET_LIBRARIES,
        announcement: None,
        fortran: Err("no library of a CPython compiles Fortran".into()),
    };
    for name in TARGET_CPYTHON_LIBRARIES {
        let library = catalogue()
            .library(name)
            .with_context(|| format!("config/target-libraries.toml has no {name}"))?;
        roots.push(ensure_library(cache, library, &cross)?.prefix);
    }
    cross.vars = base;
    add_prefix_variables(&mut cross.vars, &roots);
    cross.build_python = Some(setup.python.executable.clone());
    let smoke = SmokeTest {
        cache: cache.root(),
        target,
        python,
        modules: target_cpythons().smoke_imports(),
        network: &network,
    };
    let verify = |root: &Path| {
        let said = smoke.run(root)?;
        tracing::info!("{}: smoke test under qemu: {said}", target.id());
        Ok(())
    };
    let built = ensure_verified_library(cache, entry, &cross, &verify)?;
    Ok(Some(built.prefix))
}
