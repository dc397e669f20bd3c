//! The gateway's DNS responder: the only resolver a sandbox can reach.
//!
//! Allowed names get a synthetic IPv4 address ([`crate::names`]); names the policy does not
//! allow get NXDOMAIN and a deny event. Nothing is forwarded to a real resolver, so DNS
//! cannot be used as a tunnel out of the sandbox.

use crate::event::EgressEvent;
use crate::judge::{judge, Query, Ruling};
use crate::names::Names;
use cleanroom_policy::NetworkPolicy;
use hickory_proto::op::{Message, MessageType, OpCode, ResponseCode};
use hickory_proto::rr::{rdata::A, RData, Record, RecordType};

/// TTL of synthetic answers: short, the table is per sandbox anyway.
const TTL: u32 = 30;
/// How long a DNS-over-TCP connection may sit idle between queries (RFC 7766 suggests
/// seconds, not minutes).
const TCP_IDLE: std::time::Duration = std::time::Duration::from_secs(10);

/// Serve DNS over TCP (RFC 7766: two-byte length prefix per message) on one connection:
/// resolvers fall back to it, and `dig +tcp` uses it. Same answers and events as UDP.
pub(crate) async fn serve_tcp<S>(mut stream: S, ctx: &crate::ctx::Ctx)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    loop {
        let mut len = [0u8; 2];
        match tokio::time::timeout(TCP_IDLE, stream.read_exact(&mut len)).await {
            Ok(Ok(_)) => {}
            _ => break,
        }
        let mut msg = vec![0u8; usize::from(u16::from_be_bytes(len))];
        match tokio::time::timeout(TCP_IDLE, stream.read_exact(&mut msg)).await {
            Ok(Ok(_)) => {}
            _ => break,
        }
        let (resp, events) = answer(&msg, &ctx.policy(), &ctx.names);
        for e in events {
            ctx.events.emit(e);
        }
        let Some(resp) = resp else { break };
        let Ok(n) = u16::try_from(resp.len()) else {
            break;
        };
        let mut out = n.to_be_bytes().to_vec();
        out.extend_from_slice(&resp);
        if stream.write_all(&out).await.is_err() {
            break;
        }
    }
    let _ = stream.shutdown().await;
}

/// Answer one DNS query datagram. Returns the response bytes (`None`: not worth an answer,
/// e.g. not a query at all) and the events the query produced.
pub fn answer(
    packet: &[u8],
    policy: &NetworkPolicy,
    names: &Names,
) -> (Option<Vec<u8>>, Vec<EgressEvent>) {
    let mut events = Vec::new();
    let Ok(query) = Message::from_vec(packet) else {
        return (None, events);
    };
    if query.metadata.message_type != MessageType::Query {
        return (None, events);
    }
    let id = query.metadata.id;
    let mut resp = Message::response(id, query.metadata.op_code);
    resp.metadata.recursion_desired = query.metadata.recursion_desired;
    resp.metadata.recursion_available = true;
    let q = match (query.metadata.op_code, query.queries.as_slice()) {
        (OpCode::Query, [q]) => q.clone(),
        _ => {
            resp.metadata.response_code = ResponseCode::FormErr;
            return (resp.to_vec().ok(), events);
        }
    };
    resp.add_query(q.clone());
    let raw = q.name().to_ascii();
    match judge(policy, Query::Resolve(raw.trim_end_matches('.'))) {
        Ruling::Deny(d) => {
            resp.metadata.response_code = ResponseCode::NXDomain;
            events.push(EgressEvent::deny(
                d.host,
                53,
                "dns",
                d.reason,
                format!("DNS {} query refused", q.query_type()),
            ));
        }
        // IPv4 only: other record types of an allowed name exist but have no data.
        Ruling::Allow(h) if q.query_type() == RecordType::A => match names.address_for(&h) {
            Some(addr) => {
                resp.add_answer(Record::from_rdata(q.name().clone(), TTL, RData::A(A(addr))));
            }
            None => resp.metadata.response_code = ResponseCode::ServFail,
        },
        // A resolvable name's other record types exist but have no data; a name is never
        // asked about or learned (its connections are).
        _ => {}
    }
    (resp.to_vec().ok(), events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::op::Query;
    use hickory_proto::rr::Name;

    fn query(name: &str, t: RecordType) -> Vec<u8> {
        let mut m = Message::new(7, MessageType::Query, OpCode::Query);
        m.metadata.recursion_desired = true;
        m.add_query(Query::query(Name::from_ascii(name).unwrap(), t));
        m.to_vec().unwrap()
    }

    fn policy() -> NetworkPolicy {
        cleanroom_policy::compile(
            "version: 1\nsandbox:\n  network:\n    allow:\n      - host: \"*.ok.test\"\n    deny:\n      - host: bad.ok.test\n",
        )
        .unwrap()
        .network
    }

    #[test]
    fn allowed_names_get_synthetic_addresses() {
        let names = Names::default();
        let (resp, events) = answer(&query("API.ok.test.", RecordType::A), &policy(), &names);
        let resp = Message::from_vec(&resp.unwrap()).unwrap();
        assert_eq!(resp.metadata.id, 7);
        assert_eq!(resp.metadata.response_code, ResponseCode::NoError);
        let RData::A(a) = &resp.answers[0].data else {
            panic!("not an A record")
        };
        assert_eq!(names.name_of(a.0).as_deref(), Some("api.ok.test"));
        assert!(events.is_empty());
        let (resp, _) = answer(&query("api.ok.test.", RecordType::AAAA), &policy(), &names);
        let resp = Message::from_vec(&resp.unwrap()).unwrap();
        assert_eq!(resp.metadata.response_code, ResponseCode::NoError);
        assert!(resp.answers.is_empty());
    }

    #[test]
    fn other_names_get_nxdomain_and_an_event() {
        let names = Names::default();
        for (name, code) in [
            ("example.com.", "host_not_allowed"),
            ("bad.ok.test.", "host_denied"),
        ] {
            let (resp, events) = answer(&query(name, RecordType::A), &policy(), &names);
            let resp = Message::from_vec(&resp.unwrap()).unwrap();
            assert_eq!(resp.metadata.response_code, ResponseCode::NXDomain);
            assert_eq!(events.len(), 1);
            assert_eq!(events[0].reason, code);
            assert_eq!(events[0].protocol, "dns");
        }
    }

    #[test]
    fn garbage_is_ignored() {
        let names = Names::default();
        assert_eq!(answer(b"\x00\x01junk", &policy(), &names).0, None);
        assert_eq!(answer(b"", &policy(), &names).0, None);
    }
}
