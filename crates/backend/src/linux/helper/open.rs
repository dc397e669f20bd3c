//! File RPCs act with the sandbox's identity, never the server's.
//!
//! A path the API is asked for is opened *inside* the sandbox by a short-lived helper that
//! pid 1 forks for the request: it has pid 1's credentials (the sandbox's uid in its user
//! namespace, no capabilities), its landlock domain and seccomp filter, its mount and pid
//! namespaces. So it can open exactly what the sandbox's own processes can: a link to a
//! host file the sandbox cannot read fails with `EACCES` here too, and resolution happens
//! in the sandbox's own root. The helper opens with `O_PATH` first (a FIFO or device is
//! never opened), accepts only a regular file on a data filesystem (not procfs, sysfs,
//! devpts, …: their contents can depend on who reads and when), reopens that same inode
//! read-only and passes the fd back over the control socket (`SCM_RIGHTS`). The server then
//! only `read`s from the fd, after checking it again.
//!
//! Pid 1 never waits for a helper (a lookup stuck on a filesystem cannot stall it): it
//! keeps serving and reaping, bounds how many helpers run, and kills one that is still
//! alive after [`crate::linux::sandbox`]'s `HELPER_DEADLINE`; the server fails the call closed after its own timeout.

use crate::linux::served::{check_served, FileRefusal, Refusal};
use crate::linux::sys::openat2;
use crate::OpenMode;
use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::Mode;
use std::os::fd::OwnedFd;

/// Lexical check: paths under /proc, /sys and /dev are refused before any lookup.
fn check_path(path: &str) -> Result<(), FileRefusal> {
    if !path.starts_with('/') || path.contains('\0') {
        return Err(FileRefusal::new(
            Refusal::NotRegular,
            "the path must be absolute",
        ));
    }
    let mut parts: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    if let Some(first @ ("proc" | "sys" | "dev")) = parts.first().copied() {
        return Err(FileRefusal::new(
            Refusal::NotRegular,
            format!("files under /{first} are not served"),
        ));
    }
    Ok(())
}

fn refusal(path: &str, e: Errno) -> FileRefusal {
    match e {
        Errno::ENOENT | Errno::ENOTDIR => FileRefusal::new(
            Refusal::NotFound,
            format!("no file {path:?} in the sandbox"),
        ),
        Errno::EACCES | Errno::EPERM => FileRefusal::new(
            Refusal::PermissionDenied,
            format!("the sandbox may not read {path:?}"),
        ),
        Errno::EXDEV => FileRefusal::new(
            Refusal::NotRegular,
            format!("{path:?} crosses a /proc magic link"),
        ),
        Errno::ELOOP => FileRefusal::new(
            Refusal::NotReadable,
            format!("{path:?} loops or crosses a /proc magic link"),
        ),
        other => FileRefusal::new(Refusal::NotReadable, format!("open {path:?}: {other}")),
    }
}

/// Open `path` as the calling process (a helper of the sandbox's pid 1, after
/// `pivot_root`: `/` is the sandbox's root). Returns a read-only fd and the file's size.
pub fn open_in_sandbox(path: &str, mode: OpenMode) -> Result<(OwnedFd, u64), FileRefusal> {
    if mode != OpenMode::Read {
        return Err(FileRefusal::new(
            Refusal::Unsupported,
            "only reads are served so far",
        ));
    }
    check_path(path)?;
    // O_PATH: resolve without opening — no FIFO wait, no device open side effects.
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_NO_MAGICLINKS);
    let pathfd = openat2(nix::fcntl::AT_FDCWD, path, how).map_err(|e| refusal(path, e))?;
    check_served(&pathfd)
        .map_err(|r| FileRefusal::new(r.reason, format!("{path:?}: {}", r.message)))?;
    // Reopen that very inode for reading: the permission check is the sandbox's.
    let fd = nix::fcntl::open(
        format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&pathfd)).as_str(),
        OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| refusal(path, e))?;
    let size = check_served(&fd)
        .map_err(|r| FileRefusal::new(r.reason, format!("{path:?}: {}", r.message)))?;
    Ok((fd, size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_sys_dev_are_refused_lexically() {
        for p in [
            "/proc/kallsyms",
            "/sys/x",
            "/dev/zero",
            "/tmp/../proc/1/environ",
            "//dev/null",
            "/./sys",
        ] {
            assert_eq!(
                check_path(p).unwrap_err().reason,
                Refusal::NotRegular,
                "{p}"
            );
        }
        for p in ["/workspace/proc", "/tmp/dev", "/procfoo/x"] {
            assert!(check_path(p).is_ok(), "{p}");
        }
        assert!(check_path("relative").is_err());
    }
}
