//! `WriteFile`, `ReadFile` and their streaming forms over the native files API
//! (`cleanroom.v1.FileService`), which acts as the sandbox's own identity: an upload in
//! chunks committed atomically at the end, reads streamed from the sandbox.

use super::{call, invalid, HostAgent};
use crate::identity::auth::Principal;
use crate::model::error::EngineError;
use cleanroom_proto::cleanroom::v1 as cr;
use cleanroom_proto::hostagent::v1::__buffa::oneof::write_file_stream_request::Content;
use cleanroom_proto::hostagent::v1::*;
use connectrpc::{ConnectError, InboundStream, Response, ServiceResult, ServiceStream};
use futures::StreamExt;

/// Bytes per native upload call (the server takes up to 2 MiB).
const CHUNK: usize = 1 << 20;
/// Largest file `ReadFile` answers in one message; `ReadFileStream` has no such bound.
pub const MAX_READ: u64 = 16 << 20;

/// An upload to `path` in a sandbox: bytes pushed in order, committed by [`Upload::finish`]
/// (nothing is visible at `path` before). Dropped unfinished, it expires with the native
/// upload's idle timeout.
pub(super) struct Upload<'a> {
    svc: &'a HostAgent,
    who: &'a Principal,
    sandbox_id: String,
    path: String,
    upload_id: String,
    offset: u64,
    pending: Vec<u8>,
}

impl<'a> Upload<'a> {
    pub fn new(svc: &'a HostAgent, who: &'a Principal, sandbox_id: String, path: String) -> Self {
        Upload {
            svc,
            who,
            sandbox_id,
            path,
            upload_id: String::new(),
            offset: 0,
            pending: Vec::new(),
        }
    }

    async fn send(&mut self, data: Vec<u8>, finish: bool) -> Result<(), ConnectError> {
        let n = data.len() as u64;
        let req = cr::WriteSandboxFileRequest {
            sandbox_id: self.sandbox_id.clone(),
            path: self.path.clone(),
            upload_id: self.upload_id.clone(),
            offset: self.offset,
            data,
            finish,
            ..Default::default()
        };
        let r: cr::WriteSandboxFileResponse = call!(
            self.svc.files,
            self.who,
            FileService::write_sandbox_file,
            req
        )?;
        self.upload_id = r.upload_id;
        self.offset += n;
        Ok(())
    }

    /// Append `data` (sent in [`CHUNK`]s as it fills).
    pub async fn push(&mut self, data: Vec<u8>) -> Result<(), ConnectError> {
        self.pending.extend_from_slice(&data);
        while self.pending.len() > CHUNK {
            let rest = self.pending.split_off(CHUNK);
            let chunk = std::mem::replace(&mut self.pending, rest);
            self.send(chunk, false).await?;
        }
        Ok(())
    }

    /// Send what is left and commit.
    pub async fn finish(mut self) -> Result<(), ConnectError> {
        let last = std::mem::take(&mut self.pending);
        self.send(last, true).await
    }
}

/// The native read of `path` as a stream of byte chunks.
async fn chunks(
    svc: &HostAgent,
    who: &Principal,
    sandbox_id: String,
    path: String,
) -> Result<ServiceStream<cr::ReadSandboxFileResponse>, ConnectError> {
    if path.is_empty() {
        return Err(invalid("path", "path is required"));
    }
    let req = cr::ReadSandboxFileRequest {
        sandbox_id,
        path,
        ..Default::default()
    };
    call!(svc.files, who, FileService::read_sandbox_file, req)
}

/// `ReadFile`: the whole file, at most [`MAX_READ`] bytes (`resource_exhausted` beyond,
/// pointing at `ReadFileStream`).
pub(super) async fn read_whole(
    svc: &HostAgent,
    who: &Principal,
    sandbox_id: String,
    path: String,
) -> Result<Vec<u8>, ConnectError> {
    let mut s = chunks(svc, who, sandbox_id, path).await?;
    let mut out = Vec::new();
    while let Some(m) = s.next().await {
        let m = m?;
        if out.len() as u64 + m.data.len() as u64 > MAX_READ {
            return Err(crate::api::to_connect(EngineError::resource_exhausted(format!(
                "the file is larger than {MAX_READ} bytes, the most ReadFile answers: use ReadFileStream"
            ))));
        }
        out.extend_from_slice(&m.data);
    }
    Ok(out)
}

/// `ReadFileStream`: the native chunks as they come.
pub(super) async fn read_stream(
    svc: &HostAgent,
    who: &Principal,
    sandbox_id: String,
    path: String,
) -> ServiceResult<ServiceStream<ReadFileStreamResponse>> {
    let s = chunks(svc, who, sandbox_id, path).await?;
    let out = s.filter_map(|m| async move {
        match m {
            Err(e) => Some(Err(e)),
            Ok(m) if m.data.is_empty() => None,
            Ok(m) => Some(Ok(ReadFileStreamResponse {
                chunk: m.data.to_vec(),
                ..Default::default()
            })),
        }
    });
    Response::ok(Box::pin(out) as ServiceStream<ReadFileStreamResponse>)
}

/// `WriteFileStream`: the first message names the file (`meta`), the rest are chunks; the
/// file appears when the client's stream ends. Anything else is `invalid_argument`.
pub(super) async fn write_stream(
    svc: &HostAgent,
    who: &Principal,
    mut requests: InboundStream<WriteFileStreamRequest>,
) -> Result<(), ConnectError> {
    let first = match requests.next().await {
        Some(m) => m?.to_owned_message(),
        None => {
            return Err(invalid(
                "meta",
                "the stream is empty: the first message must be meta",
            ))
        }
    };
    let Some(Content::Meta(meta)) = first.content else {
        return Err(invalid(
            "meta",
            "the first message must be meta (sandbox_id, path)",
        ));
    };
    if meta.path.is_empty() {
        return Err(invalid("path", "path is required"));
    }
    let id = svc.resolve(who, &meta.sandbox_id).await?;
    let mut upload = Upload::new(svc, who, id, meta.path.clone());
    while let Some(m) = requests.next().await {
        match m?.to_owned_message().content {
            Some(Content::Chunk(data)) => upload.push(data.to_vec()).await?,
            _ => return Err(invalid("chunk", "only the first message may be meta")),
        }
    }
    upload.finish().await
}
