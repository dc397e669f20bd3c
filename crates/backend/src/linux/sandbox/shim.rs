//! A sandbox's shim: forked by the zygote, it enters the sandbox's namespaces and forks
//! pid 1 ([`super::pid1`]), then only waits for it.
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

use super::pid1::NetSetup;
use crate::linux::config::{InitConfig, CONTROL_FD};
use crate::linux::protocol::{self, Reply, Request, SetupFailure};
use crate::linux::sys;
use nix::sched::{unshare, CloneFlags};
use nix::unistd::{fork, ForkResult, Pid};
use std::os::fd::OwnedFd;

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
            // The server makes the veth pair into this namespace while it answers our
            // id-map request (host/gateway_ns.rs), before pid 1 exists.
            Some(t) if t.plane == crate::Plane::Kernel => {
                super::netif::disable_ipv6();
                None
            }
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
    let (mut image_lower, mut snapshot, mut volumes) = (None, None, Vec::new());
    if cfg.id_range.is_some() {
        // The server's idmapped mounts, in this order: the image's, the snapshot's.
        let mut trees = enter_mapped_user_namespace()?.into_iter();
        if cfg.image_rootfs.is_some() {
            image_lower = trees.next();
        }
        if cfg.restore.is_some() {
            snapshot = trees.next();
        }
        // Then one per named volume, in the config's order.
        volumes = trees.collect();
        if volumes.len() != cfg.volumes.len() {
            return Err(format!(
                "expected {} volume mounts from the server, got {}",
                cfg.volumes.len(),
                volumes.len()
            ));
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
            let code =
                match super::pid1::run_pid1(&cfg, net, (image_lower, snapshot, volumes), devs) {
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
}
