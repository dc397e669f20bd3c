//! Warm pools as cluster objects (issue 34, docs/cluster.md "Warm pools"), on three hosts
//! each in a network namespace of its own: a pool created through one member is kept
//! warm by every member; stats through any member sum the shares; a create that a warm
//! sandbox of the front door can serve stays there; claims through one member that has
//! run dry are served by peers, bound to their hosts and counted once against the
//! claimer; another principal is refused on every host; a host that dies takes its share
//! out of the target and brings it back when it returns; `pool rm` through another
//! member removes every share and its warm sandboxes.

use super::hosts::host_of;
use cleanroom_e2e::cluster_hosts::{Lab, ALICE, MALLORY, OPS};
use cleanroom_e2e::*;
use std::time::Duration;

/// `pool stats POOL --json` through `via`: the stats object, or the CLI's stderr.
fn pool_stats(lab: &Lab, via: &str, pool: &str) -> Result<serde_json::Value, String> {
    let o = lab.host(via).run(ALICE, &["pool", "stats", pool, "--json"]);
    if !o.status.success() {
        return Err(stderr(&o));
    }
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).map_err(|e| e.to_string())?;
    Ok(v["stats"].clone())
}

fn num(v: &serde_json::Value, k: &str) -> u64 {
    v[k].as_u64()
        .or_else(|| v[k].as_str().and_then(|s| s.parse().ok()))
        .unwrap_or(0)
}

/// Wait (bounded) until `pool stats` through `via` shows `ready` and `target` summed.
fn wait_stats(lab: &Lab, via: &str, pool: &str, ready: u64, target: u64) {
    let ok = eventually(Duration::from_secs(90), || {
        pool_stats(lab, via, pool)
            .is_ok_and(|s| num(&s, "ready") >= ready && num(&s, "targetReady") == target)
    });
    assert!(
        ok,
        "pool {pool} through {via}: want ready >= {ready}, target {target}; got {:?}",
        pool_stats(lab, via, pool)
    );
}

/// Live sandboxes every member reports (`cluster status`), summed.
fn reported_sandboxes(lab: &Lab) -> u64 {
    let o = lab.host("a").run(OPS, &["cluster", "status", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
    let members = v["members"].as_array().cloned().unwrap_or_default();
    members.iter().map(|m| num(m, "sandboxes")).sum()
}

/// alice's cluster-wide count in etcd, read by an observer.
async fn count_of(lab: &Lab, owner: &str) -> u64 {
    use cleanroom_cluster::{ClusterConfig, MemberInfo, Membership};
    let cfg = ClusterConfig::parse(
        &lab.etcd.cluster_arg(),
        "observer",
        "https://observer.test:1",
    )
    .expect("config");
    let info = MemberInfo {
        name: "observer".into(),
        ..Default::default()
    };
    let m = Membership::join(cfg, info).await.expect("observer joins");
    let n = m.bindings().count(owner).await.expect("count").n;
    m.leave().await;
    n
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pool_is_kept_warm_by_every_member_and_claims_reach_a_peer() {
    let mut lab = Lab::start(&["a", "b", "c"]);
    let o = lab.host("a").run(
        ALICE,
        &["pool", "create", "--min-ready", "2", "--name", "shared"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let pool = stdout(&o).trim().to_string();
    assert!(pool.starts_with("pool_"), "{pool}");
    // Every member keeps its share: two READY on each of three hosts, seen through one
    // that did not create it. (Without cluster pools: pool_not_found through c.)
    wait_stats(&lab, "c", &pool, 6, 6);
    let listed = lab.host("b").run(ALICE, &["pool", "ls", "--json"]);
    assert!(stdout(&listed).contains(&pool), "{}", stderr(&listed));
    // Owned: another principal is refused through every member.
    for via in ["a", "b", "c"] {
        let o = lab.host(via).run(MALLORY, &["pool", "claim", &pool]);
        assert!(!o.status.success());
        assert!(stderr(&o).contains("pool_not_found"), "{}", stderr(&o));
    }

    // A create a warm sandbox of the front door can serve stays on the front door (two
    // READY there: both creates), instead of a cold create placed elsewhere.
    let mut ids = Vec::new();
    for _ in 0..2 {
        let id = lab.host("a").create();
        assert_eq!(host_of(&lab.etcd, &id).await.as_deref(), Some("a"), "{id}");
        ids.push(id);
    }

    // Four claims at once through b, which holds two: the others are served by peers.
    let claims: Vec<std::process::Output> = tokio::task::block_in_place(|| {
        std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| s.spawn(|| lab.host("b").run(ALICE, &["pool", "claim", &pool])))
                .collect();
            hs.into_iter()
                .map(|h| h.join().expect("claim thread"))
                .collect()
        })
    });
    let mut hosts = std::collections::BTreeSet::new();
    for o in &claims {
        assert!(o.status.success(), "claim through b: {}", stderr(o));
        let id = stdout(o).trim().to_string();
        assert!(id.starts_with("sbx_"), "{id}");
        // Bound at once to the host that served it.
        let h = host_of(&lab.etcd, &id)
            .await
            .unwrap_or_else(|| panic!("claimed {id} not bound"));
        hosts.insert(h);
        ids.push(id);
    }
    assert!(
        hosts.len() >= 2,
        "every claim served by one host: {hosts:?}"
    );
    // A sandbox a peer served is driven through the member that claimed it.
    let far = ids.last().expect("a claim").clone();
    let o = tokio::task::block_in_place(|| {
        lab.host("b").run(
            ALICE,
            &["exec", "-n", "--in", &far, "--", "sh", "-c", "echo claimed"],
        )
    });
    assert_eq!(stdout(&o).trim(), "claimed", "{}", stderr(&o));
    // Counted once: six sandboxes of alice's, still six after the hosts' reconciliation
    // looked (warm ones are never counted; a claimed one is not counted again).
    assert_eq!(count_of(&lab, "alice").await, 6);
    tokio::time::sleep(Duration::from_secs(8)).await;
    assert_eq!(count_of(&lab, "alice").await, 6);

    // A host that dies takes its share out of the target; back, it holds it again.
    tokio::task::block_in_place(|| lab.host_mut("c").kill9());
    wait_stats(&lab, "a", &pool, 0, 4);
    tokio::task::block_in_place(|| lab.host_mut("c").spawn());
    wait_stats(&lab, "a", &pool, 6, 6);

    // Removed through a member that did not create it: every share and its warm
    // sandboxes go; the claimed ones stay their claimer's.
    let o = lab.host("c").run(ALICE, &["pool", "rm", &pool]);
    assert!(o.status.success(), "{}", stderr(&o));
    for via in ["a", "b", "c"] {
        let ok = eventually(Duration::from_secs(20), || {
            pool_stats(&lab, via, &pool).is_err_and(|e| e.contains("pool_not_found"))
        });
        assert!(ok, "pool still there through {via}");
    }
    // c's claimed sandboxes died with its server; the rest stay.
    let live: Vec<&String> = ids.iter().collect();
    let ok = eventually(Duration::from_secs(30), || {
        reported_sandboxes(&lab) <= live.len() as u64
    });
    assert!(
        ok,
        "warm sandboxes left after pool rm: {} reported, at most {} claimed",
        reported_sandboxes(&lab),
        live.len()
    );
}
