//! `/metrics`: scraped over HTTP with curl from a real server and parsed by a real
//! OpenMetrics parser (the Python `prometheus_client`'s, from .tools/test-venv); values
//! move after a create, an execution and a denied egress; every caller but an admin is
//! refused.

use cleanroom_e2e::*;
use std::collections::BTreeMap;

const OPS: &str = "ops-token-4c1e9a7b3d5f2a8c6e0b1d3f5a7c9e2b";
const ALICE: &str = "alice-token-8b2d4f6a1c3e5a7c9e0b2d4f6a8c1e3d";

/// Parse with prometheus_client's OpenMetrics parser (strict: one `# EOF`, types, units);
/// every sample as `name{k="v",…}` (labels sorted) → value.
const PARSE: &str = r#"
import sys, json
from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = {}
for fam in text_string_to_metric_families(sys.stdin.read()):
    for s in fam.samples:
        labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
        out[f"{s.name}{{{labels}}}"] = s.value
print(json.dumps(out))
"#;

fn scrape(s: &TcpServer) -> BTreeMap<String, f64> {
    let r = curl(&s.addr, "GET", "/metrics", Some(OPS), None);
    assert_eq!(r.status, 200, "{}", r.body);
    serde_json::from_str(&python(PARSE, &r.body)).expect("parser output")
}

fn get(m: &BTreeMap<String, f64>, key: &str) -> f64 {
    m.get(key).copied().unwrap_or(0.0)
}

#[test]
fn metrics_are_parsed_by_a_real_parser_move_with_use_and_are_for_admins_only() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = write_tokens(
        dir.path(),
        &[(OPS, "ops", "admin"), (ALICE, "alice", "user")],
    );
    let s = TcpServer::start("http", &["--tokens-file", tokens.to_str().unwrap()]);

    // Refused: no credentials, a wrong token, a principal that is not an admin.
    let r = curl(&s.addr, "GET", "/metrics", None, None);
    assert_eq!(
        (r.status, r.code().as_str()),
        (401, "unauthenticated"),
        "{}",
        r.body
    );
    let r = curl(&s.addr, "GET", "/metrics", Some("not-a-token"), None);
    assert_eq!(
        (r.status, r.code().as_str()),
        (401, "unauthenticated"),
        "{}",
        r.body
    );
    let r = curl(&s.addr, "GET", "/metrics", Some(ALICE), None);
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "permission_denied"),
        "{}",
        r.body
    );
    assert!(!r.body.contains("cleanroom_"), "nothing leaks: {}", r.body);

    let before = scrape(&s);
    for family in [
        "cleanroom_state_disk_min_free_bytes{}",
        "cleanroom_output_store_max_bytes{}",
        "cleanroom_gateway_bytes_total{direction=\"tx\"}",
    ] {
        assert!(before.contains_key(family), "{family} missing: {before:?}");
    }

    // Use: a sandbox made by alice, an execution that resolves a name its policy does not
    // allow (the gateway's DNS denies it), and one more execution.
    let o = s.run(Some(ALICE), &["sandbox", "create"]);
    let sbx = stdout(&o).trim().to_string();
    assert!(sbx.starts_with("sbx_"), "{}", stderr(&o));
    let o = s.run(
        Some(ALICE),
        &[
            "exec",
            "--in",
            &sbx,
            "--",
            "sh",
            "-c",
            "getent hosts denied.example; echo done",
        ],
    );
    assert!(stdout(&o).contains("done"), "{}", stderr(&o));
    let o = s.run(Some(ALICE), &["exec", "--in", &sbx, "--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    let after = scrape(&s);
    let moved = |key: &str, by: f64| {
        let (b, a) = (get(&before, key), get(&after, key));
        assert!(a >= b + by, "{key}: {b} -> {a}\n{after:?}");
    };
    moved(
        "cleanroom_sandbox_create_duration_seconds_count{outcome=\"ok\"}",
        1.0,
    );
    moved(
        "cleanroom_exec_start_duration_seconds_count{outcome=\"ok\"}",
        2.0,
    );
    moved(
        "cleanroom_egress_decisions_total{decision=\"deny\",reason=\"host_not_allowed\"}",
        1.0,
    );
    // The histogram is real: the +Inf bucket holds every observation.
    assert_eq!(
        get(
            &after,
            "cleanroom_sandbox_create_duration_seconds_bucket{le=\"+Inf\",outcome=\"ok\"}"
        ),
        get(
            &after,
            "cleanroom_sandbox_create_duration_seconds_count{outcome=\"ok\"}"
        ),
    );
    let ready: f64 = after
        .iter()
        .filter(|(k, _)| k.starts_with("cleanroom_sandboxes{") && k.contains("status=\"ready\""))
        .map(|(_, v)| v)
        .sum();
    assert!(ready >= 1.0, "{after:?}");

    // A failed create counts as an error, with its latency.
    let o = s.run(Some(ALICE), &["sandbox", "create", "--memory-mb", "1"]);
    assert_eq!(o.status.code(), Some(125), "{}", stdout(&o));
    let last = scrape(&s);
    assert!(
        get(
            &last,
            "cleanroom_sandbox_create_duration_seconds_count{outcome=\"error\"}"
        ) >= get(
            &after,
            "cleanroom_sandbox_create_duration_seconds_count{outcome=\"error\"}"
        ) + 1.0,
        "{last:?}"
    );

    // The gateway's bytes (its DNS answers count) stay counted once the sandbox is gone.
    let tx = "cleanroom_gateway_bytes_total{direction=\"tx\"}";
    let rx = "cleanroom_gateway_bytes_total{direction=\"rx\"}";
    moved(tx, 1.0);
    moved(rx, 1.0);
    let o = s.run(Some(ALICE), &["sandbox", "rm", &sbx]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let gone = scrape(&s);
    assert!(
        get(&gone, tx) >= get(&last, tx) && get(&gone, rx) >= get(&last, rx),
        "{gone:?}"
    );

    // A claim from a warm pool: a pool hit and a claim latency.
    let pool = r#"{"config": {"poolId": "metrics-pool", "minReady": 1, "maxReady": 1}}"#;
    let r = curl(&s.addr, "POST", "/v1/warm-pools", Some(ALICE), Some(pool));
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.json()["poolId"].as_str().unwrap().to_string();
    let stats = format!("/v1/warm-pools/{id}/stats");
    assert!(eventually(std::time::Duration::from_secs(60), || {
        curl(&s.addr, "GET", &stats, Some(ALICE), None).json()["readyCount"] == 1
    }));
    let r = curl(
        &s.addr,
        "POST",
        &format!("/v1/warm-pools/{id}/claim"),
        Some(ALICE),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let claimed = scrape(&s);
    assert_eq!(
        get(&claimed, "cleanroom_pool_hits_total{}"),
        get(&gone, "cleanroom_pool_hits_total{}") + 1.0
    );
    assert!(
        claimed.contains_key("cleanroom_pool_misses_total{}"),
        "{claimed:?}"
    );
    assert_eq!(
        get(
            &claimed,
            "cleanroom_pool_claim_duration_seconds_count{outcome=\"ok\"}"
        ),
        get(
            &gone,
            "cleanroom_pool_claim_duration_seconds_count{outcome=\"ok\"}"
        ) + 1.0
    );
    let r = curl(
        &s.addr,
        "DELETE",
        &format!("/v1/warm-pools/{id}"),
        Some(ALICE),
        None,
    );
    assert_eq!(r.status, 204, "{}", r.body);
}

/// `serve --metrics-listen`: a listener of `/metrics` alone, authenticated as every
/// listener is (an admin's token; no credentials 401, a user 403) — and nothing else
/// there: not the API, REST, the console or exposed ports.
#[test]
fn a_metrics_listener_serves_metrics_to_admins_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = write_tokens(
        dir.path(),
        &[(OPS, "ops", "admin"), (ALICE, "alice", "user")],
    );
    let s = TcpServer::start(
        "http",
        &[
            "--tokens-file",
            tokens.to_str().unwrap(),
            "--metrics-listen",
            "http://127.0.0.1:0",
        ],
    );
    let mut addr = String::new();
    assert!(
        eventually(std::time::Duration::from_secs(30), || {
            addr = s
                .log()
                .lines()
                .find_map(|l| l.strip_prefix("cleanroom: metrics on http://"))
                .map(|u| u.trim().trim_end_matches("/metrics").to_string())
                .unwrap_or_default();
            !addr.is_empty()
        }),
        "no metrics listener: {}",
        s.log()
    );
    assert_ne!(addr, s.addr);
    let r = curl(&addr, "GET", "/metrics", None, None);
    assert_eq!(
        (r.status, r.code().as_str()),
        (401, "unauthenticated"),
        "{}",
        r.body
    );
    let r = curl(&addr, "GET", "/metrics", Some(ALICE), None);
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "permission_denied"),
        "{}",
        r.body
    );
    let r = curl(&addr, "GET", "/metrics", Some(OPS), None);
    assert_eq!(r.status, 200, "{}", r.body);
    let m: BTreeMap<String, f64> =
        serde_json::from_str(&python(PARSE, &r.body)).expect("parser output");
    assert!(
        m.keys()
            .any(|k| k.starts_with("cleanroom_state_disk_free_bytes")),
        "{m:?}"
    );
    // Nothing but /metrics, for an admin too.
    for (method, path) in [
        ("GET", "/v1/sandboxes"),
        ("POST", "/cleanroom.v1.SandboxService/ListSandboxes"),
        ("GET", "/ui/"),
        ("GET", "/_sandbox/exp_x/"),
        ("GET", "/metrics/x"),
    ] {
        let r = curl(&addr, method, path, Some(OPS), Some("{}"));
        assert_eq!(
            (r.status, r.code().as_str()),
            (501, "unimplemented"),
            "{method} {path}: {}",
            r.body
        );
    }
    // The main listener still serves it.
    assert_eq!(
        curl(&s.addr, "GET", "/metrics", Some(OPS), None).status,
        200
    );
}
