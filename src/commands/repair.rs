//! `crosswheel repair WHEEL...`

use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cli::RepairArgs;
use crate::repair::linux::{LinuxRepairOptions, repair};
use crate::wheel::source_date_epoch;

pub fn run(args: &RepairArgs) -> Result<ExitCode> {
    let exclude = args
        .exclude
        .iter()
        .map(|p| glob::Pattern::new(p).with_context(|| format!("--exclude {p:?} is not a valid glob pattern")))
        .collect::<Result<Vec<_>>>()?;
    let options = LinuxRepairOptions {
        plat: args.plat.clone(),
        exclude,
        lib_paths: args.lib_path.clone(),
        sysroot: args.sysroot.clone(),
        out_dir: args.wheel_dir.clone(),
        epoch: source_date_epoch()?,
    };
    for path in &args.wheels {
        let wheel = super::open_wheel(path)?;
        let report = repair(&wheel, &options)?;
        for (source, inside) in &report.grafted {
            tracing::info!("vendored {} as {}", source.display(), inside);
        }
        println!("{}", report.output.display());
    }
    Ok(ExitCode::SUCCESS)
}
