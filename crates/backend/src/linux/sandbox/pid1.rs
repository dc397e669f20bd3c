//! A sandbox's pid 1, forked by its shim ([`super::shim`]) inside the new namespaces: it
//! builds the root and pivots into it ([`super::rootfs`]), hardens itself, then serves the
//! control socket — spawning processes with the stdio fds the server passed, reaping every
//! zombie, reporting exits and forking file helpers. When the server goes away (control
//! socket EOF) it exits, and with it every process of its pid namespace.

use super::file_helpers::{file_op, open_file, Helpers};
use super::rootfs::{self, SetupError};
use crate::linux::config::{InitConfig, CONTROL_FD};
use crate::linux::protocol::{self, Reply, Request};
use crate::linux::served;
use crate::linux::sys;
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use std::collections::HashMap;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

pub(super) fn run_pid1(
    cfg: &InitConfig,
    net: NetSetup,
    (image_lower, snapshot, volumes): (Option<OwnedFd>, Option<OwnedFd>, Vec<OwnedFd>),
    devs: Option<OwnedFd>,
) -> Result<(), SetupError> {
    // Die with the shim (and so with the server): the pid namespace goes with us.
    sys::kill_with_parent().map_err(|e| format!("set parent-death signal: {e}"))?;
    seal_control_socket(control_fd(), sys::set_cloexec)?;
    // Block SIGCHLD and take it through a signalfd so the loop below is a plain poll().
    let mut mask = SigSet::empty();
    mask.add(Signal::SIGCHLD);
    mask.thread_block()
        .map_err(|e| format!("sigprocmask: {e}"))?;
    let sfd = SignalFd::with_flags(&mask, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
        .map_err(|e| format!("signalfd: {e}"))?;

    // The tun device is created while the host's /dev/net/tun is still reachable.
    let tun = match net {
        NetSetup::Done(tun) => tun,
        NetSetup::InSandbox => {
            super::netif::loopback_up().map_err(|e| format!("loopback up: {e}"))?;
            match &cfg.tun {
                Some(t) => Some(super::netif::create_tun(t).map_err(|e| format!("network: {e}"))?),
                None => None,
            }
        }
    };
    let (extra_writable, upper) = rootfs::build(cfg, (image_lower, snapshot, volumes), devs)?;
    nix::unistd::sethostname(&cfg.hostname).map_err(|e| format!("sethostname: {e}"))?;
    // Stdin of every command started without input, opened once, before any sandbox
    // process exists (so before anything could replace the node).
    let null = open_own_null()?;

    let info = super::harden::apply(&extra_writable)?;
    // The tun device, then the image root's upper directory (for snapshots).
    let fds: Vec<i32> = tun
        .iter()
        .chain(upper.iter())
        .map(|t| t.as_raw_fd())
        .collect();
    protocol::send(CONTROL_FD, &Reply::Ready { info }, &fds)
        .map_err(|e| format!("control socket: {e}"))?;
    // The server holds them now; pid 1 keeps no copy its children could inherit.
    drop(tun);
    drop(upper);
    // Idle until the first request: give back the page tables of setup's code (trim.rs).
    super::trim::idle();
    Ok(serve(&sfd, &mask, &null)?)
}

/// The sandbox's own `/dev/null` (its device node, `devnodes.rs`), checked to be the null
/// device: a command's stdin when it gets no input ([`Request::Spawn`]'s `stdin_null`).
fn open_own_null() -> Result<OwnedFd, String> {
    let file = std::fs::File::open("/dev/null").map_err(|e| format!("open /dev/null: {e}"))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("stat /dev/null: {e}"))?;
    let rdev = std::os::unix::fs::MetadataExt::rdev(&meta);
    let is_char = std::os::unix::fs::FileTypeExt::is_char_device(&meta.file_type());
    if !is_char || nix::sys::stat::major(rdev) != 1 || nix::sys::stat::minor(rdev) != 3 {
        return Err("/dev/null is not the null device".into());
    }
    Ok(file.into())
}

/// Main loop of pid 1: spawn on request, reap everything, report exits, and start file
/// helpers (never waiting for one: a helper past its deadline is killed).
fn serve(sfd: &SignalFd, mask: &SigSet, null: &OwnedFd) -> Result<(), String> {
    let mut running: HashMap<i32, u64> = HashMap::new();
    let mut helpers = Helpers::new();
    loop {
        let mut fds = [
            nix::poll::PollFd::new(control_fd(), nix::poll::PollFlags::POLLIN),
            nix::poll::PollFd::new(sfd.as_fd(), nix::poll::PollFlags::POLLIN),
        ];
        let timeout = if helpers.is_empty() {
            nix::poll::PollTimeout::NONE
        } else {
            nix::poll::PollTimeout::from(1000u16)
        };
        match nix::poll::poll(&mut fds, timeout) {
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(format!("poll: {e}")),
        }
        let control_ready = fds[0].revents().map(|r| !r.is_empty()).unwrap_or(false);
        let child_ready = fds[1].revents().map(|r| !r.is_empty()).unwrap_or(false);
        if child_ready {
            while let Ok(Some(_)) = sfd.read_signal() {}
            reap(&mut running, &mut helpers)?;
        }
        for (pid, helper) in helpers.iter_mut() {
            if helper.started.elapsed() > helper.deadline && !helper.killed {
                // A helper this process forked and has not reaped yet (so the pid is ours).
                let _ = sys::kill(*pid, Signal::SIGKILL);
                helper.killed = true;
                // Fail the request closed now (a late answer of the helper is ignored).
                let refusal = served::FileRefusal::new(
                    served::Refusal::NotReadable,
                    "the file request took too long",
                );
                let mut replies = vec![];
                if helper.op {
                    for id in std::iter::once(helper.id).chain(helper.done_id) {
                        let result = Err(refusal.clone());
                        replies.push(Reply::FileDone { id, result });
                    }
                } else {
                    let result = Err(refusal.clone());
                    replies.push(Reply::Opened {
                        id: helper.id,
                        result,
                    });
                }
                for reply in replies {
                    protocol::send(CONTROL_FD, &reply, &[])
                        .map_err(|e| format!("control socket: {e}"))?;
                }
            }
        }
        if control_ready {
            match protocol::recv::<Request>(CONTROL_FD) {
                Ok(Some((Request::OpenFile { id, path, mode }, _))) => {
                    open_file(id, &path, mode, &mut helpers)?
                }
                Ok(Some((
                    Request::FileOp {
                        id,
                        done_id,
                        file_op: op,
                    },
                    fds,
                ))) => file_op(id, done_id, op, fds, &mut helpers)?,
                Ok(Some((req, fds))) => handle(req, fds, mask, null, &mut running)?,
                // Server gone: returning ends pid 1 and with it the whole sandbox.
                Ok(None) => return Ok(()),
                Err(e) => return Err(format!("control socket: {e}")),
            }
        }
    }
}

fn control_fd() -> std::os::fd::BorrowedFd<'static> {
    // SAFETY: CONTROL_FD is installed by the server before exec and stays open for the
    // whole life of pid 1.
    unsafe { std::os::fd::BorrowedFd::borrow_raw(CONTROL_FD) }
}

fn reap(running: &mut HashMap<i32, u64>, helpers: &mut Helpers) -> Result<(), String> {
    loop {
        match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) | Err(nix::errno::Errno::ECHILD) => return Ok(()),
            Ok(WaitStatus::Exited(pid, code)) => {
                helpers.remove(&pid.as_raw());
                report(running, pid, Some(code), None)?
            }
            Ok(WaitStatus::Signaled(pid, sig, _)) => {
                helpers.remove(&pid.as_raw());
                report(running, pid, None, Some(sig as i32))?
            }
            Ok(_) => continue,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(format!("waitpid: {e}")),
        }
    }
}

fn report(
    running: &mut HashMap<i32, u64>,
    pid: Pid,
    code: Option<i32>,
    signal: Option<i32>,
) -> Result<(), String> {
    if let Some(id) = running.remove(&pid.as_raw()) {
        protocol::send(CONTROL_FD, &Reply::Exited { id, code, signal }, &[])
            .map_err(|e| format!("control socket: {e}"))?;
    }
    Ok(())
}

fn handle(
    req: Request,
    fds: Vec<OwnedFd>,
    mask: &SigSet,
    null: &OwnedFd,
    running: &mut HashMap<i32, u64>,
) -> Result<(), String> {
    match req {
        Request::Spawn {
            id,
            argv,
            env,
            cwd,
            tty,
            stdin_null,
        } => {
            let stdio = match (stdin_null, fds.as_slice()) {
                (true, [out, err]) => Ok([null.as_fd(), out.as_fd(), err.as_fd()]),
                (false, [stdin, out, err]) => Ok([stdin.as_fd(), out.as_fd(), err.as_fd()]),
                _ => Err(format!("spawn: unexpected {} stdio fds", fds.len())),
            };
            let pid = stdio.and_then(|stdio| {
                crate::linux::sys::spawn::spawn(&argv, &env, &cwd, stdio, tty, mask)
            });
            match pid {
                Ok(pid) => {
                    drop(fds);
                    running.insert(pid.as_raw(), id);
                    protocol::send(
                        CONTROL_FD,
                        &Reply::Spawned {
                            id,
                            pid: pid.as_raw(),
                        },
                        &[],
                    )
                    .map_err(|e| format!("control socket: {e}"))
                }
                // Could not even fork (e.g. the pids limit): tell the user on the command's
                // own stderr, and report an exit the server turns into FAILED.
                Err(e) => {
                    if let Some(stderr) = fds.last() {
                        let msg = format!(
                            "cleanroom: cannot start {:?}: {e}\n",
                            argv.first().map(String::as_str).unwrap_or("")
                        );
                        let _ = nix::unistd::write(stderr, msg.as_bytes());
                    }
                    drop(fds);
                    protocol::send(
                        CONTROL_FD,
                        &Reply::Exited {
                            id,
                            code: Some(126),
                            signal: None,
                        },
                        &[],
                    )
                    .map_err(|e| format!("control socket: {e}"))
                }
            }
        }
        // Only meaningful during setup; ignore a stray one. (Opens are dispatched by `serve`.)
        Request::IdsMapped
        | Request::Configure(_)
        | Request::OpenFile { .. }
        | Request::FileOp { .. } => Ok(()),
        Request::Signal { id, signal } => {
            if let Some((&pid, _)) = running.iter().find(|(_, v)| **v == id) {
                // A pid/pgrp we spawned; gone already is fine.
                let _ = sys::signal_group_or_process(pid, signal);
            }
            Ok(())
        }
    }
}

/// Make the control socket close-on-exec so it never reaches a user process; if that
/// fails, the sandbox does not start.
fn seal_control_socket<'a>(
    control: std::os::fd::BorrowedFd<'a>,
    set_cloexec: impl FnOnce(std::os::fd::BorrowedFd<'a>) -> nix::Result<()>,
) -> Result<(), String> {
    set_cloexec(control).map_err(|e| format!("make the control socket close-on-exec: {e}"))
}

/// Who configures the sandbox's network namespace.
pub(super) enum NetSetup {
    /// The shim did, as host root; here is the tun fd (if any) for the server.
    Done(Option<OwnedFd>),
    /// pid 1 does, as root of the sandbox's own user namespace (unprivileged server).
    InSandbox,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_control_socket_that_stays_inheritable_fails_the_launch() {
        let (a, _b) = nix::unistd::pipe().unwrap();
        let err = seal_control_socket(a.as_fd(), |_| Err(nix::errno::Errno::EBADF)).unwrap_err();
        assert!(err.contains("close-on-exec"), "{err}");
        // The real call on a real fd succeeds and sets the flag.
        seal_control_socket(a.as_fd(), sys::set_cloexec).unwrap();
        let flags = nix::fcntl::fcntl(a.as_fd(), nix::fcntl::FcntlArg::F_GETFD).unwrap();
        assert_ne!(flags & libc::FD_CLOEXEC, 0);
    }
}
