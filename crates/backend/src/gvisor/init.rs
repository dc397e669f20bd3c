//! The idle init of a gVisor sandbox (`cleanroom __gvisor-init`, the server's own binary
//! bound read-only into the sandbox): the container's first process, which only keeps the
//! sandbox alive and reaps the orphans that are reparented to it. Executions run beside it
//! through `runsc exec`. It runs under gVisor's kernel, never on the host.

use nix::sys::signal::{SigSet, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag};

/// Entry point; never returns (the sandbox ends when runsc kills it).
pub fn main() -> ! {
    let mut set = SigSet::empty();
    set.add(Signal::SIGCHLD);
    let _ = set.thread_block();
    // Started after the block, so its thread keeps SIGCHLD blocked too.
    super::spawn::serve();
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
