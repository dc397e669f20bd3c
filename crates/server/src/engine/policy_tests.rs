//! The one rule for a stored policy that cannot be decoded: every use of it is refused
//! (`internal`, naming the sandbox) — the engine never falls back to the built-in policy.

use super::fake::FakeBackend;
use super::ExecRequest;
use crate::model::error::ErrorCode;
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_whose_stored_policy_does_not_decode_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(FakeBackend::default());
    let engine = super::fake::engine_on(dir.path(), fake);
    let sbx = engine
        .create_sandbox(&"t".into(), Default::default(), "", "", Default::default())
        .await
        .unwrap();
    let req = || ExecRequest {
        sandbox_id: sbx.id.clone(),
        command: vec!["echo".into(), "x".into()],
        owner: "t".into(),
        ..Default::default()
    };
    // Sound: it runs.
    engine.create_execution(req()).await.unwrap();
    engine
        .store
        .set_policy_json_for_test(&sbx.id, "{\"not\": \"a policy\"}");
    let row = engine.get_sandbox(&sbx.id).unwrap();
    let refused = |e: crate::model::error::EngineError| {
        assert_eq!(e.code, ErrorCode::Internal, "{e}");
        assert!(
            e.details.contains(&("sandbox_id".into(), sbx.id.clone())),
            "{e:?}"
        );
    };
    refused(engine.create_execution(req()).await.unwrap_err());
    refused(engine.init_lifetime(&row, Default::default()).unwrap_err());
    refused(engine.compiled_policy(&row).unwrap_err());
    refused(crate::engine::bootstrap::plan_stored(&row.id, &row.policy).unwrap_err());
    // It can still be seen and torn down.
    assert_eq!(
        engine.terminate_sandbox(&sbx.id).await.unwrap().status,
        crate::model::status::SandboxStatus::Stopped
    );
}
