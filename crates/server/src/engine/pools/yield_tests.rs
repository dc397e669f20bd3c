//! The pace of a pool's warming task. Its refill yields to foreground work
//! ([`crate::engine::foreground`]) — only while the pool still has a READY sandbox, and not
//! past the bound — and it waits, rather than spins, after a failure or without room. On the in-memory backend
//! ([`crate::engine::fake`]), where a create takes microseconds: a refill that did not
//! wait would be done long before the checks below.

use super::PoolSpec;
use crate::engine::fake::FakeBackend;
use crate::engine::Engine;
use crate::identity::auth::{Principal, Role};
use std::sync::Arc;
use std::time::Duration;

fn engine(dir: &std::path::Path) -> Arc<Engine> {
    engine_with(dir, Arc::new(FakeBackend::default()))
}

fn engine_with(dir: &std::path::Path, fake: Arc<FakeBackend>) -> Arc<Engine> {
    crate::engine::fake::engine_on(dir, fake)
}

fn user() -> Principal {
    Principal {
        name: "u".into(),
        role: Role::User,
    }
}

/// (ready, warming) of the pool.
fn counts(e: &Engine, id: &str) -> (u32, u32) {
    let (_, st) = e.pool_stats(&user(), id).unwrap();
    (st.ready, st.warming)
}

/// Wait (bounded) until the pool holds `n` READY sandboxes.
async fn until_ready(e: &Engine, id: &str, n: u32) {
    for _ in 0..1000 {
        if counts(e, id).0 == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "pool {id} never had {n} READY sandboxes: {:?}",
        counts(e, id)
    );
}

fn claim(e: &Engine, id: &str) {
    e.claim_sandbox(&user(), id, &Default::default(), Default::default())
        .unwrap();
}

fn pool(e: &Arc<Engine>, ready: u32) -> String {
    let spec = PoolSpec {
        min_ready: ready,
        max_ready: ready,
        ..Default::default()
    };
    e.create_pool(&user(), spec).unwrap().id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refill_waits_for_foreground_work_while_the_pool_has_a_ready_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    e.foreground.set_max_yield(Duration::from_secs(600));
    let id = pool(&e, 2);
    until_ready(&e, &id, 2).await;

    // A claim during a RunExecution: one READY left, so the refill waits for the call.
    let busy = e.foreground.enter();
    claim(&e, &id);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        counts(&e, &id),
        (1, 0),
        "refilled while foreground work ran"
    );
    drop(busy);
    until_ready(&e, &id, 2).await;

    // A claim that empties the pool is refilled at once, foreground or not.
    let busy = e.foreground.enter();
    claim(&e, &id);
    claim(&e, &id);
    until_ready(&e, &id, 2).await;
    drop(busy);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_execution_is_foreground_work_and_the_wait_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    e.foreground.set_max_yield(Duration::from_secs(600));
    let id = pool(&e, 2);
    until_ready(&e, &id, 2).await;
    // An execution runs (in a sandbox of its own): the refill of a claim waits...
    let other = e
        .create_sandbox(&"t".into(), Default::default(), "", "", Default::default())
        .await
        .unwrap();
    let run = e
        .create_execution(crate::engine::ExecRequest {
            sandbox_id: other.id.clone(),
            command: vec!["sleep".into()],
            owner: "t".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(e.foreground_busy());
    claim(&e, &id);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(counts(&e, &id), (1, 0), "refilled while an execution ran");
    // ...until it ends.
    e.cancel_execution(&other.id, &run.id, Some(Duration::ZERO))
        .unwrap();
    until_ready(&e, &id, 2).await;
    assert!(!e.foreground_busy());

    // Foreground work that never ends delays a refill by the bound only.
    e.foreground.set_max_yield(Duration::from_millis(50));
    let _busy = e.foreground.enter();
    claim(&e, &id);
    until_ready(&e, &id, 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_create_while_yielding_does_not_wake_the_warming_task_in_a_loop() {
    use std::sync::atomic::Ordering;
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(FakeBackend::default());
    let e = engine_with(dir.path(), fake.clone());
    e.foreground.set_max_yield(Duration::from_millis(50));
    let id = pool(&e, 3);
    until_ready(&e, &id, 3).await;
    // A slow create in flight (provisions wait at the gate)...
    let (gate, gate_rx) = tokio::sync::watch::channel(false);
    *fake.provision_gate.lock().unwrap() = Some(gate_rx);
    claim(&e, &id);
    for _ in 0..500 {
        if counts(&e, &id).1 == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(counts(&e, &id), (2, 1), "one create in flight");
    // ...then foreground work and another claim: the refill yields...
    let _busy = e.foreground.enter();
    claim(&e, &id);
    tokio::time::sleep(Duration::from_millis(20)).await;
    // ...and the create in flight fails: the task backs off (2 s) while its yield's
    // deadline passes. It must sleep through the backoff, not wake every timer tick.
    fake.fail_provision.store(true, Ordering::SeqCst);
    gate.send(true).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = lock_passes(&e, &id);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let passes = lock_passes(&e, &id) - before;
    assert!(
        passes < 50,
        "{passes} passes of the warming task in 1 s of backoff"
    );
}

/// A pool short of its target while the server-wide cap is full waits for room: each
/// create is refused before anything is made, and was retried at once, in a loop that took
/// a core and the store's lock for as long as the cap stayed full.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_waits_for_room_under_the_server_wide_cap() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    let caps = crate::store::SandboxCaps {
        per_owner: 0,
        total: 1,
    };
    e.start_pools(caps).unwrap();
    e.create_sandbox(&"other".into(), caps, "", "", Default::default())
        .await
        .unwrap();
    let id = pool(&e, 1);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = lock_passes(&e, &id);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let passes = lock_passes(&e, &id) - before;
    assert!(
        passes < 10,
        "{passes} passes of the warming task in 1 s without room"
    );
    assert_eq!(counts(&e, &id), (0, 0));
}

fn lock_passes(e: &Engine, id: &str) -> u64 {
    let pool = crate::model::sync::lock(&e.pools.map)
        .get(id)
        .cloned()
        .unwrap();
    let n = crate::model::sync::lock(&pool.state).passes;
    n
}
