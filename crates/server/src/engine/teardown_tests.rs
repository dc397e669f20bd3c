//! A `terminate_on_exit` teardown ([`Engine::terminate_sandbox_after_foreground`]): the
//! sandbox is STOPPING at once, and its kill and removal wait for the foreground (a
//! `RunExecution` call in flight, an execution running), at most the bound. On the
//! in-memory backend ([`super::fake`]), where a teardown takes microseconds: one that did
//! not wait would be STOPPED long before the checks below.

use super::fake::FakeBackend;
use super::Engine;
use crate::status::sandbox as ss;
use std::sync::Arc;
use std::time::Duration;

fn engine(dir: &std::path::Path) -> Arc<Engine> {
    super::fake::engine_on(dir, Arc::new(FakeBackend::default()))
}

async fn sandbox(e: &Engine) -> String {
    e.create_sandbox("t", Default::default(), "", "", Default::default())
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
