//! `crosswheel repair WHEEL...` and `crosswheel fuse WHEEL WHEEL`

use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cli::{FuseArgs, RepairArgs};
use crate::formats::wheel::source_date_epoch;
use crate::stages::repair::{RepairRequest, repair};

/// `--exclude` globs, each checked.
pub(crate) fn exclude_patterns(patterns: &[String]) -> Result<Vec<glob::Pattern>> {
    patterns
        .iter()
        .map(|p| {
            glob::Pattern::new(p)
                .with_context(|| format!("--exclude {p:?} is not a valid glob pattern"))
        })
        .collect()
}

pub fn run(args: &RepairArgs) -> Result<ExitCode> {
    let exclude = exclude_patterns(&args.exclude)?;
    let cache = crate::support::host::Cache::from_env()?;
    let mut request = RepairRequest {
        out_dir: args.wheel_dir.clone(),
        lib_paths: args.lib_path.clone(),
        exclude,
        epoch: source_date_epoch()?,
        plat: (args.plat != "auto").then(|| crate::formats::wheel::PlatformTag::parse(&args.plat)),
        sysroot: args.sysroot.clone(),
        system_libraries: None,
        macos_version: crate::input::options::repair_macos_version(
            args.macos_version.as_deref(),
            &crate::input::options::ProcessEnv,
        )
        .map_err(anyhow::Error::msg)?,
        retag: args.retag,
        ..RepairRequest::new(args.wheel_dir.clone())
    };
    for path in &args.wheels {
        let wheel = crate::formats::wheel::open_within_env_limits(path)?;
        request.system_libraries = system_libraries_for(&cache, &wheel)?;
        println!("{}", repair(&wheel, &request)?.output.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The tree of system libraries the symbol check reads for a Linux wheel of an
/// architecture crosswheel has one for: Debian's, so none for a wheel of musl binaries.
pub(crate) fn system_libraries_for(
    cache: &crate::support::host::Cache,
    wheel: &crate::formats::wheel::WheelArchive,
) -> Result<Option<std::path::PathBuf>> {
    use crate::analysis::facts::linux::{wheel_binaries, wheel_libc};
    if wheel_libc(&wheel_binaries(wheel)?) == crate::target::Libc::Musl {
        return Ok(None);
    }
    let arch = wheel
        .name()
        .platform
        .iter()
        .find_map(crate::formats::wheel::PlatformTag::linux_arch);
    match arch {
        Some(arch) => Ok(Some(crate::support::sysroot::system_libraries(
            cache.root(),
            arch,
            &crate::support::host::Network::new(
                false,
                crate::input::options::debian_mirror_variable(&crate::input::options::ProcessEnv),
            ),
        )?)),
        None => Ok(None),
    }
}

/// Fuses two thin macOS wheels and prints the fused wheel's path.
pub fn run_fuse(args: &FuseArgs) -> Result<ExitCode> {
    let [first, second] = &args.wheels[..] else {
        anyhow::bail!("fuse takes two wheels, an x86_64 and an arm64 one");
    };
    let first = crate::formats::wheel::open_within_env_limits(first)?;
    let second = crate::formats::wheel::open_within_env_limits(second)?;
    let fused = crate::stages::repair::fuse::fuse_wheels(
        &first,
        &second,
        &args.wheel_dir,
        source_date_epoch()?,
    )?;
    println!("{}", fused.output.display());
    Ok(ExitCode::SUCCESS)
}
