//! pid 1 of a one-shot gVisor sandbox ([`super::oneshot`]): `cleanroom __gvisor-init first
//! PIDS`, the container's first process, started by `runsc run` with the first execution's
//! stdio. It runs under gVisor's kernel, never on the host.
//!
//! It reads the command (argv, environment, working directory; JSON from the server) from
//! descriptor [`REQUEST_FD`], starts it in a process group of its own with this process's
//! stdio, reports `pid N` and then `exit N` or `signal N` on descriptor [`STATUS_FD`] (a
//! host pipe the server reads, bounded), and from then on is the sandbox's idle init (as
//! [`super::init`]'s: it reaps orphans and serves background spawns, from the start) — so the sandbox
//! outlives its first command exactly as one started the usual way does. Its own stdio
//! goes to `/dev/null` as soon as the command runs: the execution's pipes must reach EOF
//! when the command's side closes them, and no other process of the sandbox may reach
//! them through `/proc/1/fd`. The environment and the command line never are pid 1's
//! own (`/proc/1/environ`, `/proc/1/cmdline` read as the idle init's would).

use nix::sys::signal::{SigSet, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;

/// The word after [`super::bundle::INIT_ARG`] that selects this init.
pub const FIRST_ARG: &str = "first";
/// The guest descriptor the command's request arrives on (`runsc run --pass-fd`).
pub const REQUEST_FD: i32 = 3;
/// The guest descriptor the command's pid and status go out on.
pub const STATUS_FD: i32 = 4;
/// Largest request read (the server sends far less: an execution's argv and environment).
const MAX_REQUEST: u64 = 4 << 20;

/// `runsc exec`'s code when it cannot start the command: kept, so a one-shot command that
/// cannot run reads as it did when it ran through `runsc exec`.
const CANNOT_RUN: i32 = 128;

/// The command, as the server sends it.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Request {
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: String,
}

/// `first PIDS`: never returns (it becomes the idle init once the command has ended).
pub fn main(args: &[String]) -> ! {
    if let [limit] = args {
        super::pids::write_limit(limit);
    }
    let mut set = SigSet::empty();
    set.add(Signal::SIGCHLD);
    // Blocked before the command exists, so its exit is never missed. The command starts
    // with an empty mask and default dispositions (std's spawn resets both).
    let _ = set.thread_block();
    for fd in [REQUEST_FD, STATUS_FD] {
        // SAFETY: fcntl on this process's own descriptor numbers: the command must not
        // inherit either.
        unsafe {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
    // SAFETY: descriptors 3 and 4 are the ones `runsc run --pass-fd` gave this process,
    // owned by nothing else here.
    let (request, mut status) = unsafe {
        (
            std::fs::File::from(OwnedFd::from_raw_fd(REQUEST_FD)),
            std::fs::File::from(OwnedFd::from_raw_fd(STATUS_FD)),
        )
    };
    // Served from the start, as under the idle init: the command may ask for a
    // background process at once (spawn.rs). Started after the block (SIGCHLD stays
    // blocked in its thread).
    super::spawn::serve();
    let command = start(request);
    quiet_stdio();
    match command {
        Ok(pid) => {
            let _ = writeln!(status, "pid {pid}");
            let code = wait_for(pid, &set);
            let _ = match code {
                Ok(code) => writeln!(status, "exit {code}"),
                Err(sig) => writeln!(status, "signal {sig}"),
            };
        }
        Err(()) => {
            let _ = writeln!(status, "exit {CANNOT_RUN}");
        }
    }
    drop(status);
    super::init::reap_forever(set)
}

/// Read the request and start the command in a process group of its own, with this
/// process's stdio; on failure say why on stderr (the execution's), as `runsc exec` did.
fn start(request: std::fs::File) -> Result<Pid, ()> {
    let mut text = Vec::new();
    let read = request.take(MAX_REQUEST).read_to_end(&mut text);
    // (`take` consumed and closed it.)
    let req: Request = match read
        .ok()
        .and_then(|_| serde_json::from_slice::<Request>(&text).ok())
    {
        Some(r) if !r.args.is_empty() => r,
        _ => {
            eprintln!("cleanroom: the one-shot command's request could not be read");
            return Err(());
        }
    };
    let spawned = std::process::Command::new(&req.args[0])
        .args(&req.args[1..])
        .env_clear()
        .envs(req.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&req.cwd)
        .process_group(0)
        .spawn();
    match spawned {
        Ok(child) => Ok(Pid::from_raw(child.id() as i32)),
        Err(e) => {
            eprintln!(
                "cleanroom: cannot run {:?} in {:?}: {e}",
                req.args[0], req.cwd
            );
            Err(())
        }
    }
}

/// `/dev/null` over this process's stdio (the command has its own copies).
fn quiet_stdio() {
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        for fd in 0..3 {
            // SAFETY: dup2 onto this process's own stdio numbers; `null` stays open.
            unsafe {
                libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), fd);
            }
        }
    }
}

/// Reap children until the command exits: `Ok(code)`, or `Err(signal)` that killed it.
fn wait_for(command: Pid, set: &SigSet) -> Result<i32, i32> {
    loop {
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(p, code)) if p == command => return Ok(code),
                Ok(WaitStatus::Signaled(p, sig, _)) if p == command => return Err(sig as i32),
                Ok(WaitStatus::StillAlive) | Err(_) => break,
                Ok(_) => {}
            }
        }
        if set.wait().is_err() {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}
