//! `crosswheel repair WHEEL...`

use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cli::RepairArgs;
use crate::repair::{RepairRequest, repair};
use crate::wheel::source_date_epoch;

pub fn run(args: &RepairArgs) -> Result<ExitCode> {
    let exclude = args
        .exclude
        .iter()
        .map(|p| {
            glob::Pattern::new(p)
                .with_context(|| format!("--exclude {p:?} is not a valid glob pattern"))
        })
        .collect::<Result<Vec<_>>>()?;
    let request = RepairRequest {
        out_dir: args.wheel_dir.clone(),
        lib_paths: args.lib_path.clone(),
        exclude,
        epoch: source_date_epoch()?,
        plat: args.plat.clone(),
        sysroot: args.sysroot.clone(),
        macos_version: crate::options::repair_macos_version(
            args.macos_version.as_deref(),
            &crate::options::ProcessEnv,
        )
        .map_err(anyhow::Error::msg)?,
        retag: args.retag,
    };
    for path in &args.wheels {
        let wheel = crate::wheel::open_within_env_limits(path)?;
        println!("{}", repair(&wheel, &request)?.output.display());
    }
    Ok(ExitCode::SUCCESS)
}
