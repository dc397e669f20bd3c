//! Interop with a third-party Connect client: `buf curl` (installed project-locally by
//! scripts/deps.sh) against a real server, over HTTP/1.1 and h2c on the unix socket, and
//! over https:// with a bearer token or a client certificate.

use cleanroom_e2e::*;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn buf_bin() -> PathBuf {
    let bin = std::env::var_os("BUF_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join(".tools/node_modules/@bufbuild/buf-linux-x64/bin/buf"));
    assert!(
        bin.exists(),
        "buf not installed at {} - run scripts/deps.sh",
        bin.display()
    );
    bin
}

fn buf(
    s: &Server,
    cache: &std::path::Path,
    h2: bool,
    method: &str,
    body: &str,
) -> std::process::Output {
    let mut c = Command::new(buf_bin());
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

/// `buf curl` over https:// to `s`, trusting `ca`, with extra flags (`-H`, `--cert`, ...).
fn buf_https(
    s: &TcpServer,
    cache: &std::path::Path,
    ca: &std::path::Path,
    extra: &[&str],
    method: &str,
    body: &str,
) -> std::process::Output {
    let mut c = Command::new(buf_bin());
    c.env("BUF_CACHE_DIR", cache)
        .arg("curl")
        .arg("--schema")
        .arg(workspace().join("proto"))
        .arg("--cacert")
        .arg(ca)
        .args(extra)
        .args(["-d", body])
        .arg(format!("https://{}/cleanroom.v1.{method}", s.addr));
    output_with_timeout(c, Duration::from_secs(60))
}

#[test]
fn buf_curl_over_https_with_token_or_client_certificate() {
    const TOKEN: &str = "buf-interop-token-5d1c7e9a3b8f2a4c6e0d1b3f5a7c9e2d";
    let tmp = tempfile::tempdir().unwrap();
    let [ca, cert, key, client_cert, client_key] = write_test_pki(tmp.path(), "carol");
    let tokens = write_tokens(tmp.path(), &[(TOKEN, "alice", "user")]);
    let p = |p: &std::path::Path| p.display().to_string();
    let s = TcpServer::start(
        "https",
        &[
            "--tls-cert",
            &p(&cert),
            "--tls-key",
            &p(&key),
            "--tokens-file",
            &p(&tokens),
            "--client-ca",
            &p(&ca),
        ],
    );
    let cache = tempfile::tempdir().unwrap();
    let auth = format!("Authorization: Bearer {TOKEN}");
    let as_alice = ["-H", auth.as_str()];
    let client = p(&client_cert);
    let client_key = p(&client_key);
    let as_carol = ["--cert", client.as_str(), "--key", client_key.as_str()];
    for h2 in [false, true] {
        let proto: &[&str] = if h2 {
            &["--http2-prior-knowledge"]
        } else {
            &[]
        };
        // No credentials: unauthenticated (Connect code 16; buf exits 16 * 8).
        let o = buf_https(
            &s,
            cache.path(),
            &ca,
            proto,
            "SandboxService/ListSandboxes",
            "{}",
        );
        assert_eq!(o.status.code(), Some(128), "{}", stderr(&o));
        assert!(stderr(&o).contains("unauthenticated"), "{}", stderr(&o));
        // A wrong token is refused even next to a valid client certificate.
        let extra = [proto, &as_carol[..], &["-H", "Authorization: Bearer nope"]].concat();
        let o = buf_https(
            &s,
            cache.path(),
            &ca,
            &extra,
            "SandboxService/ListSandboxes",
            "{}",
        );
        assert_eq!(o.status.code(), Some(128), "{}", stderr(&o));
    }
    // Alice (token) creates a sandbox; Carol (client certificate) creates another.
    let created = |extra: &[&str]| {
        let o = buf_https(
            &s,
            cache.path(),
            &ca,
            extra,
            "SandboxService/CreateSandbox",
            "{}",
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["sandbox"]["sandboxId"].as_str().unwrap().to_string()
    };
    let a = created(&as_alice);
    let c = created(&as_carol);
    let listed = |extra: &[&str]| {
        let o = buf_https(
            &s,
            cache.path(),
            &ca,
            extra,
            "SandboxService/ListSandboxes",
            "{}",
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        stdout(&o)
    };
    let (la, lc) = (listed(&as_alice), listed(&as_carol));
    assert!(la.contains(&a) && !la.contains(&c), "{la}");
    assert!(lc.contains(&c) && !lc.contains(&a), "{lc}");
    // Carol cannot reach Alice's sandbox.
    let o = buf_https(
        &s,
        cache.path(),
        &ca,
        &as_carol,
        "SandboxService/TerminateSandbox",
        &format!(r#"{{"sandboxId":"{a}"}}"#),
    );
    assert_eq!(o.status.code(), Some(40), "{}", stderr(&o));
    assert!(stderr(&o).contains("sandbox_not_found"), "{}", stderr(&o));
    // Our own CLI agrees, over the same listener.
    let mut cli = s.cli(Some(TOKEN));
    cli.args([
        "--ca-cert",
        &p(&ca),
        "exec",
        "-n",
        "--in",
        &a,
        "--",
        "echo",
        "tls-ok",
    ]);
    let o = output_with_timeout(cli, Duration::from_secs(60));
    assert_eq!(stdout(&o), "tls-ok\n", "{}", stderr(&o));
}

/// `buf curl` with no `--schema`: it learns the schema from the server's reflection
/// service (`grpc.reflection.v1`), over Connect and gRPC, HTTP/1.1 and h2c.
fn buf_reflect(s: &Server, cache: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let mut c = Command::new(buf_bin());
    c.env("BUF_CACHE_DIR", cache)
        .arg("curl")
        .args(extra)
        .arg("--unix-socket")
        .arg(s.socket());
    output_with_timeout(c, Duration::from_secs(60))
}

#[test]
fn buf_curl_without_schema_uses_server_reflection() {
    let s = Server::start();
    let cache = tempfile::tempdir().unwrap();
    let id = s.create();
    for proto in [
        &[][..],
        &["--http2-prior-knowledge"][..],
        &["--http2-prior-knowledge", "--protocol", "grpc"][..],
    ] {
        let o = buf_reflect(
            &s,
            cache.path(),
            &[proto, &["--list-methods", "http://localhost/"]].concat(),
        );
        assert_eq!(o.status.code(), Some(0), "{proto:?}: {}", stderr(&o));
        let methods = stdout(&o);
        for m in [
            "cleanroom.v1.SandboxService/CreateSandbox",
            "cleanroom.v1.ExecutionService/StreamExecution",
            "cleanroom.v1.ImageService/ListImages",
            "grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        ] {
            assert!(
                methods.lines().any(|l| l == m),
                "{proto:?}: {m} in {methods}"
            );
        }
        // Calls: a result, and an error with its stable code.
        let o = buf_reflect(
            &s,
            cache.path(),
            &[
                proto,
                &[
                    "-d",
                    "{}",
                    "http://localhost/cleanroom.v1.SandboxService/ListSandboxes",
                ],
            ]
            .concat(),
        );
        assert_eq!(o.status.code(), Some(0), "{proto:?}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["sandboxes"][0]["sandboxId"], id.as_str());
        let o = buf_reflect(
            &s,
            cache.path(),
            &[
                proto,
                &[
                    "-d",
                    r#"{"sandboxId":"sbx_missing"}"#,
                    "http://localhost/cleanroom.v1.SandboxService/GetSandbox",
                ],
            ]
            .concat(),
        );
        assert_eq!(o.status.code(), Some(40), "{proto:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("sandbox_not_found"), "{}", stderr(&o));
    }
}

#[test]
fn server_reflection_needs_credentials() {
    const TOKEN: &str = "buf-reflection-token-0a1b2c3d4e5f60718293a4b5c6d7e8f9";
    let tmp = tempfile::tempdir().unwrap();
    let tokens = write_tokens(tmp.path(), &[(TOKEN, "alice", "user")]);
    let s = TcpServer::start("http", &["--tokens-file", &tokens.display().to_string()]);
    let cache = tempfile::tempdir().unwrap();
    let list = |extra: &[&str]| {
        let mut c = Command::new(buf_bin());
        c.env("BUF_CACHE_DIR", cache.path())
            .args(["curl", "--list-services"])
            .args(extra)
            .arg(format!("http://{}/", s.addr));
        output_with_timeout(c, Duration::from_secs(60))
    };
    // buf words a Connect `unauthenticated` as "you are not authenticated".
    // (`--reflect-header '*'`: buf sends `-H` headers with reflection requests too.)
    for bad in [
        &[][..],
        &["-H", "Authorization: Bearer wrong", "--reflect-header", "*"][..],
    ] {
        let o = list(bad);
        assert_ne!(o.status.code(), Some(0), "{}", stdout(&o));
        assert!(stderr(&o).contains("not authenticated"), "{}", stderr(&o));
        assert!(!stdout(&o).contains("cleanroom.v1"), "{}", stdout(&o));
    }
    let auth = format!("Authorization: Bearer {TOKEN}");
    let o = list(&["-H", &auth, "--reflect-header", "*"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("cleanroom.v1.SandboxService"),
        "{}",
        stdout(&o)
    );
}

/// The repo's `buf.yaml` builds every proto of the API (what people generating their own
/// clients with `buf generate` and buf.gen.yaml start from), offline.
#[test]
fn buf_yaml_builds_every_api_proto() {
    let cache = tempfile::tempdir().unwrap();
    let out = cache.path().join("image.binpb");
    let mut c = Command::new(buf_bin());
    c.env("BUF_CACHE_DIR", cache.path())
        .current_dir(workspace())
        .arg("build")
        .arg("-o")
        .arg(&out);
    let o = output_with_timeout(c, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut c = Command::new(buf_bin());
    c.env("BUF_CACHE_DIR", cache.path())
        .current_dir(workspace())
        .arg("ls-files");
    let o = output_with_timeout(c, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let listed = stdout(&o);
    for e in std::fs::read_dir(workspace().join("proto/cleanroom/v1")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".proto") {
            assert!(
                listed.contains(&name),
                "{name} not in the buf module: {listed}"
            );
        }
    }
}
