//! The code of every sandbox's shim and pid 1, forked by `cleanroom __sandbox-init` (the
//! zygote).
//!
//! The server executes the binary once as the zygote ([`crate::linux::zygote`]), single-threaded
//! (dispatched before any async runtime exists), so forking is safe. Shape:
//!
//! ```text
//! server ──exec once──> zygote ──fork──> shim (host pid ns)   unshare(mnt,pid,net,uts,ipc,cgroup[,user])
//!                                         └─fork─> pid 1 (sandbox)  rootfs + pivot_root, lo up, hostname
//!                                                    └─fork/exec──> user processes (own session / pgrp)
//! ```
//!
//! The shim only reports pid 1's host pid and waits for it. Pid 1 reaps every zombie,
//! spawns processes on request with the stdio fds the server passed, and reports exits.
//! If the server goes away (control socket EOF) pid 1 exits, and the kernel kills every
//! process of the pid namespace with it: nothing of the sandbox can outlive its pid 1.

use super::file_helpers::{file_op, open_file, Helpers};
use super::rootfs::{self, SetupError};
use crate::linux::config::{InitConfig, CONTROL_FD};
use crate::linux::protocol::{self, Reply, Request, SetupFailure};
use crate::linux::served;
use crate::linux::sys;
use nix::sched::{unshare, CloneFlags};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{fork, ForkResult, Pid};
use std::collections::HashMap;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

/// A shim, forked by the zygote with its control socket on fd 3 and nothing else of the
/// zygote's (see [`crate::linux::zygote`]); never returns.
pub fn shim_main() -> ! {
    let code = match run_shim() {
        Ok(code) => code,
        Err(e) => {
            let _ = protocol::send(
                CONTROL_FD,
                &Reply::SetupFailed {
                    error: e,
                    kind: SetupFailure::Internal,
                },
                &[],
            );
            125
        }
    };
    std::process::exit(code)
}

fn run_shim() -> Result<i32, String> {
    // Nothing but stdio and the control socket may reach the sandbox. Both steps fail the
    // launch if the kernel refuses (an fd the server leaked must never reach a sandbox).
    // The inherited fds are closed before the configuration arrives: it brings fds of its
    // own for the shim to keep.
    let parent = nix::unistd::getppid();
    rearm_parent_death(parent)?;
    close_inherited_fds(sys::close_range)?;
    // `nspawn_locks`: systemd-nspawn's locks on the sandbox's host ids (nspawn_ids.rs),
    // held by this process until it exits, i.e. until every process of the sandbox is gone.
    let (cfg, nspawn_locks): (InitConfig, Vec<OwnedFd>) =
        match protocol::recv::<Request>(CONTROL_FD) {
            Ok(Some((Request::Configure(cfg), fds))) => (*cfg, fds),
            Ok(other) => return Err(format!("expected a sandbox config, got {other:?}")),
            Err(e) => return Err(format!("control socket: {e}")),
        };

    // Join the sandbox's cgroups first: pid 1 and everything it forks are limited from birth.
    for dir in &cfg.cgroups {
        std::fs::write(dir.join("cgroup.procs"), "0")
            .map_err(|e| format!("join cgroup {}: {e}", dir.display()))?;
    }
    let mut flags = CloneFlags::CLONE_NEWNS
        | CloneFlags::CLONE_NEWPID
        | CloneFlags::CLONE_NEWUTS
        | CloneFlags::CLONE_NEWIPC
        | CloneFlags::CLONE_NEWCGROUP;
    // A root server builds the network namespace while the shim is still host root: the
    // namespace then belongs to the host's user namespace, so nothing inside the sandbox —
    // not even its root — can ever reconfigure its interfaces or routes, and the tun
    // device (often mode 0600) can be opened.
    let net = if cfg.id_range.is_some() {
        unshare(CloneFlags::CLONE_NEWNET).map_err(|e| format!("unshare(net): {e}"))?;
        super::netif::loopback_up().map_err(|e| format!("loopback up: {e}"))?;
        let tun = match &cfg.tun {
            Some(t) => Some(super::netif::create_tun(t).map_err(|e| format!("network: {e}"))?),
            None => None,
        };
        NetSetup::Done(tun)
    } else {
        flags |= CloneFlags::CLONE_NEWNET;
        NetSetup::InSandbox
    };
    // Still host root in the host's user namespace: the sandbox's /dev filesystem with
    // its own device nodes (devnodes.rs); without it pid 1 mounts its own /dev and binds
    // the host's nodes.
    let devs = cfg.id_range.as_ref().and_then(|r| {
        let made = super::devnodes::make(
            super::rootfs::DEVICES,
            super::scratch::DEV_BYTES,
            r.host_base,
        );
        made.map_err(|e| {
            eprintln!("cleanroom sandbox: own /dev unavailable ({e}), using the host's")
        })
        .ok()
    });
    let (mut image_lower, mut snapshot) = (None, None);
    if cfg.id_range.is_some() {
        // The server's idmapped mounts, in this order: the image's, the snapshot's.
        let mut trees = enter_mapped_user_namespace()?.into_iter();
        if cfg.image_rootfs.is_some() {
            image_lower = trees.next();
        }
        if cfg.restore.is_some() {
            snapshot = trees.next();
        }
        // Becoming the namespace's root changed our euid, which clears the parent-death
        // signal: arm it again, so the zygote's death still ends this sandbox.
        rearm_parent_death(parent)?;
    } else if cfg.user_namespace {
        let (uid, gid) = (nix::unistd::geteuid(), nix::unistd::getegid());
        unshare(CloneFlags::CLONE_NEWUSER).map_err(|e| format!("unshare(user): {e}"))?;
        std::fs::write("/proc/self/setgroups", "deny").map_err(|e| format!("setgroups: {e}"))?;
        std::fs::write("/proc/self/uid_map", format!("0 {uid} 1"))
            .map_err(|e| format!("uid_map: {e}"))?;
        std::fs::write("/proc/self/gid_map", format!("0 {gid} 1"))
            .map_err(|e| format!("gid_map: {e}"))?;
    }
    unshare(flags).map_err(|e| format!("unshare(namespaces): {e}"))?;

    // SAFETY: this process is single-threaded (no runtime was started), so fork is sound.
    match unsafe { fork() }.map_err(|e| format!("fork: {e}"))? {
        ForkResult::Child => {
            // The shim holds nspawn's locks; nothing in the sandbox may.
            drop(nspawn_locks);
            let code = match run_pid1(&cfg, net, image_lower, snapshot, devs) {
                Ok(()) => 0,
                Err(e) => {
                    let reply = Reply::SetupFailed {
                        error: e.message,
                        kind: e.kind,
                    };
                    let _ = protocol::send(CONTROL_FD, &reply, &[]);
                    125
                }
            };
            std::process::exit(code)
        }
        ForkResult::Parent { child } => {
            // pid 1 has its own copies of the tun fd and the /dev filesystem.
            drop(net);
            drop(devs);
            // From here SIGTERM is the server's "end this sandbox" (shimwait.rs).
            let term = super::shim_wait::take_term()?;
            protocol::send(
                CONTROL_FD,
                &Reply::Started {
                    init_pid: child.as_raw(),
                },
                &[],
            )
            .map_err(|e| format!("control socket: {e}"))?;
            // The shim keeps nothing open that the sandbox needs; drop the control socket
            // so the server sees EOF as soon as pid 1 is gone.
            let _ = nix::unistd::close(CONTROL_FD);
            // Idle from here on: give back the page tables of setup's code (trim.rs).
            super::trim::idle();
            let code = super::shim_wait::wait_pid1(child, &term);
            drop(nspawn_locks); // only now: the sandbox's processes are gone
            code
        }
    }
}

/// Die with `parent` (the zygote); fail if it is already gone (we were reparented).
fn rearm_parent_death(parent: Pid) -> Result<(), String> {
    sys::kill_with_parent().map_err(|e| format!("set parent-death signal: {e}"))?;
    if nix::unistd::getppid() != parent {
        return Err("the sandbox launcher exited during setup".into());
    }
    Ok(())
}

/// Root server: a user namespace whose ids 0..count are the sandbox's private host range.
/// Only a process in the parent namespace with CAP_SETUID may write such a map, so the
/// server writes it while the shim waits, then the shim becomes the namespace's root.
/// With an image, the server's confirmation carries an idmapped, detached mount of the
/// image (host ids 0..65535 shown as this sandbox's ids), returned for pid 1 to attach.
fn enter_mapped_user_namespace() -> Result<Vec<OwnedFd>, String> {
    unshare(CloneFlags::CLONE_NEWUSER).map_err(|e| format!("unshare(user): {e}"))?;
    let shim_pid = std::process::id() as i32;
    protocol::send(CONTROL_FD, &Reply::NeedIdMap { shim_pid }, &[])
        .map_err(|e| format!("control socket: {e}"))?;
    let lower = match protocol::recv::<Request>(CONTROL_FD) {
        Ok(Some((Request::IdsMapped, fds))) => fds,
        Ok(other) => return Err(format!("expected id map confirmation, got {other:?}")),
        Err(e) => return Err(format!("control socket: {e}")),
    };
    // We hold CAP_SETUID/CAP_SETGID in the new namespace.
    let root_gid = nix::unistd::Gid::from_raw(0);
    let root_uid = nix::unistd::Uid::from_raw(0);
    nix::unistd::setgroups(&[])
        .and_then(|()| nix::unistd::setresgid(root_gid, root_gid, root_gid))
        .and_then(|()| nix::unistd::setresuid(root_uid, root_uid, root_uid))
        .map_err(|e| format!("become namespace root: {e}"))?;
    Ok(lower)
}

/// Close every fd above the control socket (whatever the server's process leaked). The
/// call is a parameter so the fail-closed path is testable without breaking the kernel.
fn close_inherited_fds(
    close_range: impl FnOnce(u32, u32) -> std::io::Result<()>,
) -> Result<(), String> {
    close_range(CONTROL_FD as u32 + 1, u32::MAX)
        .map_err(|e| format!("close inherited fds (close_range): {e}"))
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
enum NetSetup {
    /// The shim did, as host root; here is the tun fd (if any) for the server.
    Done(Option<OwnedFd>),
    /// pid 1 does, as root of the sandbox's own user namespace (unprivileged server).
    InSandbox,
}

fn run_pid1(
    cfg: &InitConfig,
    net: NetSetup,
    image_lower: Option<OwnedFd>,
    snapshot: Option<OwnedFd>,
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
    let (extra_writable, upper) = rootfs::build(cfg, image_lower, snapshot, devs)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_close_range_fails_the_launch() {
        let err = close_inherited_fds(|first, last| {
            assert_eq!((first, last), (CONTROL_FD as u32 + 1, u32::MAX));
            Err(std::io::Error::from_raw_os_error(libc::ENOSYS))
        })
        .unwrap_err();
        assert!(err.contains("close_range"), "{err}");
        // A refusal of any kind (seccomp's EPERM too) is a failure, not "best effort".
        assert!(
            close_inherited_fds(|_, _| Err(std::io::Error::from_raw_os_error(libc::EPERM)))
                .is_err()
        );
        assert!(close_inherited_fds(|_, _| Ok(())).is_ok());
    }

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
