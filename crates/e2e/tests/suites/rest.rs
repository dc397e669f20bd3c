//! Seed 002's REST API, every endpoint with the real `curl` against a real server: the
//! success path, another principal's refusal (ownership as in the Connect API), a
//! malformed body, an unauthenticated call. The served OpenAPI document is validated by a
//! real validator (`openapi-spec-validator` from .tools/test-venv) and must name exactly
//! the operations this test calls.

use cleanroom_e2e::*;
use serde_json::json;
use std::collections::BTreeSet;
use std::time::Duration;

const OPS: &str = "ops-token-1f3a5c7e9b2d4f6a8c0e1b3d5f7a9c2e";
const ALICE: &str = "alice-token-5d7f9b1c3e5a7c9e0b2d4f6a8c1e3b5d";
const BOB: &str = "bob-token-9e7c5a3b1d2f4a6c8e0b2d4f6a8c1e3f";

const VALIDATE: &str = r#"
import sys, json
from openapi_spec_validator import validate
doc = json.load(sys.stdin)
validate(doc)
ops = sorted(f"{m.upper()} {p}" for p, item in doc["paths"].items() for m in item if m in ("get", "post", "delete", "put", "patch"))
print(json.dumps(ops))
"#;

/// Calls made, as `METHOD /template` (checked against the document at the end).
struct Calls<'a> {
    s: &'a TcpServer,
    seen: BTreeSet<String>,
}

impl Calls<'_> {
    fn call(
        &mut self,
        template: &str,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&str>,
    ) -> HttpReply {
        self.seen.insert(format!("{method} {template}"));
        curl(&self.s.addr, method, path, token, body)
    }
}

fn expect(r: &HttpReply, status: u16, code: &str) {
    assert_eq!(r.status, status, "{}", r.body);
    if !code.is_empty() {
        assert_eq!(r.code(), code, "{}", r.body);
        assert!(r.json()["error"]["message"].is_string(), "{}", r.body);
    }
}

#[test]
fn every_rest_endpoint_with_curl_ownership_malformed_bodies_and_openapi() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = write_tokens(
        dir.path(),
        &[
            (OPS, "ops", "admin"),
            (ALICE, "alice", "user"),
            (BOB, "bob", "user"),
        ],
    );
    let s = TcpServer::start("http", &["--tokens-file", tokens.to_str().unwrap()]);
    let mut c = Calls {
        s: &s,
        seen: BTreeSet::new(),
    };

    // The document: authenticated like everything else, then validated.
    let r = c.call("/v1/openapi.json", "GET", "/v1/openapi.json", None, None);
    expect(&r, 401, "unauthenticated");
    let r = c.call(
        "/v1/openapi.json",
        "GET",
        "/v1/openapi.json",
        Some(BOB),
        None,
    );
    expect(&r, 200, "");
    let documented: Vec<String> = serde_json::from_str(&python(VALIDATE, &r.body)).unwrap();

    // Unknown routes and methods, for anyone authenticated; strangers learn nothing.
    expect(
        &curl(&s.addr, "GET", "/v1/nothing", None, None),
        401,
        "unauthenticated",
    );
    expect(
        &curl(&s.addr, "GET", "/v1/nothing", Some(ALICE), None),
        404,
        "unimplemented",
    );
    expect(
        &curl(&s.addr, "PUT", "/v1/sandboxes", Some(ALICE), None),
        405,
        "unimplemented",
    );

    // Create (seed 002's shape).
    let spec = json!({"spec": {
        "runtimeClass": "linux",
        "resources": {"memoryBytes": 268435456u64, "cpuMillicores": 1000},
        "networkPolicy": {"defaultAction": "Deny", "egressRules": [
            {"destination": {"domain": "api.example"}, "action": "Allow", "ports": [443]}
        ]},
        "secrets": [],
        "ttlSeconds": 600,
        "labels": {"via": "rest"}
    }})
    .to_string();
    let t = "/v1/sandboxes";
    expect(
        &c.call(t, "POST", t, None, Some(&spec)),
        401,
        "unauthenticated",
    );
    expect(
        &c.call(t, "POST", t, Some(ALICE), Some("{not json")),
        400,
        "invalid_argument",
    );
    let r = c.call(t, "POST", t, Some(ALICE), Some(r#"{"spec": {"bogus": 1}}"#));
    expect(&r, 400, "invalid_argument");
    let r = c.call(
        t,
        "POST",
        t,
        Some(ALICE),
        Some(r#"{"spec": {"secrets": [{"name": "k"}]}}"#),
    );
    expect(&r, 400, "invalid_argument");
    let r = c.call(
        t,
        "POST",
        t,
        Some(ALICE),
        Some(r#"{"spec": {"resources": {"memoryBytes": 1}}}"#),
    );
    expect(&r, 400, "invalid_argument");
    let r = c.call(t, "POST", t, Some(ALICE), Some(&spec));
    expect(&r, 201, "");
    let made = r.json();
    let id = made["sandboxId"].as_str().unwrap().to_string();
    assert!(id.starts_with("sbx_"), "{made}");
    assert_eq!(made["status"], "Ready", "{made}");
    assert!(made["attestation"]["payload"].is_string(), "signed: {made}");
    assert!(made["createdAt"].as_str().unwrap().ends_with('Z'), "{made}");

    // List: alice sees it, bob does not, the admin does.
    let ids = |r: &HttpReply| -> Vec<String> {
        r.json()["sandboxes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["sandboxId"].as_str().unwrap().to_string())
            .collect()
    };
    let r = c.call(t, "GET", t, Some(ALICE), None);
    expect(&r, 200, "");
    assert!(ids(&r).contains(&id), "{}", r.body);
    assert!(!ids(&c.call(t, "GET", t, Some(BOB), None)).contains(&id));
    assert!(ids(&c.call(t, "GET", t, Some(OPS), None)).contains(&id));

    // Status.
    let t = "/v1/sandboxes/{sandboxId}/status";
    let p = format!("/v1/sandboxes/{id}/status");
    let r = c.call(t, "GET", &p, Some(ALICE), None);
    expect(&r, 200, "");
    let st = r.json();
    assert_eq!(
        (st["sandboxId"].as_str(), st["status"].as_str()),
        (Some(id.as_str()), Some("Ready")),
        "{st}"
    );
    assert!(
        st["resourceUsage"]["memoryBytes"].as_u64().unwrap() > 0,
        "{st}"
    );
    assert_eq!(st["labels"]["via"], "rest", "{st}");
    expect(
        &c.call(t, "GET", &p, Some(BOB), None),
        404,
        "sandbox_not_found",
    );
    expect(&c.call(t, "GET", &p, None, None), 401, "unauthenticated");
    expect(&c.call(t, "GET", &p, Some(OPS), None), 200, "");

    // Exec: output base64, exit code, stderr apart; the policy came from networkPolicy.
    let t = "/v1/sandboxes/{sandboxId}/exec";
    let p = format!("/v1/sandboxes/{id}/exec");
    let cmd = json!({"command": {"program": "sh", "args": ["-c", "echo hi; echo \"$GREETING\" >&2; exit 3"], "env": {"GREETING": "oops"}, "timeoutSeconds": 30}}).to_string();
    let r = c.call(t, "POST", &p, Some(ALICE), Some(&cmd));
    expect(&r, 200, "");
    let x = r.json();
    assert_eq!(x["stdout"], "aGkK", "{x}");
    assert_eq!(x["stderr"], "b29wcwo=", "{x}");
    assert_eq!(
        (x["exitCode"].as_i64(), x["status"].as_str()),
        (Some(3), Some("Failed")),
        "{x}"
    );
    expect(
        &c.call(t, "POST", &p, Some(BOB), Some(&cmd)),
        404,
        "sandbox_not_found",
    );
    expect(
        &c.call(t, "POST", &p, Some(ALICE), Some(r#"{"command": {}}"#)),
        400,
        "invalid_argument",
    );
    expect(
        &c.call(t, "POST", &p, None, Some(&cmd)),
        401,
        "unauthenticated",
    );

    // Checkpoint / restore: the ownership check, then the linux runtime's refusal (the
    // gvisor round trip is `checkpoint_and_restore_over_rest_under_gvisor`).
    let t = "/v1/sandboxes/{sandboxId}/checkpoint";
    let p = format!("/v1/sandboxes/{id}/checkpoint");
    expect(
        &c.call(t, "POST", &p, Some(BOB), None),
        404,
        "sandbox_not_found",
    );
    expect(
        &c.call(t, "POST", &p, Some(ALICE), None),
        409,
        "backend_capability_mismatch",
    );
    expect(&c.call(t, "POST", &p, None, None), 401, "unauthenticated");
    let t = "/v1/checkpoints/{checkpointId}/restore";
    let p = "/v1/checkpoints/ckpt_x/restore";
    expect(
        &c.call(t, "POST", p, Some(ALICE), Some("[1]")),
        400,
        "invalid_argument",
    );
    let nhi = r#"{"nhiOverride": {"publicKey": "AAAA", "algorithm": "ML-DSA-65"}}"#;
    expect(
        &c.call(t, "POST", p, Some(ALICE), Some(nhi)),
        400,
        "invalid_argument",
    );
    expect(
        &c.call(t, "POST", p, Some(ALICE), None),
        404,
        "checkpoint_not_found",
    );
    expect(&c.call(t, "POST", p, None, None), 401, "unauthenticated");

    // Terminate: not bob's to end; alice's answer is 204 and the status says so.
    let t = "/v1/sandboxes/{sandboxId}";
    let p = format!("/v1/sandboxes/{id}");
    expect(
        &c.call(t, "DELETE", &p, Some(BOB), None),
        404,
        "sandbox_not_found",
    );
    expect(&c.call(t, "DELETE", &p, None, None), 401, "unauthenticated");
    let r = c.call(t, "DELETE", &p, Some(ALICE), None);
    assert_eq!((r.status, r.body.as_str()), (204, ""));
    let r = curl(
        &s.addr,
        "GET",
        &format!("/v1/sandboxes/{id}/status"),
        Some(ALICE),
        None,
    );
    assert!(
        r.status == 404 || r.json()["status"] == "Terminated",
        "{}",
        r.body
    );

    // Warm pools.
    let t = "/v1/warm-pools";
    let pool = json!({"config": {"poolId": "rest-pool", "minReady": 1, "maxReady": 1, "reusable": false, "template": {"runtimeClass": "linux"}}}).to_string();
    expect(
        &c.call(
            t,
            "POST",
            t,
            Some(ALICE),
            Some(r#"{"config": {"minReady": 1}}"#),
        ),
        400,
        "invalid_argument",
    );
    expect(
        &c.call(t, "POST", t, None, Some(&pool)),
        401,
        "unauthenticated",
    );
    let r = c.call(t, "POST", t, Some(ALICE), Some(&pool));
    expect(&r, 201, "");
    let pool_id = r.json()["poolId"].as_str().unwrap().to_string();

    let t = "/v1/warm-pools/{poolId}/stats";
    let p = format!("/v1/warm-pools/{pool_id}/stats");
    let ready = eventually(Duration::from_secs(60), || {
        let r = curl(&s.addr, "GET", &p, Some(ALICE), None);
        r.status == 200 && r.json()["readyCount"] == 1
    });
    assert!(
        ready,
        "{}",
        curl(&s.addr, "GET", &p, Some(ALICE), None).body
    );
    let r = c.call(t, "GET", &p, Some(ALICE), None);
    expect(&r, 200, "");
    let bob_sees = c.call(t, "GET", &p, Some(BOB), None);
    assert_eq!(bob_sees.status, 404, "{}", bob_sees.body);
    expect(&c.call(t, "GET", &p, None, None), 401, "unauthenticated");

    let t = "/v1/warm-pools/{poolId}/claim";
    let p = format!("/v1/warm-pools/{pool_id}/claim");
    expect(
        &c.call(
            t,
            "POST",
            &p,
            Some(ALICE),
            Some(r#"{"agentNhi": {"publicKey": 5}}"#),
        ),
        400,
        "invalid_argument",
    );
    let bob_claims = c.call(t, "POST", &p, Some(BOB), Some("{}"));
    assert_eq!(bob_claims.status, 404, "{}", bob_claims.body);
    expect(
        &c.call(t, "POST", &p, None, Some("{}")),
        401,
        "unauthenticated",
    );
    let r = c.call(t, "POST", &p, Some(ALICE), Some("{}"));
    expect(&r, 200, "");
    let claimed = r.json()["sandboxId"].as_str().unwrap().to_string();
    assert!(r.json()["claimLatencyMs"].is_u64(), "{}", r.body);
    let o = curl(
        &s.addr,
        "POST",
        &format!("/v1/sandboxes/{claimed}/exec"),
        Some(ALICE),
        Some(r#"{"command": {"program": "true"}}"#),
    );
    assert_eq!(
        (o.status, o.json()["exitCode"].as_i64()),
        (200, Some(0)),
        "{}",
        o.body
    );

    let t = "/v1/warm-pools/{poolId}/release/{sandboxId}";
    let p = format!("/v1/warm-pools/{pool_id}/release/{claimed}");
    expect(
        &c.call(t, "POST", &p, Some(BOB), Some("{}")),
        404,
        "sandbox_not_found",
    );
    expect(
        &c.call(t, "POST", &p, Some(ALICE), Some(r#"{"reusable": "yes"}"#)),
        400,
        "invalid_argument",
    );
    expect(
        &c.call(t, "POST", &p, None, Some("{}")),
        401,
        "unauthenticated",
    );
    let wrong = format!("/v1/warm-pools/other/release/{claimed}");
    expect(
        &curl(&s.addr, "POST", &wrong, Some(ALICE), Some("{}")),
        400,
        "invalid_argument",
    );
    let r = c.call(t, "POST", &p, Some(ALICE), Some(r#"{"reusable": false}"#));
    assert_eq!(r.status, 204, "{}", r.body);

    let t = "/v1/warm-pools/{poolId}";
    let p = format!("/v1/warm-pools/{pool_id}");
    let bob_destroys = c.call(t, "DELETE", &p, Some(BOB), None);
    assert_eq!(bob_destroys.status, 404, "{}", bob_destroys.body);
    expect(&c.call(t, "DELETE", &p, None, None), 401, "unauthenticated");
    let r = c.call(t, "DELETE", &p, Some(ALICE), None);
    assert_eq!(r.status, 204, "{}", r.body);

    // /metrics is in the document too (its own suite checks it in depth).
    expect(
        &c.call("/metrics", "GET", "/metrics", Some(BOB), None),
        403,
        "permission_denied",
    );

    // The document names exactly what was exercised here.
    let called: Vec<String> = c.seen.iter().cloned().collect();
    let mut documented = documented;
    documented.sort();
    assert_eq!(called, documented);
}

/// The unix socket serves REST and `/metrics` too, with its callers' uids as principals:
/// root is an admin, another uid a user who neither sees root's sandbox nor the metrics.
#[test]
fn rest_and_metrics_on_the_unix_socket_know_the_callers_uid() {
    let s = Server::start();
    open_socket_to_all(&s);
    let sock = s.socket();
    let sock = sock.to_str().unwrap();
    let as_uid = |uid: Option<u32>, method: &str, path: &str, body: Option<&str>| {
        let mut c = std::process::Command::new("setpriv");
        match uid {
            Some(u) => c.args([
                "--reuid",
                &u.to_string(),
                "--regid",
                &u.to_string(),
                "--clear-groups",
            ]),
            None => c.args(["--"]),
        };
        c.args([
            "curl",
            "-sS",
            "--unix-socket",
            sock,
            "-X",
            method,
            "-w",
            "\n%{http_code}",
        ]);
        if let Some(b) = body {
            c.args(["-H", "Content-Type: application/json", "--data-binary", b]);
        }
        c.arg(format!("http://localhost{path}"));
        let o = output_with_timeout(c, Duration::from_secs(120));
        let text = stdout(&o);
        let (body, status) = text.rsplit_once('\n').unwrap_or(("", &text));
        (status.trim().parse::<u16>().unwrap_or(0), body.to_string())
    };
    let (st, body) = as_uid(None, "POST", "/v1/sandboxes", Some(r#"{"spec": {}}"#));
    assert_eq!(st, 201, "{body}");
    let id: serde_json::Value = serde_json::from_str(&body).unwrap();
    let id = id["sandboxId"].as_str().unwrap().to_string();
    let (st, body) = as_uid(None, "GET", "/metrics", None);
    assert!(
        st == 200 && body.contains("cleanroom_sandboxes"),
        "{st} {body}"
    );
    let (st, body) = as_uid(
        Some(4242),
        "GET",
        &format!("/v1/sandboxes/{id}/status"),
        None,
    );
    assert_eq!(st, 404, "{body}");
    assert!(body.contains("sandbox_not_found"), "{body}");
    let (st, body) = as_uid(Some(4242), "GET", "/metrics", None);
    assert_eq!(st, 403, "{body}");
    let (st, body) = as_uid(None, "DELETE", &format!("/v1/sandboxes/{id}"), None);
    assert_eq!(st, 204, "{body}");
}

/// `POST /v1/sandboxes/{id}/checkpoint` and `POST /v1/checkpoints/{id}/restore` on the
/// real `CheckpointSandbox` / create-from-checkpoint under gVisor: a file written before
/// the checkpoint is in the restored sandbox; another principal can neither checkpoint the
/// sandbox nor restore the checkpoint.
#[test]
fn checkpoint_and_restore_over_rest_under_gvisor() {
    if !Runtime::Gvisor.available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tokens = write_tokens(
        dir.path(),
        &[(ALICE, "alice", "user"), (BOB, "bob", "user")],
    );
    let s = TcpServer::start("http", &["--tokens-file", tokens.to_str().unwrap()]);
    let spec =
        json!({"spec": {"runtimeClass": "gvisor", "resources": {"memoryBytes": 1073741824u64}}});
    let r = curl(
        &s.addr,
        "POST",
        "/v1/sandboxes",
        Some(ALICE),
        Some(&spec.to_string()),
    );
    expect(&r, 201, "");
    let id = r.json()["sandboxId"].as_str().unwrap().to_string();
    assert_eq!(r.json()["runtime"], "gvisor", "{}", r.body);
    let exec = |sbx: &str, script: &str| {
        let cmd =
            json!({"command": {"program": "sh", "args": ["-c", script], "timeoutSeconds": 60}});
        let r = curl(
            &s.addr,
            "POST",
            &format!("/v1/sandboxes/{sbx}/exec"),
            Some(ALICE),
            Some(&cmd.to_string()),
        );
        expect(&r, 200, "");
        r.json()
    };
    assert_eq!(exec(&id, "echo kept > /tmp/f")["exitCode"], 0);

    let p = format!("/v1/sandboxes/{id}/checkpoint");
    expect(
        &curl(&s.addr, "POST", &p, Some(BOB), None),
        404,
        "sandbox_not_found",
    );
    let r = curl(&s.addr, "POST", &p, Some(ALICE), None);
    expect(&r, 200, "");
    let ckpt = r.json()["checkpointId"].as_str().unwrap().to_string();
    assert!(ckpt.starts_with("ckpt_"), "{}", r.body);
    assert!(r.json()["sizeBytes"].as_u64().unwrap() > 0, "{}", r.body);

    let p = format!("/v1/checkpoints/{ckpt}/restore");
    expect(
        &curl(&s.addr, "POST", &p, Some(BOB), None),
        404,
        "checkpoint_not_found",
    );
    let r = curl(&s.addr, "POST", &p, Some(ALICE), Some("{}"));
    expect(&r, 201, "");
    let v = r.json();
    let restored = v["sandboxId"].as_str().unwrap().to_string();
    assert_ne!(restored, id);
    assert_eq!(
        (v["status"].as_str(), v["runtime"].as_str()),
        (Some("Ready"), Some("gvisor")),
        "{v}"
    );
    let x = exec(&restored, "cat /tmp/f");
    assert_eq!(
        (x["exitCode"].as_i64(), x["stdout"].as_str()),
        (Some(0), Some("a2VwdAo=")),
        "{x}"
    );
    let r = curl(
        &s.addr,
        "DELETE",
        &format!("/v1/sandboxes/{restored}"),
        Some(ALICE),
        None,
    );
    assert_eq!(r.status, 204, "{}", r.body);
}
