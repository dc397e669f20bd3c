//! The files API on the gVisor runtime, host side: every operation is carried out by the
//! in-sandbox file helper ([`super::filehelper`]), `runsc exec`'d with the sandbox's own
//! identity — the server never resolves a path in the sandbox's tree, and gets at most
//! what the sandbox's processes could do (no deputy), as on the linux runtime.
//!
//! The helper is a process of the sandbox, so nothing it says is trusted beyond what the
//! sandbox could say anyway: answers are bounded lines ([`MAX_ANSWER`]), every wait has a
//! deadline (the operation's, [`FileOp::deadline`]), a helper past it is killed, and at most
//! [`MAX_HELPERS`] short helpers and [`MAX_UPLOADS`] upload sessions run per sandbox.
//!
//! Bytes move through host pipes the sentry reads and writes directly: a download or an
//! archive is the helper's stdout ([`FileRead::Stream`]); an upload is a helper that
//! holds its temporary file and reads chunks from its stdin. The server keeps that stdin's
//! write end as the upload's "file" (the descriptor the files API passes back with each
//! `WriteChunk`, `Commit` or `Extract`); the session is found by that pipe's inode.

use super::bundle::{INIT_ARG, INIT_PATH};
use super::filehelper::{Answer, Request, FILES_ARG};
use super::GvisorBackend;
use crate::files::{FileAnswer, FileOp, FileRead, FileReply};
use crate::BackendError;
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::time::{timeout_at, Instant};

/// Longest answer line a helper may send (a directory listing is the largest).
pub const MAX_ANSWER: usize = 8 << 20;
/// Short helpers (everything but upload sessions) alive at once per sandbox.
pub const MAX_HELPERS: usize = 8;
/// Upload sessions alive at once per sandbox.
pub const MAX_UPLOADS: usize = 16;
/// How long a stream's helper may take to say it started (its path lookup).
const START_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// An upload session: the helper's answers and how to kill it.
struct Session {
    control: tokio::sync::Mutex<Control>,
    pid_file: PathBuf,
}

/// Per-sandbox bookkeeping of file helpers.
#[derive(Default)]
pub(super) struct FileHelpers {
    /// Upload sessions by (sandbox, inode of their stdin pipe).
    sessions: Mutex<HashMap<(String, u64, u64), Arc<Session>>>,
    /// Short helpers in flight, by sandbox.
    running: Mutex<HashMap<String, usize>>,
}

/// A slot among a sandbox's [`MAX_HELPERS`]; freed when dropped.
struct Slot {
    helpers: Arc<FileHelpers>,
    sandbox: String,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Ok(mut m) = self.helpers.running.lock() {
            if let Some(n) = m.get_mut(&self.sandbox) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    m.remove(&self.sandbox);
                }
            }
        }
    }
}

fn busy() -> BackendError {
    crate::linux::served::FileRefusal::new(
        crate::linux::served::Refusal::NotReadable,
        "too many file requests in flight in this sandbox",
    )
    .into()
}

fn poisoned() -> BackendError {
    BackendError::Unavailable("lock poisoned".into())
}

fn pipe_pair() -> Result<(OwnedFd, OwnedFd), BackendError> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| BackendError::io("pipe", e.into()))
}

/// The (device, inode) of a descriptor: the key of an upload session.
fn inode(fd: &OwnedFd) -> Result<(u64, u64), BackendError> {
    let st = nix::sys::stat::fstat(fd).map_err(|e| BackendError::io("fstat", e.into()))?;
    #[allow(clippy::unnecessary_cast)]
    Ok((st.st_dev as u64, st.st_ino as u64))
}

/// A helper's answer channel (its stderr): bounded JSON lines.
struct Control {
    rx: pipe::Receiver,
    buf: Vec<u8>,
}

impl Control {
    /// The next answer, by `deadline`.
    async fn answer(&mut self, deadline: Instant) -> Result<FileAnswer, BackendError> {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                return match serde_json::from_slice::<Answer>(&line[..i]) {
                    Ok(Ok(answer)) => Ok(answer),
                    Ok(Err(refusal)) => Err(refusal.into()),
                    Err(_) => Err(helper_failed(&line)),
                };
            }
            if self.buf.len() > MAX_ANSWER {
                return Err(BackendError::Unavailable(
                    "the sandbox's file helper answered too much".into(),
                ));
            }
            let mut chunk = [0u8; 64 * 1024];
            let n = timeout_at(deadline, self.rx.read(&mut chunk))
                .await
                .map_err(|_| {
                    BackendError::Unavailable(
                        "the sandbox's file helper did not answer in time".into(),
                    )
                })?
                .map_err(|e| BackendError::io("file helper answer", e))?;
            if n == 0 {
                return Err(helper_failed(&self.buf));
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// A helper that ended or said something else than an answer (runsc's own error, e.g.
/// the sandbox stopped under it); its words, cut short, are the message.
fn helper_failed(said: &[u8]) -> BackendError {
    let text = String::from_utf8_lossy(&said[..said.len().min(300)]);
    BackendError::Unavailable(format!("the sandbox's file helper failed: {}", text.trim()))
}

/// A running helper.
struct Helper {
    child: tokio::process::Child,
    control: Control,
    pid_file: PathBuf,
}

impl GvisorBackend {
    /// `runsc exec` the file helper in `sandbox_id` with `stdin` and `stdout`; its stderr
    /// is the answer channel.
    fn start_helper(
        &self,
        sandbox_id: &str,
        stdin: Stdio,
        stdout: Stdio,
    ) -> Result<Helper, BackendError> {
        let sbx = self.get(sandbox_id)?;
        let n = sbx.next_id.fetch_add(1, Ordering::Relaxed);
        let pid_file = sbx.bundle.procs().join(format!("file-{n}.pid"));
        let (ctl_r, ctl_w) = pipe_pair()?;
        let mut cmd = self.runsc.command();
        cmd.arg("exec")
            .arg("--user")
            .arg("0:0")
            .arg("--internal-pid-file")
            .arg(&pid_file)
            .arg(sandbox_id)
            .arg(INIT_PATH)
            .arg(INIT_ARG)
            .arg(FILES_ARG)
            .stdin(stdin)
            .stdout(stdout)
            .stderr(Stdio::from(ctl_w))
            .kill_on_drop(false);
        let child = cmd.spawn().map_err(|e| BackendError::io("runsc exec", e))?;
        // Our copies of the helper's stdio close with the command.
        drop(cmd);
        let rx =
            pipe::Receiver::from_owned_fd(ctl_r).map_err(|e| BackendError::io("wrap pipe", e))?;
        Ok(Helper {
            child,
            control: Control {
                rx,
                buf: Vec::new(),
            },
            pid_file,
        })
    }

    /// Kill a helper (by its pid inside the sandbox: killing `runsc exec` alone would
    /// leave it running) and reap it.
    pub(super) async fn kill_helper(&self, sandbox_id: &str, pid_file: &std::path::Path) {
        if let Ok(pid) = std::fs::read_to_string(pid_file) {
            let pid = pid.trim();
            if pid.parse::<u32>().is_ok() {
                let _ = self
                    .runsc
                    .run(&["kill", "--pid", pid, sandbox_id, "9"])
                    .await;
            }
        }
    }

    /// Reap `child` in the background, then forget its pid file.
    fn reap(
        mut child: tokio::process::Child,
        pid_file: PathBuf,
        then: impl FnOnce() + Send + 'static,
    ) {
        tokio::spawn(async move {
            let _ = child.wait().await;
            let _ = std::fs::remove_file(&pid_file);
            then();
        });
    }

    fn slot(&self, sandbox_id: &str) -> Result<Slot, BackendError> {
        let mut m = self.files.running.lock().map_err(|_| poisoned())?;
        let n = m.entry(sandbox_id.to_string()).or_insert(0);
        if *n >= MAX_HELPERS {
            return Err(busy());
        }
        *n += 1;
        Ok(Slot {
            helpers: self.files.clone(),
            sandbox: sandbox_id.to_string(),
        })
    }

    /// A stdin for a helper holding `request` (one line) and then, unless `keep`, EOF;
    /// with `keep`, the write end is returned too.
    fn request_pipe(request: &Request) -> Result<(OwnedFd, OwnedFd), BackendError> {
        let mut line = serde_json::to_vec(request)
            .map_err(|e| BackendError::Unavailable(format!("encode request: {e}")))?;
        line.push(b'\n');
        let (r, w) = pipe_pair()?;
        // At most a few KiB: fits the pipe's buffer, so this write never waits.
        let mut f = std::fs::File::from(w);
        std::io::Write::write_all(&mut f, &line)
            .map_err(|e| BackendError::io("write request", e))?;
        Ok((r, OwnedFd::from(f)))
    }

    /// Run one short request to its single answer (or its first, for a stream: `stdout`
    /// is the stream's pipe); the rest of the helper's life is returned as `done`.
    async fn one_shot(
        &self,
        sandbox_id: &str,
        request: Request,
        stdout: Option<OwnedFd>,
        first_deadline: std::time::Duration,
        whole_deadline: std::time::Duration,
    ) -> Result<(FileAnswer, Option<crate::files::FileDone>), BackendError> {
        let slot = self.slot(sandbox_id)?;
        let (r, w) = Self::request_pipe(&request)?;
        drop(w);
        let out = stdout.map(Stdio::from).unwrap_or_else(Stdio::null);
        let mut helper = self.start_helper(sandbox_id, Stdio::from(r), out)?;
        let started = Instant::now();
        let first = helper.control.answer(started + first_deadline).await;
        let streams = matches!(first, Ok(FileAnswer::Started | FileAnswer::Opened { .. }));
        if !streams {
            if first.is_err() {
                self.kill_helper(sandbox_id, &helper.pid_file).await;
            }
            Self::reap(helper.child, helper.pid_file, move || drop(slot));
            return first.map(|a| (a, None));
        }
        let (backend_runsc, id) = (self.runsc.clone(), sandbox_id.to_string());
        let done = async move {
            let Helper {
                mut child,
                mut control,
                pid_file,
            } = helper;
            let outcome = control.answer(started + whole_deadline).await;
            if outcome.is_err() {
                if let Ok(pid) = std::fs::read_to_string(&pid_file) {
                    let pid = pid.trim().to_string();
                    if pid.parse::<u32>().is_ok() {
                        let _ = backend_runsc.run(&["kill", "--pid", &pid, &id, "9"]).await;
                    }
                }
            }
            let _ = child.wait().await;
            let _ = std::fs::remove_file(&pid_file);
            drop(slot);
            outcome
        };
        first.map(|a| (a, Some(Box::pin(done) as crate::files::FileDone)))
    }

    /// `Backend::file_op` on the gVisor runtime.
    pub(super) async fn run_file_op(
        &self,
        sandbox_id: &str,
        op: FileOp,
        mut fds: Vec<OwnedFd>,
    ) -> Result<FileReply, BackendError> {
        let deadline = op.deadline();
        match op {
            FileOp::Archive { .. } => {
                let out = fds
                    .pop()
                    .filter(|_| fds.is_empty())
                    .ok_or_else(|| BackendError::Unavailable("an archive needs one pipe".into()))?;
                let request = Request::Op { op };
                let (answer, done) = self
                    .one_shot(sandbox_id, request, Some(out), START_DEADLINE, deadline)
                    .await?;
                Ok(FileReply {
                    answer,
                    fds: Vec::new(),
                    done,
                })
            }
            FileOp::CreateTemp { .. } => self.start_upload(sandbox_id, op, deadline).await,
            FileOp::WriteChunk { offset, len } => match <[OwnedFd; 2]>::try_from(fds) {
                Ok([file, data]) => {
                    self.upload_chunk(sandbox_id, file, data, offset, len, deadline)
                        .await
                }
                Err(_) => Err(BackendError::Unavailable(
                    "a chunk needs the upload and a pipe".into(),
                )),
            },
            FileOp::Commit { .. } | FileOp::Extract { .. } => {
                let file = fds
                    .pop()
                    .filter(|_| fds.is_empty())
                    .ok_or_else(|| BackendError::Unavailable("a commit needs the upload".into()))?;
                self.finish_upload(sandbox_id, file, op, deadline).await
            }
            op => {
                let (answer, _) = self
                    .one_shot(sandbox_id, Request::Op { op }, None, deadline, deadline)
                    .await?;
                Ok(FileReply {
                    answer,
                    fds: Vec::new(),
                    done: None,
                })
            }
        }
    }

    /// `Backend::read_range` on the gVisor runtime: the helper streams the bytes.
    pub(super) async fn read_stream(
        &self,
        sandbox_id: &str,
        path: &str,
        offset: u64,
        length: u64,
    ) -> Result<FileRead, BackendError> {
        let (r, w) = pipe_pair()?;
        let request = Request::Read {
            path: path.to_string(),
            offset,
            length,
        };
        let whole = FileOp::Archive {
            path: String::new(),
        }
        .deadline();
        match self
            .one_shot(sandbox_id, request, Some(w), START_DEADLINE, whole)
            .await?
        {
            (FileAnswer::Opened { size }, Some(done)) => Ok(FileRead::Stream {
                size,
                data: r,
                done,
            }),
            (other, _) => Err(BackendError::Unavailable(format!(
                "unexpected answer from the sandbox's file helper: {other:?}"
            ))),
        }
    }

    /// `Backend::read_file` on the gVisor runtime: at most `max_bytes`, streamed by the
    /// helper and collected here (bounded by `max_bytes`).
    pub(super) async fn read_bounded(
        &self,
        sandbox_id: &str,
        path: &str,
        max_bytes: u64,
    ) -> Result<crate::FileContent, BackendError> {
        let FileRead::Stream { size, data, done } = self
            .read_stream(sandbox_id, path, 0, max_bytes.max(1))
            .await?
        else {
            return Err(BackendError::Unavailable("expected a stream".into()));
        };
        let rx =
            pipe::Receiver::from_owned_fd(data).map_err(|e| BackendError::io("wrap pipe", e))?;
        let mut content = Vec::new();
        rx.take(max_bytes)
            .read_to_end(&mut content)
            .await
            .map_err(|e| BackendError::io("read", e))?;
        done.await?;
        Ok(crate::FileContent {
            truncated: size > content.len() as u64,
            size,
            content,
        })
    }

    /// `CreateTemp`: start an upload session; the server gets its stdin's write end.
    async fn start_upload(
        &self,
        sandbox_id: &str,
        op: FileOp,
        deadline: std::time::Duration,
    ) -> Result<FileReply, BackendError> {
        let uploads = {
            let m = self.files.sessions.lock().map_err(|_| poisoned())?;
            m.keys().filter(|k| k.0 == sandbox_id).count()
        };
        if uploads >= MAX_UPLOADS {
            return Err(busy());
        }
        let (r, w) = Self::request_pipe(&Request::Op { op })?;
        let mut helper = self.start_helper(sandbox_id, Stdio::from(r), Stdio::null())?;
        let answer = helper.control.answer(Instant::now() + deadline).await;
        let answer = match answer {
            Ok(a @ FileAnswer::Temp { .. }) => a,
            other => {
                if other.is_err() {
                    self.kill_helper(sandbox_id, &helper.pid_file).await;
                }
                drop(w);
                Self::reap(helper.child, helper.pid_file, || {});
                return other.and_then(|a| {
                    Err(BackendError::Unavailable(format!(
                        "unexpected answer from the sandbox's file helper: {a:?}"
                    )))
                });
            }
        };
        let (dev, ino) = inode(&w)?;
        let key = (sandbox_id.to_string(), dev, ino);
        let session = Arc::new(Session {
            control: tokio::sync::Mutex::new(helper.control),
            pid_file: helper.pid_file.clone(),
        });
        self.files
            .sessions
            .lock()
            .map_err(|_| poisoned())?
            .insert(key.clone(), session);
        // The session ends with its helper: a commit, or EOF once the server drops the
        // upload (the helper then removes its temporary file).
        let files = self.files.clone();
        Self::reap(helper.child, helper.pid_file, move || {
            if let Ok(mut m) = files.sessions.lock() {
                m.remove(&key);
            }
        });
        Ok(FileReply {
            answer,
            fds: vec![w],
            done: None,
        })
    }

    fn session(&self, sandbox_id: &str, file: &OwnedFd) -> Result<Arc<Session>, BackendError> {
        let (dev, ino) = inode(file)?;
        self.files
            .sessions
            .lock()
            .map_err(|_| poisoned())?
            .get(&(sandbox_id.to_string(), dev, ino))
            .cloned()
            .ok_or_else(|| BackendError::Unavailable("the upload's file helper is gone".into()))
    }

    /// `WriteChunk`: a header line, then exactly `len` bytes (zeros past a short feed, so
    /// the helper's stream stays in step; the call then fails), then its answer.
    async fn upload_chunk(
        &self,
        sandbox_id: &str,
        file: OwnedFd,
        data: OwnedFd,
        offset: u64,
        len: u64,
        deadline: std::time::Duration,
    ) -> Result<FileReply, BackendError> {
        let session = self.session(sandbox_id, &file)?;
        let mut control = session.control.lock().await;
        let until = Instant::now() + deadline;
        let mut line = serde_json::to_vec(&FileOp::WriteChunk { offset, len })
            .map_err(|e| BackendError::Unavailable(format!("encode request: {e}")))?;
        line.push(b'\n');
        let wrap = |e: std::io::Error| BackendError::io("upload pipe", e);
        let mut tx = pipe::Sender::from_owned_fd(file).map_err(wrap)?;
        let mut rx = pipe::Receiver::from_owned_fd(data).map_err(wrap)?;
        let feed = async {
            tx.write_all(&line).await?;
            let mut buf = vec![0u8; 256 * 1024];
            let (mut left, mut short) = (len, false);
            while left > 0 {
                let want = buf.len().min(left.min(usize::MAX as u64) as usize);
                let n = if short {
                    0
                } else {
                    rx.read(&mut buf[..want]).await?
                };
                if n == 0 {
                    short = true;
                    buf[..want].fill(0);
                    tx.write_all(&buf[..want]).await?;
                    left -= want as u64;
                } else {
                    tx.write_all(&buf[..n]).await?;
                    left -= n as u64;
                }
            }
            Ok::<bool, std::io::Error>(short)
        };
        let fed = timeout_at(until, feed).await;
        let short = match fed {
            Ok(Ok(short)) => short,
            Ok(Err(_)) | Err(_) => {
                // Out of step (or gone): the session cannot go on.
                self.kill_helper(sandbox_id, &session.pid_file).await;
                let why = match fed {
                    Err(_) => "the sandbox's file helper did not take the chunk in time",
                    _ => "the sandbox's file helper went away",
                };
                // Its answer, when it gave one first, says why better (a full disk).
                return match control.answer(Instant::now()).await {
                    Err(e) => Err(match e {
                        BackendError::Unavailable(_) => BackendError::Unavailable(why.into()),
                        e => e,
                    }),
                    Ok(_) => Err(BackendError::Unavailable(why.into())),
                };
            }
        };
        // The helper's refusal (a full disk) says more than a short feed.
        let answer = control.answer(until).await?;
        if short {
            return Err(BackendError::Unavailable(format!(
                "the chunk was cut short (of {len} bytes)"
            )));
        }
        Ok(FileReply {
            answer,
            fds: Vec::new(),
            done: None,
        })
    }

    /// `Commit` or `Extract`: the session's last request.
    async fn finish_upload(
        &self,
        sandbox_id: &str,
        file: OwnedFd,
        op: FileOp,
        deadline: std::time::Duration,
    ) -> Result<FileReply, BackendError> {
        let session = self.session(sandbox_id, &file)?;
        let mut control = session.control.lock().await;
        let until = Instant::now() + deadline;
        let mut line = serde_json::to_vec(&op)
            .map_err(|e| BackendError::Unavailable(format!("encode request: {e}")))?;
        line.push(b'\n');
        let mut tx =
            pipe::Sender::from_owned_fd(file).map_err(|e| BackendError::io("upload pipe", e))?;
        let sent = timeout_at(until, tx.write_all(&line)).await;
        // The helper reads no more after this request; EOF is its end.
        drop(tx);
        if !matches!(sent, Ok(Ok(()))) {
            self.kill_helper(sandbox_id, &session.pid_file).await;
            return Err(BackendError::Unavailable(
                "the sandbox's file helper went away".into(),
            ));
        }
        let answer = control.answer(until).await;
        if answer.is_err() {
            self.kill_helper(sandbox_id, &session.pid_file).await;
        }
        Ok(FileReply {
            answer: answer?,
            fds: Vec::new(),
            done: None,
        })
    }
}
