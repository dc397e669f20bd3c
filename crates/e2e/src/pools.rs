//! Warm-pool helpers shared by the pool tests: create, stats, wait, claim, and the warm
//! sandboxes a server holds (the API lists no unclaimed sandbox).

use crate::*;
use std::time::Duration;

pub fn pool_create(s: &Server, args: &[&str]) -> String {
    let mut a = vec!["pool", "create"];
    a.extend_from_slice(args);
    let o = s.run(&a);
    assert!(o.status.success(), "{}", stderr(&o));
    let id = stdout(&o).trim().to_string();
    assert!(id.starts_with("pool_"), "{id}");
    id
}

pub fn stats(s: &Server, pool: &str) -> serde_json::Value {
    let o = s.run(&["pool", "stats", pool, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("json")["stats"].clone()
}

pub fn num(v: &serde_json::Value, k: &str) -> u64 {
    v[k].as_u64()
        .or_else(|| v[k].as_str().and_then(|s| s.parse().ok()))
        .unwrap_or(0)
}

pub fn wait_ready(s: &Server, pool: &str, n: u64) {
    assert!(
        eventually(Duration::from_secs(60), || num(&stats(s, pool), "ready")
            >= n),
        "pool {pool} never reached {n} ready: {}",
        stats(s, pool)
    );
}

pub fn claim(s: &Server, pool: &str) -> String {
    let o = s.run(&["pool", "claim", pool]);
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o).trim().to_string()
}

/// Every sandbox of this server as (sandbox id, host pid of its pid 1), from the host's
/// process table (warm sandboxes are nobody's until claimed, so the API does not list
/// them): the server's descendants whose NSpid ends in 1, named by their cgroup.
pub fn sandbox_inits(s: &Server) -> Vec<(String, i32)> {
    let server = s.child.as_ref().expect("server running").id() as i32;
    let ppid = ppid_of;
    let descends = |mut pid: i32| {
        for _ in 0..64 {
            match ppid(pid) {
                Some(p) if p == server => return true,
                Some(p) if p > 1 => pid = p,
                _ => return false,
            }
        }
        false
    };
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let ns_init = status
            .lines()
            .any(|l| l.starts_with("NSpid:") && l.ends_with("\t1") && l.contains('\t'));
        if !ns_init || !descends(pid) {
            continue;
        }
        let cg = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
        if let Some(i) = cg.find("sbx_") {
            let id: String = cg[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !out.iter().any(|(o, _)| *o == id) {
                out.push((id, pid));
            }
        }
    }
    out
}

pub fn status_of(s: &Server, id: &str) -> String {
    let o = s.run(&["sandbox", "inspect", id, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
    v["status"].as_str().unwrap_or_default().to_string()
}
