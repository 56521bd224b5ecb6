//! `crosswheel repair WHEEL...`

use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use crate::cli::RepairArgs;
use crate::repair::WheelPlatform;
use crate::repair::linux::{LinuxRepairOptions, repair as repair_linux};
use crate::repair::macos::{MacosRepairOptions, repair as repair_macos};
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
    let epoch = source_date_epoch()?;
    for path in &args.wheels {
        let wheel = super::open_wheel(path)?;
        let (output, grafted) = match WheelPlatform::of(&wheel) {
            Some(WheelPlatform::Linux) => {
                let report = repair_linux(
                    &wheel,
                    &LinuxRepairOptions {
                        plat: args.plat.clone(),
                        exclude: exclude.clone(),
                        lib_paths: args.lib_path.clone(),
                        sysroot: args.sysroot.clone(),
                        out_dir: args.wheel_dir.clone(),
                        epoch,
                    },
                )?;
                (report.output, report.grafted)
            }
            Some(WheelPlatform::Macos) => {
                let report = repair_macos(
                    &wheel,
                    &MacosRepairOptions {
                        lib_paths: args.lib_path.clone(),
                        exclude: exclude.clone(),
                        macos_version: args.macos_version.clone(),
                        retag: args.retag,
                        out_dir: args.wheel_dir.clone(),
                        epoch,
                        executable_path: None,
                    },
                )?;
                (report.output, report.grafted)
            }
            None => bail!(
                "{}: platform {} is neither Linux nor macOS; nothing crosswheel can repair",
                path.display(),
                wheel.name().platform.join(".")
            ),
        };
        for (source, inside) in &grafted {
            tracing::info!("vendored {} as {}", source.display(), inside);
        }
        println!("{}", output.display());
    }
    Ok(ExitCode::SUCCESS)
}
