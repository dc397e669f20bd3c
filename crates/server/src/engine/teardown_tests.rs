//! A `terminate_on_exit` teardown ([`Engine::terminate_sandbox_after_foreground`]): the
//! sandbox is STOPPING at once, and its kill and removal wait for the foreground (a
//! `RunExecution` call in flight, an execution running), at most the bound. On the
//! in-memory backend ([`super::fake`]), where a teardown takes microseconds: one that did
//! not wait would be STOPPED long before the checks below.

use super::fake::FakeBackend;
use super::Engine;
use crate::model::status::sandbox as ss;
use std::sync::Arc;
use std::time::Duration;

fn engine(dir: &std::path::Path) -> Arc<Engine> {
    super::fake::engine_on(dir, Arc::new(FakeBackend::default()))
}

async fn sandbox(e: &Engine) -> String {
    e.create_sandbox(&"t".into(), Default::default(), "", "", Default::default())
        .await
        .unwrap()
        .id
}

/// Wait (bounded) until the sandbox is STOPPED.
async fn until_stopped(e: &Engine, id: &str) {
    for _ in 0..1000 {
        if e.get_sandbox(id).unwrap().status == ss::STOPPED {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "{id} never STOPPED: {}",
        e.get_sandbox(id).unwrap().status.name()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kill_waits_for_the_foreground_and_the_sandbox_is_stopping_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    e.foreground.set_max_yield(Duration::from_secs(600));
    let id = sandbox(&e).await;

    let busy = e.foreground.enter();
    let row = e.terminate_sandbox_after_foreground(&id).unwrap();
    assert_eq!(row.status, ss::STOPPING, "STOPPING before the call returns");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        e.get_sandbox(&id).unwrap().status,
        ss::STOPPING,
        "torn down while foreground work ran"
    );
    // A second caller joins the teardown in flight rather than starting another.
    let again = e.terminate_sandbox_in_background(&id).unwrap();
    assert_eq!(again.status, ss::STOPPING);
    drop(busy);
    until_stopped(&e, &id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreground_work_that_never_ends_delays_the_kill_by_the_bound_only() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    e.foreground.set_max_yield(Duration::from_millis(50));
    let id = sandbox(&e).await;
    let _busy = e.foreground.enter();
    e.terminate_sandbox_after_foreground(&id).unwrap();
    until_stopped(&e, &id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_foreground_does_not_delay_the_kill() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path());
    e.foreground.set_max_yield(Duration::from_secs(600));
    let id = sandbox(&e).await;
    e.terminate_sandbox_after_foreground(&id).unwrap();
    until_stopped(&e, &id).await;
}

/// A terminate of a sandbox still PROVISIONING (a caller can list it and terminate it) that
/// finishes before the provision does: the create must take down what it then made — the
/// backend's sandbox, its gateway — instead of leaving it running, untracked and outside
/// every cap, behind a row that says STOPPED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminate_that_wins_the_race_with_a_create_leaves_nothing_running() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(FakeBackend::default());
    let e = super::fake::engine_on(dir.path(), fake.clone());
    let (gate, gate_rx) = tokio::sync::watch::channel(false);
    *fake.provision_gate.lock().unwrap() = Some(gate_rx);
    let creating = {
        let e = e.clone();
        tokio::spawn(async move {
            e.create_sandbox(&"t".into(), Default::default(), "", "", Default::default())
                .await
        })
    };
    let mut id = None;
    for _ in 0..500 {
        id = e
            .list_sandboxes(true)
            .unwrap()
            .first()
            .map(|r| r.id.clone());
        if id.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let id = id.expect("the create's row");
    assert_eq!(e.get_sandbox(&id).unwrap().status, ss::PROVISIONING);
    e.terminate_sandbox(&id).await.unwrap();
    assert_eq!(e.get_sandbox(&id).unwrap().status, ss::STOPPED);
    gate.send(true).unwrap();
    let made = creating.await.unwrap();
    assert!(
        made.is_err(),
        "a create whose sandbox was terminated cannot succeed"
    );
    let terminated = fake
        .calls
        .lock()
        .unwrap()
        .terminated
        .iter()
        .filter(|t| **t == id)
        .count();
    assert_eq!(
        terminated, 2,
        "the backend's sandbox, provisioned after the teardown, is taken down again"
    );
    assert!(e.egress.traffic(&id).is_none(), "its gateway is gone");
    assert_eq!(e.get_sandbox(&id).unwrap().status, ss::STOPPED);
}
