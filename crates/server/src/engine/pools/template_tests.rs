//! A pool's policy is compiled once, when the pool starts: its warm sandboxes are made
//! from that compiled policy, and a create whose policy text is the pool's is matched
//! (and claimed) without compiling it again. Counted by the engine's one compile call.

use super::PoolSpec;
use crate::engine::pools::claim::CreateRequest;
use crate::identity::auth::{Principal, Role};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

fn user() -> Principal {
    Principal {
        name: "u".into(),
        role: Role::User,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_compiles_its_policy_once_for_every_warm_and_claim() {
    let dir = tempfile::tempdir().unwrap();
    let e = crate::engine::fake::engine_on(
        dir.path(),
        Arc::new(crate::engine::fake::FakeBackend::default()),
    );
    let yaml = "version: 1\n";
    let spec = PoolSpec {
        policy_yaml: yaml.into(),
        min_ready: 2,
        max_ready: 2,
        ..Default::default()
    };
    let id = e.create_pool(&user(), spec).unwrap().id;
    let ready = |n: u32| {
        let e = e.clone();
        let id = id.clone();
        async move {
            for _ in 0..1000 {
                if e.pool_stats(&user(), &id).unwrap().1.ready == n {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            panic!("pool never had {n} READY sandboxes");
        }
    };
    ready(2).await;
    assert_eq!(e.compiles.load(Ordering::SeqCst), 1, "create + two warms");

    let lockfiles = Default::default();
    let req = CreateRequest {
        policy_yaml: yaml,
        image_ref: "",
        requested: Default::default(),
        binding: &Default::default(),
        use_pools: true,
        lockfiles: &lockfiles,
        one_shot: false,
    };
    let row = e
        .create_or_claim(&user(), Default::default(), req)
        .await
        .unwrap();
    assert_eq!(row.owner, "u");
    let (_, stats) = e.pool_stats(&user(), &id).unwrap();
    assert_eq!(stats.claims_total, 1, "served from the pool");
    ready(2).await;
    assert_eq!(
        e.compiles.load(Ordering::SeqCst),
        1,
        "a claim and the refill after it compile nothing"
    );
}
