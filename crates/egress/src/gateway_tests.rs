//! The gateway's connection handling end to end, without a sandbox: a client connection
//! (an in-memory pipe standing in for the sandbox's TCP stream) handed to
//! [`crate::tcp::handle_named`] as if the sandbox had opened it to an allowed name, and a
//! loopback upstream the name is pinned to (like `serve --egress-resolve`). The same
//! behaviours with real sandboxes: crates/e2e/tests/suites/egress/strict.rs.

use crate::event::{EgressEvent, EventSink};
use crate::{Approvals, Ctx, SandboxCa, Secret, Secrets, UpstreamConfig};
use cleanroom_policy::{HostPattern, SecretBinding};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};
use tokio::net::TcpListener;
use tokio::time::timeout;

const HOST: &str = "ok.test";
const WAIT: Duration = Duration::from_secs(10);

type Events = Arc<Mutex<Vec<EgressEvent>>>;

/// A gateway context whose policy is `network` (the YAML under `sandbox.network`), with
/// [`HOST`] pinned to 127.0.0.1.
fn gateway(network: &str) -> (Arc<Ctx>, Events) {
    gateway_with(
        network,
        UpstreamConfig::default(),
        Secrets::new(Vec::new()),
        None,
    )
}

/// [`gateway`] with upstream settings (CAs), secrets and a sandbox CA.
fn gateway_with(
    network: &str,
    mut upstream: UpstreamConfig,
    secrets: Secrets,
    ca: Option<SandboxCa>,
) -> (Arc<Ctx>, Events) {
    let yaml = format!("version: 1\nsandbox:\n  network:\n{network}");
    let policy = cleanroom_policy::compile(&yaml)
        .expect("test policy")
        .network;
    upstream
        .add_override(&format!("{HOST}=127.0.0.1"))
        .expect("override");
    let events = Events::default();
    let sink: EventSink = {
        let events = events.clone();
        Arc::new(move |e| events.lock().expect("events").push(e))
    };
    let ctx = Ctx {
        rules: Arc::new(crate::rules::Rules::new(policy)),
        upstream: Arc::new(upstream),
        secrets,
        ca,
        registries: crate::registry::Mediation::none(),
        names: crate::names::Names::default(),
        events: crate::event::Limited::new(sink),
        limits: crate::limits::SandboxLimits::new(crate::share::Shares::server().solitary()),
        approvals: Arc::new(Approvals::new(Duration::from_secs(1), 8)),
    };
    (Arc::new(ctx), events)
}

/// A policy allowing [`HOST`] on `port`, with `extra` lines added to its allow rule.
fn allowing(port: u16, extra: &str) -> String {
    format!("    allow:\n      - host: {HOST}\n        ports: [{port}]\n{extra}")
}

/// A loopback upstream that answers every connection with `answer` once it has read a
/// request head (or anything, for non-HTTP clients), then closes. Returns its port and
/// what each connection sent before the answer.
async fn upstream(answer: &'static [u8]) -> (u16, Arc<Mutex<Vec<Vec<u8>>>>) {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = l.local_addr().expect("addr").port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let log = log.clone();
            tokio::spawn(async move {
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                log.lock().expect("log").push(got);
                let _ = s.write_all(answer).await;
                let _ = s.shutdown().await;
            });
        }
    });
    (port, seen)
}

/// Open a "sandbox" connection to `HOST:port` through the gateway.
fn open(ctx: &Arc<Ctx>, port: u16) -> DuplexStream {
    let (client, gateway) = tokio::io::duplex(64 * 1024);
    tokio::spawn(crate::tcp::handle_named(
        gateway,
        ctx.clone(),
        HOST.to_string(),
        port,
    ));
    client
}

/// Everything until the gateway closes the connection.
async fn read_to_end<S: AsyncRead + Unpin>(s: &mut S) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = timeout(WAIT, s.read_to_end(&mut out)).await;
    out
}

/// Send one raw request and read the whole answer (the gateway closes after it).
async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(s: &mut S, req: &[u8]) -> String {
    s.write_all(req).await.expect("write request");
    String::from_utf8_lossy(&read_to_end(s).await).into_owned()
}

/// The body of a raw HTTP/1.1 response, whatever its framing (chunked, sized or ended by
/// the close).
fn body_of(resp: &str) -> String {
    let Some((head, rest)) = resp.split_once("\r\n\r\n") else {
        return String::new();
    };
    if !head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return rest.to_string();
    }
    let mut out = String::new();
    let mut rest = rest;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.split(';').next().unwrap_or("0"), 16).unwrap_or(0);
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

fn denies(events: &Events, reason: &str) -> usize {
    events
        .lock()
        .expect("events")
        .iter()
        .filter(|e| e.decision == cleanroom_vocab::Decision::Deny && e.reason == reason)
        .count()
}

fn get(port: u16) -> Vec<u8> {
    format!("GET / HTTP/1.1\r\nHost: {HOST}:{port}\r\n\r\n").into_bytes()
}

#[tokio::test]
async fn a_close_delimited_response_reaches_the_client_whole() {
    let (port, _) = upstream(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello world").await;
    let (ctx, _) = gateway(&allowing(port, ""));
    // A keep-alive client and one that asks for the close itself.
    for req in [
        get(port),
        format!("GET / HTTP/1.1\r\nHost: {HOST}:{port}\r\nConnection: close\r\n\r\n").into_bytes(),
        format!("GET / HTTP/1.0\r\nHost: {HOST}:{port}\r\n\r\n").into_bytes(),
    ] {
        let mut c = open(&ctx, port);
        let resp = exchange(&mut c, &req).await;
        eprintln!("{resp:?}");
        assert!(
            resp.starts_with("HTTP/1.1 200") || resp.starts_with("HTTP/1.0 200"),
            "{resp:?}"
        );
        assert_eq!(body_of(&resp), "hello world", "{resp:?}");
    }
}

#[tokio::test]
async fn a_close_delimited_response_without_connection_close_is_whole_too() {
    let (port, _) = upstream(b"HTTP/1.1 200 OK\r\nX-A: 1\r\n\r\nhello world").await;
    let (ctx, _) = gateway(&allowing(port, ""));
    let mut c = open(&ctx, port);
    let resp = exchange(&mut c, &get(port)).await;
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp:?}");
    assert_eq!(body_of(&resp), "hello world", "{resp:?}");
}

#[tokio::test]
async fn an_obs_fold_response_header_is_unfolded() {
    let (port, _) = upstream(
        b"HTTP/1.1 200 OK\r\nX-A: a\r\n  b\r\nX-B: c\r\n\t d \r\nContent-Length: 2\r\n\r\nok",
    )
    .await;
    let (ctx, _) = gateway(&allowing(port, ""));
    let mut c = open(&ctx, port);
    let resp = exchange(
        &mut c,
        format!("GET / HTTP/1.1\r\nHost: {HOST}:{port}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await;
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp:?}");
    let lower = resp.to_ascii_lowercase();
    assert!(lower.contains("\r\nx-a: a b\r\n"), "{resp:?}");
    assert!(lower.contains("\r\nx-b: c d\r\n"), "{resp:?}");
    assert_eq!(body_of(&resp), "ok", "{resp:?}");
}

#[tokio::test]
async fn an_obs_fold_request_header_is_refused_with_400() {
    let (port, seen) = upstream(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").await;
    let (ctx, events) = gateway(&allowing(port, ""));
    let mut c = open(&ctx, port);
    let req = format!("GET / HTTP/1.1\r\nHost: {HOST}:{port}\r\nX-A: a\r\n  b\r\n\r\n");
    let resp = exchange(&mut c, req.as_bytes()).await;
    assert!(resp.starts_with("HTTP/1.1 400"), "{resp:?}");
    assert!(resp.contains("request_malformed"), "{resp:?}");
    assert!(
        seen.lock().expect("seen").is_empty(),
        "nothing reaches the upstream"
    );
    assert_eq!(denies(&events, "request_malformed"), 1);
}

/// A real ClientHello for `name`, as TLS records (an IP address: rustls sends no SNI).
fn client_hello(name: &str) -> Vec<u8> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from(name.to_string()).expect("name");
    let mut conn = rustls::ClientConnection::new(Arc::new(config), name).expect("client");
    let mut out = Vec::new();
    conn.write_tls(&mut out).expect("hello");
    out
}

/// A loopback upstream that records what reaches it and never answers.
async fn recorder() -> (u16, Arc<Mutex<Vec<u8>>>) {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = l.local_addr().expect("addr").port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let log = log.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n) = s.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    log.lock().expect("log").extend_from_slice(&buf[..n]);
                }
            });
        }
    });
    (port, seen)
}

#[tokio::test]
async fn tls_without_a_name_is_refused_unless_the_allow_rule_says_otherwise() {
    let nameless = client_hello("127.0.0.1");
    assert!(!nameless.windows(HOST.len()).any(|w| w == HOST.as_bytes()));

    let (port, seen) = recorder().await;
    let (ctx, events) = gateway(&allowing(port, ""));
    let mut c = open(&ctx, port);
    c.write_all(&nameless).await.expect("hello");
    assert!(
        read_to_end(&mut c).await.is_empty(),
        "closed without an answer"
    );
    assert_eq!(denies(&events, "sni_missing"), 1);
    assert!(
        seen.lock().expect("seen").is_empty(),
        "nothing reached the upstream"
    );
    // A ClientHello naming the host still goes through on the same policy.
    let mut c = open(&ctx, port);
    c.write_all(&client_hello(HOST)).await.expect("hello");
    let passed = timeout(WAIT, async {
        while seen.lock().expect("seen").is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        passed.is_ok(),
        "the named ClientHello did not reach the upstream"
    );

    let (port, seen) = recorder().await;
    let (ctx, events) = gateway(&allowing(port, "        allow_missing_sni: true\n"));
    let mut c = open(&ctx, port);
    c.write_all(&nameless).await.expect("hello");
    let passed = timeout(WAIT, async {
        while seen.lock().expect("seen").len() < nameless.len() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(passed.is_ok(), "the explicit option did not let it through");
    assert_eq!(*seen.lock().expect("seen"), nameless);
    assert_eq!(denies(&events, "sni_missing"), 0);
    drop(c);
}

/// A TLS upstream for [`HOST`] (its CA trusted by the gateway through `upstream`) that
/// answers the first request head of each connection with `answer`, then closes: with
/// a TLS close_notify when `notify`, else by dropping the TCP connection.
async fn tls_upstream(answer: &'static [u8], notify: bool, upstream: &mut UpstreamConfig) -> u16 {
    let ca = SandboxCa::generate("upstream", &[HostPattern::Exact(HOST.into())]).expect("ca");
    upstream.add_extra_roots(&ca.cert_pem()).expect("roots");
    let acceptor = tokio_rustls::TlsAcceptor::from(ca.server_config(HOST).expect("config"));
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = l.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut s) = acceptor.accept(s).await else {
                    return;
                };
                let (mut got, mut buf) = (Vec::new(), [0u8; 4096]);
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = s.write_all(answer).await;
                let _ = s.flush().await;
                if notify {
                    let _ = s.shutdown().await;
                }
            });
        }
    });
    port
}

/// A gateway terminating TLS to [`HOST`] (a secret is bound to it) in front of a TLS
/// upstream answering `answer`; one request through it, the raw answer the sandbox got.
async fn through_interception(answer: &'static [u8], notify: bool) -> String {
    let mut upstream = UpstreamConfig::default();
    let port = tls_upstream(answer, notify, &mut upstream).await;
    let hosts = vec![HostPattern::Exact(HOST.into())];
    let binding = SecretBinding {
        hosts: hosts.clone(),
        header: "Authorization".into(),
        format: "Bearer {value}".into(),
    };
    let secret = Secret::new(
        "TOKEN".into(),
        "cleanroom-placeholder-token".into(),
        binding,
        "s3cr3t-value-never-shown".into(),
    );
    let ca = SandboxCa::generate("sbx_test", &hosts).expect("sandbox ca");
    let roots = crate::tls::parse_pem_certs(&ca.cert_pem()).expect("pem");
    let (ctx, _) = gateway_with(
        &allowing(port, ""),
        upstream,
        Secrets::new(vec![secret]),
        Some(ca),
    );
    let client = open(&ctx, port);
    let connector =
        tokio_rustls::TlsConnector::from(crate::tls::client_config(&roots).expect("tls"));
    let name = rustls::pki_types::ServerName::try_from(HOST).expect("name");
    let mut tls = connector
        .connect(name, client)
        .await
        .expect("TLS with the gateway");
    let req = format!("GET / HTTP/1.1\r\nHost: {HOST}:{port}\r\nConnection: close\r\n\r\n");
    exchange(&mut tls, req.as_bytes()).await
}

#[tokio::test]
async fn intercepted_close_delimited_and_folded_responses_reach_the_client() {
    let close: &[u8] = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello world";
    let resp = through_interception(close, true).await;
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp:?}");
    assert_eq!(body_of(&resp), "hello world", "{resp:?}");
    let folded: &[u8] = b"HTTP/1.1 200 OK\r\nX-A: a\r\n  b\r\nContent-Length: 2\r\n\r\nok";
    let resp = through_interception(folded, true).await;
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp:?}");
    assert!(
        resp.to_ascii_lowercase().contains("\r\nx-a: a b\r\n"),
        "{resp:?}"
    );
    assert_eq!(body_of(&resp), "ok", "{resp:?}");
}

/// An upstream that ends a close-delimited body by closing TCP without a TLS close_notify
/// may have been cut short (RFC 9112 section 9.8): every byte it sent reaches the sandbox,
/// and the sandbox's response is cut too (no last chunk) rather than passed as complete.
#[tokio::test]
async fn intercepted_close_delimited_response_without_close_notify_is_relayed_then_cut() {
    for answer in [
        &b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello world"[..],
        b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello",
    ] {
        let resp = through_interception(answer, false).await;
        assert!(resp.starts_with("HTTP/1.1 200"), "{resp:?}");
        let sent = String::from_utf8_lossy(answer);
        let body = sent.split("\r\n\r\n").nth(1).unwrap_or_default();
        assert_eq!(body_of(&resp), body, "{resp:?}");
        assert!(
            !resp.ends_with("\r\n0\r\n\r\n"),
            "passed as complete: {resp:?}"
        );
    }
}

/// A loopback upstream that speaks first and streams `x` until the connection breaks.
async fn streaming_upstream() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = l.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                while s.write_all(&[b'x'; 512]).await.is_ok() {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            });
        }
    });
    port
}

/// Live rules: a replaced policy without `cut` leaves an established flow alone; with
/// `cut` the flow ends, with a deny event saying so.
#[tokio::test]
async fn a_cut_ends_flows_the_new_policy_denies() {
    let port = streaming_upstream().await;
    let (ctx, events) = gateway(&allowing(port, ""));
    let (mut client, gw) = tokio::io::duplex(64 * 1024);
    let flow = crate::tcp::handle_named(gw, ctx.clone(), HOST.to_string(), port);
    let guarded = {
        let ctx = ctx.clone();
        tokio::spawn(async move { crate::cut::guarded(&ctx, HOST, port, "tcp", flow).await })
    };
    let mut buf = [0u8; 4096];
    let n = timeout(WAIT, client.read(&mut buf))
        .await
        .expect("data")
        .expect("read");
    assert!(n > 0);
    let denying = cleanroom_policy::compile("version: 1\n")
        .expect("policy")
        .network;
    ctx.rules.replace(denying.clone(), false);
    // Still flowing: a change without cut applies to new connections only.
    for _ in 0..5 {
        let n = timeout(WAIT, client.read(&mut buf))
            .await
            .expect("data")
            .expect("read");
        assert!(n > 0);
    }
    assert!(!guarded.is_finished());
    ctx.rules.replace(denying, true);
    timeout(WAIT, guarded)
        .await
        .expect("the flow ends")
        .expect("task");
    let _ = read_to_end(&mut client).await;
    let cut: Vec<_> = events
        .lock()
        .expect("events")
        .iter()
        .filter(|e| e.message.starts_with("connection cut"))
        .cloned()
        .collect();
    assert_eq!(cut.len(), 1, "{cut:?}");
    assert_eq!(cut[0].reason, "host_not_allowed");
}
