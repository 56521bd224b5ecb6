//! `crosswheel build [PROJECT]` and `crosswheel matrix [PROJECT]`

use std::process::ExitCode;

use anyhow::{Result, bail};

use crate::cli::{BuildArgs, MatrixArgs};
use crate::coordination::pipeline::{
    FatalError, PipelineOptions, WheelsThisRun, copy_for_linux_targets, report, run,
};
use crate::input::options::{
    CliOverrides, MatrixJobs, Plan, ProcessEnv, env_var_warnings, github_matrix, identifiers_json,
    identifiers_text, project_root_for, resolve,
};

pub fn run_build(args: &BuildArgs) -> Result<ExitCode> {
    if !super::sdist::is_sdist(&args.project) {
        let root = project_root_for(&args.project, &std::env::current_dir()?);
        return build_folder(args, &args.project, root, false);
    }
    // The tree is removed when `unpacked` is dropped, after the run; nothing of the run
    // lives there (the work folder and logs are under the output folder).
    let unpacked = super::sdist::unpack(&args.project)?;
    println!(
        "building {} from the sdist {}",
        unpacked.tree.display(),
        args.project.display()
    );
    build_folder(args, &unpacked.tree, Some(unpacked.tree.clone()), true)
}

/// An sdist's wheels go to the output folder beside where crosswheel runs, as
/// cibuildwheel's do (its output folder is always relative to the working directory, even
/// for sdists): a relative folder, or one inside the unpacked tree, which is removed after
/// the run, is moved there.
fn outside_the_unpacked_tree(plan: &mut Plan, tree: &std::path::Path) -> Result<()> {
    let cwd = std::env::current_dir()?;
    for build in &mut plan.builds {
        let configured = &build.options.output_dir;
        let relative = match configured.strip_prefix(tree) {
            Ok(inside) => inside.to_path_buf(),
            Err(_) if configured.is_relative() => configured.clone(),
            Err(_) => continue,
        };
        build.options.output_dir = cwd.join(relative);
    }
    Ok(())
}

/// Builds the package folder `project` in the project root `root` (`None`: its own);
/// `from_sdist`: `project` is an unpacked sdist's tree.
fn build_folder(
    args: &BuildArgs,
    project: &std::path::Path,
    root: Option<std::path::PathBuf>,
    from_sdist: bool,
) -> Result<ExitCode> {
    let mut cli = CliOverrides {
        only: args.only.clone(),
        config_file: args.config_file.clone(),
        allow_empty: args.allow_empty,
        project_root: root,
        ..Default::default()
    };
    if let Some(archs) = &args.archs {
        cli.set("archs", archs.clone());
    }
    if let Some(dir) = &args.output_dir {
        // Relative to where the command runs, as users expect of a flag.
        let absolute = std::env::current_dir()?.join(dir);
        cli.set("output-dir", absolute.to_string_lossy().into_owned());
    }
    if let Some(toolchain) = &args.toolchain {
        cli.set("toolchain", toolchain.clone());
    }
    if args.require_tests {
        cli.set("require-tests", "true".to_string());
    }
    warn_about_misspelt_variables();
    let mut plan = resolve(project, &cli, &ProcessEnv)?;
    if from_sdist {
        outside_the_unpacked_tree(&mut plan, project)?;
    }
    say_plan_notes(&plan);
    if args.print_build_identifiers {
        if args.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&identifiers_json(&plan))?
            );
        } else {
            print!("{}", identifiers_text(&plan));
        }
        return Ok(ExitCode::SUCCESS);
    }
    // Kept until the run ends: the Linux targets build there.
    let _copies = copy_for_linux_targets(&mut plan, |paths| {
        let cli = CliOverrides {
            project_root: Some(paths.root.clone()),
            ..cli.clone()
        };
        Ok(resolve(&paths.package, &cli, &ProcessEnv)?)
    })?;
    let outcomes = run(
        &plan,
        &PipelineOptions {
            offline: args.offline,
            jobs: jobs(args.jobs)?,
            wheels: WheelsThisRun::default(),
            logs: None,
        },
    )?;
    print!("{}", report::summary(&outcomes));
    if let Some(note) = crate::coordination::pipeline::hints::shared_object_note(&plan, &outcomes) {
        eprint!("{note}");
    }
    // Relative to where the command runs when the folder lies there, as it was given.
    let here = std::env::current_dir().ok();
    for folder in report::wheel_folders(&outcomes) {
        let shown = here
            .as_deref()
            .and_then(|here| folder.strip_prefix(here).ok())
            .filter(|relative| !relative.as_os_str().is_empty())
            .unwrap_or(&folder);
        println!("wheels in {}", shown.display());
    }
    if let Err(error) = report::write_github_summary(&outcomes) {
        tracing::warn!("could not write $GITHUB_STEP_SUMMARY: {error}");
    }
    let failed = outcomes.iter().filter(|o| !o.succeeded()).count();
    if failed > 0 {
        return Err(FatalError::BuildsFailed {
            failed,
            total: outcomes.len(),
            code: report::exit_code_of(&outcomes),
        }
        .into());
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run_matrix(args: &MatrixArgs) -> Result<ExitCode> {
    let jobs = match args.jobs.as_str() {
        "all" => MatrixJobs::All,
        "build" => MatrixJobs::Build,
        "test" => MatrixJobs::Test,
        other => bail!("--jobs {other:?}: expected all, build or test"),
    };
    let cli = CliOverrides {
        config_file: args.config_file.clone(),
        allow_empty: true,
        ..Default::default()
    };
    warn_about_misspelt_variables();
    let plan = resolve(&args.project, &cli, &ProcessEnv)?;
    say_plan_notes(&plan);
    println!("{}", serde_json::to_string(&github_matrix(&plan, jobs))?);
    Ok(ExitCode::SUCCESS)
}

/// `--jobs`, else `CROSSWHEEL_JOBS`, else the number of CPU cores.
fn jobs(flag: Option<usize>) -> Result<usize> {
    let jobs = match flag {
        Some(jobs) => jobs,
        None => {
            match crate::input::options::jobs_variable(&ProcessEnv).map_err(anyhow::Error::msg)? {
                Some(jobs) => jobs,
                None => std::thread::available_parallelism().map_or(1, usize::from),
            }
        }
    };
    if jobs == 0 {
        bail!("--jobs 0: at least one build must run at a time");
    }
    Ok(jobs)
}

/// `CROSSWHEEL_*` and `CIBW_*` variables that look like misspelt option variables: said
/// before anything else, since such a variable is otherwise silently without effect.
fn warn_about_misspelt_variables() {
    let names: Vec<String> = std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .collect();
    for warning in env_var_warnings(names.iter().map(String::as_str)) {
        eprintln!("warning: {warning}");
    }
}

/// What crosswheel says once per run about the configuration it read: the table, the
/// `CIBW_*` variables used, what is ignored and what is not built here.
fn say_plan_notes(plan: &Plan) {
    for note in &plan.notes {
        eprintln!("{note}");
    }
}
