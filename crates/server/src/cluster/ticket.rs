//! Console tickets obtained through a member that does not hold the sandbox
//! (docs/console.md, docs/cluster.md). `AttachExecution` is routed to the owning host like
//! every sandbox call, and the owner's ticket is only good on the owner's own QUIC
//! endpoint (the ticket lives in that host's memory). The ticket must therefore name an
//! address the caller can reach the owner at — not the front door's.
//!
//! - An unspecified address (the owner's console bound to all interfaces) means "the API
//!   server's host" to a client, which would be the front door: it is replaced by the
//!   owner's own address, the one its member link was reached at.
//! - A loopback address on an owner reached over a non-loopback member link is reachable
//!   from no other machine: refused (`unavailable`, fail closed) instead of a ticket that
//!   would send the client to its own machine.
//! - Anything else (a specific address) is the owner's choice and goes back untouched.

use crate::model::error::EngineError;
use std::net::{IpAddr, SocketAddr};

/// The member link's address (`https://IP:PORT`), if it is one.
fn link_ip(link: &str) -> Option<IpAddr> {
    let addr = link
        .strip_prefix("https://")?
        .trim_end_matches('/')
        .parse::<SocketAddr>()
        .ok()?;
    Some(addr.ip())
}

/// The console endpoint a ticket from owner `host` (reached at `link`) must name.
pub fn owner_endpoint(endpoint: &str, host: &str, link: &str) -> Result<String, EngineError> {
    let refuse = |why: String| {
        crate::cluster::unreachable(format!(
            "the console of member {host} cannot be reached through the cluster: {why}"
        ))
    };
    let mut addr: SocketAddr = endpoint
        .parse()
        .map_err(|_| refuse(format!("its ticket names no address ({endpoint:?})")))?;
    let owner = link_ip(link);
    if addr.ip().is_unspecified() {
        match owner.filter(|ip| !ip.is_unspecified()) {
            Some(ip) => addr.set_ip(ip),
            None => return Err(refuse(format!("its member link {link} names no address"))),
        }
    } else if addr.ip().is_loopback() && !owner.is_some_and(|ip| ip.is_loopback()) {
        return Err(refuse(format!(
            "its console endpoint {addr} is loopback-only"
        )));
    }
    Ok(addr.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ticket_names_the_owner_s_reachable_address_or_is_refused() {
        let link = "https://10.0.0.7:7444";
        // All interfaces: the owner's address.
        assert_eq!(
            owner_endpoint("0.0.0.0:7445", "a", link).unwrap(),
            "10.0.0.7:7445"
        );
        assert_eq!(
            owner_endpoint("[::]:7445", "a", link).unwrap(),
            "10.0.0.7:7445"
        );
        // A specific address: the owner's choice.
        assert_eq!(
            owner_endpoint("192.0.2.9:9", "a", link).unwrap(),
            "192.0.2.9:9"
        );
        // Loopback behind a remote member link: refused, with the code.
        let e = owner_endpoint("127.0.0.1:7445", "a", link).unwrap_err();
        assert_eq!(e.code, cleanroom_vocab::ErrorCode::Unavailable);
        // One machine (the link is loopback too): loopback is reachable.
        assert_eq!(
            owner_endpoint("127.0.0.1:7445", "a", "https://127.0.0.1:9").unwrap(),
            "127.0.0.1:7445"
        );
        // Nothing to name: refused.
        assert!(owner_endpoint("0.0.0.0:1", "a", "https://0.0.0.0:9").is_err());
        assert!(owner_endpoint("nonsense", "a", link).is_err());
    }
}
