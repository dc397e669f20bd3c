//! A server that died after an execution's exit record reached its log but before the
//! result's commit: the restart takes the result from the log, not "interrupted".

use super::fake::FakeBackend;
use super::{Engine, ExecRequest};
use crate::model::status::execution as es;
use crate::output::execlog::{self, ExitRecord};
use std::sync::Arc;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn engine(dir: &std::path::Path) -> Arc<Engine> {
    super::fake::engine_on(dir, Arc::new(FakeBackend::default()))
}

#[test]
fn a_result_logged_but_not_committed_is_what_the_restart_records() {
    let dir = tempfile::tempdir().unwrap();
    let first = rt();
    let (sbx, exe) = first.block_on(async {
        let e = engine(dir.path());
        let sbx = e
            .create_sandbox(&"t".into(), Default::default(), "", "", Default::default())
            .await
            .unwrap();
        let row = e
            .create_execution(ExecRequest {
                sandbox_id: sbx.id.clone(),
                command: vec!["sleep".into()],
                owner: "t".into(),
                ..Default::default()
            })
            .await
            .unwrap();
        (sbx.id, row.id)
    });
    // The crash: every task is gone with the row still RUNNING ...
    drop(first);
    // ... after the supervisor had written the exit record (what `close_unsynced` does
    // before the result's commit).
    let logs = dir.path().join("executions");
    let exit = ExitRecord {
        status: es::FAILED,
        exit_code: 3,
        message: "exited with code 3".into(),
        ..Default::default()
    };
    execlog::append_exit(&execlog::path_for(&logs, &exe), &exit).unwrap();
    rt().block_on(async {
        let e = engine(dir.path());
        e.recover().await.unwrap();
        let done = e.get_execution(&sbx, &exe).unwrap();
        assert_eq!(
            (done.status, done.exit_code, done.message.as_str()),
            (es::FAILED, 3, "exited with code 3"),
            "the logged result, not the restart's"
        );
        // The log keeps exactly one exit record: the restart appended none.
        let i = e.inspect_execution(&sbx, &exe).await.unwrap();
        assert_eq!(i.execution.exit_code, 3);
    });
}
