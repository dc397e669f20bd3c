//! Raw process and signal calls: the parent-death signal, securebits, signals by number,
//! the zygote's reset of inherited signal state, and what runs between fork and exec of
//! the zygote (async-signal-safe only, no allocation).

use super::check;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// Ask the kernel to SIGKILL this process when its parent dies (so a sandbox never
/// outlives the shim, nor the shim the server).
pub fn kill_with_parent() -> nix::Result<()> {
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
}

/// Lock the securebits so uid 0 gains no capabilities from exec, for good:
/// SECBIT_NOROOT|_LOCKED, SECBIT_NO_SETUID_FIXUP|_LOCKED, SECBIT_KEEP_CAPS_LOCKED.
/// (nix has no securebits call.)
pub fn lock_securebits() -> io::Result<()> {
    const BITS: libc::c_ulong = 0x01 | 0x02 | 0x04 | 0x08 | 0x20;
    // SAFETY: prctl(PR_SET_SECUREBITS) with constant integer arguments; no pointers.
    let rc = unsafe { libc::prctl(libc::PR_SET_SECUREBITS, BITS, 0, 0, 0) };
    check(rc.into()).map(drop)
}

/// Send `signal` to `pid` (a positive pid). Errors (already gone) are the caller's to judge.
pub fn kill(pid: i32, signal: nix::sys::signal::Signal) -> nix::Result<()> {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal)
}

/// Send the raw signal number `signal` (any, real-time ones included, which nix's
/// `Signal` cannot name) to process group `pid`, or to process `pid` if it leads none.
pub fn signal_group_or_process(pid: i32, signal: i32) -> io::Result<()> {
    // SAFETY: kill(2) takes integers only and touches no memory of this process.
    if unsafe { libc::kill(-pid, signal) } == 0 {
        return Ok(());
    }
    // SAFETY: as above.
    check(unsafe { libc::kill(pid, signal) }.into()).map(drop)
}

/// Every signal back to its default disposition (SIGPIPE ignored, as the Rust runtime
/// sets it in any freshly exec'd process) and an empty mask: nothing of the zygote's (or
/// of whatever the server ignored when it exec'd the zygote) reaches a sandbox.
pub fn reset_signals() -> std::io::Result<()> {
    /// The kernel's `struct sigaction` (x86_64, aarch64): the raw syscall is used because
    /// glibc refuses to touch its internal signals (32, 33), which an ignored disposition
    /// inherited across exec can still name.
    #[repr(C)]
    struct KernelSigaction {
        handler: libc::sighandler_t,
        flags: libc::c_ulong,
        restorer: usize,
        mask: u64,
    }
    for sig in 1..=64 {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        let act = KernelSigaction {
            handler: if sig == libc::SIGPIPE {
                libc::SIG_IGN
            } else {
                libc::SIG_DFL
            },
            flags: 0,
            restorer: 0,
            mask: 0,
        };
        // SAFETY: rt_sigaction with a valid pointer to a fully initialised kernel struct
        // of the size the kernel expects (sigset of 8 bytes); no handler code installed.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                sig,
                &act as *const KernelSigaction,
                std::ptr::null_mut::<KernelSigaction>(),
                8usize,
            )
        };
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    nix::sys::signal::SigSet::empty()
        .thread_set_mask()
        .map_err(std::io::Error::from)
}

/// Make `fd` also open as `target` (dup2(2); the copy is not close-on-exec).
pub fn dup2_onto(fd: BorrowedFd<'_>, target: RawFd) -> io::Result<()> {
    // SAFETY: dup2 on an fd this process holds; whatever was at `target` is the caller's
    // to give up (it names the number on purpose).
    check(unsafe { libc::dup2(fd.as_raw_fd(), target) }.into()).map(drop)
}

/// A close-on-exec copy of `fd` numbered at least `min` (fcntl F_DUPFD_CLOEXEC): the
/// kernel grows the descriptor table to cover it.
pub fn dup_at_least(fd: BorrowedFd<'_>, min: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC on a descriptor we hold returns a new descriptor or -1.
    let dup = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, min) };
    check(dup.into())?;
    // SAFETY: `dup` was just returned by fcntl and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(dup) })
}

/// `_exit(2)`: end a forked child now, running no destructor or atexit handler of the
/// parent's copy of the process.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit takes an integer and does not return.
    unsafe { libc::_exit(code) }
}

/// Ignore SIGPIPE in this process (a file helper writing to a pipe the server closed gets
/// EPIPE, not death).
pub fn ignore_sigpipe() {
    // SAFETY: installs SIG_IGN, no handler code.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
}

/// Drop the page-table entries of `len` bytes at `start` (madvise MADV_DONTNEED); `true`
/// when the kernel did.
///
/// # Safety
/// The range must be one current private, read-only, file-backed mapping of this process
/// without anonymous pages, so dropping its entries loses no data.
pub unsafe fn drop_mapping_pages(start: usize, len: usize) -> bool {
    // SAFETY: the caller vouches for the range (see above).
    unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_DONTNEED) == 0 }
}

/// The clock ticks per second of `/proc` CPU times (sysconf _SC_CLK_TCK), at least 1.
pub fn clock_ticks() -> u64 {
    // SAFETY: sysconf takes an integer and returns one.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64
}

/// In the zygote's child, between fork and exec (async-signal-safe calls only, nothing
/// allocated): `child_raw` becomes the control socket at [`CONTROL_FD`] (not
/// close-on-exec), every fd above it closes at the exec, `RLIMIT_NOFILE` becomes
/// `(soft, hard)`, and the child dies with the server (`server`), failing if the server is
/// already gone.
///
/// [`CONTROL_FD`]: crate::linux::config::CONTROL_FD
pub fn zygote_child_setup(
    child_raw: RawFd,
    (soft, hard): (libc::rlim_t, libc::rlim_t),
    server: nix::unistd::Pid,
) -> io::Result<()> {
    use crate::linux::config::CONTROL_FD;
    // SAFETY: fcntl/dup2/setrlimit/getppid with integers and a pointer to a live rlimit;
    // all async-signal-safe.
    unsafe {
        if child_raw == CONTROL_FD {
            let flags = libc::fcntl(CONTROL_FD, libc::F_GETFD);
            if flags < 0 || libc::fcntl(CONTROL_FD, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                return Err(std::io::Error::last_os_error());
            }
        } else if libc::dup2(child_raw, CONTROL_FD) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // Nothing else of the server's reaches the zygote: fds the server inherited
        // without close-on-exec (from whoever started it) close at the exec.
        super::cloexec_from(CONTROL_FD as u32 + 1)?;
        // The sandboxes' descriptor limit, not the server's raised one (lowering is
        // always allowed).
        let lim = libc::rlimit {
            rlim_cur: soft,
            rlim_max: hard,
        };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        kill_with_parent()?;
        // The server died before the signal was armed: don't outlive it.
        if libc::getppid() != server.as_raw() {
            return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::wait::{waitpid, WaitStatus};
    use nix::unistd::{fork, ForkResult};

    #[test]
    fn reset_signals_clears_ignored_dispositions_and_the_mask() {
        // In a forked child (the test harness is multi-threaded: only raw syscalls there).
        // SAFETY: the child only calls signal/sigprocmask/_exit-level functions.
        match unsafe { fork() }.unwrap() {
            ForkResult::Child => {
                // SAFETY: signal(2)/sigprocmask with constants; then checks and _exit.
                unsafe {
                    libc::signal(libc::SIGTERM, libc::SIG_IGN);
                    libc::signal(libc::SIGHUP, libc::SIG_IGN);
                    // glibc's own signal 32, ignored as an inherited disposition could be.
                    let ign = [libc::SIG_IGN, 0, 0, 0];
                    libc::syscall(libc::SYS_rt_sigaction, 32, ign.as_ptr(), 0usize, 8usize);
                    let mut set: libc::sigset_t = std::mem::zeroed();
                    libc::sigemptyset(&mut set);
                    libc::sigaddset(&mut set, libc::SIGUSR1);
                    libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
                }
                let ok = reset_signals().is_ok();
                // SAFETY: querying dispositions and the mask into zeroed locals.
                let clean = unsafe {
                    let mut old: libc::sigaction = std::mem::zeroed();
                    libc::sigaction(libc::SIGTERM, std::ptr::null(), &mut old);
                    let term_default = old.sa_sigaction == libc::SIG_DFL;
                    libc::sigaction(libc::SIGHUP, std::ptr::null(), &mut old);
                    let hup_default = old.sa_sigaction == libc::SIG_DFL;
                    let mut cur: libc::sigset_t = std::mem::zeroed();
                    libc::sigprocmask(libc::SIG_BLOCK, std::ptr::null(), &mut cur);
                    let mut raw = [1usize; 4];
                    libc::syscall(libc::SYS_rt_sigaction, 32, 0usize, raw.as_mut_ptr(), 8usize);
                    term_default
                        && hup_default
                        && raw[0] == libc::SIG_DFL
                        && libc::sigismember(&cur, libc::SIGUSR1) == 0
                };
                // SAFETY: _exit ends the forked child without running the harness's code.
                unsafe { libc::_exit(if ok && clean { 0 } else { 1 }) }
            }
            ForkResult::Parent { child } => {
                let st = waitpid(child, None).unwrap();
                assert_eq!(st, WaitStatus::Exited(child, 0), "signals leaked");
            }
        }
    }
}
