//! The fork server ("zygote") that starts every sandbox's shim.
//!
//! Exec'ing the 42 MB `cleanroom` binary once per sandbox cost ~1 MB of privately
//! relocated pages per sandbox (dynamic relocations of a PIE) and a few ms of start-up.
//! Instead the server starts ONE helper, `cleanroom-init __sandbox-init` (the same binary,
//! environment cleared, stdin/stdout `/dev/null`), connected by a seqpacket socket on
//! fd 3. For each sandbox the server sends [`ZygoteRequest::Fork`] with the sandbox's
//! control socket attached; the zygote forks, and the child becomes the shim running
//! exactly the code an exec'd shim ran ([`super::init::shim_main`]). Every shim and pid 1
//! shares the zygote's already-relocated pages copy-on-write.
//!
//! ```text
//! server ─exec once─> zygote ─fork─> shim ─fork─> pid 1 ─fork/exec─> user processes
//!   (pidfds of shim and pid 1, control socket per sandbox)
//! ```
//!
//! Death chain (all `PR_SET_PDEATHSIG` = SIGKILL): server thread → zygote → shim → pid 1
//! → its pid namespace. The zygote's death thus ends every sandbox; the server notices
//! (EOF / EPIPE on the zygote socket), restarts it on the next create and never waits on a
//! dead one. The zygote answers each fork with the shim's pidfd, opened while the shim is
//! its unreaped child, so the server's handle can never name a recycled pid.
//!
//! What a forked shim does NOT inherit from the zygote: signal dispositions (all reset to
//! default, SIGPIPE ignored as in any Rust program), the signal mask (emptied), fds (only
//! the control socket, moved to fd 3), environment (the zygote's is empty). What it does
//! share: the zygote's address-space layout (see docs/zygote.md).

use super::config::CONTROL_FD;
use super::pidfd::PidFd;
use super::protocol::{self, ZygoteReply, ZygoteRequest};
use super::sys;
use crate::BackendError;
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{fork, ForkResult, Pid};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::unix::AsyncFd;

/// How long the server waits for the zygote to answer one fork (it is a fork and a
/// pidfd_open: milliseconds; more means it is stuck, and the create fails closed).
const FORK_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the server waits for a new zygote process to be started.
const SPAWN_TIMEOUT: Duration = Duration::from_secs(10);

// ---- zygote side (single-threaded, no runtime) ---------------------------------------------

/// Entry point of the zygote process; never returns. Exits when the server closes the
/// socket (or dies: the parent-death signal is quicker).
pub fn serve() -> ! {
    let code = match run() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("cleanroom zygote: {e}");
            1
        }
    };
    std::process::exit(code)
}

fn run() -> Result<(), String> {
    let me = nix::unistd::getpid();
    // Exited shims arrive as SIGCHLD on a signalfd and are reaped in the loop.
    let mut mask = SigSet::empty();
    mask.add(Signal::SIGCHLD);
    mask.thread_block()
        .map_err(|e| format!("sigprocmask: {e}"))?;
    let sfd = SignalFd::with_flags(&mask, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
        .map_err(|e| format!("signalfd: {e}"))?;
    // SAFETY: fd 3 was placed by the server before exec and stays open for our lifetime.
    let control = unsafe { std::os::fd::BorrowedFd::borrow_raw(CONTROL_FD) };
    // Shims forked and not yet reaped; once the server closes the socket (it retired us,
    // see [`ROTATE_EVERY`]) we stay only as long as they do: our exit would kill them.
    let (mut live, mut retired) = (0usize, false);
    loop {
        if retired && live == 0 {
            return Ok(());
        }
        let mut fds = vec![nix::poll::PollFd::new(
            sfd.as_fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        if !retired {
            fds.push(nix::poll::PollFd::new(
                control,
                nix::poll::PollFlags::POLLIN,
            ));
        }
        match nix::poll::poll(&mut fds, nix::poll::PollTimeout::NONE) {
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(format!("poll: {e}")),
        }
        let ready = |i: usize| {
            fds.get(i)
                .and_then(|f| f.revents())
                .is_some_and(|r| !r.is_empty())
        };
        let (child_ready, control_ready) = (ready(0), ready(1));
        if child_ready {
            while let Ok(Some(_)) = sfd.read_signal() {}
            live = live.saturating_sub(reap());
        }
        if control_ready {
            match protocol::recv::<ZygoteRequest>(CONTROL_FD) {
                Ok(Some((ZygoteRequest::Fork { seq }, fds))) => {
                    let (reply, pidfd) = fork_shim(seq, fds, me);
                    live += usize::from(pidfd.is_some());
                    let attached: Vec<RawFd> = pidfd.iter().map(|p| p.as_raw_fd()).collect();
                    protocol::send(CONTROL_FD, &reply, &attached)
                        .map_err(|e| format!("zygote socket: {e}"))?;
                }
                // Retired (or the server is gone, and its death signal is on its way).
                Ok(None) => retired = true,
                Err(e) => return Err(format!("zygote socket: {e}")),
            }
        }
    }
}

/// Reap every exited shim (the server watches them through pidfds, not through us);
/// how many were reaped.
fn reap() -> usize {
    let mut n = 0;
    loop {
        match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) | Err(nix::errno::Errno::ECHILD) => return n,
            Ok(WaitStatus::Exited(..) | WaitStatus::Signaled(..)) => n += 1,
            Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return n,
        }
    }
}

/// Fork one shim for the control socket in `fds`; the reply and the shim's pidfd.
fn fork_shim(seq: u64, fds: Vec<OwnedFd>, me: Pid) -> (ZygoteReply, Option<OwnedFd>) {
    let failed = |error: String| (ZygoteReply::ForkFailed { seq, error }, None);
    let mut fds = fds.into_iter();
    let (Some(control), None) = (fds.next(), fds.next()) else {
        return failed("a fork request carries exactly one fd".into());
    };
    // SAFETY: the zygote is single-threaded (no runtime, no helper threads), so the child
    // may run arbitrary code; it never returns into this loop (become_shim is `-> !`).
    match unsafe { fork() } {
        Err(e) => failed(format!("fork: {e}")),
        Ok(ForkResult::Child) => become_shim(control, me),
        Ok(ForkResult::Parent { child }) => {
            drop(control);
            // The child is ours and unreaped (we reap only in the loop): no pid reuse.
            match PidFd::open(child.as_raw()) {
                Ok(p) => (
                    ZygoteReply::Forked {
                        seq,
                        pid: child.as_raw(),
                    },
                    Some(p.into_owned()),
                ),
                Err(e) => {
                    // Our own unreaped child: the pid is still its.
                    let _ = sys::kill(child.as_raw(), Signal::SIGKILL);
                    failed(format!("pidfd_open: {e}"))
                }
            }
        }
    }
}

/// In the forked child: shed everything of the zygote, then run the shim.
fn become_shim(control: OwnedFd, zygote: Pid) -> ! {
    // Die with the zygote; if it is already gone, don't start a sandbox nobody owns.
    if sys::kill_with_parent().is_err() || nix::unistd::getppid() != zygote {
        std::process::exit(125);
    }
    if reset_signals().is_err() {
        std::process::exit(125);
    }
    // The control socket replaces the zygote's socket at fd 3 (dup2 clears CLOEXEC);
    // everything above it (the zygote's signalfd, the original fd) closes.
    // SAFETY: dup2 on two fds this process owns; fd 3 (the zygote socket) is not used by
    // this child again.
    if unsafe { libc::dup2(control.as_raw_fd(), CONTROL_FD) } < 0 {
        std::process::exit(125);
    }
    drop(control);
    if sys::close_range(CONTROL_FD as u32 + 1, u32::MAX).is_err() {
        std::process::exit(125);
    }
    super::init::shim_main()
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
    SigSet::empty()
        .thread_set_mask()
        .map_err(std::io::Error::from)
}

// ---- server side ------------------------------------------------------------------------------

/// The server's handle on its zygote: started on first use, restarted after its death.
pub(super) struct Zygote {
    /// The launcher thread's inbox (see [`launcher`]).
    launcher: std::sync::Mutex<std::sync::mpsc::Sender<SpawnRequest>>,
    state: tokio::sync::Mutex<State>,
}

#[derive(Default)]
struct State {
    conn: Option<Conn>,
    seq: u64,
    /// Shims the current zygote forked.
    forks: u32,
}

/// Forks per zygote before the server retires it and starts a fresh one: every zygote is
/// a new exec, so a new address-space layout (ASLR) — sandboxes share a layout only in
/// groups of this size. A retired zygote forks no more and exits once its last shim has
/// (its own exit would kill them); it costs one exec per this many sandboxes.
const ROTATE_EVERY: u32 = 128;

struct Conn {
    sock: AsyncFd<OwnedFd>,
    process: PidFd,
}

/// Why one exchange with the zygote failed.
enum ExchangeError {
    /// The zygote is gone (EOF, EPIPE, exited): restart it.
    Dead(String),
    /// This fork failed; the zygote lives on.
    Failed(BackendError),
}

impl Zygote {
    pub(super) fn new(exe: PathBuf) -> Self {
        // RLIMIT_NOFILE for the zygote and so for every sandbox: the server's own limit
        // before it raised it, never the raised one.
        let sandbox_nofile = raise_server_fd_limit();
        Zygote {
            launcher: std::sync::Mutex::new(launcher(exe, sandbox_nofile)),
            state: tokio::sync::Mutex::default(),
        }
    }

    /// Fork a shim whose control socket is `control` (the sandbox's end); its pidfd.
    /// A dead zygote is restarted once; a stuck one fails the create (never hangs it).
    pub(super) async fn fork_shim(&self, control: &OwnedFd) -> Result<PidFd, BackendError> {
        let mut st = self.state.lock().await;
        let mut last = String::new();
        for _ in 0..2 {
            if st.conn.is_none() {
                st.conn = Some(start(&self.launcher).await?);
            }
            st.seq += 1;
            let seq = st.seq;
            let Some(conn) = st.conn.as_ref() else {
                continue;
            };
            match exchange(conn, seq, control).await {
                Ok(shim) => {
                    st.forks += 1;
                    if st.forks >= ROTATE_EVERY {
                        // Closing our end retires it (see `run`); the launcher thread that
                        // spawned it lives on, so its parent-death signal stays armed.
                        st.conn = None;
                        st.forks = 0;
                    }
                    return Ok(shim);
                }
                Err(ExchangeError::Failed(e)) => return Err(e),
                Err(ExchangeError::Dead(why)) => {
                    tracing::warn!(error = %why, "sandbox zygote gone; restarting it");
                    if let Some(c) = st.conn.take() {
                        c.process.kill();
                    }
                    st.forks = 0;
                    last = why;
                }
            }
        }
        Err(BackendError::Unavailable(format!(
            "the sandbox launcher (zygote) is not working: {last}"
        )))
    }
}

async fn exchange(conn: &Conn, seq: u64, control: &OwnedFd) -> Result<PidFd, ExchangeError> {
    if conn.process.has_exited() {
        return Err(ExchangeError::Dead("the zygote exited".into()));
    }
    // One small datagram into an idle socket: the send does not wait.
    protocol::send(
        conn.sock.get_ref().as_raw_fd(),
        &ZygoteRequest::Fork { seq },
        &[control.as_raw_fd()],
    )
    .map_err(|e| ExchangeError::Dead(format!("send: {e}")))?;
    let answer = async {
        loop {
            let mut guard = conn
                .sock
                .readable()
                .await
                .map_err(|e| ExchangeError::Dead(format!("poll: {e}")))?;
            match protocol::try_recv::<ZygoteReply>(conn.sock.get_ref().as_raw_fd()) {
                Ok(None) => return Err(ExchangeError::Dead("the zygote closed its socket".into())),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    guard.clear_ready();
                    continue;
                }
                Err(e) => return Err(ExchangeError::Dead(format!("receive: {e}"))),
                Ok(Some((reply, fds))) => match reply {
                    // A late answer to a fork that already timed out: its shim sees EOF on
                    // its control socket (the server dropped that end) and exits.
                    ZygoteReply::Forked { seq: s, .. } | ZygoteReply::ForkFailed { seq: s, .. }
                        if s != seq =>
                    {
                        continue
                    }
                    ZygoteReply::ForkFailed { error, .. } => {
                        return Err(ExchangeError::Failed(BackendError::LaunchFailed(format!(
                            "zygote: {error}"
                        ))))
                    }
                    ZygoteReply::Forked { pid, .. } => {
                        let mut fds = fds.into_iter();
                        return match (fds.next(), fds.next()) {
                            (Some(fd), None) => Ok(PidFd::from_owned(fd, pid)),
                            _ => Err(ExchangeError::Dead("fork answer without a pidfd".into())),
                        };
                    }
                },
            }
        }
    };
    match tokio::time::timeout(FORK_TIMEOUT, answer).await {
        Ok(r) => r,
        Err(_) => Err(ExchangeError::Failed(BackendError::LaunchFailed(
            "the sandbox launcher (zygote) did not answer in time".into(),
        ))),
    }
}

/// Descriptors a root server may hold: each live sandbox costs it a few
/// ([`super::fdtable::FDS_PER_SANDBOX`]) and each of its gateways' connections one more,
/// so thousands of busy sandboxes exceed a common hard limit of 20,000 or 65,536.
const SERVER_NOFILE: libc::rlim_t = 1 << 20;

/// A root server raises its own RLIMIT_NOFILE (soft and hard, up to `fs.nr_open`) so that
/// thousands of sandboxes fit; returns the limit it had before, which the zygote (and so
/// every sandbox) keeps. Unprivileged servers keep theirs.
fn raise_server_fd_limit() -> (libc::rlim_t, libc::rlim_t) {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let before = getrlimit(Resource::RLIMIT_NOFILE).unwrap_or((1024, 4096));
    if !nix::unistd::geteuid().is_root() {
        return before;
    }
    let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse::<libc::rlim_t>().ok())
        .unwrap_or(before.1);
    let target = SERVER_NOFILE.min(nr_open).max(before.1);
    if target > before.0 {
        if let Err(e) = setrlimit(Resource::RLIMIT_NOFILE, target, target) {
            tracing::warn!(error = %e, "could not raise the descriptor limit for sandboxes");
        }
    }
    before
}

/// One request to the launcher thread: the zygote's socket end and where to answer.
type SpawnRequest = (
    OwnedFd,
    tokio::sync::oneshot::Sender<Result<PidFd, BackendError>>,
);

/// The one thread that execs zygotes and reaps them. The parent-death signal follows the
/// *thread* that forked, so zygotes are spawned from a thread that lives as long as the
/// backend (a runtime worker or a blocking-pool thread might exit first), never one per
/// zygote.
fn launcher(
    exe: PathBuf,
    nofile: (libc::rlim_t, libc::rlim_t),
) -> std::sync::mpsc::Sender<SpawnRequest> {
    let (tx, rx) = std::sync::mpsc::channel::<SpawnRequest>();
    let spawned = std::thread::Builder::new()
        .name("cleanroom-zygote".into())
        .spawn(move || {
            let mut children: Vec<std::process::Child> = Vec::new();
            loop {
                match rx.recv_timeout(Duration::from_secs(1)) {
                    Ok((zygote_end, answer)) => {
                        let r = spawn_process(&exe, zygote_end, nofile).map(|(child, pidfd)| {
                            children.push(child);
                            pidfd
                        });
                        let _ = answer.send(r);
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    // The backend is gone; its zygotes die with this thread.
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                }
                // Reap exited (retired or killed) zygotes.
                children.retain_mut(|c| matches!(c.try_wait(), Ok(None)));
            }
        });
    if let Err(e) = spawned {
        // Every start then fails closed (the receiver is gone).
        tracing::error!(error = %e, "cannot start the sandbox launcher thread");
    }
    tx
}

/// Start a zygote (on the launcher thread) and connect to it.
async fn start(
    launcher: &std::sync::Mutex<std::sync::mpsc::Sender<SpawnRequest>>,
) -> Result<Conn, BackendError> {
    use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
    let (server_end, zygote_end) = socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
    )
    .map_err(|e| BackendError::io("socketpair", e.into()))?;
    // The zygote's end blocks (its loop polls, then reads).
    let flags = nix::fcntl::OFlag::empty();
    nix::fcntl::fcntl(&zygote_end, nix::fcntl::FcntlArg::F_SETFL(flags))
        .map_err(|e| BackendError::io("zygote socket", e.into()))?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let gone = || BackendError::Unavailable("the sandbox launcher thread is gone".into());
    launcher
        .lock()
        .map_err(|_| gone())?
        .send((zygote_end, tx))
        .map_err(|_| gone())?;
    let process = match tokio::time::timeout(SPAWN_TIMEOUT, rx).await {
        Ok(Ok(Ok(p))) => p,
        Ok(Ok(Err(e))) => return Err(e),
        Ok(Err(_)) | Err(_) => {
            return Err(BackendError::Unavailable(
                "the sandbox launcher (zygote) did not start".into(),
            ))
        }
    };
    // SAFETY: the AsyncFd owns `server_end` (an OwnedFd): it stays open and names the same
    // socket until the AsyncFd is dropped.
    let sock = unsafe { AsyncFd::register(server_end) }
        .map_err(|e| BackendError::io("zygote socket", std::io::Error::from(e)))?;
    tracing::info!(pid = process.pid(), "sandbox zygote started");
    Ok(Conn { sock, process })
}

fn spawn_process(
    exe: &std::path::Path,
    zygote_end: OwnedFd,
    (soft, hard): (libc::rlim_t, libc::rlim_t),
) -> Result<(std::process::Child, PidFd), BackendError> {
    use std::os::unix::process::CommandExt;
    let child_raw = zygote_end.as_raw_fd();
    let server = nix::unistd::getpid();
    let mut cmd = std::process::Command::new(exe);
    // argv is what every sandbox's /proc/1/cmdline shows (forks keep it): a fixed name,
    // nothing about the host. No config on argv, no environment.
    cmd.arg0("cleanroom-init")
        .arg("__sandbox-init")
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null());
    // SAFETY: only async-signal-safe calls (dup2, fcntl, close_range, prctl, getppid)
    // between fork and exec, no allocation; a failed step fails the spawn.
    unsafe {
        cmd.pre_exec(move || {
            if child_raw == CONTROL_FD {
                let flags = libc::fcntl(CONTROL_FD, libc::F_GETFD);
                if flags < 0
                    || libc::fcntl(CONTROL_FD, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0
                {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(child_raw, CONTROL_FD) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Nothing else of the server's reaches the zygote: fds the server inherited
            // without close-on-exec (from whoever started it) close at the exec.
            sys::cloexec_from(CONTROL_FD as u32 + 1)?;
            // The sandboxes' descriptor limit, not the server's raised one (lowering is
            // always allowed).
            let lim = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            sys::kill_with_parent()?;
            // The server died before the signal was armed: don't outlive it.
            if libc::getppid() != server.as_raw() {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|e| {
        BackendError::Unavailable(format!(
            "cannot start the sandbox launcher {}: {e}",
            exe.display()
        ))
    })?;
    drop(zygote_end);
    // Our own unreaped child: the pid cannot have been reused.
    let pidfd = PidFd::open(child.id() as i32).map_err(|e| {
        BackendError::Unavailable(format!("pidfd_open of the sandbox launcher: {e}"))
    })?;
    Ok((child, pidfd))
}

#[cfg(test)]
mod tests {
    use super::*;

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
