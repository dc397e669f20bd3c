//! The server's handle on its zygote ([`crate::linux::zygote`]): starts it on first use
//! (from a dedicated launcher thread, so its parent-death signal follows a thread that
//! lives as long as the server), asks it to fork each sandbox's shim, restarts it after its
//! death and retires it after [`ROTATE_EVERY`] forks. Runs in the server process.

use crate::linux::protocol::{self, ZygoteReply, ZygoteRequest};
use crate::linux::sys;
use crate::linux::sys::pidfd::PidFd;
use crate::BackendError;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::unix::AsyncFd;

/// How long the server waits for the zygote to answer one fork (it is a fork and a
/// pidfd_open: milliseconds; more means it is stuck, and the create fails closed).
const FORK_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the server waits for a new zygote process to be started.
const SPAWN_TIMEOUT: Duration = Duration::from_secs(10);

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
/// ([`crate::linux::host::fdtable::FDS_PER_SANDBOX`]) and each of its gateways' connections one more,
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
    // SAFETY: `zygote_child_setup` makes only async-signal-safe calls and allocates
    // nothing; a failed step fails the spawn.
    unsafe {
        cmd.pre_exec(move || sys::zygote_child_setup(child_raw, (soft, hard), server));
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
