//! An execution's three store steps, each ONE transaction (one WAL commit, no fsync; see
//! the module doc of [`super`]) with the `execution.status` event it causes: queued,
//! running, ended. They were five and three separate commits (row, sandbox columns, event),
//! all on the exec round trip's critical path.

use super::{
    append_event_on, clear_active_execution_on, finish_execution_on, insert_execution_on,
    mark_execution_running_on, set_sandbox_executions_on, EventRow, ExecutionRow, Result, Store,
};

impl Store {
    /// A new execution's row (QUEUED) and its event, before its process exists. Returns
    /// the event's sequence.
    pub fn queue_execution(&self, e: &ExecutionRow, event: &EventRow) -> Result<i64> {
        self.with(|c| {
            let tx = c.unchecked_transaction()?;
            insert_execution_on(&tx, e)?;
            let seq = append_event_on(&tx, event)?;
            tx.commit()?;
            Ok(seq)
        })
    }

    /// RUNNING: the row's status and start time, the sandbox's last and active execution,
    /// and the event. Returns the event's sequence.
    pub fn execution_running(
        &self,
        exec_id: &str,
        sandbox_id: &str,
        started_at: i64,
        event: &EventRow,
    ) -> Result<i64> {
        self.with(|c| {
            let tx = c.unchecked_transaction()?;
            mark_execution_running_on(&tx, exec_id, started_at)?;
            set_sandbox_executions_on(&tx, sandbox_id, exec_id, exec_id)?;
            let seq = append_event_on(&tx, event)?;
            tx.commit()?;
            Ok(seq)
        })
    }

    /// The end: the row's result, the sandbox's active execution cleared (if it is still
    /// this one), and the event. Returns the event's sequence.
    pub fn execution_ended(
        &self,
        exec_id: &str,
        sandbox_id: &str,
        (status, exit_code, message): (i32, i32, &str),
        event: &EventRow,
    ) -> Result<i64> {
        self.with(|c| {
            let tx = c.unchecked_transaction()?;
            finish_execution_on(&tx, exec_id, status, exit_code, message)?;
            clear_active_execution_on(&tx, sandbox_id, exec_id)?;
            let seq = append_event_on(&tx, event)?;
            tx.commit()?;
            Ok(seq)
        })
    }
}
