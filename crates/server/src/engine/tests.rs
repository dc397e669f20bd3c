//! Engine state machines on an in-memory backend ([`super::fake`]): no root needed.

use super::fake::FakeBackend;
use super::{Engine, ExecRequest, StreamItem};
use crate::model::status::{execution as es, sandbox as ss};
use crate::store::{ExecutionRow, SandboxRow};
use cleanroom_backend::{
    Backend, BackendError, ProcessHandle, ProcessId, ProcessSpec, ProvisionedSandbox,
    ReconcileRecord, ReconcileReport, SandboxSpec,
};
use futures::StreamExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn engine_on(dir: &Path) -> (Arc<Engine>, Arc<FakeBackend>) {
    let fake = Arc::new(FakeBackend::default());
    (super::fake::engine_on(dir, fake.clone()), fake)
}

async fn ready(engine: &Engine) -> SandboxRow {
    engine
        .create_sandbox(
            &"t".into(),
            Default::default(),
            "",
            "",
            crate::budgets::limits::RequestedLimits::default(),
        )
        .await
        .unwrap()
}

fn exec(sandbox: &SandboxRow, argv: &[&str]) -> ExecRequest {
    ExecRequest {
        sandbox_id: sandbox.id.clone(),
        command: argv.iter().map(|a| a.to_string()).collect(),
        owner: "t".into(),
        ..Default::default()
    }
}

/// Poll until the execution is no longer QUEUED/RUNNING (bounded, generous).
async fn finished(engine: &Engine, id: &str) -> ExecutionRow {
    for _ in 0..2000 {
        let row = engine.get_execution("", id).unwrap();
        if row.status != es::QUEUED && row.status != es::RUNNING {
            return row;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("execution {id} did not finish");
}

/// The kinds and statuses of a sandbox's events so far.
async fn events(engine: &Engine, sandbox_id: &str) -> Vec<(String, i32)> {
    engine
        .stream_events(sandbox_id, 0, false)
        .unwrap()
        .map(|e| {
            let st = if e.kind == "sandbox.status" {
                e.sandbox_status
            } else {
                e.execution_status
            };
            (e.kind, st)
        })
        .collect()
        .await
}

/// A teardown with a reason writes it with the STOPPED status (status row and event): a
/// reader polling for STOPPED (as `sandbox inspect` after a TTL expiry) never sees the
/// status without its message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teardown_with_a_reason_stops_with_that_message_in_one_step() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _fake) = engine_on(dir.path());
    let sbx = ready(&engine).await;
    let row = engine
        .terminate_sandbox_because(&sbx.id, "TTL of 2s expired")
        .await
        .unwrap();
    assert_eq!(
        (row.status, row.message.as_str()),
        (ss::STOPPED, "TTL of 2s expired")
    );
    let stored = engine.get_sandbox(&sbx.id).unwrap();
    assert_eq!(stored.message, "TTL of 2s expired");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_becomes_ready_and_terminates_idempotently() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, fake) = engine_on(dir.path());
    let sbx = ready(&engine).await;
    assert_eq!(sbx.status, ss::READY);
    assert_eq!(sbx.backend, "fake");
    assert_eq!(fake.calls().provisioned, vec![sbx.id.clone()]);
    let row = engine.terminate_sandbox(&sbx.id).await.unwrap();
    assert_eq!(row.status, ss::STOPPED);
    // Idempotent: the backend is not asked again.
    let row = engine.terminate_sandbox(&sbx.id).await.unwrap();
    assert_eq!(row.status, ss::STOPPED);
    assert_eq!(fake.calls().terminated, vec![sbx.id.clone()]);
    let st = |s: crate::model::status::SandboxStatus| ("sandbox.status".to_string(), s.number());
    assert_eq!(
        events(&engine, &sbx.id).await,
        vec![
            st(ss::PROVISIONING),
            st(ss::READY),
            st(ss::STOPPING),
            st(ss::STOPPED)
        ]
    );
    // A stopped sandbox runs nothing.
    let err = engine
        .create_execution(exec(&sbx, &["echo", "x"]))
        .await
        .unwrap_err();
    assert_eq!(err.code, "sandbox_not_ready");
    assert!(engine.list_sandboxes(false).unwrap().is_empty());
    assert_eq!(engine.list_sandboxes(true).unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn execution_runs_to_success_and_its_output_streams() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, fake) = engine_on(dir.path());
    let sbx = ready(&engine).await;
    let row = engine
        .create_execution(exec(&sbx, &["echo", "hello"]))
        .await
        .unwrap();
    assert_eq!(row.status, es::RUNNING);
    // The default cwd is the backend's workspace; the engine adds its environment.
    assert_eq!(row.cwd, fake.guest_layout().workspace);
    let spec: ProcessSpec = fake.calls().spawned[0].clone();
    assert_eq!(spec.cwd, "/workspace");
    assert!(spec
        .env
        .iter()
        .any(|(k, v)| k == "CLEANROOM_EXECUTION_ID" && *v == row.id));
    let done = finished(&engine, &row.id).await;
    assert_eq!((done.status, done.exit_code), (es::SUCCEEDED, 0));
    let items: Vec<StreamItem> = engine
        .stream_execution(&sbx.id, &row.id, 0, 0, 0, true)
        .unwrap()
        .map(Result::unwrap)
        .collect()
        .await;
    assert!(
        matches!(&items[..], [StreamItem::Output { stdout: true, offset: 0, data, .. }, StreamItem::Exit { exit, .. }]
            if data == b"hello\n" && exit.status == es::SUCCEEDED),
        "{items:?}"
    );
    // Resuming at an offset cuts the chunk.
    let items: Vec<StreamItem> = engine
        .stream_execution(&sbx.id, &row.id, 0, 2, 0, false)
        .unwrap()
        .map(Result::unwrap)
        .collect()
        .await;
    assert!(
        matches!(&items[0], StreamItem::Output { offset: 2, data, .. } if data == b"llo\n"),
        "{items:?}"
    );
    let ex = |s| ("execution.status".to_string(), s);
    let evs = events(&engine, &sbx.id).await;
    assert_eq!(
        evs[2..],
        [ex(es::QUEUED), ex(es::RUNNING), ex(es::SUCCEEDED)],
        "{evs:?}"
    );
    assert_eq!(engine.last_execution(&sbx.id).unwrap().id, row.id);
    assert!(engine
        .get_sandbox(&sbx.id)
        .unwrap()
        .active_execution_id
        .is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn execution_fails_with_its_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = engine_on(dir.path());
    let sbx = ready(&engine).await;
    let row = engine
        .create_execution(exec(&sbx, &["fail", "3"]))
        .await
        .unwrap();
    let done = finished(&engine, &row.id).await;
    assert_eq!((done.status, done.exit_code), (es::FAILED, 3));
    assert_eq!(done.message, "exited with code 3");
    let i = engine.inspect_execution(&sbx.id, &row.id).await.unwrap();
    assert_eq!(i.stderr_tail, b"oops");
    assert_eq!((i.stdout_bytes, i.stderr_bytes), (0, 4));
    // A launch the backend refuses fails the execution, and says so.
    let err = engine
        .create_execution(exec(&sbx, &["no-such-command"]))
        .await
        .unwrap_err();
    assert_eq!(err.code, "runtime_launch_failed");
    let id = err
        .details
        .iter()
        .find(|(k, _)| k == "execution_id")
        .map(|(_, v)| v.clone())
        .unwrap();
    assert_eq!(engine.get_execution("", &id).unwrap().status, es::FAILED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_ends_the_execution_as_canceled() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, fake) = engine_on(dir.path());
    let sbx = ready(&engine).await;
    // SIGTERM ends a well-behaved process.
    let row = engine
        .create_execution(exec(&sbx, &["sleep"]))
        .await
        .unwrap();
    engine.cancel_execution(&sbx.id, &row.id, None).unwrap();
    let done = finished(&engine, &row.id).await;
    assert_eq!(done.status, es::CANCELED);
    assert_eq!(done.message, "canceled by client");
    assert_eq!(fake.calls().signals, vec![(1, libc::SIGTERM)]);
    // One that ignores SIGTERM gets SIGKILL after the grace.
    let row = engine
        .create_execution(exec(&sbx, &["stubborn"]))
        .await
        .unwrap();
    engine
        .cancel_execution(&sbx.id, &row.id, Some(Duration::from_millis(50)))
        .unwrap();
    let done = finished(&engine, &row.id).await;
    assert_eq!(
        (done.status, done.exit_code),
        (es::CANCELED, 128 + libc::SIGKILL)
    );
    assert_eq!(
        fake.calls().signals[1..],
        [(2, libc::SIGTERM), (2, libc::SIGKILL)]
    );
    // Zero grace: SIGKILL at once. Canceling a finished execution is a no-op.
    let row = engine
        .create_execution(exec(&sbx, &["stubborn"]))
        .await
        .unwrap();
    engine
        .cancel_execution(&sbx.id, &row.id, Some(Duration::ZERO))
        .unwrap();
    assert_eq!(finished(&engine, &row.id).await.status, es::CANCELED);
    assert_eq!(fake.calls().signals[3..], [(3, libc::SIGKILL)]);
    let again = engine.cancel_execution(&sbx.id, &row.id, None).unwrap();
    assert_eq!(again.status, es::CANCELED);
    assert_eq!(fake.calls().signals.len(), 4);
    // An interrupt (a client's Ctrl-C) is one SIGINT, no cancel: the process decides, and
    // a cancel afterwards still takes effect.
    let row = engine
        .create_execution(exec(&sbx, &["stubborn"]))
        .await
        .unwrap();
    engine.interrupt_execution(&sbx.id, &row.id).await.unwrap();
    assert_eq!(fake.calls().signals[4..], [(4, libc::SIGINT)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_ends_the_execution_as_timed_out() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, fake) = engine_on(dir.path());
    let sbx = ready(&engine).await;
    let mut req = exec(&sbx, &["sleep"]);
    req.timeout_seconds = 1;
    let row = engine.create_execution(req).await.unwrap();
    let done = finished(&engine, &row.id).await;
    assert_eq!(done.status, es::TIMED_OUT);
    assert_eq!(done.message, "timed out after 1s");
    assert_eq!(fake.calls().signals, vec![(1, libc::SIGTERM)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminating_the_sandbox_cancels_its_running_execution() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, fake) = engine_on(dir.path());
    let sbx = ready(&engine).await;
    let row = engine
        .create_execution(exec(&sbx, &["stubborn"]))
        .await
        .unwrap();
    assert_eq!(
        engine.get_sandbox(&sbx.id).unwrap().active_execution_id,
        row.id
    );
    let stopped = engine.terminate_sandbox(&sbx.id).await.unwrap();
    assert_eq!(stopped.status, ss::STOPPED);
    // terminate_sandbox waits for the supervisor: the result is recorded already.
    let done = engine.get_execution(&sbx.id, &row.id).unwrap();
    assert_eq!(done.status, es::CANCELED);
    assert_eq!(
        done.message,
        "sandbox terminated while the execution was running"
    );
    // No grace: SIGKILL from the supervisor, unless the backend's terminate got there first.
    let signals = fake.calls().signals;
    assert!(
        signals.iter().all(|&(p, s)| (p, s) == (1, libc::SIGKILL)),
        "{signals:?}"
    );
    assert_eq!(fake.calls().terminated, vec![sbx.id.clone()]);
    assert!(engine
        .get_sandbox(&sbx.id)
        .unwrap()
        .active_execution_id
        .is_empty());
}

#[test]
fn restart_fails_interrupted_executions_and_reclaims_sandboxes() {
    let dir = tempfile::tempdir().unwrap();
    let rt = || {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    };
    let first = rt();
    let (sbx, exe) = first.block_on(async {
        let (engine, _) = engine_on(dir.path());
        let sbx = ready(&engine).await;
        let row = engine
            .create_execution(exec(&sbx, &["sleep"]))
            .await
            .unwrap();
        (sbx.id, row.id)
    });
    // A crash: every task of the first server (the supervisor too) is gone mid-run.
    drop(first);
    rt().block_on(async {
        let (engine, fake) = engine_on(dir.path());
        assert_eq!(
            engine.get_execution("", &exe).unwrap().status,
            es::RUNNING
        );
        engine.recover().await.unwrap();
        let done = engine.get_execution("", &exe).unwrap();
        assert_eq!((done.status, done.exit_code), (es::FAILED, -1));
        assert!(done.message.contains("server restarted"), "{}", done.message);
        let s = engine.get_sandbox(&sbx).unwrap();
        assert_eq!(s.status, ss::FAILED);
        assert!(s.message.contains("server restarted"), "{}", s.message);
        assert!(s.active_execution_id.is_empty());
        assert_eq!(fake.calls().reconciled, vec![sbx.clone()]);
        // The log was finished too: a stream of it ends with the same result.
        let items: Vec<StreamItem> = engine
            .stream_execution(&sbx, &exe, 0, 0, 0, true)
            .unwrap()
            .map(Result::unwrap)
            .collect()
            .await;
        assert!(
            matches!(items.last(), Some(StreamItem::Exit { exit, .. }) if exit.status == es::FAILED && exit.message.contains("server restarted")),
            "{items:?}"
        );
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_environment_is_invalid_argument_before_launch() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, fake) = engine_on(dir.path());
    let sbx = ready(&engine).await;
    let many: Vec<(String, String)> = (0..200)
        .map(|i| (format!("V{i}"), "v".repeat(1024)))
        .collect();
    let envs = [
        vec![("BIG".to_string(), "x".repeat(300 * 1024))],
        many,
        vec![("CTL".to_string(), "\n".repeat(16 * 1024))],
    ];
    for (i, env) in envs.into_iter().enumerate() {
        let mut req = exec(&sbx, &["echo", "x"]);
        req.env = env.into_iter().collect();
        let err = engine.create_execution(req).await.unwrap_err();
        assert_eq!(err.code, "invalid_argument", "case {i}: {err:?}");
    }
    assert!(
        fake.calls().spawned.is_empty(),
        "the backend was asked to spawn"
    );
    assert!(engine
        .get_sandbox(&sbx.id)
        .unwrap()
        .last_execution_id
        .is_empty());
    // A sane one still runs.
    let mut req = exec(&sbx, &["echo", "x"]);
    req.env.insert("OK".into(), "v".repeat(4096));
    let row = engine.create_execution(req).await.unwrap();
    assert_eq!(finished(&engine, &row.id).await.status, es::SUCCEEDED);
}

/// Test double for a backend that declares no capabilities (e.g. a future backend that
/// cannot enforce deny-by-default). Only the handshake is exercised: provision must
/// never be reached.
#[derive(Default)]
struct NoCapabilities {
    provisioned: AtomicBool,
}

#[async_trait::async_trait]
impl Backend for NoCapabilities {
    fn name(&self) -> &'static str {
        "none"
    }
    fn capabilities(&self) -> Vec<cleanroom_backend::Capability> {
        vec![cleanroom_backend::Capability::PolicyImmutability]
    }
    async fn provision(&self, _: &SandboxSpec) -> Result<ProvisionedSandbox, BackendError> {
        self.provisioned.store(true, Ordering::SeqCst);
        Err(BackendError::Unavailable("test double".into()))
    }
    async fn spawn(&self, _: &str, _: ProcessSpec) -> Result<ProcessHandle, BackendError> {
        Err(BackendError::Unavailable("test double".into()))
    }
    async fn signal(&self, _: &str, _: ProcessId, _: i32) -> Result<(), BackendError> {
        Ok(())
    }
    async fn terminate(&self, _: &str) -> Result<(), BackendError> {
        Ok(())
    }
    async fn reconcile(&self, _: &[ReconcileRecord]) -> Result<ReconcileReport, BackendError> {
        Ok(ReconcileReport::default())
    }
}

#[tokio::test]
async fn launch_fails_closed_on_missing_capability() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Arc::new(NoCapabilities::default());
    let engine = Engine::new(
        dir.path(),
        backend.clone(),
        None,
        Default::default(),
        Default::default(),
    )
    .unwrap();
    let err = engine
        .create_sandbox(
            &"t".into(),
            Default::default(),
            "",
            "",
            crate::budgets::limits::RequestedLimits::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "backend_capability_mismatch");
    assert!(
        err.details
            .iter()
            .any(|(k, v)| k == "missing" && v == "network_default_deny"),
        "{err:?}"
    );
    let err = engine
        .create_sandbox(&"t".into(), Default::default(), "", "registry.test/x@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", crate::budgets::limits::RequestedLimits::default())
        .await
        .unwrap_err();
    assert!(
        err.details
            .iter()
            .any(|(k, v)| k == "missing" && v.contains("oci_images")),
        "{err:?}"
    );
    assert!(
        !backend.provisioned.load(Ordering::SeqCst),
        "provision ran despite the mismatch"
    );
    assert!(
        engine.list_sandboxes(true).unwrap().is_empty(),
        "a sandbox row was persisted"
    );
}

#[test]
fn the_policy_default_repository_path_is_the_backend_workspace() {
    // The policy crate knows no backend, so it keeps its own default (it is part of the
    // compiled policy and its hash); this pins the two together.
    assert_eq!(
        cleanroom_policy::DEFAULT_REPOSITORY_PATH,
        cleanroom_backend::GuestLayout::STANDARD.workspace
    );
}

#[tokio::test]
async fn a_backend_without_the_capabilities_refuses_pause_snapshot_and_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _fake) = engine_on(dir.path());
    let sbx = ready(&engine).await;
    let code = |r: Result<SandboxRow, crate::model::error::EngineError>| r.unwrap_err().code;
    use cleanroom_vocab::ErrorCode as C;
    assert_eq!(
        code(engine.pause_sandbox(&sbx.id).await),
        C::BackendCapabilityMismatch
    );
    assert_eq!(
        engine
            .create_snapshot(&"t".into(), &sbx.id)
            .await
            .unwrap_err()
            .code,
        C::BackendCapabilityMismatch
    );
    assert_eq!(
        engine
            .checkpoint_sandbox(&"t".into(), &sbx.id, true)
            .await
            .unwrap_err()
            .code,
        C::BackendCapabilityMismatch
    );
    // Nothing changed: still READY, and no snapshot directory was made.
    assert_eq!(engine.get_sandbox(&sbx.id).unwrap().status, ss::READY);
    assert!(!dir.path().join("snapshots").exists());
    // Resume of a READY sandbox is a no-op; unknown snapshots are not found.
    assert_eq!(
        engine.resume_sandbox(&sbx.id).await.unwrap().status,
        ss::READY
    );
    let who = crate::identity::auth::Principal {
        name: "t".into(),
        role: crate::identity::auth::Role::User,
    };
    assert_eq!(
        engine
            .owned_snapshot(&who, "snap_0123456789abcdef0123456789abcdef")
            .unwrap_err()
            .code,
        C::SnapshotNotFound
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_teardown_returns_stopping_and_later_callers_join_it() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, fake) = engine_on(dir.path());
    let sbx = ready(&engine).await;
    let e = engine
        .create_execution(exec(&sbx, &["sleep"]))
        .await
        .unwrap();
    let (gate, gate_rx) = tokio::sync::watch::channel(false);
    *fake.terminate_gate.lock().unwrap() = Some(gate_rx);

    // Returns at once, STOPPING, with the backend's teardown still blocked.
    let row = engine.terminate_sandbox_in_background(&sbx.id).unwrap();
    assert_eq!(row.status, ss::STOPPING);
    // A second background call and a waiting call join the teardown in flight.
    let again = engine.terminate_sandbox_in_background(&sbx.id).unwrap();
    assert_eq!(again.status, ss::STOPPING);
    let waiter = {
        let engine = engine.clone();
        let id = sbx.id.clone();
        tokio::spawn(async move { engine.terminate_sandbox(&id).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !waiter.is_finished(),
        "a waiting terminate returned before the teardown ended"
    );
    assert_eq!(engine.get_sandbox(&sbx.id).unwrap().status, ss::STOPPING);

    let _ = gate.send(true);
    let row = waiter.await.unwrap().unwrap();
    assert_eq!(row.status, ss::STOPPED);
    // One teardown: the backend was asked once; the execution was canceled; one
    // STOPPING and one STOPPED event.
    assert_eq!(fake.calls().terminated, vec![sbx.id.clone()]);
    assert_eq!(finished(&engine, &e.id).await.status, es::CANCELED);
    let st = |s: crate::model::status::SandboxStatus| ("sandbox.status".to_string(), s.number());
    let evs = events(&engine, &sbx.id).await;
    assert_eq!(
        evs.iter().filter(|e| **e == st(ss::STOPPING)).count(),
        1,
        "{evs:?}"
    );
    assert_eq!(
        evs.iter().filter(|e| **e == st(ss::STOPPED)).count(),
        1,
        "{evs:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teardown_whose_caller_went_away_can_be_run_again() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, fake) = engine_on(dir.path());
    let sbx = ready(&engine).await;
    let (gate, gate_rx) = tokio::sync::watch::channel(false);
    *fake.terminate_gate.lock().unwrap() = Some(gate_rx);
    // The caller (say, a client that disconnected) gives up half way.
    let gave_up = tokio::time::timeout(
        Duration::from_millis(100),
        engine.terminate_sandbox(&sbx.id),
    )
    .await;
    assert!(gave_up.is_err());
    let _ = gate.send(true);
    // Not stuck behind the abandoned one: the next call tears the sandbox down.
    let row = tokio::time::timeout(Duration::from_secs(10), engine.terminate_sandbox(&sbx.id))
        .await
        .expect("a later terminate must not wait for an abandoned one")
        .unwrap();
    assert_eq!(row.status, ss::STOPPED);
}
