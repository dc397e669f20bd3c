//! Moving bytes between the API and descriptors the sandbox's helper handed over, with
//! bounded memory: one chunk per upload call goes through a pipe to the helper (which
//! writes it, so the pages are the sandbox's); downloads are read chunk by chunk off the
//! runtime; archives are piped out of the helper as it writes them.

use crate::engine::OwnedSandbox;
use crate::model::error::EngineError;
use buffa_types::google::protobuf::Timestamp;
use cleanroom_backend::files::{FileAnswer, FileInfo, FileKind, FileOp};
use cleanroom_proto::cleanroom::v1::*;
use connectrpc::ServiceStream;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;

/// Bytes per download message.
pub const READ_CHUNK: usize = 1 << 20;
/// Pipe buffer for chunk and archive pipes (fewer wake-ups on bulk data).
const PIPE_SIZE: i32 = 1 << 20;

/// The API's view of a file.
pub fn info_msg(i: &FileInfo) -> SandboxFileInfo {
    let kind = match i.kind {
        FileKind::Regular => SandboxFileType::SANDBOX_FILE_TYPE_REGULAR,
        FileKind::Directory => SandboxFileType::SANDBOX_FILE_TYPE_DIRECTORY,
        FileKind::Symlink => SandboxFileType::SANDBOX_FILE_TYPE_SYMLINK,
        FileKind::Other => SandboxFileType::SANDBOX_FILE_TYPE_OTHER,
    };
    SandboxFileInfo {
        path: i.path.clone(),
        name: i.name().to_string(),
        r#type: kind.into(),
        size: i.size,
        mode: i.mode,
        uid: i.uid,
        gid: i.gid,
        modified_at: Timestamp::from_unix(i.mtime_sec, i.mtime_nsec as i32).into(),
        symlink_target: i.symlink_target.clone(),
        ..Default::default()
    }
}

/// The `Info` of an answer, or an internal error (a helper that answered out of turn).
pub fn expect_info(answer: FileAnswer) -> Result<FileInfo, EngineError> {
    match answer {
        FileAnswer::Info { info } => Ok(info),
        other => Err(unexpected(&other)),
    }
}

pub fn unexpected(answer: &FileAnswer) -> EngineError {
    EngineError::internal(format!("unexpected answer from the sandbox: {answer:?}"))
}

fn pipe_pair() -> Result<(OwnedFd, OwnedFd), EngineError> {
    let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|e| EngineError::internal(format!("pipe: {e}")))?;
    // Failure only keeps the default size: a speed knob.
    let _ = nix::fcntl::fcntl(&w, nix::fcntl::FcntlArg::F_SETPIPE_SZ(PIPE_SIZE));
    Ok((r, w))
}

/// Have the sandbox write `data` at `offset` of the upload's temporary `file`.
pub async fn write_chunk(
    sbx: &OwnedSandbox,
    file: &OwnedFd,
    offset: u64,
    data: &[u8],
) -> Result<(), EngineError> {
    let (r, w) = pipe_pair()?;
    let mut tx =
        pipe::Sender::from_owned_fd(w).map_err(|e| EngineError::internal(format!("pipe: {e}")))?;
    let dup = file
        .try_clone()
        .map_err(|e| EngineError::internal(format!("dup: {e}")))?;
    let op = FileOp::WriteChunk {
        offset,
        len: data.len() as u64,
    };
    let run = sbx.file_op(op, vec![dup, r]);
    let feed = async move {
        let fed = tx.write_all(data).await;
        drop(tx);
        fed
    };
    tokio::pin!(run, feed);
    // Feed while waiting for the answer; once it is in, stop feeding (a helper that
    // stopped reading must not hold this call: the answer is bounded, the pipe is not).
    let mut fed = None;
    let reply = loop {
        tokio::select! {
            reply = &mut run => break reply,
            f = &mut feed, if fed.is_none() => fed = Some(f),
        }
    };
    // The helper's answer says why first (a full disk closes the pipe early).
    let reply = reply?;
    fed.unwrap_or_else(|| Err(std::io::ErrorKind::BrokenPipe.into()))
        .map_err(|e| EngineError::internal(format!("feeding the sandbox: {e}")))?;
    match reply.answer {
        FileAnswer::Written { len } if len == data.len() as u64 => Ok(()),
        other => Err(unexpected(&other)),
    }
}

/// Stream `file` from `offset`, at most `length` bytes (0: to its end); the first message
/// carries `info`.
pub fn read_stream(
    file: std::fs::File,
    info: SandboxFileInfo,
    offset: u64,
    length: u64,
) -> ServiceStream<ReadSandboxFileResponse> {
    struct St {
        file: Arc<std::fs::File>,
        pos: u64,
        end: u64,
        first: Option<SandboxFileInfo>,
        done: bool,
    }
    let end = if length == 0 {
        u64::MAX
    } else {
        offset.saturating_add(length)
    };
    let st = St {
        file: Arc::new(file),
        pos: offset,
        end,
        first: Some(info),
        done: false,
    };
    Box::pin(futures::stream::unfold(st, |mut st| async move {
        if st.done {
            return None;
        }
        let want = READ_CHUNK.min(st.end.saturating_sub(st.pos).min(usize::MAX as u64) as usize);
        let data = if want == 0 {
            Vec::new()
        } else {
            let (file, pos) = (st.file.clone(), st.pos);
            let read = tokio::task::spawn_blocking(move || {
                let mut buf = vec![0u8; want];
                let mut got = 0;
                while got < want {
                    match file.read_at(&mut buf[got..], pos + got as u64) {
                        Ok(0) => break,
                        Ok(n) => got += n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
                buf.truncate(got);
                Ok(buf)
            })
            .await;
            match read {
                Ok(Ok(buf)) => buf,
                Ok(Err(e)) => {
                    st.done = true;
                    let e = EngineError::internal(format!("read: {e}"));
                    return Some((Err(crate::api::to_connect(e)), st));
                }
                Err(e) => {
                    st.done = true;
                    let e = EngineError::internal(format!("read task: {e}"));
                    return Some((Err(crate::api::to_connect(e)), st));
                }
            }
        };
        if data.is_empty() && st.first.is_none() {
            return None;
        }
        if data.len() < want || want == 0 {
            st.done = true;
        }
        let msg = ReadSandboxFileResponse {
            file: st
                .first
                .take()
                .map(buffa::MessageField::some)
                .unwrap_or_default(),
            offset: st.pos,
            data,
            ..Default::default()
        };
        st.pos += msg.data.len() as u64;
        Some((Ok(msg), st))
    }))
}

/// Stream what the sandbox's helper writes into `data` (the file's bytes from `offset`);
/// the first message carries `info`, the helper's outcome ends the stream (an error if
/// it could not write them all).
pub fn pipe_read_stream(
    data: OwnedFd,
    done: cleanroom_backend::files::FileDone,
    info: SandboxFileInfo,
    offset: u64,
) -> Result<ServiceStream<ReadSandboxFileResponse>, EngineError> {
    struct St {
        rx: pipe::Receiver,
        done: Option<cleanroom_backend::files::FileDone>,
        pos: u64,
        first: Option<SandboxFileInfo>,
        finished: bool,
    }
    let rx = pipe::Receiver::from_owned_fd(data)
        .map_err(|e| EngineError::internal(format!("pipe: {e}")))?;
    let st = St {
        rx,
        done: Some(done),
        pos: offset,
        first: Some(info),
        finished: false,
    };
    Ok(Box::pin(futures::stream::unfold(st, |mut st| async move {
        if st.finished {
            return None;
        }
        let mut buf = vec![0u8; READ_CHUNK];
        let mut got = 0;
        // Fill a whole message unless the stream ends (fewer, larger messages).
        let ended = loop {
            match st.rx.read(&mut buf[got..]).await {
                Ok(0) => break true,
                Ok(n) => {
                    got += n;
                    if got == buf.len() {
                        break false;
                    }
                }
                Err(e) => {
                    st.finished = true;
                    let e = EngineError::internal(format!("read pipe: {e}"));
                    return Some((Err(crate::api::to_connect(e)), st));
                }
            }
        };
        buf.truncate(got);
        if ended {
            st.finished = true;
            let outcome = match st.done.take() {
                Some(d) => d.await.map_err(EngineError::from),
                None => Ok(FileAnswer::Done),
            };
            match outcome {
                Ok(FileAnswer::Done) => {}
                Ok(other) => return Some((Err(crate::api::to_connect(unexpected(&other))), st)),
                Err(e) => return Some((Err(crate::api::to_connect(e)), st)),
            }
            if buf.is_empty() && st.first.is_none() {
                return None;
            }
        }
        let msg = ReadSandboxFileResponse {
            file: st
                .first
                .take()
                .map(buffa::MessageField::some)
                .unwrap_or_default(),
            offset: st.pos,
            data: buf,
            ..Default::default()
        };
        st.pos += msg.data.len() as u64;
        Some((Ok(msg), st))
    })))
}

/// Start the sandbox's helper writing `path` as a tar archive and stream it out. Errors
/// before the first byte (no such path, permission) are returned; a failure later ends
/// the stream with that error.
pub async fn archive_stream(
    sbx: &OwnedSandbox,
    path: &str,
) -> Result<ServiceStream<ReadSandboxArchiveResponse>, EngineError> {
    let (r, w) = pipe_pair()?;
    let rx = pipe::Receiver::from_owned_fd(r)
        .map_err(|e| EngineError::internal(format!("pipe: {e}")))?;
    let op = FileOp::Archive {
        path: path.to_string(),
    };
    let reply = sbx.file_op(op, vec![w]).await?;
    if reply.answer != FileAnswer::Started {
        return Err(unexpected(&reply.answer));
    }
    let done = reply.done;
    Ok(Box::pin(futures::stream::unfold(
        (rx, done, false),
        |(mut rx, mut done, finished)| async move {
            if finished {
                return None;
            }
            let mut buf = vec![0u8; 256 * 1024];
            match rx.read(&mut buf).await {
                Ok(0) => {
                    let outcome = match done.take() {
                        Some(d) => d.await.map_err(EngineError::from),
                        None => Ok(FileAnswer::Done),
                    };
                    match outcome {
                        Ok(FileAnswer::Done) => None,
                        Ok(other) => Some((
                            Err(crate::api::to_connect(unexpected(&other))),
                            (rx, None, true),
                        )),
                        Err(e) => Some((Err(crate::api::to_connect(e)), (rx, None, true))),
                    }
                }
                Ok(n) => {
                    buf.truncate(n);
                    let msg = ReadSandboxArchiveResponse {
                        data: buf,
                        ..Default::default()
                    };
                    Some((Ok(msg), (rx, done, false)))
                }
                Err(e) => {
                    let e = EngineError::internal(format!("archive pipe: {e}"));
                    Some((Err(crate::api::to_connect(e)), (rx, None, true)))
                }
            }
        },
    )))
}
