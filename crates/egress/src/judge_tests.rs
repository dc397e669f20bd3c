//! The one judge, seen from every path: the same question asked by the DNS responder, by a
//! TCP connection (to a synthetic address or one the sandbox picked), by an HTTP request
//! through the proxy and by a CONNECT target gets the same verdict and reason code. Each path
//! is driven through its own entry (`dns::answer`, `gateway::tcp_route` + `settle`,
//! `http::check`), not through `judge` itself.

use crate::approval::Approvals;
use crate::ctx::Ctx;
use crate::event::{EventSink, Limited};
use crate::gateway::{tcp_route, TcpRoute};
use crate::judge::settle;
use crate::secrets::Secrets;
use crate::upstream::UpstreamConfig;
use hickory_proto::op::{Message, MessageType, OpCode, ResponseCode};
use hickory_proto::rr::{Name, RecordType};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn ctx(network: &str) -> (Ctx, Arc<Mutex<Vec<crate::EgressEvent>>>) {
    let policy = cleanroom_policy::compile(&format!("version: 1\nsandbox:\n  network:\n{network}"))
        .expect("policy")
        .network;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink: EventSink = {
        let seen = seen.clone();
        Arc::new(move |e| seen.lock().expect("events").push(e))
    };
    let ctx = Ctx {
        rules: Arc::new(crate::rules::Rules::new(policy)),
        upstream: Arc::new(UpstreamConfig::default()),
        secrets: Secrets::new(Vec::new()),
        ca: None,
        registries: crate::registry::Mediation::none(),
        names: crate::names::Names::default(),
        events: Limited::new(sink),
        limits: crate::limits::SandboxLimits::new(crate::share::Shares::server().solitary()),
        // Asked destinations time out quickly: every path then answers `approval_timeout`.
        approvals: Arc::new(Approvals::new(Duration::from_millis(50), 8)),
    };
    (ctx, seen)
}

/// `Ok(host)` to go, or the deny reason.
type Outcome = Result<String, &'static str>;

/// The TCP path: a name arrives as the synthetic address our DNS handed out for it.
async fn via_tcp(ctx: &Ctx, host: &str, port: u16) -> Outcome {
    let ip = match host.parse::<IpAddr>() {
        Ok(ip) => ip,
        Err(_) => IpAddr::V4(ctx.names.address_for(host).expect("synthetic address")),
    };
    match tcp_route(ctx, SocketAddr::new(ip, port)) {
        TcpRoute::Named(h) => Ok(h),
        TcpRoute::Direct => Ok(ip.to_string()),
        TcpRoute::Held(r) => settle(ctx, r, "tcp").await.map_err(|d| d.reason.as_str()),
        TcpRoute::Deny(e) => Err(e.reason),
        TcpRoute::Proxy | TcpRoute::Dns => panic!("{host}:{port} is the gateway's own service"),
    }
}

/// The proxy path (absolute-form requests and CONNECT targets both ask `check`).
async fn via_proxy(ctx: &Ctx, host: &str, port: u16, proto: &'static str) -> Outcome {
    crate::http::check(ctx, host, port, proto, true)
        .await
        .map_err(|(_, r, _)| r.as_str())
}

/// The DNS path: `Ok` when the name resolves.
fn via_dns(ctx: &Ctx, host: &str) -> Outcome {
    let mut m = Message::new(1, MessageType::Query, OpCode::Query);
    m.add_query(hickory_proto::op::Query::query(
        Name::from_ascii(host).expect("name"),
        RecordType::A,
    ));
    let (resp, events) = crate::dns::answer(&m.to_vec().expect("query"), &ctx.policy(), &ctx.names);
    let resp = Message::from_vec(&resp.expect("answer")).expect("response");
    match resp.metadata.response_code {
        ResponseCode::NoError => Ok(host.to_ascii_lowercase()),
        _ => Err(events[0].reason),
    }
}

/// Ask every connection path about each `(host, port, want)`; names are asked of DNS too
/// (`dns`: whether the name resolves).
/// `(host, port, verdict of every connection path, verdict of DNS for a name)`.
type Case<'a> = (&'a str, u16, Result<(), &'a str>, Result<(), &'a str>);

async fn same_everywhere(network: &str, cases: &[Case<'_>]) {
    let (ctx, _) = ctx(network);
    for &(host, port, want, dns) in cases {
        let tcp = via_tcp(&ctx, host, port).await.map(|_| ());
        let proxy = via_proxy(&ctx, host, port, "http-proxy").await.map(|_| ());
        let connect = via_proxy(&ctx, host, port, "connect").await.map(|_| ());
        assert_eq!(tcp, want, "tcp {host}:{port} under {network}");
        assert_eq!(proxy, want, "http proxy {host}:{port} under {network}");
        assert_eq!(connect, want, "connect {host}:{port} under {network}");
        if host.parse::<IpAddr>().is_err() {
            assert_eq!(
                via_dns(&ctx, host).map(|_| ()),
                dns,
                "dns {host} under {network}"
            );
        }
    }
}

#[tokio::test]
async fn every_path_gets_the_same_verdict_and_reason() {
    const POLICY: &str = "    allow:\n      - host: \"*.ok.test\"\n        ports: [443]\n    deny:\n      - host: bad.ok.test\n    ask:\n      - host: ask.test\n";
    same_everywhere(
        POLICY,
        &[
            ("api.ok.test", 443, Ok(()), Ok(())),
            ("api.ok.test", 80, Err("port_not_allowed"), Ok(())),
            ("bad.ok.test", 443, Err("host_denied"), Err("host_denied")),
            (
                "other.test",
                443,
                Err("host_not_allowed"),
                Err("host_not_allowed"),
            ),
            ("ask.test", 443, Err("approval_timeout"), Ok(())),
            ("203.0.113.7", 80, Err("ip_literal_not_allowed"), Ok(())),
            ("192.0.2.53", 853, Err("resolver_not_allowed"), Ok(())),
            ("100.96.0.1", 22, Err("ip_literal_not_allowed"), Ok(())),
            ("2001:db8::1", 443, Err("ipv6_not_allowed"), Ok(())),
        ],
    )
    .await;
    same_everywhere(
        "    unknown: learn\n    deny:\n      - host: no.test\n",
        &[
            ("new.test", 80, Ok(()), Ok(())),
            ("no.test", 443, Err("host_denied"), Err("host_denied")),
            ("203.0.113.7", 80, Err("ip_literal_not_allowed"), Ok(())),
        ],
    )
    .await;
}

/// Where the two judges this one replaced differed, the stricter answer is kept: the proxy
/// and CONNECT used to let `dangerously_allow_all` reach the gateway's own address and IPv6
/// literals (refused later, if at all, by the upstream's address checks), while a TCP
/// connection was refused at once. Now every path refuses them, with the TCP path's codes.
#[tokio::test]
async fn allow_all_never_opens_the_gateway_address_or_ipv6_on_any_path() {
    same_everywhere(
        "    dangerously_allow_all: true\n    deny:\n      - host: no.test\n",
        &[
            ("any.test", 8080, Ok(()), Ok(())),
            ("no.test", 443, Err("host_denied"), Err("host_denied")),
            ("203.0.113.7", 80, Ok(()), Ok(())),
            ("100.96.0.1", 8080, Err("ip_literal_not_allowed"), Ok(())),
            ("100.96.0.1", 3129, Err("ip_literal_not_allowed"), Ok(())),
            ("2001:db8::1", 443, Err("ipv6_not_allowed"), Ok(())),
            ("::1", 80, Err("ipv6_not_allowed"), Ok(())),
        ],
    )
    .await;
}
