//! API round-trip measurement (bench/api.py): over one connection, N times
//! `CreateExecution(true)` + `StreamExecution` to the exit event in a READY sandbox, N times
//! the same as one `RunExecution` call (to the exit event, and to its final record), and, as
//! the same-run reference, N unary `GetSandbox` calls (the framework/transport floor) and N
//! local `fork+exec` of `true` (the process-spawn floor). Prints one JSON object; the
//! RunExecution series is also given as the server timed it (`server_time_us`).
//!
//! Usage: exec_rtt ENDPOINT N   (CLEANROOM_TOKEN for TCP endpoints)

use cleanroom_client::api::*;
use cleanroom_client::endpoint::{Endpoint, Target};
use cleanroom_client::session::{ExecutionOutput, OutputEvent};
use cleanroom_client::Client;
use std::time::Instant;

fn pct(xs: &mut [f64], p: f64) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    let k = (xs.len() - 1) as f64 * p / 100.0;
    let (f, c) = (k.floor() as usize, (k.ceil() as usize).min(xs.len() - 1));
    xs[f] + (xs[c] - xs[f]) * (k - f as f64)
}

fn row(mut xs: Vec<f64>) -> serde_json::Value {
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    serde_json::json!({
        "runs": xs.len(),
        "p50_ms": (pct(&mut xs, 50.0) * 1000.0).round() / 1000.0,
        "p99_ms": (pct(&mut xs, 99.0) * 1000.0).round() / 1000.0,
        "mean_ms": (mean * 1000.0).round() / 1000.0,
    })
}

/// Follow `out` to its exit event; `true` must exit 0.
async fn to_exit(out: &mut ExecutionOutput<'_>) -> Result<(), Box<dyn std::error::Error>> {
    loop {
        match out.next().await? {
            Some(OutputEvent::Exit(x)) if x.exit_code == 0 => return Ok(()),
            Some(OutputEvent::Exit(x)) => return Err(format!("exit {}", x.exit_code).into()),
            Some(_) => {}
            None => return Err("stream ended".into()),
        }
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let endpoint = Endpoint::parse(args.get(1).ok_or("usage: exec_rtt ENDPOINT N")?)?;
    let n: usize = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(200);
    let mut target = Target::from(endpoint);
    target.token = std::env::var("CLEANROOM_TOKEN").ok();
    let client = Client::connect_target(&target).await?;
    let created = client
        .sandboxes
        .create_sandbox(CreateSandboxRequest::default())
        .await?
        .into_owned();
    let sbx = created
        .sandbox
        .as_option()
        .ok_or("no sandbox")?
        .sandbox_id
        .clone();
    let created_ms = std::cell::RefCell::new(Vec::new());
    let exec_once = || async {
        let t = Instant::now();
        let req = CreateExecutionRequest {
            sandbox_id: sbx.clone(),
            command: vec!["true".into()],
            ..Default::default()
        };
        let e = client.executions.create_execution(req).await?.into_owned();
        let id = e
            .execution
            .as_option()
            .ok_or("no execution")?
            .execution_id
            .clone();
        created_ms
            .borrow_mut()
            .push(t.elapsed().as_secs_f64() * 1000.0);
        let mut out = ExecutionOutput::new(&client, &sbx, &id);
        to_exit(&mut out).await?;
        Ok::<(), Box<dyn std::error::Error>>(())
    };
    // The same as one RunExecution call: to the exit event, and to the final record.
    let run_once = || async {
        let t = Instant::now();
        let req = RunExecutionRequest {
            execution: CreateExecutionRequest {
                sandbox_id: sbx.clone(),
                command: vec!["true".into()],
                ..Default::default()
            }
            .into(),
            ..Default::default()
        };
        let started = ExecutionOutput::run(&client, req).await?;
        let (_, mut out) = started.execution.ok_or("not started")?;
        to_exit(&mut out).await?;
        let exited = t.elapsed().as_secs_f64() * 1000.0;
        out.finished().await.ok_or("no final record")?;
        let fin = t.elapsed().as_secs_f64() * 1000.0;
        let server = out.server_time_us().ok_or("no server time")? as f64 / 1000.0;
        Ok::<_, Box<dyn std::error::Error>>((exited, fin, server))
    };
    for _ in 0..10 {
        exec_once().await?;
        run_once().await?;
    }
    // Interleaved, so that both series see the same machine.
    let mut exec = Vec::with_capacity(n);
    let (mut run, mut run_final) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut run_server = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        exec_once().await?;
        exec.push(t.elapsed().as_secs_f64() * 1000.0);
        let (exited, fin, server) = run_once().await?;
        run.push(exited);
        run_final.push(fin);
        run_server.push(server);
    }
    // Of which: CreateExecution answered (the rest is the stream to the exit).
    let create: Vec<f64> = created_ms.borrow().iter().skip(10).copied().collect();
    let mut unary = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        client
            .sandboxes
            .list_sandboxes(ListSandboxesRequest::default())
            .await?;
        unary.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let mut spawn = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let s = std::process::Command::new("true").status()?;
        if !s.success() {
            return Err("true failed".into());
        }
        spawn.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    client
        .sandboxes
        .terminate_sandbox(TerminateSandboxRequest {
            sandbox_id: sbx.clone(),
            ..Default::default()
        })
        .await?;
    println!(
        "{}",
        serde_json::json!({
            "exec_true_round_trip": row(exec),
            "of_which_create_execution": row(create),
            "run_execution_to_exit": row(run),
            "run_execution_to_final_record": row(run_final),
            // The same calls as the server timed them (`server_time_us` on `finished`).
            "run_execution_server_time": row(run_server),
            "unary_list_sandboxes": row(unary),
            "host_spawn_true": row(spawn),
        })
    );
    Ok(())
}
