//! The helper's side of the files API: one request (stat, list, mkdir, remove, upload
//! temp files and their commit) dispatched to the module that does it — [`super::paths`]
//! (normalizing, refusals, opening directories), [`super::stat`], [`super::dirs`],
//! [`super::upload`]; tar archives are in [`super::archive`]. All of it runs *inside* the
//! sandbox, in a helper pid 1 forked (see [`crate::linux::served`] for why: the
//! sandbox's uid, root, landlock domain and seccomp filter).
//!
//! Every lookup goes through a directory fd opened with `openat2(RESOLVE_NO_MAGICLINKS)` from
//! the sandbox's root and then `*at` calls on the last component, so a final symlink is
//! never followed unless asked for, and `/proc` magic links are never crossed. Whatever a
//! symlink points at, the helper can reach no more than the sandbox could.

use super::dirs::{mkdir, remove};
use super::paths::invalid;
use super::stat::{list, stat};
use super::upload::{commit, create_temp, write_chunk};
use crate::files::{FileAnswer, FileOp};
use crate::linux::served::FileRefusal;
use std::os::fd::OwnedFd;

/// Carry out `op` (everything but `Archive` and `Extract`, see [`super::archive`]).
pub fn run(op: &FileOp, fds: &[OwnedFd]) -> Result<(FileAnswer, Vec<OwnedFd>), FileRefusal> {
    let none = |answer| Ok((answer, Vec::new()));
    match op {
        FileOp::Stat { path, follow } => none(FileAnswer::Info {
            info: stat(path, *follow)?,
        }),
        FileOp::List {
            path,
            start_after,
            max_entries,
        } => {
            let (entries, truncated) = list(path, start_after, *max_entries)?;
            none(FileAnswer::Entries { entries, truncated })
        }
        FileOp::Mkdir {
            path,
            mode,
            parents,
        } => none(FileAnswer::Info {
            info: mkdir(path, *mode, *parents)?,
        }),
        FileOp::Remove {
            path,
            recursive,
            missing_ok,
        } => none(FileAnswer::Removed {
            removed: remove(path, *recursive, *missing_ok)?,
        }),
        FileOp::CreateTemp {
            path,
            create_parents,
            no_overwrite,
        } => {
            let (fd, free_bytes) = create_temp(path, *create_parents, *no_overwrite)?;
            Ok((FileAnswer::Temp { free_bytes }, vec![fd]))
        }
        FileOp::WriteChunk { offset, len } => match fds {
            [file, pipe] => none(FileAnswer::Written {
                len: write_chunk(file, pipe, *offset, *len)?,
            }),
            _ => Err(invalid("a chunk needs a file and a pipe")),
        },
        FileOp::Commit {
            path,
            size,
            mode,
            uid,
            gid,
            no_overwrite,
        } => match fds {
            [file] => none(FileAnswer::Info {
                info: commit(file, path, *size, *mode, (*uid, *gid), *no_overwrite)?,
            }),
            _ => Err(invalid("a commit needs the temporary file")),
        },
        FileOp::Extract { .. } | FileOp::Archive { .. } => {
            Err(invalid("archives are handled by the archive module"))
        }
    }
}
