//! `crosswheel check DIST...` and `crosswheel upload DIST...`

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{CheckArgs, UploadArgs};
use crate::stages::publish::{
    UploadOptions, UploadOutcome, check_distribution, split_inputs, upload,
};

pub fn run_check(args: &CheckArgs) -> Result<ExitCode> {
    let mut failed = 0;
    for dist in &split_inputs(&args.dists)? {
        match check_distribution(dist) {
            Ok(report) => {
                println!("PASSED {}", dist.display());
                for attestation in &report.attestations {
                    println!("  attests it: {}", attestation.path.display());
                }
                for warning in &report.warnings {
                    println!("  warning: {warning}");
                }
            }
            Err(error) => {
                failed += 1;
                eprintln!("error: {error}");
            }
        }
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

pub fn run_upload(args: &UploadArgs) -> Result<ExitCode> {
    let options = UploadOptions {
        attestations: args.attestations,
        ..UploadOptions::from_env(
            args.repository_url.clone(),
            args.skip_existing,
            args.trusted_publishing,
        )?
    };
    for outcome in upload(&args.dists, &options)? {
        match outcome {
            UploadOutcome::Uploaded { path } => println!("uploaded {}", path.display()),
            UploadOutcome::SkippedExisting { path, reason } => {
                println!("skipped {} ({reason})", path.display())
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
