//! OTLP traces (docs/traces.md): a real OTLP/HTTP receiver on loopback (the
//! OpenTelemetry project's protobuf bindings decode every export, see
//! `cleanroom_e2e::otlp`) gets spans from the CLI, the server and the egress gateway under
//! the one trace id `--print-trace-id` prints, linked parent to child from the gateway's
//! decision up to the CLI's command span. A server that does not export still continues
//! the caller's trace id; a bad endpoint is refused.

use cleanroom_e2e::otlp::{OtlpReceiver, ReceivedSpan};
use cleanroom_e2e::*;
use std::collections::HashMap;
use std::time::Duration;

fn policy_allowing(host: &str, port: u16) -> (tempfile::TempDir, String) {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        &d,
        "cleanroom.yaml",
        &format!("version: 1\nsandbox:\n  network:\n    allow:\n      - host: {host}\n        ports: [{port}]\n"),
    );
    (d, p)
}

fn printed_trace_id(o: &std::process::Output) -> String {
    let err = stderr(o);
    let id = err
        .lines()
        .find_map(|l| l.strip_prefix("trace_id: "))
        .unwrap_or_else(|| panic!("no trace_id line: {err}"))
        .trim()
        .to_string();
    assert!(
        id.len() == 32 && id.chars().all(|c| c.is_ascii_hexdigit()) && id != "0".repeat(32),
        "{id}"
    );
    id
}

/// The spans of `trace` once `done` holds for them (or a panic listing what arrived).
fn wait_for(
    rx: &OtlpReceiver,
    trace: &str,
    done: impl Fn(&[ReceivedSpan]) -> bool,
) -> Vec<ReceivedSpan> {
    let mut last = Vec::new();
    let ok = eventually(Duration::from_secs(30), || {
        last = rx
            .spans()
            .into_iter()
            .filter(|s| s.trace_id == trace)
            .collect();
        done(&last)
    });
    assert!(
        ok,
        "spans of {trace} so far: {last:#?}\nall: {:#?}",
        rx.spans()
    );
    last
}

/// The root span `s` reaches through its parents, and the names on the way.
fn root_of<'a>(
    by_id: &HashMap<&str, &'a ReceivedSpan>,
    mut s: &'a ReceivedSpan,
) -> (String, Vec<String>) {
    let mut path = vec![s.name.clone()];
    while !s.parent_span_id.is_empty() {
        s = by_id
            .get(s.parent_span_id.as_str())
            .unwrap_or_else(|| panic!("parent of {path:?} not received: {by_id:#?}"));
        path.push(s.name.clone());
    }
    (s.span_id.clone(), path)
}

#[test]
fn one_trace_from_the_cli_through_the_server_backend_and_gateway() {
    let rx = OtlpReceiver::start();
    let port = hello_upstream();
    let s = Server::start_with(&[
        "--egress-resolve",
        "traced.test=127.0.0.1",
        "--otlp-endpoint",
        &rx.endpoint(),
    ]);
    let (_d, policy) = policy_allowing("traced.test", port);
    let mut c = s.cli();
    c.args(["exec", "-n", "--print-trace-id", "--policy", &policy])
        .args(["--otlp-endpoint", &rx.endpoint()])
        .args(["--", "curl", "-fsS", "-m", "20", "--noproxy", "*"])
        .arg(format!("http://traced.test:{port}/traced"));
    let o = output_with_timeout(c, Duration::from_secs(90));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "hello:/traced");
    let trace = printed_trace_id(&o);

    let has = |spans: &[ReceivedSpan], f: &dyn Fn(&ReceivedSpan) -> bool| spans.iter().any(f);
    let spans = wait_for(&rx, &trace, |sp| {
        has(sp, &|s| s.service == "cleanroom-cli")
            && has(sp, &|s| s.scope == "cleanroom.gateway")
            && has(sp, &|s| s.name == "execution")
            && has(sp, &|s| s.name == "backend.provision")
            && has(sp, &|s| s.name == "backend.spawn")
    });
    let by_id: HashMap<&str, &ReceivedSpan> =
        spans.iter().map(|s| (s.span_id.as_str(), s)).collect();

    // The CLI's command span is the root.
    let cli = spans
        .iter()
        .find(|s| s.service == "cleanroom-cli")
        .expect("cli span");
    assert_eq!(
        (
            cli.name.as_str(),
            cli.scope.as_str(),
            cli.parent_span_id.as_str()
        ),
        ("cleanroom exec", "cleanroom.cli", ""),
        "{cli:?}"
    );
    // Every server span hangs, through its parents, off the CLI's span: nothing of this
    // trace is orphaned or started a trace of its own.
    for s in spans.iter().filter(|s| s.service == "cleanroom-server") {
        assert_eq!(root_of(&by_id, s).0, cli.span_id, "{s:?}");
    }
    // The API calls are server spans named by their procedure.
    assert!(
        spans.iter().any(|s| s.service == "cleanroom-server"
            && s.parent_span_id == cli.span_id
            && s.name.starts_with("/cleanroom.v1.")),
        "{spans:#?}"
    );
    // The engine's and backend's steps are children of the API call that made them.
    for step in ["backend.provision", "backend.spawn", "execution"] {
        let s = spans.iter().find(|s| s.name == step).unwrap();
        let parent = by_id[s.parent_span_id.as_str()];
        assert!(
            parent.name.starts_with("/cleanroom.v1.") && parent.parent_span_id == cli.span_id,
            "{step} under {parent:?}"
        );
    }
    // The gateway's decision for the curl: a child of the execution's span.
    let decision = spans
        .iter()
        .find(|s| {
            s.scope == "cleanroom.gateway"
                && s.attributes["server.address"] == "traced.test"
                && s.attributes["server.port"] == i64::from(port)
        })
        .unwrap_or_else(|| panic!("no gateway span for traced.test: {spans:#?}"));
    assert_eq!(decision.name, "egress allow", "{decision:?}");
    assert_eq!(decision.attributes["cleanroom.egress.decision"], "allow");
    let parent = by_id[decision.parent_span_id.as_str()];
    assert_eq!(parent.name, "execution", "{decision:?}");
    let (root, path) = root_of(&by_id, decision);
    assert_eq!(root, cli.span_id, "{path:?}");
    // The backend's steps are in the same tree, with the sandbox named.
    let spawn = spans.iter().find(|s| s.name == "backend.spawn").unwrap();
    assert!(
        spawn.attributes["cleanroom.sandbox_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("sbx_")),
        "{spawn:?}"
    );
}

#[test]
fn a_server_that_does_not_export_still_continues_the_callers_trace() {
    let rx = OtlpReceiver::start();
    let s = Server::start();
    let mut c = s.cli();
    c.args(["exec", "-n", "--print-trace-id"])
        .args(["--otlp-endpoint", &rx.endpoint()])
        .args(["--", "true"]);
    let o = output_with_timeout(c, Duration::from_secs(60));
    assert!(o.status.success(), "{}", stderr(&o));
    let trace = printed_trace_id(&o);
    let spans = wait_for(&rx, &trace, |sp| {
        sp.iter().any(|s| s.service == "cleanroom-cli")
    });
    // Only the CLI exported: the server has no endpoint.
    assert!(
        rx.spans().iter().all(|s| s.service == "cleanroom-cli"),
        "{spans:#?}"
    );

    // Without an endpoint anywhere each command is still a trace of its own.
    let a = printed_trace_id(&s.run(&["exec", "-n", "--print-trace-id", "--", "true"]));
    let b = printed_trace_id(&s.run(&["exec", "-n", "--print-trace-id", "--", "true"]));
    assert_ne!(a, b);
}

#[test]
fn a_bad_otlp_endpoint_is_refused_before_anything_runs() {
    let s = Server::start();
    for bad in ["ftp://127.0.0.1:1", "127.0.0.1:4318", "http://x/?q=1"] {
        let o = s.run(&["--otlp-endpoint", bad, "exec", "-n", "--", "true"]);
        assert_code(&o, "invalid_argument");
        let o = s.run(&[
            "serve",
            "--otlp-endpoint",
            bad,
            "--listen",
            "unix:///nonexistent/x.sock",
        ]);
        assert_code(&o, "invalid_argument");
    }
}
