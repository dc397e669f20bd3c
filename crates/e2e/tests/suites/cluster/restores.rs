//! Calls that name no sandbox, through members that do not hold what they name (issue 34,
//! docs/cluster.md "Snapshots", "Executions by id"), on three hosts each in a network
//! namespace of its own: a snapshot taken through one member is restored through every
//! member on the host that holds its files (with them), inspected and removed through
//! others, and refused `host_lost` once that host is gone — never restored empty on
//! another; an execution named by its id alone is inspected and streamed through a
//! member that does not hold it, and refused to another principal.

use super::hosts::host_of;
use cleanroom_client::api::*;
use cleanroom_e2e::cluster_hosts::{Lab, ALICE, MALLORY};
use cleanroom_e2e::*;
use std::time::Duration;

fn others(of: &str) -> Vec<&'static str> {
    ["a", "b", "c"].into_iter().filter(|n| *n != of).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_snapshot_is_restored_where_its_files_are_through_any_member() {
    let mut lab = Lab::start(&["a", "b", "c"]);
    let o = lab
        .host("a")
        .run(ALICE, &["sandbox", "create", "--no-pool"]);
    let src = stdout(&o).trim().to_string();
    assert!(src.starts_with("sbx_"), "{}", stderr(&o));
    let owner = host_of(&lab.etcd, &src).await.expect("bound");
    let [x, y] = others(&owner)[..] else {
        unreachable!()
    };
    let o = tokio::task::block_in_place(|| {
        lab.host(x).run(
            ALICE,
            &[
                "exec",
                "-n",
                "--in",
                &src,
                "--",
                "sh",
                "-c",
                "echo kept > /workspace/mark",
            ],
        )
    });
    assert!(o.status.success(), "{}", stderr(&o));
    // Taken through a member that does not hold the sandbox.
    let o = lab.host(x).run(ALICE, &["snapshot", "create", &src]);
    let snap = stdout(&o).trim().to_string();
    assert!(snap.starts_with("snap_"), "{}", stderr(&o));
    // Listed through every member (it lives on one host only); not for another principal.
    for via in ["a", "b", "c"] {
        let o = lab.host(via).run(ALICE, &["snapshot", "ls"]);
        assert!(
            stdout(&o).contains(&snap),
            "ls through {via}: {}{}",
            stdout(&o),
            stderr(&o)
        );
        let o = lab.host(via).run(MALLORY, &["snapshot", "ls"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            !stdout(&o).contains(&snap),
            "another principal's list through {via}"
        );
    }
    // Restored through every member: always on the snapshot's host, with its files.
    // (Placed like any create, two in three would land on a host without the snapshot.)
    for via in [x, y, owner.as_str(), x, y] {
        let o = lab
            .host(via)
            .run(ALICE, &["sandbox", "create", "--from", &snap]);
        let id = stdout(&o).trim().to_string();
        assert!(
            id.starts_with("sbx_"),
            "restore through {via}: {}",
            stderr(&o)
        );
        assert_eq!(
            host_of(&lab.etcd, &id).await.as_deref(),
            Some(owner.as_str())
        );
        let o = tokio::task::block_in_place(|| {
            lab.host(via).run(
                ALICE,
                &["exec", "-n", "--in", &id, "--", "cat", "/workspace/mark"],
            )
        });
        assert_eq!(stdout(&o).trim(), "kept", "{}", stderr(&o));
    }
    // Inspected through another member; another principal sees nothing anywhere.
    let o = lab
        .host(y)
        .run(ALICE, &["snapshot", "inspect", &snap, "--json"]);
    assert!(stdout(&o).contains(&snap), "{}", stderr(&o));
    for via in ["a", "b", "c"] {
        let o = lab
            .host(via)
            .run(MALLORY, &["sandbox", "create", "--from", &snap]);
        assert!(!o.status.success());
        assert!(stderr(&o).contains("snapshot_not_found"), "{}", stderr(&o));
    }
    // A second snapshot (other content: snapshots are content-addressed), removed through
    // another member: gone on its host.
    let o = tokio::task::block_in_place(|| {
        lab.host(x).run(
            ALICE,
            &[
                "exec",
                "-n",
                "--in",
                &src,
                "--",
                "sh",
                "-c",
                "echo more > /workspace/mark2",
            ],
        )
    });
    assert!(o.status.success(), "{}", stderr(&o));
    let o = lab
        .host(owner.as_str())
        .run(ALICE, &["snapshot", "create", &src]);
    let snap2 = stdout(&o).trim().to_string();
    assert!(snap2.starts_with("snap_"), "{}", stderr(&o));
    let o = lab.host(y).run(ALICE, &["snapshot", "rm", &snap2]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = lab
        .host(owner.as_str())
        .run(ALICE, &["snapshot", "inspect", &snap2, "--json"]);
    assert!(stderr(&o).contains("snapshot_not_found"), "{}", stderr(&o));

    // Its host gone: refused precisely, not restored empty elsewhere.
    tokio::task::block_in_place(|| lab.host_mut(owner.as_str()).kill9());
    let ok = eventually(Duration::from_secs(20), || {
        let o = lab
            .host(x)
            .run(ALICE, &["sandbox", "create", "--from", &snap]);
        !o.status.success() && stderr(&o).contains("host_lost")
    });
    let o = lab
        .host(x)
        .run(ALICE, &["sandbox", "create", "--from", &snap]);
    assert!(
        ok,
        "restore with its host gone: {}{}",
        stdout(&o),
        stderr(&o)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_execution_named_by_its_id_alone_is_reached_through_any_member() {
    let lab = Lab::start(&["a", "b", "c"]);
    let o = lab
        .host("a")
        .run(ALICE, &["sandbox", "create", "--no-pool"]);
    let sbx = stdout(&o).trim().to_string();
    assert!(sbx.starts_with("sbx_"), "{}", stderr(&o));
    let owner = host_of(&lab.etcd, &sbx).await.expect("bound");
    let far = others(&owner)[0];
    let c = lab.host(owner.as_str()).client(ALICE).await;
    let exe = c
        .executions
        .create_execution(CreateExecutionRequest {
            sandbox_id: sbx.clone(),
            command: vec!["sh".into(), "-c".into(), "echo by-id".into()],
            ..Default::default()
        })
        .await
        .expect("create execution")
        .into_owned()
        .execution
        .into_option()
        .expect("an execution")
        .execution_id;
    let f = lab.host(far).client(ALICE).await;
    // Inspected by its id alone through a member that does not hold it, once finished.
    let mut ok = false;
    for _ in 0..60 {
        let got = f
            .executions
            .inspect_execution(InspectExecutionRequest {
                execution_id: exe.clone(),
                ..Default::default()
            })
            .await
            .map(|i| i.into_owned());
        match got {
            Ok(i) if i.stdout == "by-id\n" => {
                ok = true;
                break;
            }
            Ok(_) => tokio::time::sleep(Duration::from_millis(500)).await,
            Err(e) => panic!("inspect {exe} through {far}: {e:?}"),
        }
    }
    assert!(ok, "inspect {exe} through {far}");
    // Streamed by its id alone: the output, then its end.
    let mut st = f
        .executions
        .stream_execution(StreamExecutionRequest {
            execution_id: exe.clone(),
            ..Default::default()
        })
        .await
        .expect("stream through a non-owner");
    let mut out = Vec::new();
    while let Some(ev) = tokio::time::timeout(Duration::from_secs(30), st.message())
        .await
        .expect("bounded")
        .expect("stream")
    {
        let ev: ExecutionStreamEvent = ev.to_owned_message();
        if let Some(execution_stream_event::Payload::Output(chunk)) = ev.payload {
            out.extend_from_slice(&chunk.data);
        }
    }
    assert_eq!(String::from_utf8_lossy(&out), "by-id\n");
    // Another principal: not found, through every member.
    for via in ["a", "b", "c"] {
        let m = lab.host(via).client(MALLORY).await;
        let r = m
            .executions
            .get_execution(GetExecutionRequest {
                execution_id: exe.clone(),
                ..Default::default()
            })
            .await;
        let e = cleanroom_client::ApiError::from(r.map(drop).expect_err("not theirs"));
        assert_eq!(e.code, "execution_not_found", "through {via}: {e:?}");
    }
}
