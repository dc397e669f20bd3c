//! The idle init of a gVisor sandbox (`cleanroom __gvisor-init`, the server's own binary
//! bound read-only into the sandbox): the container's first process, which only keeps the
//! sandbox alive and reaps the orphans that are reparented to it, after setting the
//! sandbox's pids limit in gVisor's own cgroup (`cleanroom __gvisor-init pids N`,
//! [`super::pids`]). Executions run beside it through `runsc exec`. It runs under
//! gVisor's kernel, never on the host.
//!
//! The same binary, `runsc exec`'d as `cleanroom __gvisor-init kill SIG PID`, is the
//! signal helper: it sends SIG to the process group PID leads, else to PID alone — where
//! the linux runtime's pid 1 sends an execution's signals (`runsc kill --pid` reaches only
//! the one process, so a shell's children would outlive a timeout under gVisor). As
//! `cleanroom __gvisor-init files` it is the file helper ([`super::filehelper`]), as
//! `cleanroom __gvisor-init relay PORT` an inbound connection's relay ([`super::relay`]),
//! as `cleanroom __gvisor-init first` a one-shot sandbox's pid 1 carrying its command
//! ([`super::first`]), and as `cleanroom __gvisor-init snapshot capture|restore` a
//! filesystem snapshot's helper ([`super::fsnap`]).

use nix::sys::signal::{SigSet, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag};

/// The word after [`super::bundle::INIT_ARG`] that selects the signal helper.
pub const KILL_ARG: &str = "kill";

/// Entry point; never returns (the sandbox ends when runsc kills it).
pub fn main() -> ! {
    let args: Vec<String> = std::env::args().skip(2).collect();
    if args.first().map(String::as_str) == Some(KILL_ARG) {
        std::process::exit(kill(&args[1..]));
    }
    if args.first().map(String::as_str) == Some(super::filehelper::FILES_ARG) {
        std::process::exit(super::filehelper::main());
    }
    if args.first().map(String::as_str) == Some(super::first::FIRST_ARG) {
        super::first::main(&args[1..]);
    }
    if args.first().map(String::as_str) == Some(super::fsnap::SNAPSHOT_ARG) {
        std::process::exit(super::fsnap::main(&args[1..]));
    }
    if args.first().map(String::as_str) == Some(super::relay::RELAY_ARG) {
        std::process::exit(super::relay::main(&args[1..]));
    }
    if let [arg, limit] = &args[..] {
        if arg == super::pids::PIDS_ARG {
            super::pids::write_limit(limit);
        }
    }
    let mut set = SigSet::empty();
    set.add(Signal::SIGCHLD);
    let _ = set.thread_block();
    idle(set)
}

/// The idle init's loop (`set`: SIGCHLD, blocked already): reap every orphan, serve
/// background spawns ([`super::spawn`]). A one-shot's pid 1 ends here too ([`super::first`]).
pub fn idle(set: SigSet) -> ! {
    // Started after the block, so its thread keeps SIGCHLD blocked too.
    super::spawn::serve();
    reap_forever(set)
}

/// Reap every exited child, forever (`set`: SIGCHLD, blocked).
pub fn reap_forever(set: SigSet) -> ! {
    loop {
        // Reap every exited child, then sleep until the next SIGCHLD.
        while let Ok(s) = waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            if s == nix::sys::wait::WaitStatus::StillAlive {
                break;
            }
        }
        if set.wait().is_err() {
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
    }
}

/// `kill SIG PID`: the group first, then the process; 0 when one was signalled, 2 on bad
/// arguments, 1 otherwise.
fn kill(args: &[String]) -> i32 {
    let parsed = match args {
        [sig, pid] => sig.parse::<i32>().ok().zip(pid.parse::<i32>().ok()),
        _ => None,
    };
    let Some((sig, pid)) = parsed.filter(|(s, p)| *s > 0 && *p > 1) else {
        return 2;
    };
    // SAFETY: kill(2) takes integers only and touches no memory of this process.
    if unsafe { libc::kill(-pid, sig) } == 0 {
        return 0;
    }
    // SAFETY: as above.
    i32::from(unsafe { libc::kill(pid, sig) } != 0)
}
