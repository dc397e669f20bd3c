//! The engine's door to the files API: a READY sandbox, then the backend's file operation
//! (carried out with the sandbox's own identity; see `docs/files.md`).

use super::Engine;
use crate::model::error::EngineError;
use crate::model::status::sandbox as ss;
use cleanroom_backend::files::{FileOp, FileReply};
use std::os::fd::OwnedFd;

impl Engine {
    /// Run `op` inside the READY sandbox `sandbox_id` (ownership is the caller's check).
    pub(in crate::engine) async fn sandbox_file_op(
        &self,
        sandbox_id: &str,
        op: FileOp,
        fds: Vec<OwnedFd>,
    ) -> Result<FileReply, EngineError> {
        self.wake_if_suspended(sandbox_id, "files").await?;
        self.ready_for_files(sandbox_id)?;
        Ok(self.backend.file_op(sandbox_id, op, fds).await?)
    }

    /// Open a regular file for reading with the sandbox's identity.
    pub(in crate::engine) async fn sandbox_open_read(
        &self,
        sandbox_id: &str,
        path: &str,
    ) -> Result<std::fs::File, EngineError> {
        self.wake_if_suspended(sandbox_id, "files").await?;
        self.ready_for_files(sandbox_id)?;
        Ok(self
            .backend
            .open_file(sandbox_id, path, cleanroom_backend::OpenMode::Read)
            .await?)
    }

    /// Read `length` bytes (0: to the end) from `offset` with the sandbox's identity: a
    /// descriptor, or the bytes as a stream where the runtime's descriptors cannot leave
    /// the sandbox (gVisor).
    pub(in crate::engine) async fn sandbox_read_range(
        &self,
        sandbox_id: &str,
        path: &str,
        offset: u64,
        length: u64,
    ) -> Result<cleanroom_backend::files::FileRead, EngineError> {
        self.wake_if_suspended(sandbox_id, "files").await?;
        self.ready_for_files(sandbox_id)?;
        Ok(self
            .backend
            .read_range(sandbox_id, path, offset, length)
            .await?)
    }

    /// `sandbox_paused` or `sandbox_not_ready` unless the sandbox is READY (the same
    /// refusal as `exec`'s: [`super::pause::not_ready`]).
    pub(crate) fn ready_for_files(&self, sandbox_id: &str) -> Result<(), EngineError> {
        let sbx = self.get_sandbox(sandbox_id)?;
        if sbx.status != ss::READY {
            return Err(super::pause::not_ready(&sbx));
        }
        Ok(())
    }
}
