//! Load-command rewrites that fit inside the header padding: install id,
//! install names, rpaths and minos. The rest of each slice is untouched, so
//! the file keeps its size and every other offset stays valid.
//!
//! An edit leaves the old signature in place, now stale: re-sign with
//! [`super::sign_adhoc`] before shipping the file.

use super::bytes::{align_up, c_str_at, le_u32, slice_at};
use super::constants::*;
use super::error::MachOError;
use super::facts::{Dependency, DependencyKind, DeploymentTarget, MachOFile, Slice, Version};

/// One rewrite, applied to every slice of a (possibly fat) file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadCommandEdit {
    /// Replace LC_ID_DYLIB's install name (`install_name_tool -id`).
    SetInstallId(String),
    /// Rename every dependency recorded as `from` (`install_name_tool -change`).
    ChangeDependency { from: String, to: String },
    /// Remove every LC_RPATH equal to this path.
    DeleteRpath(String),
    /// Append an LC_RPATH unless one with this path exists: dyld refuses
    /// images with duplicate rpaths.
    AddRpath(String),
    /// Set the macOS minimum version in LC_BUILD_VERSION (macOS platform) or
    /// LC_VERSION_MIN_MACOSX. The SDK version is left as built.
    SetMinos(Version),
}

impl LoadCommandEdit {
    fn describe(&self) -> String {
        match self {
            LoadCommandEdit::SetInstallId(name) => format!("set the install id to `{name}`"),
            LoadCommandEdit::ChangeDependency { from, to } => {
                format!("change dependency `{from}` to `{to}`")
            }
            LoadCommandEdit::DeleteRpath(path) => format!("delete rpath `{path}`"),
            LoadCommandEdit::AddRpath(path) => format!("add rpath `{path}`"),
            LoadCommandEdit::SetMinos(version) => format!("set minos to {version}"),
        }
    }
}

/// Applies `edits` in order to every slice and returns the new file bytes.
///
/// An edit that finds nothing to change in any slice (no LC_ID_DYLIB, no such
/// dependency or rpath, no deployment target) is an error, so a repair never
/// believes it rewrote something it did not. The result is re-parsed and
/// compared with the expected facts before it is returned.
pub fn edit_load_commands(data: &[u8], edits: &[LoadCommandEdit]) -> Result<Vec<u8>, MachOError> {
    for edit in edits {
        check_string_arguments(edit)?;
    }
    let original = MachOFile::parse(data)?;
    let mut output = data.to_vec();
    let mut applied = vec![false; edits.len()];
    for slice in &original.slices {
        let mut commands = raw_commands(slice)?;
        for (edit, applied) in edits.iter().zip(applied.iter_mut()) {
            *applied |= apply(edit, &mut commands, slice.is_64_bit);
        }
        write_commands(&mut output, slice, &commands)?;
    }
    if let Some((edit, _)) = edits.iter().zip(&applied).find(|(_, applied)| !**applied) {
        return Err(MachOError::EditNotApplicable {
            edit: edit.describe(),
            reason: not_applicable_reason(edit).into(),
        });
    }

    let edited = MachOFile::parse(&output)?;
    for (before, after) in original.slices.iter().zip(&edited.slices) {
        check_result(before, after, edits)?;
    }
    Ok(output)
}

fn check_string_arguments(edit: &LoadCommandEdit) -> Result<(), MachOError> {
    let strings: &[&String] = match edit {
        LoadCommandEdit::SetInstallId(name) => &[name],
        LoadCommandEdit::ChangeDependency { from, to } => &[from, to],
        LoadCommandEdit::DeleteRpath(path) | LoadCommandEdit::AddRpath(path) => &[path],
        LoadCommandEdit::SetMinos(_) => &[],
    };
    match strings.iter().find(|s| s.is_empty() || s.contains('\0')) {
        Some(_) => Err(MachOError::EditNotApplicable {
            edit: edit.describe(),
            reason: "install names and rpaths must be non-empty and contain no NUL byte".into(),
        }),
        None => Ok(()),
    }
}

fn not_applicable_reason(edit: &LoadCommandEdit) -> &'static str {
    match edit {
        LoadCommandEdit::SetInstallId(_) => {
            "no slice has an LC_ID_DYLIB (only dylibs have an install id)"
        }
        LoadCommandEdit::ChangeDependency { .. } => "no slice depends on that install name",
        LoadCommandEdit::DeleteRpath(_) => "no slice has that LC_RPATH",
        LoadCommandEdit::AddRpath(_) => "unreachable: adding an rpath always applies",
        LoadCommandEdit::SetMinos(_) => {
            "no slice has LC_BUILD_VERSION for macOS or LC_VERSION_MIN_MACOSX"
        }
    }
}

struct RawCommand {
    cmd: u32,
    bytes: Vec<u8>,
}

fn raw_commands(slice: &Slice<'_>) -> Result<Vec<RawCommand>, MachOError> {
    slice
        .load_commands
        .iter()
        .map(|command| {
            let bytes = slice_at(slice.data, command.offset, command.size).ok_or_else(|| {
                MachOError::malformed(
                    format!("{} slice", slice.arch),
                    "load command moved while editing",
                )
            })?;
            Ok(RawCommand {
                cmd: command.cmd,
                bytes: bytes.to_vec(),
            })
        })
        .collect()
}

/// Returns whether the edit found something to act on in this slice.
fn apply(edit: &LoadCommandEdit, commands: &mut Vec<RawCommand>, is_64_bit: bool) -> bool {
    match edit {
        LoadCommandEdit::SetInstallId(name) => {
            rename_dylib_commands(commands, is_64_bit, |cmd, _| cmd == LC_ID_DYLIB, name)
        }
        LoadCommandEdit::ChangeDependency { from, to } => rename_dylib_commands(
            commands,
            is_64_bit,
            |cmd, current| cmd != LC_ID_DYLIB && current == Some(from.as_str()),
            to,
        ),
        LoadCommandEdit::DeleteRpath(path) => {
            let before = commands.len();
            commands.retain(|command| {
                !(command.cmd == LC_RPATH
                    && embedded_string(command).as_deref() == Some(path.as_str()))
            });
            commands.len() != before
        }
        LoadCommandEdit::AddRpath(path) => {
            let exists = commands.iter().any(|command| {
                command.cmd == LC_RPATH
                    && embedded_string(command).as_deref() == Some(path.as_str())
            });
            if !exists {
                commands.push(RawCommand {
                    cmd: LC_RPATH,
                    bytes: string_command(LC_RPATH, &[], path, is_64_bit),
                });
            }
            true
        }
        LoadCommandEdit::SetMinos(version) => {
            let mut found = false;
            for command in commands.iter_mut() {
                let field = match command.cmd {
                    LC_BUILD_VERSION if word(&command.bytes, 8) == Some(PLATFORM_MACOS) => 12,
                    LC_VERSION_MIN_MACOSX => 8,
                    _ => continue,
                };
                if let Some(slot) = command.bytes.get_mut(field..field + 4) {
                    slot.copy_from_slice(&version.packed().to_le_bytes());
                    found = true;
                }
            }
            found
        }
    }
}

fn rename_dylib_commands(
    commands: &mut [RawCommand],
    is_64_bit: bool,
    matches: impl Fn(u32, Option<&str>) -> bool,
    new_name: &str,
) -> bool {
    let mut found = false;
    for command in commands.iter_mut() {
        let is_dylib =
            command.cmd == LC_ID_DYLIB || DependencyKind::from_command(command.cmd).is_some();
        if !is_dylib || !matches(command.cmd, embedded_string(command).as_deref()) {
            continue;
        }
        // Keep timestamp and versions; only the name and sizes change.
        let fixed = command
            .bytes
            .get(12..DYLIB_COMMAND_SIZE as usize)
            .unwrap_or_default()
            .to_vec();
        command.bytes = string_command(command.cmd, &fixed, new_name, is_64_bit);
        found = true;
    }
    found
}

/// The string stored in a dylib or rpath command (already validated by the parser).
fn embedded_string(command: &RawCommand) -> Option<String> {
    let offset = word(&command.bytes, 8)?;
    c_str_at(&command.bytes, u64::from(offset))
}

fn word(bytes: &[u8], offset: usize) -> Option<u32> {
    le_u32(bytes, offset as u64)
}

/// Builds `cmd, cmdsize, string offset, fixed fields..., string, NUL, padding`.
fn string_command(cmd: u32, fixed_after_offset: &[u8], string: &str, is_64_bit: bool) -> Vec<u8> {
    let string_offset = 12 + fixed_after_offset.len();
    let alignment = if is_64_bit { 8 } else { 4 };
    let unpadded = (string_offset + string.len() + 1) as u64;
    let size = align_up(unpadded, alignment).unwrap_or(unpadded) as usize;
    let mut bytes = Vec::with_capacity(size);
    bytes.extend_from_slice(&cmd.to_le_bytes());
    bytes.extend_from_slice(&(size as u32).to_le_bytes());
    bytes.extend_from_slice(&(string_offset as u32).to_le_bytes());
    bytes.extend_from_slice(fixed_after_offset);
    bytes.extend_from_slice(string.as_bytes());
    bytes.resize(size, 0);
    bytes
}

fn write_commands(
    output: &mut [u8],
    slice: &Slice<'_>,
    commands: &[RawCommand],
) -> Result<(), MachOError> {
    let new_size: u64 = commands
        .iter()
        .map(|command| command.bytes.len() as u64)
        .sum();
    // Signing adds an LC_CODE_SIGNATURE to an unsigned slice (x86_64 slices
    // often are): keep room for it, or the edit succeeds and signing fails.
    let signature_room = match slice.code_signature {
        Some(_) => 0,
        None => LINKEDIT_DATA_COMMAND_SIZE,
    };
    let available = slice.load_commands_size + slice.header_padding;
    if new_size + signature_room > available || new_size > u64::from(u32::MAX) {
        return Err(MachOError::HeaderPaddingExhausted {
            arch: slice.arch.to_string(),
            needed: new_size + signature_room,
            available,
        });
    }
    let region_start = slice.offset + slice.header_size;
    let region = usize::try_from(region_start)
        .ok()
        .and_then(|start| output.get_mut(start..start.checked_add(available as usize)?))
        .ok_or_else(|| {
            MachOError::malformed(
                format!("{} slice", slice.arch),
                "header padding lies past the end of the file",
            )
        })?;
    // Zero the whole region first: a shrunken command list must not leave
    // stale bytes that look like a load command.
    region.fill(0);
    let encoded: Vec<u8> = commands
        .iter()
        .flat_map(|command| command.bytes.iter().copied())
        .collect();
    region
        .get_mut(..encoded.len())
        .ok_or_else(|| {
            MachOError::malformed(
                format!("{} slice", slice.arch),
                "load commands outgrew the header padding",
            )
        })?
        .copy_from_slice(&encoded);
    let header = usize::try_from(slice.offset)
        .ok()
        .and_then(|start| output.get_mut(start + 16..start + 24))
        .ok_or_else(|| {
            MachOError::malformed(
                format!("{} slice", slice.arch),
                "header lies past the end of the file",
            )
        })?;
    header[..4].copy_from_slice(&(commands.len() as u32).to_le_bytes());
    header[4..].copy_from_slice(&(new_size as u32).to_le_bytes());
    Ok(())
}

/// The facts a slice should show after `edits`, derived from its facts before.
struct ExpectedFacts {
    install_id: Option<String>,
    dependencies: Vec<Dependency>,
    rpaths: Vec<String>,
    deployment_target: Option<DeploymentTarget>,
}

fn expected_facts(before: &Slice<'_>, edits: &[LoadCommandEdit]) -> ExpectedFacts {
    let mut facts = ExpectedFacts {
        install_id: before.install_id.clone(),
        dependencies: before.dependencies.clone(),
        rpaths: before.rpaths.clone(),
        deployment_target: before.deployment_target,
    };
    for edit in edits {
        match edit {
            LoadCommandEdit::SetInstallId(name) => {
                if facts.install_id.is_some() {
                    facts.install_id = Some(name.clone());
                }
            }
            LoadCommandEdit::ChangeDependency { from, to } => {
                for dependency in facts
                    .dependencies
                    .iter_mut()
                    .filter(|d| &d.install_name == from)
                {
                    dependency.install_name = to.clone();
                }
            }
            LoadCommandEdit::DeleteRpath(path) => facts.rpaths.retain(|rpath| rpath != path),
            LoadCommandEdit::AddRpath(path) => {
                if !facts.rpaths.contains(path) {
                    facts.rpaths.push(path.clone());
                }
            }
            LoadCommandEdit::SetMinos(version) => {
                if let Some(target) = facts
                    .deployment_target
                    .as_mut()
                    .filter(|target| target.is_macos())
                {
                    target.minos = *version;
                }
            }
        }
    }
    facts
}

fn check_result(
    before: &Slice<'_>,
    after: &Slice<'_>,
    edits: &[LoadCommandEdit],
) -> Result<(), MachOError> {
    let expected = expected_facts(before, edits);
    let mismatch = if after.install_id != expected.install_id {
        Some("the install id")
    } else if after.dependencies != expected.dependencies {
        Some("the dependencies")
    } else if after.rpaths != expected.rpaths {
        Some("the rpaths")
    } else if after.deployment_target != expected.deployment_target {
        Some("the deployment target")
    } else if after.segments != before.segments
        || after.code_signature != before.code_signature
        || after.exported_symbols != before.exported_symbols
        || after.imported_symbols != before.imported_symbols
    {
        Some("data outside the load commands")
    } else {
        None
    };
    match mismatch {
        Some(what) => Err(MachOError::EditMismatch {
            arch: before.arch.to_string(),
            detail: format!("{what} re-parsed differently than the edits intended"),
        }),
        None => Ok(()),
    }
}
