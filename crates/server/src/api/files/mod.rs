//! `cleanroom.v1.FileService`: files in and out of a sandbox, every operation carried out
//! by the sandbox's own helper (its identity; see `docs/files.md`). This module checks
//! ownership (other principals get `sandbox_not_found` / `upload_not_found`), keeps the
//! upload table and translates messages; [`transfer`] moves the bytes.

pub mod transfer;
pub mod uploads;

use crate::api::to_connect;
use crate::engine::{Engine, OwnedSandbox};
use crate::identity::auth::{principal_of, Principal};
use crate::model::error::{EngineError, ErrorCode};
use buffa_types::google::protobuf::Timestamp;
use cleanroom_backend::files::{FileAnswer, FileOp, FileRead};
use cleanroom_backend::linux::fileops::normalize;
use cleanroom_proto::cleanroom::v1::*;
use connectrpc::{
    ConnectError, RequestContext, Response, ServiceRequest, ServiceResult, ServiceStream,
};
use sha2::Digest;
use std::sync::{Arc, Weak};
use std::time::Duration;
use transfer::{expect_info, info_msg, unexpected};
use uploads::{Target, Upload, Uploads, MAX_CHUNK};

/// Name of the hidden entry a tar upload's staging file would have (it never gets it: the
/// file is anonymous; the name only places it in the target directory).
const TAR_STAGING: &str = ".cleanroom-archive";
/// How often idle uploads and uploads of sandboxes that are gone are dropped.
const SWEEP_EVERY: Duration = Duration::from_secs(30);

/// The files service.
pub struct FileApi {
    engine: Arc<Engine>,
    uploads: Arc<Uploads>,
}

impl FileApi {
    /// Must be called inside a tokio runtime when uploads should be swept in the background
    /// (the server does); without one, idle uploads are only dropped when looked up.
    pub fn new(engine: Arc<Engine>) -> Arc<FileApi> {
        let api = Arc::new(FileApi {
            engine,
            uploads: Arc::default(),
        });
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let weak: Weak<FileApi> = Arc::downgrade(&api);
            rt.spawn(async move {
                loop {
                    tokio::time::sleep(SWEEP_EVERY).await;
                    let Some(api) = weak.upgrade() else { return };
                    let engine = api.engine.clone();
                    let n = api.uploads.sweep(|sbx| engine.ready_for_files(sbx).is_ok());
                    if n > 0 {
                        tracing::info!(dropped = n, "dropped idle uploads");
                    }
                }
            });
        }
        api
    }
}

fn who(ctx: &RequestContext) -> Result<Principal, ConnectError> {
    principal_of(ctx).map_err(to_connect)
}

fn path_of(path: &str) -> Result<String, EngineError> {
    normalize(path).map_err(|r| cleanroom_backend::BackendError::from(r).into())
}

fn offset_mismatch(at: u64) -> EngineError {
    EngineError::new(
        ErrorCode::UploadOffsetMismatch,
        format!("the upload stands at offset {at}: resume from there"),
    )
    .with("offset", at.to_string())
}

fn join(dir: &str, name: &str) -> String {
    if dir == "/" {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    }
}

fn upload_msg(up: &Upload, offset: u64) -> SandboxUpload {
    let ts = |t: std::time::SystemTime| {
        let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        buffa::MessageField::some(Timestamp::from_unix(
            d.as_secs() as i64,
            d.subsec_nanos() as i32,
        ))
    };
    let format = if up.target.tar {
        SandboxUploadFormat::SANDBOX_UPLOAD_FORMAT_TAR
    } else {
        SandboxUploadFormat::SANDBOX_UPLOAD_FORMAT_FILE
    };
    SandboxUpload {
        upload_id: up.id.clone(),
        sandbox_id: up.target.sandbox_id.clone(),
        path: up.target.path.clone(),
        format: format.into(),
        offset,
        created_at: ts(up.created_at),
        expires_at: ts(up.expires_at()),
        max_chunk_bytes: MAX_CHUNK as u64,
        ..Default::default()
    }
}

impl FileApi {
    /// Open a new upload for the first call of `WriteSandboxFile`.
    async fn open_upload(
        &self,
        who: &Principal,
        sbx: &OwnedSandbox,
        req: &WriteSandboxFileRequest,
    ) -> Result<Arc<Upload>, EngineError> {
        let path = path_of(&req.path)?;
        let o = &*req.options;
        let tar = o.format.as_known() == Some(SandboxUploadFormat::SANDBOX_UPLOAD_FORMAT_TAR);
        let target = Target {
            sandbox_id: sbx.id().to_string(),
            path: path.clone(),
            tar,
            mode: o.mode,
            uid: o.uid,
            gid: o.gid,
            no_overwrite: o.no_overwrite,
            expected_size: o.expected_size,
        };
        if o.mode > 0o7777 {
            return Err(EngineError::invalid(
                "options.mode: permission bits only (<= 0o7777)",
            ));
        }
        let op = FileOp::CreateTemp {
            path: if tar { join(&path, TAR_STAGING) } else { path },
            create_parents: o.create_parents,
            no_overwrite: o.no_overwrite && !tar,
        };
        let mut reply = sbx.file_op(op, Vec::new()).await?;
        let FileAnswer::Temp { free_bytes } = reply.answer else {
            return Err(unexpected(&reply.answer));
        };
        let file = reply
            .fds
            .pop()
            .ok_or_else(|| EngineError::internal("the sandbox handed over no file"))?;
        if let Some(n) = o.expected_size {
            if n > free_bytes {
                return Err(EngineError::resource_exhausted(format!(
                    "{n} bytes do not fit: {free_bytes} bytes are free under the sandbox's disk limit"
                ))
                .with("free_bytes", free_bytes.to_string()));
            }
        }
        self.uploads.insert(who, target, file)
    }

    async fn write(
        &self,
        who: &Principal,
        req: WriteSandboxFileRequest,
    ) -> Result<WriteSandboxFileResponse, EngineError> {
        let sbx = self.engine.sandbox(who, &req.sandbox_id)?;
        if req.data.len() > MAX_CHUNK {
            return Err(EngineError::invalid(format!(
                "data: at most {MAX_CHUNK} bytes per call (max_chunk_bytes)"
            )));
        }
        let up = if req.upload_id.is_empty() {
            if req.offset != 0 {
                return Err(offset_mismatch(0));
            }
            self.open_upload(who, &sbx, &req).await?
        } else {
            let up = self.uploads.get(who, sbx.id(), &req.upload_id)?;
            if !req.path.is_empty() && path_of(&req.path)? != up.target.path {
                return Err(EngineError::invalid(format!(
                    "path: upload {} writes {:?}",
                    up.id, up.target.path
                )));
            }
            up
        };
        let mut st = up.state.lock().await;
        let Some(file) = st.file.as_ref() else {
            return Err(uploads::not_found(&up.id));
        };
        if req.offset != st.offset {
            return Err(offset_mismatch(st.offset));
        }
        if !req.data.is_empty() {
            if let Err(e) = transfer::write_chunk(&sbx, file, st.offset, &req.data).await {
                if e.code == ErrorCode::ResourceExhausted {
                    // The disk limit: drop the upload, its anonymous file and the space
                    // with it. Nothing was ever visible at the path.
                    st.file = None;
                    self.uploads.remove(&up.id);
                }
                return Err(e);
            }
            st.offset += req.data.len() as u64;
            st.hasher.update(&req.data);
        }
        up.touch();
        let mut resp = WriteSandboxFileResponse {
            upload_id: up.id.clone(),
            offset: st.offset,
            max_chunk_bytes: MAX_CHUNK as u64,
            ..Default::default()
        };
        if !req.finish {
            return Ok(resp);
        }
        // Commit: whatever happens now, the upload ends.
        let file = st.file.take();
        self.uploads.remove(&up.id);
        let file = file.ok_or_else(|| uploads::not_found(&up.id))?;
        let digest = uploads::hex(&st.hasher.clone().finalize());
        if let Some(n) = up.target.expected_size {
            if n != st.offset {
                return Err(EngineError::invalid(format!(
                    "options.expected_size said {n} bytes, {} arrived; the upload is dropped",
                    st.offset
                )));
            }
        }
        if !req.sha256.is_empty() && !req.sha256.eq_ignore_ascii_case(&digest) {
            return Err(EngineError::invalid(format!(
                "sha256: the bytes received hash to {digest}; the upload is dropped"
            ))
            .with("sha256", digest));
        }
        let t = &up.target;
        let op = if t.tar {
            FileOp::Extract {
                path: t.path.clone(),
                size: st.offset,
            }
        } else {
            FileOp::Commit {
                path: t.path.clone(),
                size: st.offset,
                mode: t.mode,
                uid: t.uid,
                gid: t.gid,
                no_overwrite: t.no_overwrite,
            }
        };
        let reply = sbx.file_op(op, vec![file]).await?;
        resp.finished = true;
        resp.file = buffa::MessageField::some(info_msg(&expect_info(reply.answer)?));
        resp.sha256 = digest;
        Ok(resp)
    }

    async fn op(
        &self,
        who: &Principal,
        sandbox_id: &str,
        op: FileOp,
    ) -> Result<FileAnswer, EngineError> {
        let sbx = self.engine.sandbox(who, sandbox_id)?;
        Ok(sbx.file_op(op, Vec::new()).await?.answer)
    }
}

#[allow(refining_impl_trait)]
impl FileService for FileApi {
    async fn write_sandbox_file(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, WriteSandboxFileRequest>,
    ) -> ServiceResult<WriteSandboxFileResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        Response::ok(self.write(&who, req).await.map_err(to_connect)?)
    }

    async fn get_sandbox_upload(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, GetSandboxUploadRequest>,
    ) -> ServiceResult<GetSandboxUploadResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let sbx = self
            .engine
            .sandbox(&who, &req.sandbox_id)
            .map_err(to_connect)?;
        let up = self
            .uploads
            .get(&who, sbx.id(), &req.upload_id)
            .map_err(to_connect)?;
        let offset = {
            let st = up.state.lock().await;
            if st.file.is_none() {
                return Err(to_connect(uploads::not_found(&up.id)));
            }
            st.offset
        };
        Response::ok(GetSandboxUploadResponse {
            upload: buffa::MessageField::some(upload_msg(&up, offset)),
            ..Default::default()
        })
    }

    async fn cancel_sandbox_upload(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, CancelSandboxUploadRequest>,
    ) -> ServiceResult<CancelSandboxUploadResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let sbx = self
            .engine
            .sandbox(&who, &req.sandbox_id)
            .map_err(to_connect)?;
        // Unknown, finished, of another sandbox or someone else's: `upload_not_found`,
        // the same answer for each (no existence oracle), and nothing is dropped.
        let up = self
            .uploads
            .get(&who, sbx.id(), &req.upload_id)
            .map_err(to_connect)?;
        self.uploads.remove(&up.id);
        up.state.lock().await.file = None;
        Response::ok(CancelSandboxUploadResponse::default())
    }

    async fn read_sandbox_file(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, ReadSandboxFileRequest>,
    ) -> ServiceResult<ServiceStream<ReadSandboxFileResponse>> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let run = async {
            let path = path_of(&req.path)?;
            let op = FileOp::Stat {
                path: path.clone(),
                follow: true,
            };
            let sbx = self.engine.sandbox(&who, &req.sandbox_id)?;
            let mut info = expect_info(sbx.file_op(op, Vec::new()).await?.answer)?;
            match sbx.read_range(&path, req.offset, req.length).await? {
                FileRead::File(file) => {
                    // The size of what was opened (the stat above may have raced a
                    // replacement).
                    info.size = file
                        .metadata()
                        .map_err(|e| EngineError::internal(format!("stat: {e}")))?
                        .len();
                    Ok::<_, EngineError>(transfer::read_stream(
                        file,
                        info_msg(&info),
                        req.offset,
                        req.length,
                    ))
                }
                FileRead::Stream { size, data, done } => {
                    info.size = size;
                    transfer::pipe_read_stream(data, done, info_msg(&info), req.offset)
                }
            }
        };
        Response::ok(run.await.map_err(to_connect)?)
    }

    async fn stat_sandbox_file(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, StatSandboxFileRequest>,
    ) -> ServiceResult<StatSandboxFileResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let op = FileOp::Stat {
            path: req.path.clone(),
            follow: req.follow_symlinks,
        };
        let info = self
            .op(&who, &req.sandbox_id, op)
            .await
            .and_then(expect_info)
            .map_err(to_connect)?;
        Response::ok(StatSandboxFileResponse {
            file: buffa::MessageField::some(info_msg(&info)),
            ..Default::default()
        })
    }

    async fn list_sandbox_files(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, ListSandboxFilesRequest>,
    ) -> ServiceResult<ListSandboxFilesResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let op = FileOp::List {
            path: req.path.clone(),
            start_after: req.start_after.clone(),
            max_entries: req.max_entries,
        };
        match self
            .op(&who, &req.sandbox_id, op)
            .await
            .map_err(to_connect)?
        {
            FileAnswer::Entries { entries, truncated } => Response::ok(ListSandboxFilesResponse {
                entries: entries.iter().map(info_msg).collect(),
                truncated,
                ..Default::default()
            }),
            other => Err(to_connect(unexpected(&other))),
        }
    }

    async fn make_sandbox_directory(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, MakeSandboxDirectoryRequest>,
    ) -> ServiceResult<MakeSandboxDirectoryResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        if req.mode > 0o7777 {
            return Err(to_connect(EngineError::invalid(
                "mode: permission bits only (<= 0o7777)",
            )));
        }
        let op = FileOp::Mkdir {
            path: req.path.clone(),
            mode: req.mode,
            parents: req.parents,
        };
        let info = self
            .op(&who, &req.sandbox_id, op)
            .await
            .and_then(expect_info)
            .map_err(to_connect)?;
        Response::ok(MakeSandboxDirectoryResponse {
            directory: buffa::MessageField::some(info_msg(&info)),
            ..Default::default()
        })
    }

    async fn remove_sandbox_file(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, RemoveSandboxFileRequest>,
    ) -> ServiceResult<RemoveSandboxFileResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let op = FileOp::Remove {
            path: req.path.clone(),
            recursive: req.recursive,
            missing_ok: req.missing_ok,
        };
        match self
            .op(&who, &req.sandbox_id, op)
            .await
            .map_err(to_connect)?
        {
            FileAnswer::Removed { removed } => Response::ok(RemoveSandboxFileResponse {
                removed,
                ..Default::default()
            }),
            other => Err(to_connect(unexpected(&other))),
        }
    }

    async fn read_sandbox_archive(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, ReadSandboxArchiveRequest>,
    ) -> ServiceResult<ServiceStream<ReadSandboxArchiveResponse>> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let run = async {
            let sbx = self.engine.sandbox(&who, &req.sandbox_id)?;
            transfer::archive_stream(&sbx, &req.path).await
        };
        Response::ok(run.await.map_err(to_connect)?)
    }
}
