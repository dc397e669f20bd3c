//! Membership against a real 3-member etcd on loopback: members see each other, a name
//! is held by one live member only, a host that stops renewing disappears within the
//! lease TTL and can register again, one etcd member down changes nothing, and with
//! quorum lost every call fails closed within its deadline.

use cleanroom_cluster::{ClusterConfig, MemberInfo, Membership};
use cleanroom_e2e::etcd;
use std::time::{Duration, Instant};

fn cfg(e: &etcd::Etcd, name: &str) -> ClusterConfig {
    let mut c =
        ClusterConfig::parse(&e.cluster_arg(), name, &format!("https://{name}.test:7443")).unwrap();
    c.lease_ttl = Duration::from_secs(2);
    c.timeout = Duration::from_secs(2);
    c
}

fn info(name: &str) -> MemberInfo {
    MemberInfo {
        name: name.into(),
        advertise: format!("https://{name}.test:7443"),
        version: "test".into(),
        runtimes: vec!["linux".into()],
        ..Default::default()
    }
}

async fn names(m: &Membership) -> Vec<String> {
    m.members()
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.info.name)
        .collect()
}

async fn eventually_names(m: &Membership, want: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = names(m).await;
        if now == want {
            return;
        }
        assert!(Instant::now() < deadline, "members {now:?}, want {want:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_see_each_other_and_a_name_has_one_live_holder() {
    let e = etcd::Etcd::start();
    let a = Membership::join(cfg(&e, "a"), info("a")).await.unwrap();
    let b = Membership::join(cfg(&e, "b"), info("b")).await.unwrap();
    assert_eq!(names(&a).await, ["a", "b"]);
    assert_eq!(names(&b).await, ["a", "b"]);
    // The record carries what the host said, and changes are written at renewal.
    b.update(|i| i.sandboxes = 7);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let m = a.members().await.unwrap();
        if m.iter()
            .any(|m| m.info.name == "b" && m.info.sandboxes == 7)
        {
            break;
        }
        assert!(Instant::now() < deadline, "the update never arrived: {m:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A second live "a" is refused (after waiting out twice the TTL).
    let err = Membership::join(cfg(&e, "a"), info("a"))
        .await
        .err()
        .unwrap();
    assert_eq!(err.code().as_str(), "node_name_taken", "{err}");
    // Leaving removes the key at once.
    b.leave().await;
    assert_eq!(names(&a).await, ["a"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_stops_renewing_is_gone_within_the_ttl_and_can_come_back() {
    let e = etcd::Etcd::start();
    let a = Membership::join(cfg(&e, "a"), info("a")).await.unwrap();
    let b = Membership::join(cfg(&e, "b"), info("b")).await.unwrap();
    // A crash: the renewal stops, the lease is not revoked.
    drop(b);
    eventually_names(&a, &["a"]).await;
    // The restarted host registers again under its name.
    let b = Membership::join(cfg(&e, "b"), info("b")).await.unwrap();
    assert_eq!(names(&b).await, ["a", "b"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_etcd_member_down_changes_nothing_and_lost_quorum_fails_closed() {
    let mut e = etcd::Etcd::start();
    let a = Membership::join(cfg(&e, "a"), info("a")).await.unwrap();
    e.kill(0);
    // Two of three: still a quorum; the member stays (its lease is renewed through the others).
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(names(&a).await, ["a"]);
    let c = Membership::join(cfg(&e, "c"), info("c")).await.unwrap();
    assert_eq!(names(&c).await, ["a", "c"]);
    // Quorum lost: calls fail closed, within their deadline.
    e.kill(1);
    let t = Instant::now();
    let err = a.members().await.unwrap_err();
    assert_eq!(err.code().as_str(), "cluster_unavailable", "{err}");
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "bounded: {:?}",
        t.elapsed()
    );
    let err = Membership::join(cfg(&e, "d"), info("d"))
        .await
        .err()
        .unwrap();
    assert_eq!(err.code().as_str(), "cluster_unavailable", "{err}");
}

/// A host's own bindings are one range read of its index (`/cleanroom/by-host/<host>/`),
/// kept in the same transactions as the bindings: what a restarted host reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosts_bindings_are_read_from_its_own_index() {
    use cleanroom_cluster::{Binding, Bound, Count};
    let e = etcd::Etcd::start();
    let m = Membership::join(cfg(&e, "a"), info("a")).await.unwrap();
    let b = m.bindings();
    let bind = |host: &str, owner: &str| Binding {
        host: host.into(),
        owner: owner.into(),
        created_at: 1,
    };
    for (id, host) in [
        ("sbx-1", "a"),
        ("sbx-2", "b"),
        ("sbx-3", "a"),
        ("sbx-4", "ab"),
    ] {
        let got = b
            .bind_counted(id, &bind(host, "alice"), None, 0, Count::default())
            .await
            .unwrap();
        assert_eq!(got, Bound::Now);
    }
    let mut on_a: Vec<String> = b
        .on_host("a")
        .await
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    on_a.sort();
    assert_eq!(on_a, ["sbx-1", "sbx-3"]);
    let on_b = b.on_host("b").await.unwrap();
    assert_eq!(on_b, [("sbx-2".to_string(), bind("b", "alice"))]);
    assert!(b.unbind_counted("sbx-1", Some("alice")).await.unwrap());
    let on_a: Vec<String> = b
        .on_host("a")
        .await
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(on_a, ["sbx-3"]);
    assert_eq!(b.count("alice").await.unwrap().n, 3);
    m.leave().await;
}
