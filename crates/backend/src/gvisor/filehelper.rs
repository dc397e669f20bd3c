//! The gVisor runtime's file helper, **inside** the sandbox: `cleanroom __gvisor-init
//! files`, `runsc exec`'d by the server with the sandbox's own identity (uid 0 of the
//! sandbox, every capability set empty, `no_new_privs`), so it can do exactly what the
//! sandbox's processes could — the same guarantee as the linux runtime's helpers, which
//! pid 1 forks ([`crate::linux::helper`]; their code does the work here too).
//!
//! Descriptors cannot cross gVisor's boundary, so instead of handing the server an fd the
//! helper moves the bytes itself over its stdio (host pipes the sentry reads and writes
//! directly; nothing is buffered whole):
//! - stdin: one JSON [`Request`] line; for an upload, then a stream of `WriteChunk` lines
//!   each followed by its bytes, and a closing `Commit` or `Extract` line;
//! - stdout: a download's bytes or an archive's tar stream (else `/dev/null`);
//! - stderr: the answers, one JSON line each (`Result<FileAnswer, FileRefusal>`).
//!
//! An upload's temporary file is a named one (`.cleanroom-upload-…`, mode 0600, next to
//! its target: gVisor has no `O_TMPFILE`), held by the helper until the commit renames it
//! into place; if the upload is dropped, the server closes the helper's stdin and the
//! helper removes the file. Everything here runs under gVisor's kernel, never on the host.

use crate::files::{FileAnswer, FileOp};
use crate::linux::helper::paths::{invalid, normalize, open_dir, refusal, split};
use crate::linux::helper::stat::info_of;
use crate::linux::helper::{archive, ops, upload};
use crate::linux::served::{FileRefusal, Refusal};
use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::stat::{fstat, Mode};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::os::fd::{AsFd, OwnedFd};

/// The word after [`super::bundle::INIT_ARG`] that selects the file helper.
pub const FILES_ARG: &str = "files";
/// Longest request line (paths are at most 4096 bytes).
pub const MAX_REQUEST: usize = 64 * 1024;
/// Prefix of an upload's temporary file.
const UPLOAD_PREFIX: &str = ".cleanroom-upload-";

/// What the server asks the helper for (the first line on its stdin).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "request", rename_all = "snake_case")]
pub enum Request {
    /// A files-API operation; `CreateTemp` starts an upload session.
    Op { op: FileOp },
    /// Stream at most `length` bytes (0: to the end) of a regular file from `offset` to
    /// stdout: first answer `Opened { size }`, then `Done` once every byte was written.
    Read {
        path: String,
        offset: u64,
        length: u64,
    },
}

/// One answer line.
pub type Answer = Result<FileAnswer, FileRefusal>;

/// Entry point (in the sandbox); the process's exit code.
pub fn main() -> i32 {
    crate::linux::sys::allow_openat2_fallback();
    crate::linux::sys::ignore_sigpipe();
    // Modes are exactly the ones asked for.
    nix::sys::stat::umask(Mode::empty());
    let stdin = match std::io::stdin().as_fd().try_clone_to_owned() {
        Ok(fd) => fd,
        Err(_) => return 1,
    };
    let mut input = std::io::BufReader::with_capacity(1 << 20, std::fs::File::from(stdin));
    let request = match read_line(&mut input) {
        Ok(Some(line)) => serde_json::from_slice::<Request>(&line)
            .map_err(|e| invalid(format!("malformed request: {e}"))),
        Ok(None) => return 0,
        Err(e) => Err(e),
    };
    match request {
        Err(refusal) => answer(&Err(refusal)),
        Ok(Request::Read {
            path,
            offset,
            length,
        }) => {
            let result = read(&path, offset, length);
            answer(&result);
        }
        Ok(Request::Op {
            op: FileOp::Archive { path },
        }) => {
            let result = match std::io::stdout().as_fd().try_clone_to_owned() {
                Ok(out) => archive::archive(&path, out, &mut || answer(&Ok(FileAnswer::Started))),
                Err(e) => Err(invalid(format!("stdout: {e}"))),
            };
            answer(&result);
        }
        Ok(Request::Op {
            op:
                FileOp::CreateTemp {
                    path,
                    create_parents,
                    no_overwrite,
                },
        }) => upload_session(&path, create_parents, no_overwrite, &mut input),
        Ok(Request::Op { op }) => answer(&ops::run(&op, &[]).map(|(a, _)| a)),
    }
    0
}

/// Write one answer line to stderr (the server's control pipe).
fn answer(a: &Answer) {
    if let Ok(mut line) = serde_json::to_vec(a) {
        line.push(b'\n');
        let _ = std::io::stderr().write_all(&line);
    }
}

/// One line (without its `\n`), at most [`MAX_REQUEST`] bytes; `None` at EOF.
fn read_line<R: BufRead>(input: &mut R) -> Result<Option<Vec<u8>>, FileRefusal> {
    let mut line = Vec::new();
    let n = std::io::Read::take(&mut *input, MAX_REQUEST as u64 + 1)
        .read_until(b'\n', &mut line)
        .map_err(|e| invalid(format!("request: {e}")))?;
    if n == 0 {
        return Ok(None);
    }
    if line.pop() != Some(b'\n') {
        return Err(invalid("request line too long or cut short"));
    }
    Ok(Some(line))
}

/// [`Request::Read`]: opened as the linux runtime's helper opens (`O_PATH`, a regular file
/// on a data filesystem, reopened read-only), then copied out in pieces.
fn read(path: &str, offset: u64, length: u64) -> Answer {
    let (fd, size) = crate::linux::helper::open::open_in_sandbox(path, crate::OpenMode::Read)?;
    answer(&Ok(FileAnswer::Opened { size }));
    let end = match length {
        0 => u64::MAX,
        n => offset.saturating_add(n),
    };
    let mut out = std::io::stdout().lock();
    let mut buf = vec![0u8; 256 * 1024];
    let mut pos = offset;
    while pos < end {
        let want = buf.len().min((end - pos).min(usize::MAX as u64) as usize);
        let n = match nix::sys::uio::pread(&fd, &mut buf[..want], pos as i64) {
            Ok(0) => break,
            Ok(n) => n,
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(refusal(path, "read", e)),
        };
        out.write_all(&buf[..n])
            .map_err(|e| invalid(format!("the reader went away: {e}")))?;
        pos += n as u64;
    }
    out.flush()
        .map_err(|e| invalid(format!("the reader went away: {e}")))?;
    Ok(FileAnswer::Done)
}

/// The upload's temporary file, removed when dropped unless it was renamed into place.
struct Temp {
    dir: OwnedFd,
    name: String,
    file: Option<OwnedFd>,
}

impl Drop for Temp {
    fn drop(&mut self) {
        if self.file.is_some() {
            let _ = nix::unistd::unlinkat(
                &self.dir,
                self.name.as_str(),
                nix::unistd::UnlinkatFlags::NoRemoveDir,
            );
        }
    }
}

/// `CreateTemp`, then serve the upload's chunks until its commit (or the end of stdin).
fn upload_session(path: &str, create_parents: bool, no_overwrite: bool, input: &mut impl BufRead) {
    let mut temp = match create_temp(path, create_parents, no_overwrite) {
        Ok((temp, free_bytes)) => {
            answer(&Ok(FileAnswer::Temp { free_bytes }));
            temp
        }
        Err(refusal) => return answer(&Err(refusal)),
    };
    loop {
        let op = match read_line(input) {
            Ok(None) => return,
            Ok(Some(line)) => match serde_json::from_slice::<FileOp>(&line) {
                Ok(op) => op,
                // The stream is out of step: nothing more can be trusted to be a chunk.
                Err(e) => return answer(&Err(invalid(format!("malformed request: {e}")))),
            },
            Err(refusal) => return answer(&Err(refusal)),
        };
        let Some(file) = temp.file.as_ref() else {
            return;
        };
        match op {
            FileOp::WriteChunk { offset, len } => answer(&write_chunk(file, input, offset, len)),
            FileOp::Commit {
                path,
                size,
                mode,
                uid,
                gid,
                no_overwrite,
            } => {
                let result = commit(&mut temp, &path, size, mode, (uid, gid), no_overwrite);
                return answer(&result);
            }
            FileOp::Extract { path, size } => {
                let result = file
                    .try_clone()
                    .map_err(|e| invalid(format!("dup: {e}")))
                    .and_then(|f| archive::extract(&path, size, f));
                return answer(&result);
            }
            other => answer(&Err(invalid(format!("{other:?} is not part of an upload")))),
        }
    }
}

/// A new named temporary file in the directory of `path` (refusing what the linux
/// runtime's `CreateTemp` refuses) and its filesystem's free bytes.
fn create_temp(
    path: &str,
    create_parents: bool,
    no_overwrite: bool,
) -> Result<(Temp, u64), FileRefusal> {
    let (dir, parent) = upload::upload_dir(path, create_parents, no_overwrite)?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let temp_name = format!("{UPLOAD_PREFIX}{}-{nanos}", std::process::id());
    let fd = nix::fcntl::openat(
        &dir,
        temp_name.as_str(),
        OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_RDWR | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o600),
    )
    .map_err(|e| refusal(&parent, "create a file in", e))?;
    let free = upload::free_bytes(&fd);
    let temp = Temp {
        dir,
        name: temp_name,
        file: Some(fd),
    };
    Ok((temp, free))
}

/// Cut the file to `offset`, then write the next `len` bytes of `input` there. The bytes
/// are always consumed (the next request line follows them), even after a failed write.
fn write_chunk(file: &OwnedFd, input: &mut impl BufRead, offset: u64, len: u64) -> Answer {
    let mut failed = upload::truncate(file, offset).err();
    let (mut left, mut at) = (len, offset);
    while left > 0 {
        let buf = match input.fill_buf() {
            Ok([]) => break,
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(invalid(format!("upload stream: {e}"))),
        };
        let n = buf.len().min(left.min(usize::MAX as u64) as usize);
        if failed.is_none() {
            failed = write_all_at(file, &buf[..n], at).err();
        }
        input.consume(n);
        left -= n as u64;
        at += n as u64;
    }
    if left > 0 {
        return Err(invalid(format!(
            "short chunk: {} of {len} bytes",
            len - left
        )));
    }
    match failed {
        Some(refusal) => Err(refusal),
        None => Ok(FileAnswer::Written { len }),
    }
}

fn write_all_at(file: &OwnedFd, mut data: &[u8], mut at: u64) -> Result<(), FileRefusal> {
    while !data.is_empty() {
        match nix::sys::uio::pwrite(file, data, at as i64) {
            Ok(0) => return Err(refusal("upload", "write", Errno::ENOSPC)),
            Ok(n) => {
                data = &data[n..];
                at += n as u64;
            }
            Err(Errno::EINTR) => {}
            Err(e) => return Err(refusal("upload", "write", e)),
        }
    }
    Ok(())
}

/// Give the temporary file its size, mode and owner and rename it over `path` (or, with
/// `no_overwrite`, only where nothing is).
fn commit(
    temp: &mut Temp,
    path: &str,
    size: u64,
    mode: u32,
    (uid, gid): (Option<u32>, Option<u32>),
    no_overwrite: bool,
) -> Answer {
    let norm = normalize(path)?;
    let (parent, Some(name)) = split(&norm) else {
        return Err(FileRefusal::new(
            Refusal::TypeMismatch,
            "\"/\" is a directory",
        ));
    };
    let file = temp.file.as_ref().ok_or_else(|| invalid("no upload"))?;
    let dir = open_dir(parent)?;
    upload::finish_file(file, &norm, size, mode, (uid, gid))?;
    let renamed = if no_overwrite {
        nix::fcntl::renameat2(
            &temp.dir,
            temp.name.as_str(),
            &dir,
            name,
            nix::fcntl::RenameFlags::RENAME_NOREPLACE,
        )
    } else {
        nix::fcntl::renameat(&temp.dir, temp.name.as_str(), &dir, name)
    };
    renamed.map_err(|e| match e {
        // The target's directory is no longer on the temporary file's filesystem: the
        // sandbox swapped it meanwhile. Refused as writing there directly would be.
        Errno::EXDEV => {
            let read_only = nix::sys::statvfs::fstatvfs(&dir)
                .is_ok_and(|s| s.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY));
            let e = if read_only {
                Errno::EROFS
            } else {
                Errno::ENOENT
            };
            refusal(&norm, "replace", e)
        }
        e => refusal(&norm, "replace", e),
    })?;
    let st = fstat(file).map_err(|e| refusal(&norm, "stat", e))?;
    // Renamed into place: nothing to remove any more.
    temp.file = None;
    Ok(FileAnswer::Info {
        info: info_of(&norm, &st, String::new()),
    })
}
