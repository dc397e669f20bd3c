//! Usage in `GetSandbox` / `sandbox inspect`: CPU time, memory (current/peak), pids, disk
//! per writable filesystem and network bytes through the egress gateway move when the
//! workload uses them. Real sandboxes; the upstream is a loopback server reached only
//! through `--egress-resolve`. Under both runtimes ([`both_runtimes!`]).

use cleanroom_e2e::*;
use std::time::Duration;

const BODY: usize = 2 << 20;

#[derive(Debug, Clone, Copy, Default)]
struct U {
    cpu: u64,
    mem: u64,
    peak: u64,
    pids: u64,
    tmp_used: u64,
    tx: u64,
    rx: u64,
}

fn n(v: &serde_json::Value) -> u64 {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .or_else(|| v.as_u64())
        .unwrap_or(0)
}

fn usage(s: &Server, id: &str) -> U {
    let o = s.run(&["sandbox", "inspect", "--json", id]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let u = &v["usage"];
    assert!(u.is_object(), "no usage: {v}");
    let fs = u["filesystems"].as_array().cloned().unwrap_or_default();
    assert!(
        fs.iter().any(|f| f["path"] == "/workspace"),
        "writable filesystems listed: {u}"
    );
    let tmp = fs
        .iter()
        .find(|f| f["path"] == "/tmp")
        .expect("/tmp listed");
    U {
        cpu: n(&u["cpuUsec"]),
        mem: n(&u["memoryBytes"]),
        peak: n(&u["memoryPeakBytes"]),
        pids: n(&u["pids"]),
        tmp_used: n(&tmp["usedBytes"]),
        tx: n(&u["networkTxBytes"]),
        rx: n(&u["networkRxBytes"]),
    }
}

both_runtimes!(
    async usage_moves_with_cpu_memory_disk_pids_and_network,
    usage_moves
);
async fn usage_moves(rt: Runtime) {
    let port = body_upstream(BODY);
    let s = Server::start_with(&["--egress-resolve", "big.test=127.0.0.1"]);
    let dir = tempfile::tempdir().unwrap();
    let policy = write(
        &dir,
        "p.yaml",
        &format!("version: 1\nsandbox:\n  network:\n    allow:\n      - host: big.test\n        ports: [{port}]\n"),
    );
    let id = s.create_on(rt, &["--policy", &policy]);
    let (s2, id2) = (&s, id.clone());
    let run = move |script: &str| {
        let o = s2.run(&["exec", "-n", "--in", &id2, "--", "sh", "-c", script]);
        assert_eq!(o.status.code(), Some(0), "{script}: {}", stderr(&o));
    };
    let base = usage(&s, &id);

    // CPU: a busy loop.
    run("i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done");
    let after_cpu = usage(&s, &id);
    assert!(after_cpu.cpu > base.cpu, "{base:?} -> {after_cpu:?}");

    // Memory and disk: 32 MB into /tmp (tmpfs pages are charged to the sandbox).
    run("head -c 32000000 /dev/zero > /tmp/blob");
    let filled = usage(&s, &id);
    assert!(
        filled.tmp_used >= base.tmp_used + 32_000_000,
        "{base:?} -> {filled:?}"
    );
    assert!(
        filled.mem >= base.mem + 30_000_000,
        "{base:?} -> {filled:?}"
    );
    assert!(filled.peak >= filled.mem, "{filled:?}");
    run("rm /tmp/blob");
    let freed = usage(&s, &id);
    assert!(freed.tmp_used < filled.tmp_used, "{filled:?} -> {freed:?}");
    assert!(freed.mem < filled.mem, "{filled:?} -> {freed:?}");
    assert!(freed.peak >= filled.mem, "the peak stays: {freed:?}");

    // Pids: a background execution with two sleepers.
    let c = s.client().await;
    let req = cleanroom_client::api::CreateExecutionRequest {
        sandbox_id: id.clone(),
        command: vec![
            "sh".into(),
            "-c".into(),
            "sleep 600 & sleep 600 & wait".into(),
        ],
        ..Default::default()
    };
    let exe = c
        .executions
        .create_execution(req)
        .await
        .unwrap()
        .into_owned()
        .execution
        .as_option()
        .unwrap()
        .execution_id
        .clone();
    let (s3, id3) = (s.host(), id.clone());
    let busy = tokio::task::spawn_blocking(move || {
        let mut last = U::default();
        let ok = eventually(Duration::from_secs(30), || {
            let mut c = std::process::Command::new(BIN);
            c.env("CLEANROOM_HOST", &s3)
                .args(["sandbox", "inspect", "--json", &id3]);
            let o = output_with_timeout(c, Duration::from_secs(30));
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
            last.pids = n(&v["usage"]["pids"]);
            last.pids >= 4
        });
        (ok, last)
    })
    .await
    .unwrap();
    assert!(
        busy.0,
        "pids did not rise: base {base:?}, then {:?}",
        busy.1
    );
    let o = s.run(&["exec", "-n", "--in", &id, "--", "true"]);
    assert_eq!(o.status.code(), Some(0));
    c.executions
        .cancel_execution(cleanroom_client::api::CancelExecutionRequest {
            sandbox_id: id.clone(),
            execution_id: exe,
            ..Default::default()
        })
        .await
        .unwrap();

    // Network: 2 MiB down through the gateway, a request up.
    let before_net = usage(&s, &id);
    run(&format!(
        "curl -fsS -m 30 --noproxy '*' -o /tmp/dl http://big.test:{port}/ && test $(wc -c < /tmp/dl) -eq {BODY}"
    ));
    let after_net = usage(&s, &id);
    assert!(
        after_net.rx >= before_net.rx + BODY as u64,
        "{before_net:?} -> {after_net:?}"
    );
    assert!(
        after_net.tx > before_net.tx,
        "{before_net:?} -> {after_net:?}"
    );

    // A stopped sandbox reports no usage.
    s.run(&["sandbox", "rm", &id]);
    let o = s.run(&["sandbox", "inspect", "--json", &id]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["usage"].is_null(), "{v}");
}
