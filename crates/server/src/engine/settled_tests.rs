//! `RunExecution`'s final record ([`Engine::settled_execution`]) is built from what the
//! supervisor committed, without reading the store or the log back: it must say exactly
//! what `InspectExecution` says afterwards (tails aside, which it does not carry).

use super::fake::FakeBackend;
use super::{Engine, ExecRequest, Inspection};
use std::sync::Arc;

fn same_record(fast: &Inspection, stored: &Inspection) {
    assert_eq!(
        format!("{:?}", fast.execution),
        format!("{:?}", stored.execution),
        "the row"
    );
    assert_eq!(
        (fast.stdout_bytes, fast.stderr_bytes),
        (stored.stdout_bytes, stored.stderr_bytes),
        "the totals"
    );
    assert_eq!(
        (&fast.policy_hash, &fast.image_ref, &fast.image_digest),
        (&stored.policy_hash, &stored.image_ref, &stored.image_digest)
    );
    assert_eq!(
        (fast.output.dropped_bytes, fast.output.expired_at),
        (stored.output.dropped_bytes, stored.output.expired_at)
    );
    assert_eq!(fast.log_path, stored.log_path);
    assert!(fast.stdout_tail.is_empty() && fast.stderr_tail.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_final_record_is_what_inspect_reads_from_the_store_and_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let engine: Arc<Engine> = super::fake::engine_on(dir.path(), Arc::new(FakeBackend::default()));
    let sbx = engine
        .create_sandbox(&"t".into(), Default::default(), "", "", Default::default())
        .await
        .unwrap();
    for argv in [&["echo", "hello", "world"][..], &["fail", "3"]] {
        let row = engine
            .create_execution(ExecRequest {
                sandbox_id: sbx.id.clone(),
                command: argv.iter().map(|a| a.to_string()).collect(),
                owner: "t".into(),
                ..Default::default()
            })
            .await
            .unwrap();
        // Asked while the supervisor runs: the record comes from what it committed.
        assert!(engine.live(&row.id).is_some(), "asked too late");
        let fast = engine.settled_execution(&sbx.id, &row.id).await.unwrap();
        assert!(fast.execution.finished_at > 0 && fast.execution.status != row.status);
        let stored = engine.inspect_execution(&sbx.id, &row.id).await.unwrap();
        same_record(&fast, &stored);
        assert!(
            fast.stdout_bytes + fast.stderr_bytes > 0,
            "{argv:?} wrote nothing"
        );
        // Another sandbox's id does not find it.
        assert!(engine
            .settled_execution("sbx_other", &row.id)
            .await
            .is_err());
    }
}
