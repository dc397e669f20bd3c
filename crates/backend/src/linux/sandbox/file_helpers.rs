//! pid 1's file helpers: for each files-API request (open a file, an operation, an archive
//! stream), pid 1 forks a child that acts with the sandbox's own identity inside its root
//! and answers the server itself over the control socket; pid 1 goes straight back to its
//! loop, reaps them, and kills the ones that overrun their deadline (`pid1::serve`).

use crate::linux::config::CONTROL_FD;
use crate::linux::helper::archive;
use crate::linux::helper::{ops, paths};
use crate::linux::protocol::{self, Reply};
use crate::linux::served;
use nix::unistd::{fork, ForkResult};
use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// Longest a helper may live before pid 1 kills it.
pub const HELPER_DEADLINE: Duration = Duration::from_secs(10);
/// Most helpers alive at once in one sandbox; more requests are refused.
pub const MAX_HELPERS: usize = 8;

/// Fork a helper that opens `path` with the sandbox's identity and answers the server
/// itself (the fd travels with its reply); pid 1 goes straight back to its loop.
pub(super) fn open_file(
    id: u64,
    path: &str,
    mode: crate::OpenMode,
    helpers: &mut Helpers,
) -> Result<(), String> {
    let refuse = |message: &str| {
        let result = Err(served::FileRefusal::new(
            served::Refusal::NotReadable,
            message,
        ));
        protocol::send(CONTROL_FD, &Reply::Opened { id, result }, &[])
            .map_err(|e| format!("control socket: {e}"))
    };
    if helpers.len() >= MAX_HELPERS {
        return refuse("too many file requests in flight in this sandbox");
    }
    // SAFETY: pid 1 is single-threaded, so the child may allocate; it only opens, sends one
    // message and `_exit`s.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            let (result, fd) = match crate::linux::helper::open::open_in_sandbox(path, mode) {
                Ok((fd, size)) => (Ok(size), Some(fd)),
                Err(refusal) => (Err(refusal), None),
            };
            let fds: Vec<i32> = fd.iter().map(|f| f.as_raw_fd()).collect();
            let code = match protocol::send(CONTROL_FD, &Reply::Opened { id, result }, &fds) {
                Ok(()) => 0,
                Err(_) => 1,
            };
            // SAFETY: leave without running pid 1's destructors or atexit handlers.
            crate::linux::sys::exit_now(code)
        }
        Ok(ForkResult::Parent { child }) => {
            let helper = Helper {
                id,
                done_id: None,
                op: false,
                deadline: HELPER_DEADLINE,
                started: Instant::now(),
                killed: false,
            };
            helpers.insert(child.as_raw(), helper);
            Ok(())
        }
        // E.g. the sandbox's pids limit: fail this request closed, keep serving.
        Err(e) => refuse(&format!("cannot start a file helper: {e}")),
    }
}

/// Fork a helper that carries out a files-API operation with the sandbox's identity and
/// answers the server itself ([`Reply::FileDone`], fds attached as the operation says; a
/// stream answers once when it starts and once, for `done_id`, when it ends).
pub(super) fn file_op(
    id: u64,
    done_id: Option<u64>,
    op: crate::files::FileOp,
    fds: Vec<OwnedFd>,
    helpers: &mut Helpers,
) -> Result<(), String> {
    let refuse = |message: &str| {
        let refusal = served::FileRefusal::new(served::Refusal::NotReadable, message);
        for id in std::iter::once(id).chain(done_id) {
            let reply = Reply::FileDone {
                id,
                result: Err(refusal.clone()),
            };
            protocol::send(CONTROL_FD, &reply, &[]).map_err(|e| format!("control socket: {e}"))?;
        }
        Ok(())
    };
    if helpers.len() >= MAX_HELPERS {
        return refuse("too many file requests in flight in this sandbox");
    }
    let deadline = op.deadline();
    // SAFETY: pid 1 is single-threaded, so the child may allocate; it carries out one
    // operation, sends its answers and `_exit`s.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            // A reader that went away is an error to report (EPIPE), not a silent death;
            // modes are exactly the ones asked for.
            // SAFETY: setting a signal disposition in a single-threaded child.
            crate::linux::sys::ignore_sigpipe();
            nix::sys::stat::umask(nix::sys::stat::Mode::empty());
            let code = match file_helper(id, done_id, op, fds) {
                Ok(()) => 0,
                Err(_) => 1,
            };
            // SAFETY: leave without running pid 1's destructors or atexit handlers.
            crate::linux::sys::exit_now(code)
        }
        Ok(ForkResult::Parent { child }) => {
            drop(fds);
            let helper = Helper {
                id,
                done_id,
                op: true,
                deadline,
                started: Instant::now(),
                killed: false,
            };
            helpers.insert(child.as_raw(), helper);
            Ok(())
        }
        // E.g. the sandbox's pids limit: fail this request closed, keep serving.
        Err(e) => {
            drop(fds);
            refuse(&format!("cannot start a file helper: {e}"))
        }
    }
}

/// The body of a file helper (in the forked child).
fn file_helper(
    id: u64,
    done_id: Option<u64>,
    op: crate::files::FileOp,
    mut fds: Vec<OwnedFd>,
) -> std::io::Result<()> {
    use crate::files::{FileAnswer, FileOp};
    let send = |id: u64, result: Result<FileAnswer, served::FileRefusal>, fds: &[i32]| {
        protocol::send(CONTROL_FD, &Reply::FileDone { id, result }, fds)
    };
    match op {
        FileOp::Archive { path } => {
            let Some(out) = fds.pop().filter(|_| fds.is_empty()) else {
                let refusal = paths::invalid("an archive needs exactly one pipe");
                return send(id, Err(refusal), &[]);
            };
            let mut started = false;
            let mut on_start = || {
                started = true;
                let _ = send(id, Ok(FileAnswer::Started), &[]);
            };
            let result = archive::archive(&path, out, &mut on_start);
            match (started, done_id) {
                (true, Some(done)) => send(done, result, &[]),
                _ => send(id, result, &[]),
            }
        }
        FileOp::Extract { path, size } => {
            let result = match fds.pop().filter(|_| fds.is_empty()) {
                Some(file) => archive::extract(&path, size, file),
                None => Err(paths::invalid("an extract needs exactly one file")),
            };
            send(id, result, &[])
        }
        op => match ops::run(&op, &fds) {
            Ok((answer, out)) => {
                drop(fds);
                let raw: Vec<i32> = out.iter().map(|f| f.as_raw_fd()).collect();
                send(id, Ok(answer), &raw).or_else(|e| {
                    // E.g. an answer too large for the control socket: still answer.
                    let refusal = paths::invalid(format!("the answer could not be sent: {e}"));
                    send(id, Err(refusal), &[])
                })
            }
            Err(refusal) => send(id, Err(refusal), &[]),
        },
    }
}

/// A file helper pid 1 forked: the request it answers (and, for a stream, the id of its
/// end), whether it is a files-API operation, how long it may live, when it started,
/// whether it was already killed for running too long.
pub(super) struct Helper {
    pub(super) id: u64,
    pub(super) done_id: Option<u64>,
    pub(super) op: bool,
    pub(super) deadline: std::time::Duration,
    pub(super) started: Instant,
    pub(super) killed: bool,
}

/// pid 1's file helpers in flight, by pid.
pub(super) type Helpers = HashMap<i32, Helper>;
