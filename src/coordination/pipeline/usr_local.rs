//! `/usr/local` while `before-all` runs: the target's, never the build machine's.
//!
//! In a cibuildwheel container, a `before-all` that installs into `/usr/local` (a project's
//! script running `make install`, a `configure` without `--prefix`) writes into the
//! container, and the build then finds what it installed there. Run as it is here, the same
//! command would write the target's binaries into the build machine's `/usr/local`.
//!
//! So, as root, `before-all` runs in a private mount namespace (`unshare --mount`) with an
//! overlay on `/usr/local`: the command sees `/usr/local` as it is, its writes land in a
//! folder beside the target's prefix, and when it has ended [`settle`] moves them into the
//! prefix, where the build's compiler and linker flags already point, with `/usr/local`
//! in pkg-config, libtool and `*-config` files replaced by the prefix. Without root, a
//! `/usr/local` the user may write to is refused in one line before the command runs; one
//! the user may not write to needs nothing, since an install there fails as it does for a
//! non-root user in a container.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::io_error::IoError;

const USR_LOCAL: &str = "/usr/local";

#[derive(Debug, thiserror::Error)]
pub enum UsrLocalError {
    #[error(
        "`before-all` would run as root with the build machine's /usr/local, and crosswheel \
         cannot give it a private one ({reason}): run crosswheel where `unshare --mount` \
         and overlay mounts work (root outside a container, or a container with \
         CAP_SYS_ADMIN), or install into $CROSSWHEEL_PREFIX instead of /usr/local"
    )]
    NoPrivateMount { reason: String },
    #[error(
        "`before-all` could write into the build machine's /usr/local, which this user may \
         write to: run crosswheel as root (it then gives `before-all` a private /usr/local), \
         or install into $CROSSWHEEL_PREFIX instead of /usr/local"
    )]
    WritableWithoutRoot,
    #[error(
        "the folder {0} has a `,` or `:`, which an overlay mount cannot name: set TMPDIR to another folder"
    )]
    UnmountablePath(PathBuf),
    #[error(transparent)]
    Io(#[from] IoError),
}

/// How `before-all` gets its `/usr/local`.
#[derive(Debug)]
pub enum Isolation {
    /// An overlay in a private mount namespace; writes land in `upper`.
    Overlay { upper: PathBuf, work: PathBuf },
    /// The build machine's, which this user cannot write to.
    Unwritable,
}

impl Isolation {
    /// Chooses, and for an overlay checks that one can be mounted, before the command runs.
    /// `beside` names the target's prefix: the overlay's folders are made next to it.
    pub fn choose(beside: &Path) -> Result<Isolation, UsrLocalError> {
        // SAFETY: geteuid(2) cannot fail and has no memory effects.
        let root = unsafe { libc::geteuid() } == 0;
        if !root {
            return if writable(Path::new(USR_LOCAL)) {
                Err(UsrLocalError::WritableWithoutRoot)
            } else {
                Ok(Isolation::Unwritable)
            };
        }
        let upper = with_suffix(beside, ".usr-local");
        let work = with_suffix(beside, ".usr-local-work");
        for folder in [&upper, &work] {
            if folder.to_string_lossy().contains([',', ':']) {
                return Err(UsrLocalError::UnmountablePath(folder.clone()));
            }
            std::fs::create_dir_all(folder).map_err(IoError::at("create", folder))?;
        }
        let probe = overlay_command(&upper, &work, "true")
            .output()
            .map_err(|error| UsrLocalError::NoPrivateMount {
                reason: format!("cannot run unshare: {error}"),
            })?;
        if !probe.status.success() {
            let said = String::from_utf8_lossy(&probe.stderr);
            return Err(UsrLocalError::NoPrivateMount {
                reason: said
                    .lines()
                    .rfind(|line| !line.trim().is_empty())
                    .unwrap_or("no message")
                    .trim()
                    .to_string(),
            });
        }
        Ok(Isolation::Overlay { upper, work })
    }

    /// The command that runs `script` with this `/usr/local`.
    pub fn command(&self, script: &str) -> Command {
        match self {
            Isolation::Overlay { upper, work } => overlay_command(upper, work, script),
            Isolation::Unwritable => {
                let mut shell = Command::new("sh");
                shell.arg("-c").arg(script);
                shell
            }
        }
    }
}

/// `unshare` runs `sh` in a new mount namespace whose mounts do not propagate back; that
/// `sh` mounts the overlay and then becomes the user's `sh -c script`.
fn overlay_command(upper: &Path, work: &Path, script: &str) -> Command {
    let mut command = Command::new("unshare");
    command.args(["--mount", "--propagation", "private", "--", "sh", "-c"]);
    command.arg(
        "mount -t overlay crosswheel-usr-local -o \"lowerdir=/usr/local,upperdir=$1,workdir=$2\" \
         /usr/local || exit 125; shift 2; exec sh -c \"$1\"",
    );
    command.args([
        OsString::from("sh"),
        upper.into(),
        work.into(),
        script.into(),
    ]);
    command
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn writable(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(name) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `name` is a NUL-terminated string that outlives the call.
    unsafe { libc::access(name.as_ptr(), libc::W_OK) == 0 }
}

/// Moves what `before-all` wrote into `/usr/local` (the overlay's `upper` folder) into
/// `prefix`, and makes it name `prefix` where it named `/usr/local`. Returns the files moved.
pub fn settle(upper: &Path, prefix: &Path) -> Result<Vec<PathBuf>, IoError> {
    let mut moved = Vec::new();
    move_below(upper, upper, prefix, &mut moved)?;
    for file in &moved {
        relocate(file, prefix)?;
    }
    Ok(moved)
}

fn move_below(
    top: &Path,
    folder: &Path,
    prefix: &Path,
    moved: &mut Vec<PathBuf>,
) -> Result<(), IoError> {
    use std::os::unix::fs::FileTypeExt;
    let entries = std::fs::read_dir(folder).map_err(IoError::at("read", folder))?;
    for entry in entries {
        let entry = entry.map_err(IoError::at("read", folder))?;
        let from = entry.path();
        let file_type = entry.file_type().map_err(IoError::at("read", &from))?;
        let to = prefix.join(from.strip_prefix(top).unwrap_or(&from));
        if file_type.is_dir() {
            std::fs::create_dir_all(&to).map_err(IoError::at("create", &to))?;
            move_below(top, &from, prefix, moved)?;
        } else if file_type.is_char_device() {
            // An overlay's whiteout: the command removed a file of the build machine's
            // /usr/local, which stays as it was.
            continue;
        } else {
            std::fs::rename(&from, &to).map_err(IoError::at("move into the prefix", &from))?;
            moved.push(to);
        }
    }
    Ok(())
}

/// Makes one moved file name `prefix` where it named `/usr/local`: an absolute symbolic
/// link, a pkg-config `.pc` file, a libtool `.la` file or a `bin/*-config` script. Binaries
/// are left alone: their search paths come from the build's flags, not from /usr/local.
fn relocate(file: &Path, prefix: &Path) -> Result<(), IoError> {
    let prefix_text = prefix.to_string_lossy();
    let metadata = std::fs::symlink_metadata(file).map_err(IoError::at("read", file))?;
    if metadata.file_type().is_symlink() {
        let target = std::fs::read_link(file).map_err(IoError::at("read", file))?;
        if let Ok(rest) = target.strip_prefix(USR_LOCAL) {
            std::fs::remove_file(file).map_err(IoError::at("replace", file))?;
            std::os::unix::fs::symlink(prefix.join(rest), file)
                .map_err(IoError::at("create", file))?;
        }
        return Ok(());
    }
    let name = file.file_name().unwrap_or_default().to_string_lossy();
    let in_bin = file.parent().and_then(Path::file_name) == Some("bin".as_ref());
    let describes_itself =
        name.ends_with(".pc") || name.ends_with(".la") || (in_bin && name.ends_with("-config"));
    if !describes_itself {
        return Ok(());
    }
    let Ok(text) = std::fs::read_to_string(file) else {
        return Ok(());
    };
    if text.contains(USR_LOCAL) {
        let relocated = text.replace(USR_LOCAL, &prefix_text);
        std::fs::write(file, relocated).map_err(IoError::at("write", file))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn what_was_installed_into_usr_local_moves_into_the_prefix_and_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let (upper, prefix) = (dir.path().join("upper"), dir.path().join("prefix"));
        std::fs::create_dir_all(prefix.join("lib/pkgconfig")).unwrap();
        write(
            &upper.join("lib/libfoo.so.1"),
            "\x7fELF /usr/local stays in binaries",
        );
        std::os::unix::fs::symlink("libfoo.so.1", upper.join("lib/libfoo.so")).unwrap();
        std::os::unix::fs::symlink("/usr/local/lib/libfoo.so.1", upper.join("lib/libabs.so"))
            .unwrap();
        write(
            &upper.join("lib/pkgconfig/foo.pc"),
            "prefix=/usr/local\nlibdir=${prefix}/lib\n",
        );
        write(&upper.join("lib/libfoo.la"), "libdir='/usr/local/lib'\n");
        write(
            &upper.join("bin/foo-config"),
            "#!/bin/sh\necho -I/usr/local/include\n",
        );
        write(&upper.join("include/foo.h"), "/* from /usr/local */\n");

        let moved = settle(&upper, &prefix).unwrap();

        assert_eq!(moved.len(), 7, "{moved:?}");
        let read = |path: &str| std::fs::read_to_string(prefix.join(path)).unwrap();
        let shown = prefix.display();
        assert_eq!(
            read("lib/pkgconfig/foo.pc"),
            format!("prefix={shown}\nlibdir=${{prefix}}/lib\n")
        );
        assert_eq!(read("lib/libfoo.la"), format!("libdir='{shown}/lib'\n"));
        assert_eq!(
            read("bin/foo-config"),
            format!("#!/bin/sh\necho -I{shown}/include\n")
        );
        // Headers and binaries are not rewritten; relative links stay relative.
        assert_eq!(read("include/foo.h"), "/* from /usr/local */\n");
        assert_eq!(
            read("lib/libfoo.so.1"),
            "\x7fELF /usr/local stays in binaries"
        );
        assert_eq!(
            std::fs::read_link(prefix.join("lib/libfoo.so")).unwrap(),
            Path::new("libfoo.so.1")
        );
        assert_eq!(
            std::fs::read_link(prefix.join("lib/libabs.so")).unwrap(),
            prefix.join("lib/libfoo.so.1")
        );
        assert!(!upper.join("lib/libfoo.so.1").exists(), "moved, not copied");
    }

    /// As root (CI, and the machines `before-all` installs as root on), the command writes
    /// into its own /usr/local; anyone else gets the build machine's, unwritable, or a refusal.
    #[test]
    fn before_all_writes_into_a_private_usr_local() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("linux-aarch64");
        std::fs::create_dir_all(&prefix).unwrap();
        let marker = format!("crosswheel-usr-local-test-{}", std::process::id());
        match Isolation::choose(&prefix) {
            Ok(isolation @ Isolation::Overlay { .. }) => {
                let Isolation::Overlay { upper, .. } = &isolation else {
                    unreachable!()
                };
                let script = format!(
                    "mkdir -p /usr/local/lib && echo built > /usr/local/lib/{marker} && \
                     test -d /usr/local/lib"
                );
                let status = isolation.command(&script).status().unwrap();
                assert!(status.success(), "{status}");
                assert!(
                    !Path::new("/usr/local/lib").join(&marker).exists(),
                    "the build machine's /usr/local was written to"
                );
                let moved = settle(upper, &prefix).unwrap();
                assert_eq!(moved, vec![prefix.join("lib").join(&marker)]);
            }
            Ok(Isolation::Unwritable) => assert!(!writable(Path::new(USR_LOCAL))),
            Err(UsrLocalError::WritableWithoutRoot) => {
                assert!(writable(Path::new(USR_LOCAL)));
            }
            Err(error) => panic!("{error}"),
        }
    }
}
