//! Owned handles: the only way an API handler reaches a sandbox, an execution or a
//! snapshot.
//!
//! [`Engine::sandbox`] (and [`Engine::execution`], [`Engine::snapshot`]) checks that the
//! caller may see the object — one that is not theirs is reported exactly as one that
//! does not exist — and returns a handle whose constructor is private to this module.
//! Every operation a handler may run on the object is a method of the handle, so a
//! handler cannot name an object by a bare id and skip the check: the ownership check is
//! a type, not a habit. The engine's id-taking functions behind these methods are for
//! the engine's own callers (reaper, pools, recovery, tests).

use super::{Engine, ExecRequest, Inspection, StreamItem};
use crate::identity::auth::Principal;
use crate::model::error::EngineError;
use crate::store::{EventRow, ExecutionRow, LifetimeRow, SandboxRow, SnapshotRow};
use cleanroom_backend::files::{FileOp, FileReply};
use futures::stream::BoxStream;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

/// A sandbox its holder may see (see the module doc).
pub struct OwnedSandbox {
    engine: Arc<Engine>,
    row: SandboxRow,
}

/// An execution its holder may see (its sandbox is theirs).
pub struct OwnedExecution {
    engine: Arc<Engine>,
    row: ExecutionRow,
}

/// A snapshot its holder may see.
pub struct OwnedSnapshot {
    engine: Arc<Engine>,
    row: SnapshotRow,
}

impl Engine {
    /// The sandbox, if `who` may see it.
    pub(in crate::engine) fn owned_sandbox(
        &self,
        who: &Principal,
        id: &str,
    ) -> Result<SandboxRow, EngineError> {
        let row = self.get_sandbox(id)?;
        if !who.can_see(&row.owner) {
            return Err(EngineError::sandbox_not_found(id));
        }
        Ok(row)
    }

    /// The execution, if `who` may see the sandbox it belongs to (`sandbox_id` may be
    /// empty: the execution id alone names it).
    fn owned_execution(
        &self,
        who: &Principal,
        sandbox_id: &str,
        exec_id: &str,
    ) -> Result<ExecutionRow, EngineError> {
        // Ownership first, by id alone: the sandbox-mismatch error below carries details
        // that must not tell another principal the execution exists.
        let row = self.get_execution("", exec_id)?;
        let visible = self
            .store
            .get_sandbox(&row.sandbox_id)?
            .is_some_and(|s| who.can_see(&s.owner));
        if !visible {
            return Err(EngineError::execution_not_found(exec_id));
        }
        self.get_execution(sandbox_id, exec_id)
    }

    /// The sandbox `id`, if `who` may see it (else `sandbox_not_found`).
    pub fn sandbox(
        self: &Arc<Self>,
        who: &Principal,
        id: &str,
    ) -> Result<OwnedSandbox, EngineError> {
        Ok(OwnedSandbox {
            engine: self.clone(),
            row: self.owned_sandbox(who, id)?,
        })
    }

    /// The execution `exec_id`, if `who` may see the sandbox it belongs to (else
    /// `execution_not_found`). `sandbox_id` may be empty: the execution id alone names it.
    pub fn execution(
        self: &Arc<Self>,
        who: &Principal,
        sandbox_id: &str,
        exec_id: &str,
    ) -> Result<OwnedExecution, EngineError> {
        Ok(OwnedExecution {
            engine: self.clone(),
            row: self.owned_execution(who, sandbox_id, exec_id)?,
        })
    }

    /// The snapshot `id`, if `who` may see it (else `snapshot_not_found`).
    pub fn snapshot(
        self: &Arc<Self>,
        who: &Principal,
        id: &str,
    ) -> Result<OwnedSnapshot, EngineError> {
        Ok(OwnedSnapshot {
            engine: self.clone(),
            row: self.owned_snapshot(who, id)?,
        })
    }
}

impl OwnedSandbox {
    pub fn id(&self) -> &str {
        &self.row.id
    }

    /// The row as it was when the handle was made.
    pub fn row(&self) -> &SandboxRow {
        &self.row
    }

    pub fn into_row(self) -> SandboxRow {
        self.row
    }

    /// Egress approvals in effect: (approved, refused) host patterns.
    pub fn effective_egress(&self) -> Result<(Vec<String>, Vec<String>), EngineError> {
        self.engine.effective_egress(self.id())
    }

    pub async fn download_file(
        &self,
        path: &str,
        max_bytes: u64,
    ) -> Result<cleanroom_backend::FileContent, EngineError> {
        self.engine.download_file(self.id(), path, max_bytes).await
    }

    pub async fn terminate(&self) -> Result<SandboxRow, EngineError> {
        self.engine.terminate_sandbox(self.id()).await
    }

    pub fn terminate_in_background(&self) -> Result<SandboxRow, EngineError> {
        self.engine.terminate_sandbox_in_background(self.id())
    }

    pub fn terminate_after_foreground(&self) -> Result<SandboxRow, EngineError> {
        self.engine.terminate_sandbox_after_foreground(self.id())
    }

    pub fn stream_events(
        &self,
        after_seq: u64,
        follow: bool,
    ) -> Result<BoxStream<'static, EventRow>, EngineError> {
        self.engine.stream_events(self.id(), after_seq, follow)
    }

    pub async fn file_op(&self, op: FileOp, fds: Vec<OwnedFd>) -> Result<FileReply, EngineError> {
        self.engine.sandbox_file_op(self.id(), op, fds).await
    }

    pub async fn open_read(&self, path: &str) -> Result<std::fs::File, EngineError> {
        self.engine.sandbox_open_read(self.id(), path).await
    }

    pub async fn read_range(
        &self,
        path: &str,
        offset: u64,
        length: u64,
    ) -> Result<cleanroom_backend::files::FileRead, EngineError> {
        self.engine
            .sandbox_read_range(self.id(), path, offset, length)
            .await
    }

    pub fn ready_for_files(&self) -> Result<(), EngineError> {
        self.engine.ready_for_files(self.id())
    }

    pub fn lifetime(&self) -> Result<(LifetimeRow, i64), EngineError> {
        self.engine.sandbox_lifetime(&self.row)
    }

    pub async fn usage(&self) -> Result<Option<super::usage::SandboxUsage>, EngineError> {
        self.engine.sandbox_usage(&self.row).await
    }

    pub fn set_timeout(
        &self,
        (ttl, idle): (u64, u64),
        (clear_ttl, clear_idle): (bool, bool),
    ) -> Result<SandboxRow, EngineError> {
        self.engine
            .set_sandbox_timeout(self.id(), ttl, idle, clear_ttl, clear_idle)
    }

    pub async fn pause(&self) -> Result<SandboxRow, EngineError> {
        self.engine.pause_sandbox(self.id()).await
    }

    pub async fn resume(&self) -> Result<SandboxRow, EngineError> {
        self.engine.resume_sandbox(self.id()).await
    }

    /// Capture the sandbox's files into a snapshot owned by `owner`.
    pub async fn snapshot(
        &self,
        owner: &crate::model::owner::Owner,
    ) -> Result<SnapshotRow, EngineError> {
        self.engine.create_snapshot(owner, self.id()).await
    }

    /// Checkpoint the sandbox's memory, processes and files for `owner`
    /// (docs/checkpoints.md); without `leave_running` it is torn down afterwards.
    pub async fn checkpoint(
        &self,
        owner: &crate::model::owner::Owner,
        leave_running: bool,
    ) -> Result<super::checkpoints::CheckpointInfo, EngineError> {
        self.engine
            .checkpoint_sandbox(owner, self.id(), leave_running)
            .await
    }

    /// The sandbox's last execution (`--last`), as a handle.
    pub fn last_execution(&self) -> Result<OwnedExecution, EngineError> {
        Ok(OwnedExecution {
            engine: self.engine.clone(),
            row: self.engine.last_execution(self.id())?,
        })
    }

    /// Start `req` in this sandbox (its `sandbox_id` is this one's, whatever it said).
    pub async fn create_execution(
        &self,
        mut req: ExecRequest,
    ) -> Result<ExecutionRow, EngineError> {
        req.sandbox_id = self.row.id.clone();
        self.engine.create_execution(req).await
    }

    /// The sandbox's agent identity and attestation facts.
    pub fn identity(&self) -> super::attestation::SandboxIdentity {
        self.engine.sandbox_identity(self.id())
    }
}

impl OwnedExecution {
    pub fn id(&self) -> &str {
        &self.row.id
    }

    pub fn sandbox_id(&self) -> &str {
        &self.row.sandbox_id
    }

    /// The row as it was when the handle was made.
    pub fn row(&self) -> &ExecutionRow {
        &self.row
    }

    pub fn into_row(self) -> ExecutionRow {
        self.row
    }

    pub async fn inspect(&self) -> Result<Inspection, EngineError> {
        self.engine
            .inspect_execution(self.sandbox_id(), self.id())
            .await
    }

    /// [`Self::inspect`] once the result is settled (its log committed).
    pub async fn settled(&self) -> Result<Inspection, EngineError> {
        self.engine
            .settled_execution(self.sandbox_id(), self.id())
            .await
    }

    pub async fn interrupt(&self) -> Result<ExecutionRow, EngineError> {
        self.engine
            .interrupt_execution(self.sandbox_id(), self.id())
            .await
    }

    pub fn cancel(&self, grace: Option<Duration>) -> Result<ExecutionRow, EngineError> {
        self.engine
            .cancel_execution(self.sandbox_id(), self.id(), grace)
    }

    pub async fn write_stdin(&self, data: &[u8]) -> Result<u64, EngineError> {
        self.engine
            .write_stdin(self.sandbox_id(), self.id(), data)
            .await
    }

    pub async fn close_stdin(&self) -> Result<(), EngineError> {
        self.engine.close_stdin(self.sandbox_id(), self.id()).await
    }

    pub fn stream(
        &self,
        after_seq: u64,
        (stdout_offset, stderr_offset): (u64, u64),
        follow: bool,
    ) -> Result<BoxStream<'static, Result<StreamItem, EngineError>>, EngineError> {
        self.engine.stream_execution(
            self.sandbox_id(),
            self.id(),
            after_seq,
            stdout_offset,
            stderr_offset,
            follow,
        )
    }

    /// The terminal of this running interactive execution (`None` once it ended).
    pub fn terminal(&self) -> Option<super::console::Terminal> {
        self.engine.terminal(self.id())
    }

    pub async fn signal_terminal(
        &self,
        term: &super::console::Terminal,
        signal: i32,
    ) -> Result<(), EngineError> {
        self.engine
            .signal_terminal(self.sandbox_id(), term, signal)
            .await
    }

    pub async fn console_stream(
        &self,
    ) -> Result<BoxStream<'static, Result<StreamItem, EngineError>>, EngineError> {
        self.engine
            .console_stream(self.sandbox_id(), self.id())
            .await
    }
}

impl OwnedSnapshot {
    pub fn id(&self) -> &str {
        &self.row.id
    }

    pub fn row(&self) -> &SnapshotRow {
        &self.row
    }

    pub fn into_row(self) -> SnapshotRow {
        self.row
    }

    pub async fn remove(&self) -> Result<(), EngineError> {
        self.engine.remove_snapshot(self.id()).await
    }
}
