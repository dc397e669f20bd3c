//! File operations a backend carries out **with the sandbox's own identity** (the files API,
//! `docs/files.md`). The server describes what it wants ([`FileOp`]); the backend has it
//! done inside the sandbox (the Linux backend: by a helper its pid 1 forks) and answers with
//! a [`FileAnswer`] and, for some operations, file descriptors. The server never resolves a
//! path inside a sandbox itself: it only reads from or writes to descriptors it was handed.

use serde::{Deserialize, Serialize};

/// Kind of a filesystem entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    Regular,
    Directory,
    Symlink,
    /// FIFO, socket or device.
    Other,
}

/// One entry as the sandbox sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileInfo {
    /// Absolute, normalized path.
    pub path: String,
    pub kind: FileKind,
    pub size: u64,
    /// Permission bits (0o7777).
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    /// Modification time, Unix seconds and nanoseconds.
    pub mtime_sec: i64,
    pub mtime_nsec: u32,
    /// A symlink's target, verbatim.
    #[serde(default)]
    pub symlink_target: String,
}

impl FileInfo {
    /// Last component of the path (`/` for the root).
    pub fn name(&self) -> &str {
        match self.path.rsplit_once('/') {
            Some((_, "")) | None => "/",
            Some((_, n)) => n,
        }
    }
}

/// What to do inside the sandbox. Paths are absolute, as the sandbox sees them; `..`
/// components are refused (their meaning depends on symlinks: the sandbox's business).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum FileOp {
    /// Describe `path` (the entry itself unless `follow`). → [`FileAnswer::Info`].
    Stat { path: String, follow: bool },
    /// Entries of a directory, sorted by name, after `start_after`, at most `max_entries`
    /// (fewer when the answer would grow too large). → [`FileAnswer::Entries`].
    List {
        path: String,
        start_after: String,
        max_entries: u32,
    },
    /// Create a directory. → [`FileAnswer::Info`].
    Mkdir {
        path: String,
        mode: u32,
        parents: bool,
    },
    /// Remove a file, a symlink or (with `recursive`) a tree. → [`FileAnswer::Removed`].
    Remove {
        path: String,
        recursive: bool,
        missing_ok: bool,
    },
    /// Create an anonymous temporary file in the directory of `path` (the target of an
    /// upload), handed back as one read-write descriptor. → [`FileAnswer::Temp`] + 1 fd.
    CreateTemp {
        path: String,
        create_parents: bool,
        no_overwrite: bool,
    },
    /// Cut a temporary file to `offset` (what a broken earlier chunk may have left beyond
    /// it goes), then write `len` bytes read from a pipe there; fds: the file, the pipe's
    /// read end. Written by the sandbox, so the pages are charged to the sandbox.
    /// → [`FileAnswer::Written`].
    WriteChunk { offset: u64, len: u64 },
    /// Cut the temporary file (fd) to `size`, give it its mode and owner and put it at
    /// `path` atomically (link under a temporary name, rename over the target).
    /// → [`FileAnswer::Info`].
    Commit {
        path: String,
        size: u64,
        mode: u32,
        uid: Option<u32>,
        gid: Option<u32>,
        no_overwrite: bool,
    },
    /// Extract the tar archive in the first `size` bytes of the temporary file (fd) into
    /// the directory `path`. → [`FileAnswer::Info`] of the directory.
    Extract { path: String, size: u64 },
    /// Write `path` (file or tree) as a tar archive into a pipe (fd). First answer:
    /// [`FileAnswer::Started`] once `path` was found; the second (`done` id):
    /// [`FileAnswer::Done`] or why the archive is incomplete.
    Archive { path: String },
}

impl FileOp {
    /// How long the helper carrying it out may live. Streams of whole trees may take long;
    /// the rest is quick.
    pub fn deadline(&self) -> std::time::Duration {
        use std::time::Duration;
        match self {
            FileOp::Archive { .. } | FileOp::Extract { .. } => Duration::from_secs(3600),
            FileOp::Remove {
                recursive: true, ..
            } => Duration::from_secs(300),
            FileOp::WriteChunk { .. } | FileOp::Commit { .. } => Duration::from_secs(60),
            _ => Duration::from_secs(10),
        }
    }
}

/// A successful answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum FileAnswer {
    /// Answer to the existing read-only open: the file's size (its fd attached).
    Opened {
        size: u64,
    },
    Info {
        info: FileInfo,
    },
    Entries {
        entries: Vec<FileInfo>,
        truncated: bool,
    },
    Removed {
        removed: bool,
    },
    /// The temporary file (fd attached) and the free bytes of its filesystem.
    Temp {
        free_bytes: u64,
    },
    Written {
        len: u64,
    },
    Started,
    Done,
}

/// The end of a streamed operation: resolves when the helper finished (or failed).
pub type FileDone = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<FileAnswer, crate::BackendError>> + Send>,
>;

/// A regular file read with the sandbox's identity ([`crate::Backend::read_range`]).
pub enum FileRead {
    /// A descriptor the sandbox opened (read it with `pread`; never resolve it further).
    File(std::fs::File),
    /// The bytes from the requested offset as a stream (the gVisor runtime, whose
    /// descriptors cannot leave the sandbox): the file's size when opened, a pipe's read
    /// end, and the outcome once the helper wrote them all.
    Stream {
        size: u64,
        data: std::os::fd::OwnedFd,
        done: FileDone,
    },
}

/// What a file operation answered, the descriptors that came with it and, for a stream
/// ([`FileOp::Archive`]), its outcome once the stream ends.
pub struct FileReply {
    pub answer: FileAnswer,
    pub fds: Vec<std::os::fd::OwnedFd>,
    pub done: Option<FileDone>,
}

impl std::fmt::Debug for FileReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileReply")
            .field("answer", &self.answer)
            .field("fds", &self.fds.len())
            .field("done", &self.done.is_some())
            .finish()
    }
}
