//! `RunExecution` with a `create` (what `cleanroom exec` without `--in` sends) placed by the
//! cluster (issue 34, docs/cluster.md "Placement"), on three hosts each in a network
//! namespace of its own: the sandboxes such calls make through one front door land on more
//! than one host, each is bound in etcd by the time the call's output has ended (not seconds
//! later by its host), and one on another host is driven through a member that does not
//! hold it.

use super::hosts::host_of;
use cleanroom_client::api::*;
use cleanroom_client::session::{ExecutionOutput, OutputEvent};
use cleanroom_e2e::cluster_hosts::{Lab, ALICE};
use cleanroom_e2e::*;
use std::time::Duration;

fn run_req(script: &str) -> RunExecutionRequest {
    RunExecutionRequest {
        execution: CreateExecutionRequest {
            command: vec!["sh".into(), "-c".into(), script.into()],
            ..Default::default()
        }
        .into(),
        create: CreateSandboxRequest {
            no_pool: true,
            ..Default::default()
        }
        .into(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn run_execution_creates_are_placed_bound_at_once_and_reachable_through_any_member() {
    let lab = Lab::start(&["a", "b", "c"]);
    let c = lab.host("a").client(ALICE).await;
    let mut placed = Vec::new();
    for i in 0..6 {
        let started = ExecutionOutput::run(&c, run_req(&format!("echo run-{i}")))
            .await
            .expect("run through a");
        let id = started.sandbox.sandbox_id.clone();
        let (_, mut output) = started.execution.expect("started");
        let mut out = Vec::new();
        loop {
            let ev = tokio::time::timeout(Duration::from_secs(60), output.next())
                .await
                .expect("bounded")
                .expect("stream")
                .expect("an exit");
            match ev {
                OutputEvent::Stdout(d) => out.extend(d),
                OutputEvent::Exit(x) => {
                    assert_eq!(x.exit_code, 0);
                    break;
                }
                _ => {}
            }
        }
        assert_eq!(String::from_utf8_lossy(&out).trim(), format!("run-{i}"));
        // Bound already: the host's reconciliation would take seconds.
        let host = host_of(&lab.etcd, &id)
            .await
            .unwrap_or_else(|| panic!("{id} not bound when its run ended"));
        placed.push((id, host));
    }
    let hosts: std::collections::BTreeSet<&str> = placed.iter().map(|(_, h)| h.as_str()).collect();
    assert!(hosts.len() >= 2, "all on one host: {placed:?}");
    let (id, owner) = placed
        .iter()
        .find(|(_, h)| h != "a")
        .expect("one placed off the front door");
    let front = ["a", "b", "c"]
        .into_iter()
        .find(|n| n != owner)
        .expect("a non-owner");
    let h = lab.host(front);
    let o = tokio::task::block_in_place(|| {
        h.run(
            ALICE,
            &["exec", "-n", "--in", id, "--", "sh", "-c", "echo via"],
        )
    });
    assert_eq!(stdout(&o).trim(), "via", "{}", stderr(&o));
}
