//! Moving files in and out of a sandbox as a client (shared by the CLI's `cp` and the
//! SDKs): chunked, resumable uploads with a running sha256 that the server checks at
//! commit; streamed downloads that pick up at the offset they reached when the stream
//! breaks; directory archives both ways. Memory is bounded by one chunk whatever the size.
//! See `docs/files.md` for the protocol.

use crate::api::*;
use crate::{ApiError, Client, ErrorCode};
use buffa::MessageView;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Bytes per upload call unless the server says less (its `max_chunk_bytes`).
pub const DEFAULT_CHUNK: usize = 2 << 20;
/// Reconnects of one download before its error is final.
const READ_RETRIES: u32 = 5;

/// Called with the total bytes moved so far.
pub type Progress<'a> = &'a (dyn Fn(u64) + Send + Sync);

/// What an upload tells its caller as it goes.
pub struct Hooks<'a> {
    /// Gets the upload id as soon as the server assigned it (so a caller can tell the
    /// user how to resume).
    pub started: &'a mut (dyn FnMut(&str) + Send),
    pub progress: Progress<'a>,
}

/// How an upload lands (see `SandboxFileWriteOptions`).
#[derive(Debug, Clone, Default)]
pub struct UploadOptions {
    /// The bytes are a tar archive extracted into the directory `path`.
    pub tar: bool,
    pub mode: u32,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub create_parents: bool,
    pub no_overwrite: bool,
    pub expected_size: Option<u64>,
}

/// Continue an interrupted upload: its id and the offset the server reports (see
/// [`upload_status`]); the source must be positioned at that offset and `prefix` must hold
/// the sha256 state of the bytes before it (or be `None` to skip the end-to-end check).
pub struct Resume {
    pub upload_id: String,
    pub offset: u64,
    pub prefix: Option<Sha256>,
}

/// What an upload did.
#[derive(Debug, Clone)]
pub struct Uploaded {
    pub upload_id: String,
    /// Bytes of the whole file (including what an earlier attempt sent).
    pub bytes: u64,
    /// Offset this call started at (0 unless resumed).
    pub resumed_from: u64,
    /// sha256 the server computed over every byte it received (checked against ours).
    pub sha256: String,
    pub file: SandboxFileInfo,
}

fn local(code: ErrorCode, message: impl Into<String>) -> ApiError {
    ApiError {
        code: code.to_string(),
        message: message.into(),
        connect_code: String::new(),
        details: Vec::new(),
    }
}

/// Where an upload stands (`offset` = bytes the server holds).
pub async fn upload_status(
    client: &Client,
    sandbox_id: &str,
    upload_id: &str,
) -> Result<SandboxUpload, ApiError> {
    let req = GetSandboxUploadRequest {
        sandbox_id: sandbox_id.to_string(),
        upload_id: upload_id.to_string(),
        ..Default::default()
    };
    let resp = client.files.get_sandbox_upload(req).await?.into_owned();
    Ok(resp.upload.as_option().cloned().unwrap_or_default())
}

/// Read up to `buf.len()` bytes (fewer only at the end of `src`).
async fn fill<R: AsyncRead + Unpin>(src: &mut R, buf: &mut [u8]) -> Result<usize, ApiError> {
    let mut n = 0;
    while n < buf.len() {
        match src.read(&mut buf[n..]).await {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(local(ErrorCode::InvalidArgument, format!("read: {e}"))),
        }
    }
    Ok(n)
}

/// Upload everything `src` yields to `path` in the sandbox. A call that fails in transit
/// is retried once from where the server stands when that is the chunk in hand; otherwise
/// the error says where the upload stands.
pub async fn upload<R: AsyncRead + Unpin>(
    client: &Client,
    (sandbox_id, path): (&str, &str),
    src: &mut R,
    opts: &UploadOptions,
    resume: Option<Resume>,
    hooks: Hooks<'_>,
) -> Result<Uploaded, ApiError> {
    let Hooks { started, progress } = hooks;
    let (mut upload_id, mut offset, mut hasher) = match resume {
        Some(r) => (r.upload_id, r.offset, r.prefix),
        None => (String::new(), 0, Some(Sha256::new())),
    };
    if !upload_id.is_empty() {
        started(&upload_id);
    }
    let resumed_from = offset;
    let mut chunk = DEFAULT_CHUNK;
    let mut buf = vec![0u8; chunk];
    loop {
        let n = fill(src, &mut buf[..chunk]).await?;
        let finish = n < chunk;
        let data = &buf[..n];
        if let Some(h) = hasher.as_mut() {
            h.update(data);
        }
        let mut req = WriteSandboxFileRequest {
            sandbox_id: sandbox_id.to_string(),
            upload_id: upload_id.clone(),
            offset,
            data: data.to_vec(),
            finish,
            ..Default::default()
        };
        if upload_id.is_empty() {
            req.path = path.to_string();
            req.options = buffa::MessageField::some(SandboxFileWriteOptions {
                format: if opts.tar {
                    SandboxUploadFormat::SANDBOX_UPLOAD_FORMAT_TAR
                } else {
                    SandboxUploadFormat::SANDBOX_UPLOAD_FORMAT_FILE
                }
                .into(),
                mode: opts.mode,
                uid: opts.uid,
                gid: opts.gid,
                create_parents: opts.create_parents,
                no_overwrite: opts.no_overwrite,
                expected_size: opts.expected_size,
                ..Default::default()
            });
        }
        if finish {
            if let Some(h) = &hasher {
                req.sha256 = hex(&h.clone().finalize());
            }
        }
        let resp = match client.files.write_sandbox_file(req.clone()).await {
            Ok(r) => r.into_owned(),
            // In transit: ask where the upload stands; resend this chunk if that is where.
            Err(e)
                if !upload_id.is_empty()
                    && ApiError::from(e.clone()).connect_code == "unavailable" =>
            {
                let at = upload_status(client, sandbox_id, &upload_id).await?.offset;
                if at != offset {
                    return Err(e.into());
                }
                client.files.write_sandbox_file(req).await?.into_owned()
            }
            Err(e) => return Err(e.into()),
        };
        if upload_id.is_empty() {
            upload_id = resp.upload_id.clone();
            started(&upload_id);
            let max = resp.max_chunk_bytes as usize;
            if max > 0 && max < chunk {
                chunk = max;
            }
        }
        offset = resp.offset;
        progress(offset);
        if resp.finished {
            return Ok(Uploaded {
                upload_id,
                bytes: offset,
                resumed_from,
                sha256: resp.sha256,
                file: resp.file.as_option().cloned().unwrap_or_default(),
            });
        }
        if finish {
            return Err(local(
                ErrorCode::Internal,
                "the server did not commit the last chunk",
            ));
        }
    }
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a download did.
#[derive(Debug, Clone)]
pub struct Downloaded {
    pub file: SandboxFileInfo,
    /// Bytes written to the destination by this call.
    pub bytes: u64,
    /// sha256 of those bytes.
    pub sha256: String,
}

/// Stream `path` from `offset` (0: the whole file) into `dst`. A broken stream is picked
/// up again at the offset reached; the file must not shrink meanwhile.
pub async fn download<W: AsyncWrite + Unpin>(
    client: &Client,
    sandbox_id: &str,
    path: &str,
    offset: u64,
    dst: &mut W,
    progress: Progress<'_>,
) -> Result<Downloaded, ApiError> {
    let mut at = offset;
    let mut hasher = Sha256::new();
    let mut info: Option<SandboxFileInfo> = None;
    let mut retries = 0;
    'calls: loop {
        let req = ReadSandboxFileRequest {
            sandbox_id: sandbox_id.to_string(),
            path: path.to_string(),
            offset: at,
            ..Default::default()
        };
        let mut stream = match client.files.read_sandbox_file(req).await {
            Ok(s) => s,
            Err(e) => {
                let e = ApiError::from(e);
                if e.connect_code == "unavailable" && info.is_some() && retries < READ_RETRIES {
                    retries += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                    continue;
                }
                return Err(e);
            }
        };
        loop {
            match stream.message().await {
                Ok(Some(m)) => {
                    if info.is_none() {
                        info = m
                            .view()
                            .file
                            .as_option()
                            .and_then(|f| f.to_owned_message().ok());
                    }
                    let data: &[u8] = m.view().data;
                    dst.write_all(data)
                        .await
                        .map_err(|e| local(ErrorCode::InvalidArgument, format!("write: {e}")))?;
                    hasher.update(data);
                    at += data.len() as u64;
                    progress(at - offset);
                    retries = 0;
                }
                Ok(None) => break 'calls,
                Err(e) => {
                    let e = ApiError::from(e);
                    if info.is_some() && retries < READ_RETRIES && e.connect_code != "not_found" {
                        retries += 1;
                        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                        continue 'calls;
                    }
                    return Err(e);
                }
            }
        }
    }
    dst.flush()
        .await
        .map_err(|e| local(ErrorCode::InvalidArgument, format!("write: {e}")))?;
    Ok(Downloaded {
        file: info.unwrap_or_default(),
        bytes: at - offset,
        sha256: hex(&hasher.finalize()),
    })
}

/// Stream `path` (a file or a tree) as a tar archive into `dst` (entries named
/// `<basename>/…`). Not resumable: an archive is made afresh on each call.
pub async fn download_archive<W: AsyncWrite + Unpin>(
    client: &Client,
    sandbox_id: &str,
    path: &str,
    dst: &mut W,
    progress: Progress<'_>,
) -> Result<u64, ApiError> {
    let req = ReadSandboxArchiveRequest {
        sandbox_id: sandbox_id.to_string(),
        path: path.to_string(),
        ..Default::default()
    };
    let mut stream = client.files.read_sandbox_archive(req).await?;
    let mut total = 0u64;
    while let Some(m) = stream.message().await? {
        let data: &[u8] = m.view().data;
        dst.write_all(data)
            .await
            .map_err(|e| local(ErrorCode::InvalidArgument, format!("write: {e}")))?;
        total += data.len() as u64;
        progress(total);
    }
    dst.flush()
        .await
        .map_err(|e| local(ErrorCode::InvalidArgument, format!("write: {e}")))?;
    Ok(total)
}

/// Describe `path` (the entry itself unless `follow`).
pub async fn stat(
    client: &Client,
    sandbox_id: &str,
    path: &str,
    follow: bool,
) -> Result<SandboxFileInfo, ApiError> {
    let req = StatSandboxFileRequest {
        sandbox_id: sandbox_id.to_string(),
        path: path.to_string(),
        follow_symlinks: follow,
        ..Default::default()
    };
    let resp = client.files.stat_sandbox_file(req).await?.into_owned();
    Ok(resp.file.as_option().cloned().unwrap_or_default())
}

/// Every entry of a directory (all pages).
pub async fn list_all(
    client: &Client,
    sandbox_id: &str,
    path: &str,
) -> Result<Vec<SandboxFileInfo>, ApiError> {
    let mut out: Vec<SandboxFileInfo> = Vec::new();
    loop {
        let req = ListSandboxFilesRequest {
            sandbox_id: sandbox_id.to_string(),
            path: path.to_string(),
            start_after: out.last().map(|e| e.name.clone()).unwrap_or_default(),
            ..Default::default()
        };
        let resp = client.files.list_sandbox_files(req).await?.into_owned();
        out.extend(resp.entries);
        if !resp.truncated {
            return Ok(out);
        }
    }
}

/// Is `path` a directory in the sandbox (following symlinks there)? `None`: nothing there.
pub async fn is_dir(
    client: &Client,
    sandbox_id: &str,
    path: &str,
) -> Result<Option<bool>, ApiError> {
    match stat(client, sandbox_id, path, true).await {
        Ok(info) => Ok(Some(
            info.r#type.as_known() == Some(SandboxFileType::SANDBOX_FILE_TYPE_DIRECTORY),
        )),
        Err(e) if e.is(ErrorCode::FileNotFound) => Ok(None),
        Err(e) => Err(e),
    }
}
