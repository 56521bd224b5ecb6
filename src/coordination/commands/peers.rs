//! crosswheel answering the peers' command lines (`auditwheel repair ...`,
//! `delocate-wheel ...`, `delocate-listdeps ...`) that a configuration's
//! `repair-wheel-command` or hooks call. The real tools would judge a foreign
//! architecture's wheel against this machine's libraries; crosswheel's repair judges it
//! against the target's, with every flag mapped or refused by name.
//!
//! Inside a build, the pipeline puts these names first on PATH and says in
//! [`TARGET_VARIABLE`] and [`LIBRARY_PATH_VARIABLE`] which target the build is for and
//! where the libraries crosswheel built for it are: what a container's `/usr/local/lib`
//! gives the real auditwheel.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Parser;

use crate::cli::peers::{
    Auditwheel, AuditwheelCommand, AuditwheelRepair, AuditwheelShow, DelocateListdeps,
    DelocateMerge, DelocateWheel, LIBRARY_PATH_VARIABLE, Peer, Pipx, PipxCommand, PipxRun,
    TARGET_VARIABLE,
};
use crate::formats::macho::Arch;
use crate::formats::wheel::{PlatformTag, WheelArchive, open_within_env_limits, source_date_epoch};
use crate::input::options::{EnvSource, ProcessEnv, repair_macos_version};
use crate::stages::repair::macos::MacosRepairOptions;
use crate::stages::repair::{RepairRequest, repair};
use crate::support::host::run_folder::staging_in;
use crate::target::{Platform, Target};

/// Runs `peer` with `args` (the program name first, as the peer's parser expects).
pub fn run(peer: Peer, args: Vec<OsString>) -> Result<ExitCode> {
    let env = ProcessEnv;
    match peer {
        Peer::Auditwheel => {
            let cli = Auditwheel::parse_from(args);
            match &cli.command {
                AuditwheelCommand::Repair(repair) => auditwheel_repair(repair, cli.verbose, &env),
                AuditwheelCommand::Show(show) => auditwheel_show(show),
            }
        }
        Peer::DelocateWheel => delocate_wheel(&DelocateWheel::parse_from(args), &env),
        Peer::DelocateListdeps => delocate_listdeps(&DelocateListdeps::parse_from(args), &env),
        Peer::DelocateMerge => delocate_merge(&DelocateMerge::parse_from(args)),
        Peer::Abi3audit => abi3audit(&args[1..]),
        Peer::Pipx => pipx(args),
    }
}

/// `pipx run [--spec DIST] APP ARGS...` for an APP crosswheel answers as a peer
/// (`pipx run abi3audit --strict --report {wheel}`, cibuildwheel's documented line): the
/// peer answers, as under its own name; pipx's install options name nothing crosswheel
/// installs. Any other pipx command line is the machine's own pipx's (the next `pipx` on
/// PATH); without one it stops in one line naming the app.
fn pipx(args: Vec<OsString>) -> Result<ExitCode> {
    if let Ok(Pipx {
        command: PipxCommand::Run(run),
    }) = Pipx::try_parse_from(&args)
        && let Some(peer) = peer_run_by(&run)
    {
        let mut options = run.install_options();
        // `--spec delocate` for delocate-wheel says only what crosswheel answers anyway.
        options.retain(|option| *option != format!("--spec {}", peer.distribution()));
        if !options.is_empty() {
            tracing::info!(
                "pipx run {}: crosswheel's {} answers, as under its own name, and installs nothing, so these options do not apply",
                options.join(" "),
                peer.program()
            );
        }
        let mut argv = vec![OsString::from(peer.program())];
        argv.extend(run.app.into_iter().skip(1));
        return self::run(peer, argv);
    }
    let Some(machines) = machine_pipx() else {
        let asked: Vec<String> = args[1..]
            .iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        bail!(
            "`pipx {}`: this machine has no pipx, and crosswheel answers `pipx run` only for {}: install pipx (python3 -m pip install pipx) for anything else",
            asked.join(" "),
            peer_programs_list()
        );
    };
    let status = std::process::Command::new(&machines)
        .args(&args[1..])
        .status()
        .with_context(|| format!("run {}", machines.display()))?;
    Ok(exit_code_of(status))
}

/// A program's exit status as this process's: its code, or 1 when a signal ended it.
fn exit_code_of(status: std::process::ExitStatus) -> ExitCode {
    ExitCode::from(
        status
            .code()
            .and_then(|code| u8::try_from(code).ok())
            .unwrap_or(1),
    )
}

/// The peer a `pipx run` line runs: its app is a peer's program, installed from that
/// peer's distribution (a `--spec` naming another package is not the peer).
fn peer_run_by(run: &PipxRun) -> Option<Peer> {
    let app = run.app.first()?;
    let peer = Peer::invoked_as(app).filter(|peer| *peer != Peer::Pipx)?;
    let Some(spec) = &run.spec else {
        return Some(peer);
    };
    let name_end = spec
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
        .unwrap_or(spec.len());
    let name = spec[..name_end].to_ascii_lowercase().replace('_', "-");
    (name == peer.distribution()).then_some(peer)
}

/// The programs crosswheel answers as peers, for messages.
fn peer_programs_list() -> String {
    Peer::ALL
        .iter()
        .filter(|peer| **peer != Peer::Pipx)
        .map(|peer| peer.program())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The machine's own pipx: the first `pipx` on PATH that is not crosswheel answering
/// as one.
fn machine_pipx() -> Option<PathBuf> {
    let me = std::env::current_exe().ok()?.canonicalize().ok()?;
    let path = crate::support::host::search_path();
    std::env::split_paths(&path)
        .filter_map(|dir| crate::support::host::find_in_path("pipx", dir.as_os_str()))
        .find(|program| program.canonicalize().is_ok_and(|real| real != me))
}

/// Runs the pinned abi3audit (config/audit-requirements.txt, every package by SHA-256) from
/// a venv of crosswheel's cache, made once with the `python3` on PATH (in a hook, the
/// build's own). A configuration that appends `abi3audit --strict --report {wheel}` to its
/// `repair-wheel-command` works on a machine without abi3audit, as in cibuildwheel's
/// container, where it is installed.
fn abi3audit(args: &[OsString]) -> Result<ExitCode> {
    let cache = crate::support::host::Cache::from_env()?;
    let venv = crate::coordination::pipeline::pinned_abi3audit(&cache)?;
    // `-m`: the venv was made aside and renamed, so its console scripts name the folder it
    // was made in; its python finds its packages from where it is.
    let status = std::process::Command::new(venv.join("bin/python"))
        .args(["-m", "abi3audit"])
        .args(args)
        .status()
        .context("run abi3audit")?;
    Ok(exit_code_of(status))
}

/// The build's target, when a crosswheel build called the peer.
fn context_target(env: &impl EnvSource) -> Result<Option<Target>> {
    match env.var(TARGET_VARIABLE).filter(|id| !id.is_empty()) {
        Some(id) => Ok(Some(Target::parse(&id).with_context(|| {
            format!("{TARGET_VARIABLE}={id} is not a crosswheel target")
        })?)),
        None => Ok(None),
    }
}

/// The `:`-separated folders of `variable`, empty entries dropped.
fn folders(env: &impl EnvSource, variable: &str) -> Vec<PathBuf> {
    env.var(variable)
        .unwrap_or_default()
        .split(':')
        .filter(|entry| !entry.is_empty())
        .map(PathBuf::from)
        .collect()
}

/// auditwheel's search: `AUDITWHEEL_LD_LIBRARY_PATH` and `LD_LIBRARY_PATH` first, then
/// `--ldpaths` or, by default, the system's folders: here the target's libraries.
fn auditwheel_library_path(env: &impl EnvSource, ldpaths: Option<&str>) -> Vec<PathBuf> {
    let mut folders_found = folders(env, "AUDITWHEEL_LD_LIBRARY_PATH");
    folders_found.extend(folders(env, "LD_LIBRARY_PATH"));
    match ldpaths {
        Some(ldpaths) => folders_found.extend(
            ldpaths
                .split(':')
                .filter(|entry| !entry.is_empty())
                .map(PathBuf::from),
        ),
        None => folders_found.extend(folders(env, LIBRARY_PATH_VARIABLE)),
    }
    folders_found
}

/// delocate's search, as dyld's: `DYLD_LIBRARY_PATH`, `DYLD_FALLBACK_LIBRARY_PATH`, then
/// the target's libraries.
fn delocate_library_path(env: &impl EnvSource) -> Vec<PathBuf> {
    let mut folders_found = folders(env, "DYLD_LIBRARY_PATH");
    folders_found.extend(folders(env, "DYLD_FALLBACK_LIBRARY_PATH"));
    folders_found.extend(folders(env, LIBRARY_PATH_VARIABLE));
    folders_found
}

fn auditwheel_repair(
    args: &AuditwheelRepair,
    verbose: u8,
    env: &impl EnvSource,
) -> Result<ExitCode> {
    refuse_unhonoured_auditwheel_flags(args, env)?;
    let exclude = super::repair::exclude_patterns(&args.exclude)?;
    let target = context_target(env)?;
    let cache = crate::support::host::Cache::from_env()?;
    let plat_text = args
        .plat
        .clone()
        .or_else(|| env.var("AUDITWHEEL_PLAT"))
        .unwrap_or_else(|| "auto".into());
    let mut request = RepairRequest::new(args.wheel_dir.clone());
    request.lib_paths = auditwheel_library_path(env, args.shared.ldpaths.as_deref());
    request.exclude = exclude;
    request.epoch = source_date_epoch()?;
    let auto_plat = target.as_ref().and_then(PlatformTag::repair_policy_of);
    request.lib_sdir = Some(args.lib_sdir.clone());
    request.strip = args.strip;
    request.only_plat = args.only_plat || plat_text == "auto";
    request.keep_tags = args.no_update_tags;
    for path in &args.wheels {
        let wheel = open_within_env_limits(path)?;
        if is_pure(&wheel) && args.shared.allow_pure_python_wheel {
            copy_unchanged(path, &args.wheel_dir)?;
            continue;
        }
        if PlatformTag::platform_of(&wheel.name().platform) == Some(Platform::Macos) {
            bail!(
                "auditwheel repair {}: auditwheel repairs Linux wheels; this one is for macOS \
                 (delocate-wheel repairs it)",
                path.display()
            );
        }
        request.plat = match plat_text.as_str() {
            // musl binaries do not say their musl: the build's target does, as the
            // container's musl would.
            "auto" => auto_plat.clone(),
            text => Some(plat_for(
                text,
                wheel
                    .name()
                    .platform
                    .iter()
                    .find_map(PlatformTag::linux_machine),
            )),
        };
        request.system_libraries = super::repair::system_libraries_for(&cache, &wheel)?;
        let repaired = repair(&wheel, &request)?;
        if verbose > 0 {
            println!("Fixed-up wheel written to {}", repaired.output.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// auditwheel's `--plat`: a policy with its architecture (`manylinux_2_28_aarch64`), or
/// without it (`manylinux_2_28`, `manylinux2014`), which then means the wheel's own
/// architecture, `machine`.
fn plat_for(text: &str, machine: Option<&str>) -> PlatformTag {
    let named = PlatformTag::parse(text);
    let has_arch = named
        .linux_machine()
        .and_then(crate::target::LinuxArch::from_machine)
        .is_some();
    match machine {
        Some(machine) if !has_arch => PlatformTag::parse(&format!("{text}_{machine}")),
        _ => named,
    }
}

/// The flags whose effect crosswheel cannot give: each is refused by name.
fn refuse_unhonoured_auditwheel_flags(args: &AuditwheelRepair, env: &impl EnvSource) -> Result<()> {
    let compression = args
        .zip_compression_level
        .map(|level| level.to_string())
        .or_else(|| env.var("AUDITWHEEL_ZIP_COMPRESSION_LEVEL"));
    if let Some(level) = compression {
        bail!(
            "auditwheel repair -z {level}: crosswheel writes every wheel at one compression so that \
             the same inputs give the same bytes; drop -z (or AUDITWHEEL_ZIP_COMPRESSION_LEVEL)"
        );
    }
    let patcher = args
        .patcher
        .clone()
        .or_else(|| env.var("AUDITWHEEL_PATCHER"));
    if patcher.as_deref() == Some("none") {
        bail!(
            "auditwheel repair --patcher none: crosswheel's repair always edits the ELF files it \
             vendors for; drop --patcher none"
        );
    }
    Ok(())
}

fn auditwheel_show(args: &AuditwheelShow) -> Result<ExitCode> {
    if args.json {
        bail!(
            "auditwheel show --json: crosswheel's report in JSON is `crosswheel inspect --json` \
             (docs/inspect-json.md), whose fields are not auditwheel's; use that command"
        );
    }
    // crosswheel's report reads the wheel alone: a folder to search would change nothing.
    if let Some(ldpaths) = &args.shared.ldpaths {
        bail!(
            "auditwheel show --ldpaths {ldpaths}: crosswheel's report reads the wheel alone and \
             searches no library folders; drop --ldpaths"
        );
    }
    let wheel = open_within_env_limits(&args.wheel)?;
    if is_pure(&wheel) {
        if args.shared.allow_pure_python_wheel {
            println!("{} is a pure Python wheel", args.wheel.display());
            return Ok(ExitCode::SUCCESS);
        }
        bail!(
            "{}: is a pure wheel (platform `any`); --allow-pure-python-wheel accepts it",
            args.wheel.display()
        );
    }
    super::inspect::run(&crate::cli::InspectArgs {
        wheel: args.wheel.clone(),
        json: false,
    })
}

fn delocate_wheel(args: &DelocateWheel, env: &impl EnvSource) -> Result<ExitCode> {
    let shared = &args.shared;
    if shared.no_sanitize_rpaths {
        bail!(
            "delocate-wheel --no-sanitize-rpaths: crosswheel's repair always removes rpaths that \
             leave the wheel, which a wheel installed elsewhere cannot use; drop the flag"
        );
    }
    if shared.ignore_missing_dependencies {
        bail!(
            "delocate-wheel --ignore-missing-dependencies: crosswheel does not write a wheel that \
             cannot load; put the missing library's folder on DYLD_LIBRARY_PATH instead"
        );
    }
    if shared.dylibs_only {
        bail!(
            "delocate-wheel --dylibs-only: crosswheel reads every Mach-O file of the wheel, \
             whatever its name; drop the flag"
        );
    }
    let lib_paths = delocate_library_path(env);
    let exclude = shared
        .exclude
        .iter()
        .map(|part| glob::Pattern::new(&format!("*{}*", glob::Pattern::escape(part))))
        .collect::<Result<Vec<_>, _>>()?;
    let require_archs = match &args.require_archs {
        Some(text) => parse_archs(text)?,
        None => Vec::new(),
    };
    for path in &args.wheels {
        if args.wheels.len() > 1 || shared.verbose > 0 {
            println!("Fixing: {}", path.display());
        }
        let (out_dir, in_place) = match &args.wheel_dir {
            Some(dir) => (dir.clone(), None),
            // delocate's default overwrites the input: repair beside it, then replace it.
            None => {
                let folder = path.parent().unwrap_or(Path::new("."));
                let staging = staging_in(folder, ".delocate-")
                    .with_context(|| format!("create a folder in {}", folder.display()))?;
                (staging.path().to_path_buf(), Some(staging))
            }
        };
        let wheel = open_within_env_limits(path)?;
        if PlatformTag::platform_of(&wheel.name().platform) != Some(Platform::Macos) {
            bail!(
                "delocate-wheel {}: delocate repairs macOS wheels; this one is not (auditwheel \
                 repairs Linux ones)",
                path.display()
            );
        }
        let repaired = crate::stages::repair::macos::repair(
            &wheel,
            &MacosRepairOptions {
                lib_paths: lib_paths.clone(),
                exclude: exclude.clone(),
                macos_version: repair_macos_version(
                    args.require_target_macos_version.as_deref(),
                    env,
                )
                .map_err(anyhow::Error::msg)?,
                retag: false,
                out_dir,
                epoch: source_date_epoch()?,
                executable_path: shared.executable_path.clone(),
                lib_sdir: args.lib_sdir.clone(),
                require_archs: require_archs.clone(),
                keep_tags: false,
            },
        )?;
        if shared.verbose > 0 && !repaired.grafted.is_empty() {
            println!("Copied to package {} directory:", args.lib_sdir);
            let mut names: Vec<String> = repaired
                .grafted
                .iter()
                .map(|(source, _)| source.display().to_string())
                .collect();
            names.sort();
            for name in names {
                println!("  {name}");
            }
        }
        if let Some(_staging) = in_place {
            replace_input(path, &repaired.output)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// delocate's `--require-archs`: one architecture, a comma-separated list, or the names
/// `intel` (i386 and x86_64) and `universal2` (x86_64 and arm64).
fn parse_archs(text: &str) -> Result<Vec<Arch>> {
    let names: Vec<&str> = match text {
        "intel" => vec!["i386", "x86_64"],
        "universal2" => vec!["x86_64", "arm64"],
        list => list.split(',').map(str::trim).collect(),
    };
    names
        .into_iter()
        .map(|name| match name {
            "arm64" => Ok(Arch::Arm64),
            "x86_64" => Ok(Arch::X86_64),
            "i386" => Ok(Arch::I386),
            other => bail!(
                "--require-archs {text}: `{other}` is not a macOS architecture (arm64, x86_64, i386, \
                 or the names intel and universal2)"
            ),
        })
        .collect()
}

/// The repaired wheel in place of the input, as delocate writes without `-w`: renamed
/// over it (same folder, so atomic); a retagged name replaces the input's name.
fn replace_input(input: &Path, repaired: &Path) -> Result<()> {
    let folder = input.parent().unwrap_or(Path::new("."));
    let name = repaired
        .file_name()
        .context("a repaired wheel has a name")?;
    let destination = folder.join(name);
    std::fs::rename(repaired, &destination)
        .with_context(|| format!("move {} to {}", repaired.display(), destination.display()))?;
    if destination != input {
        std::fs::remove_file(input).with_context(|| format!("remove {}", input.display()))?;
    }
    Ok(())
}

/// Fuses the two thin wheels into one universal2 wheel (or one tag per architecture,
/// as delocate tags it) in the wheel folder, and says where, as delocate-merge does.
fn delocate_merge(args: &DelocateMerge) -> Result<ExitCode> {
    let [first, second] = &args.wheels[..] else {
        bail!("delocate-merge takes two wheels, an x86_64 and an arm64 one");
    };
    let out_dir = match &args.wheel_dir {
        Some(folder) => folder.clone(),
        None => first
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
    };
    std::fs::create_dir_all(&out_dir).map_err(crate::io_error::IoError::at("create", &out_dir))?;
    let fused = crate::stages::repair::fuse::fuse_wheels(
        &open_within_env_limits(first)?,
        &open_within_env_limits(second)?,
        &out_dir,
        source_date_epoch()?,
    )?;
    if args.verbose > 0 {
        eprintln!(
            "delocate-merge: fused {} binaries into {}",
            fused.binaries.len(),
            fused.output.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn delocate_listdeps(args: &DelocateListdeps, env: &impl EnvSource) -> Result<ExitCode> {
    let lib_paths = delocate_library_path(env);
    let multi = args.paths.len() > 1;
    for path in &args.paths {
        if path.is_dir() {
            bail!(
                "delocate-listdeps {}: crosswheel lists the dependencies of wheels, not of folders; \
                 give it the wheel",
                path.display()
            );
        }
        let wheel = open_within_env_limits(path)?;
        let dependencies = crate::analysis::inspect::macos::host_dependencies(&wheel, &lib_paths)?;
        let indent = if multi {
            println!("{}:", path.display());
            "   "
        } else {
            ""
        };
        for (library, depending) in &dependencies {
            if library.system && !args.all {
                continue;
            }
            if args.depending {
                println!("{indent}{}:", library.name);
                for binary in depending {
                    println!("{indent}    {binary}");
                }
            } else {
                println!("{indent}{}", library.name);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn is_pure(wheel: &WheelArchive) -> bool {
    wheel
        .name()
        .platform
        .iter()
        .all(|tag| *tag == PlatformTag::Any)
}

/// auditwheel's `--allow-pure-python-wheel`: the wheel is copied to the output as it is.
fn copy_unchanged(wheel: &Path, out_dir: &Path) -> Result<()> {
    std::fs::create_dir_all(out_dir).with_context(|| format!("create {}", out_dir.display()))?;
    let name = wheel.file_name().context("a wheel has a name")?;
    let destination = out_dir.join(name);
    if destination != wheel {
        std::fs::copy(wheel, &destination)
            .with_context(|| format!("copy {} to {}", wheel.display(), destination.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn require_archs_reads_delocates_names_and_lists() {
        assert_eq!(parse_archs("arm64").unwrap(), [Arch::Arm64]);
        assert_eq!(
            parse_archs("x86_64,arm64").unwrap(),
            [Arch::X86_64, Arch::Arm64]
        );
        assert_eq!(
            parse_archs("universal2").unwrap(),
            [Arch::X86_64, Arch::Arm64]
        );
        assert_eq!(parse_archs("intel").unwrap(), [Arch::I386, Arch::X86_64]);
        let err = parse_archs("arm64,ppc").unwrap_err().to_string();
        assert!(err.contains("`ppc` is not a macOS architecture"), "{err}");
    }

    #[test]
    fn the_peers_search_their_own_variables_first_then_the_targets_libraries() {
        let env = std::collections::BTreeMap::from([
            ("AUDITWHEEL_LD_LIBRARY_PATH".to_string(), "/a".to_string()),
            ("LD_LIBRARY_PATH".to_string(), "/b::/c".to_string()),
            ("DYLD_LIBRARY_PATH".to_string(), "/d".to_string()),
            ("DYLD_FALLBACK_LIBRARY_PATH".to_string(), "/e".to_string()),
            (
                LIBRARY_PATH_VARIABLE.to_string(),
                "/target/lib:/target2/lib".to_string(),
            ),
        ]);
        let paths = |list: &[&str]| list.iter().map(PathBuf::from).collect::<Vec<_>>();
        assert_eq!(
            auditwheel_library_path(&env, None),
            paths(&["/a", "/b", "/c", "/target/lib", "/target2/lib"])
        );
        // --ldpaths replaces the default folders, as it replaces the system's.
        assert_eq!(
            auditwheel_library_path(&env, Some("/x:/y")),
            paths(&["/a", "/b", "/c", "/x", "/y"])
        );
        assert_eq!(
            delocate_library_path(&env),
            paths(&["/d", "/e", "/target/lib", "/target2/lib"])
        );
    }

    #[test]
    fn a_plat_without_its_architecture_means_the_wheels() {
        let tag = |text: &str, machine| plat_for(text, machine).to_string();
        assert_eq!(
            tag("manylinux_2_28", Some("aarch64")),
            "manylinux_2_28_aarch64"
        );
        assert_eq!(
            tag("manylinux2014", Some("ppc64le")),
            "manylinux2014_ppc64le"
        );
        assert_eq!(tag("musllinux_1_2", Some("x86_64")), "musllinux_1_2_x86_64");
        // A named architecture stays, even another one: the repair refuses it by name.
        assert_eq!(
            tag("manylinux_2_17_x86_64", Some("aarch64")),
            "manylinux_2_17_x86_64"
        );
    }

    #[test]
    fn the_peers_answer_to_their_program_names_only() {
        assert_eq!(
            Peer::invoked_as("/run/peers/auditwheel".as_ref()),
            Some(Peer::Auditwheel)
        );
        assert_eq!(
            Peer::invoked_as("delocate-wheel".as_ref()),
            Some(Peer::DelocateWheel)
        );
        assert_eq!(
            Peer::invoked_as("delocate-listdeps".as_ref()),
            Some(Peer::DelocateListdeps)
        );
        assert_eq!(
            Peer::invoked_as("delocate-merge".as_ref()),
            Some(Peer::DelocateMerge)
        );
        assert_eq!(
            Peer::invoked_as("abi3audit".as_ref()),
            Some(Peer::Abi3audit)
        );
        assert_eq!(Peer::invoked_as("pipx".as_ref()), Some(Peer::Pipx));
        assert_eq!(Peer::invoked_as("crosswheel".as_ref()), None);
        assert_eq!(Peer::invoked_as("auditwheel-symbols".as_ref()), None);
    }

    #[test]
    fn pipx_run_of_a_peer_is_that_peer_with_its_own_arguments() {
        let parse = |line: &str| -> Option<(Peer, Vec<String>)> {
            let Ok(Pipx {
                command: PipxCommand::Run(run),
            }) = Pipx::try_parse_from(line.split_whitespace())
            else {
                return None;
            };
            let peer = peer_run_by(&run)?;
            let rest = run.app[1..]
                .iter()
                .map(|arg| arg.to_string_lossy().into_owned())
                .collect();
            Some((peer, rest))
        };
        assert_eq!(
            parse("pipx run abi3audit --strict --report w.whl"),
            Some((Peer::Abi3audit, strings(&["--strict", "--report", "w.whl"])))
        );
        assert_eq!(
            parse("pipx run --spec delocate delocate-wheel -w out --require-archs arm64 w.whl"),
            Some((
                Peer::DelocateWheel,
                strings(&["-w", "out", "--require-archs", "arm64", "w.whl"])
            ))
        );
        assert_eq!(
            parse("pipx run --no-cache --spec abi3audit==0.0.20 abi3audit -v w.whl"),
            Some((Peer::Abi3audit, strings(&["-v", "w.whl"])))
        );
        // Another package, another app, another pipx command: the machine's pipx.
        assert_eq!(
            parse("pipx run --spec auditwheel-fork auditwheel show w.whl"),
            None
        );
        assert_eq!(parse("pipx run twine check w.whl"), None);
        assert_eq!(parse("pipx run pipx list"), None);
        assert_eq!(parse("pipx install abi3audit"), None);
    }

    #[test]
    fn pipx_options_that_only_say_how_to_install_are_named_as_given() {
        let options = |line: &str| match Pipx::try_parse_from(line.split_whitespace()) {
            Ok(Pipx {
                command: PipxCommand::Run(run),
            }) => run.install_options(),
            Err(error) => panic!("{line}: {error}"),
        };
        assert!(options("pipx run abi3audit w.whl").is_empty());
        assert_eq!(
            options("pipx run --no-cache --spec abi3audit==0.0.20 --python 3.12 abi3audit w.whl"),
            strings(&["--spec abi3audit==0.0.20", "--python 3.12", "--no-cache"])
        );
        // The app's own options are the app's.
        assert!(options("pipx run auditwheel repair --python x w.whl").is_empty());
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| item.to_string()).collect()
    }
}
