//! The nftables table of a gateway namespace, written as one nfnetlink batch (no `nft`
//! binary needed; the batch is applied whole or not at all).
//!
//! ```text
//! table inet cleanroom {
//!   chain prerouting { type filter hook prerouting priority -150; policy drop;
//!     iifname "lo" accept
//!     meta nfproto ipv4 meta l4proto tcp tproxy ip to :PORT accept
//!     meta nfproto ipv4 meta l4proto tcp drop    # stray segments of closed connections
//!     meta nfproto ipv4 meta l4proto udp ip daddr GATEWAY udp dport 53 accept
//!     log group 1 snaplen 64                     # everything else: one event, then dropped
//!   }
//! }
//! ```

use super::netlink::{self, Msg, NLM_F_ACK, NLM_F_APPEND, NLM_F_CREATE, NLM_F_REQUEST};
use std::io;
use std::net::Ipv4Addr;

/// Name of the table in every gateway namespace.
pub const TABLE: &str = "cleanroom";
/// NFLOG group the refused packets are logged to (groups are per network namespace).
pub const LOG_GROUP: u16 = 1;
/// Bytes of a refused packet copied to the gateway: the IP and transport headers.
const SNAPLEN: u32 = 64;

const NFNL_SUBSYS_NFTABLES: u16 = 10;
const NFNL_MSG_BATCH_BEGIN: u16 = 0x10;
const NFNL_MSG_BATCH_END: u16 = 0x11;
const NFT_MSG_NEWTABLE: u16 = 0;
const NFT_MSG_NEWCHAIN: u16 = 3;
const NFT_MSG_NEWRULE: u16 = 6;
const NFPROTO_INET: u8 = 1;
const NFPROTO_IPV4: u8 = 2;
const NF_DROP: u32 = 0;
const NF_ACCEPT: u32 = 1;
const NFT_REG_VERDICT: u32 = 0;
const NFT_REG_1: u32 = 1;
const NFT_META_IIFNAME: u32 = 6;
const NFT_META_NFPROTO: u32 = 15;
const NFT_META_L4PROTO: u32 = 16;
const NFT_PAYLOAD_NETWORK_HEADER: u32 = 1;
const NFT_PAYLOAD_TRANSPORT_HEADER: u32 = 2;

/// One expression of a rule.
enum Expr {
    Meta(u32),
    Eq(Vec<u8>),
    Payload {
        base: u32,
        offset: u32,
        len: u32,
    },
    Verdict(u32),
    Value(Vec<u8>),
    /// tproxy to the port in register 1 (IPv4).
    Tproxy,
    Log,
}

fn nfgen(family: u8, res_id: u16) -> [u8; 4] {
    let r = res_id.to_be_bytes();
    [family, 0, r[0], r[1]]
}

fn msg(kind: u16, flags: u16) -> Msg {
    Msg::new(
        (NFNL_SUBSYS_NFTABLES << 8) | kind,
        NLM_F_REQUEST | flags,
        &nfgen(NFPROTO_INET, 0),
    )
}

fn put_expr(m: &mut Msg, e: &Expr) {
    // NFTA_LIST_ELEM, NFTA_EXPR_NAME, NFTA_EXPR_DATA
    let name = match e {
        Expr::Meta(_) => "meta",
        Expr::Eq(_) => "cmp",
        Expr::Payload { .. } => "payload",
        Expr::Verdict(_) | Expr::Value(_) => "immediate",
        Expr::Tproxy => "tproxy",
        Expr::Log => "log",
    };
    m.nest(1).str(1, name).nest(2);
    match e {
        // NFTA_META_DREG, NFTA_META_KEY
        Expr::Meta(key) => {
            m.u32_be(1, NFT_REG_1).u32_be(2, *key);
        }
        // NFTA_CMP_SREG, NFTA_CMP_OP (eq), NFTA_CMP_DATA { NFTA_DATA_VALUE }
        Expr::Eq(v) => {
            m.u32_be(1, NFT_REG_1).u32_be(2, 0).nest(3).attr(1, v).end();
        }
        // NFTA_PAYLOAD_DREG, _BASE, _OFFSET, _LEN
        Expr::Payload { base, offset, len } => {
            m.u32_be(1, NFT_REG_1)
                .u32_be(2, *base)
                .u32_be(3, *offset)
                .u32_be(4, *len);
        }
        // NFTA_IMMEDIATE_DREG, NFTA_IMMEDIATE_DATA { NFTA_DATA_VERDICT { NFTA_VERDICT_CODE } }
        Expr::Verdict(code) => {
            m.u32_be(1, NFT_REG_VERDICT)
                .nest(2)
                .nest(2)
                .u32_be(1, *code)
                .end()
                .end();
        }
        // NFTA_IMMEDIATE_DREG, NFTA_IMMEDIATE_DATA { NFTA_DATA_VALUE }
        Expr::Value(v) => {
            m.u32_be(1, NFT_REG_1).nest(2).attr(1, v).end();
        }
        // NFTA_TPROXY_FAMILY, NFTA_TPROXY_REG_PORT
        Expr::Tproxy => {
            m.u32_be(1, u32::from(NFPROTO_IPV4)).u32_be(3, NFT_REG_1);
        }
        // NFTA_LOG_GROUP, NFTA_LOG_SNAPLEN
        Expr::Log => {
            m.attr(1, &LOG_GROUP.to_be_bytes()).u32_be(3, SNAPLEN);
        }
    }
    m.end().end();
}

fn rule(exprs: &[Expr]) -> Msg {
    let mut m = msg(NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND | NLM_F_ACK);
    // NFTA_RULE_TABLE, NFTA_RULE_CHAIN, NFTA_RULE_EXPRESSIONS
    m.str(1, TABLE).str(2, "prerouting").nest(4);
    for e in exprs {
        put_expr(&mut m, e);
    }
    m.end();
    m
}

/// The batch that makes the table (see the module doc): TCP to the listener on
/// `listen_port`, DNS to `gateway`:53 to its socket, the rest logged and dropped.
/// `extra` rules are appended (tests: a rule the kernel refuses).
fn batch(listen_port: u16, gateway: Ipv4Addr, extra: Vec<Msg>) -> Vec<Msg> {
    use Expr::*;
    let mut out = vec![Msg::new(
        NFNL_MSG_BATCH_BEGIN,
        NLM_F_REQUEST,
        &nfgen(0, NFNL_SUBSYS_NFTABLES),
    )];
    let mut t = msg(NFT_MSG_NEWTABLE, NLM_F_CREATE | NLM_F_ACK);
    t.str(1, TABLE).u32_be(2, 0);
    out.push(t);
    let mut c = msg(NFT_MSG_NEWCHAIN, NLM_F_CREATE | NLM_F_ACK);
    // NFTA_CHAIN_TABLE, NFTA_CHAIN_NAME, NFTA_CHAIN_HOOK { HOOKNUM prerouting, PRIORITY },
    // NFTA_CHAIN_POLICY, NFTA_CHAIN_TYPE
    c.str(1, TABLE)
        .str(3, "prerouting")
        .nest(4)
        .u32_be(1, 0)
        .u32_be(2, (-150i32) as u32)
        .end()
        .u32_be(5, NF_DROP)
        .str(7, "filter");
    out.push(c);
    let mut lo = [0u8; 16];
    lo[..2].copy_from_slice(b"lo");
    out.push(rule(&[
        Meta(NFT_META_IIFNAME),
        Eq(lo.to_vec()),
        Verdict(NF_ACCEPT),
    ]));
    out.push(rule(&[
        Meta(NFT_META_NFPROTO),
        Eq(vec![NFPROTO_IPV4]),
        Meta(NFT_META_L4PROTO),
        Eq(vec![libc::IPPROTO_TCP as u8]),
        Value(listen_port.to_be_bytes().to_vec()),
        Tproxy,
        Verdict(NF_ACCEPT),
    ]));
    out.push(rule(&[
        Meta(NFT_META_NFPROTO),
        Eq(vec![NFPROTO_IPV4]),
        Meta(NFT_META_L4PROTO),
        Eq(vec![libc::IPPROTO_TCP as u8]),
        Verdict(NF_DROP),
    ]));
    out.push(rule(&[
        Meta(NFT_META_NFPROTO),
        Eq(vec![NFPROTO_IPV4]),
        Meta(NFT_META_L4PROTO),
        Eq(vec![libc::IPPROTO_UDP as u8]),
        Payload {
            base: NFT_PAYLOAD_NETWORK_HEADER,
            offset: 16,
            len: 4,
        },
        Eq(gateway.octets().to_vec()),
        Payload {
            base: NFT_PAYLOAD_TRANSPORT_HEADER,
            offset: 2,
            len: 2,
        },
        Eq(53u16.to_be_bytes().to_vec()),
        Verdict(NF_ACCEPT),
    ]));
    out.push(rule(&[Log]));
    out.extend(extra);
    out.push(Msg::new(
        NFNL_MSG_BATCH_END,
        NLM_F_REQUEST,
        &nfgen(0, NFNL_SUBSYS_NFTABLES),
    ));
    out
}

/// Make the gateway table in the calling thread's network namespace. An error means no
/// part of it exists (the batch is one transaction).
pub fn install(listen_port: u16, gateway: Ipv4Addr) -> io::Result<()> {
    install_with(listen_port, gateway, Vec::new())
}

fn install_with(listen_port: u16, gateway: Ipv4Addr, extra: Vec<Msg>) -> io::Result<()> {
    let sock = netlink::socket(libc::NETLINK_NETFILTER)?;
    netlink::request(&sock, batch(listen_port, gateway, extra), "nftables table")
}

/// A rule the kernel refuses (an expression that does not exist): for the tests of the
/// fail-closed path.
#[cfg(test)]
pub(crate) fn refused_rule() -> Msg {
    let mut m = msg(NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND | NLM_F_ACK);
    m.str(1, TABLE).str(2, "prerouting").nest(4);
    m.nest(1).str(1, "no-such-expression").end();
    m.end();
    m
}

#[cfg(test)]
pub(crate) fn install_refused(listen_port: u16, gateway: Ipv4Addr) -> io::Result<()> {
    install_with(listen_port, gateway, vec![refused_rule()])
}
