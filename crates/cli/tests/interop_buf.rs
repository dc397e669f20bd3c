//! Interop with a third-party Connect client: `buf curl` (installed project-locally by
//! scripts/deps.sh) against a real server, over HTTP/1.1 and h2c on the unix socket.

mod common;
use common::*;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn buf(
    s: &Server,
    cache: &std::path::Path,
    h2: bool,
    method: &str,
    body: &str,
) -> std::process::Output {
    let bin = std::env::var_os("BUF_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join(".tools/node_modules/@bufbuild/buf-linux-x64/bin/buf"));
    assert!(
        bin.exists(),
        "buf not installed at {} - run scripts/deps.sh",
        bin.display()
    );
    let mut c = Command::new(bin);
    c.env("BUF_CACHE_DIR", cache)
        .arg("curl")
        .arg("--schema")
        .arg(workspace().join("proto"));
    if h2 {
        c.arg("--http2-prior-knowledge");
    }
    c.arg("--unix-socket")
        .arg(s.socket())
        .args(["-d", body])
        .arg(format!("http://localhost/cleanroom.v1.{method}"));
    output_with_timeout(c, Duration::from_secs(60))
}

#[test]
fn buf_curl_unary_and_streaming() {
    let s = Server::start();
    let cache = tempfile::tempdir().unwrap();
    let created = s.run(&["sandbox", "create"]);
    let id = stdout(&created).trim().to_string();

    for h2 in [false, true] {
        // Unary.
        let o = buf(&s, cache.path(), h2, "SandboxService/ListSandboxes", "{}");
        assert_eq!(o.status.code(), Some(0), "h2={h2}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("buf prints JSON");
        assert_eq!(v["sandboxes"][0]["sandboxId"], id.as_str());
        assert_eq!(v["sandboxes"][0]["status"], "SANDBOX_STATUS_READY");

        // Unary error: Connect not_found (buf exits with code 5 * 8) and our detail.
        let o = buf(
            &s,
            cache.path(),
            h2,
            "SandboxService/GetSandbox",
            r#"{"sandboxId":"sbx_missing"}"#,
        );
        assert_eq!(o.status.code(), Some(40), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("not_found") && stderr(&o).contains("sandbox_not_found"),
            "{}",
            stderr(&o)
        );
    }

    // Server streaming: an execution's output, then its exit.
    let run = s.sh_in(&id, "printf hello; printf oops >&2; exit 4");
    assert_eq!(run.status.code(), Some(4));
    let info = s.run(&["sandbox", "inspect", "--json", &id]);
    let v: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    let exe = v["lastExecutionId"].as_str().unwrap().to_string();
    for h2 in [false, true] {
        let o = buf(
            &s,
            cache.path(),
            h2,
            "ExecutionService/StreamExecution",
            &format!(r#"{{"executionId":"{exe}"}}"#),
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let text = stdout(&o);
        // One JSON object per message: stdout chunk, stderr chunk, exit.
        let msgs: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&text)
            .into_iter()
            .map(|m| m.unwrap())
            .collect();
        // stdout and stderr are separate pipes: their relative order is not defined.
        assert_eq!(msgs.len(), 3, "{text}");
        let chunk = |stream: &str| {
            msgs[..2]
                .iter()
                .find(|m| m["output"]["stream"] == stream)
                .map(|m| m["output"]["data"].clone())
        };
        assert_eq!(
            chunk("OUTPUT_STREAM_STDOUT"),
            Some("aGVsbG8=".into()),
            "{text}"
        ); // base64("hello")
        assert_eq!(
            chunk("OUTPUT_STREAM_STDERR"),
            Some("b29wcw==".into()),
            "{text}"
        ); // base64("oops")
        assert_eq!(msgs[2]["exit"]["status"], "EXECUTION_STATUS_FAILED");
        assert_eq!(msgs[2]["exit"]["exitCode"], 4);
    }
    // Streaming error: unknown execution ends the stream with not_found.
    let o = buf(
        &s,
        cache.path(),
        true,
        "ExecutionService/StreamExecution",
        r#"{"executionId":"exe_nope"}"#,
    );
    assert_eq!(o.status.code(), Some(40), "{}", stderr(&o));
    s.run(&["sandbox", "rm", &id]);
}
