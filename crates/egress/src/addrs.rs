//! Which upstream addresses the gateway may connect to on a sandbox's behalf.
//!
//! Two kinds of address are never reached through a name resolved by DNS or an address the
//! sandbox named itself:
//!
//! * **this host's own** addresses, on every interface, read live from the kernel
//!   (`getifaddrs`) at each connect — addresses come and go (DHCP, VPNs, containers), and a
//!   public address of the host reaches its services as surely as 127.0.0.1 does;
//! * **special-purpose** addresses: every range of the IANA IPv4 and IPv6 Special-Purpose
//!   Address Registries that is not globally reachable, plus multicast and broadcast, and
//!   IPv6 addresses that embed one of those IPv4 addresses (v4-mapped, v4-compatible, NAT64
//!   `64:ff9b::/96`, 6to4 `2002::/16`). For IPv6 anything outside global unicast
//!   (`2000::/3`) counts as special too: fail closed on what is not known to be global.
//!
//! [`crate::upstream`] applies these rules; the operator's escape hatches are name-based
//! (`serve --egress-trust-internal` for special-purpose answers, `--egress-resolve` to pin
//! a name to exact addresses, including the host's own).

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// IPv4 ranges (network, prefix length) that are not globally reachable.
const V4_SPECIAL: &[([u8; 4], u8)] = &[
    ([0, 0, 0, 0], 8),          // "this network" (RFC 791)
    ([10, 0, 0, 0], 8),         // private (RFC 1918)
    ([100, 64, 0, 0], 10),      // shared address space / CGNAT (RFC 6598)
    ([127, 0, 0, 0], 8),        // loopback
    ([169, 254, 0, 0], 16),     // link-local, cloud metadata
    ([172, 16, 0, 0], 12),      // private
    ([192, 0, 0, 0], 24),       // IETF protocol assignments (RFC 6890), DS-Lite, NAT64 discovery
    ([192, 0, 2, 0], 24),       // documentation TEST-NET-1
    ([192, 88, 99, 0], 24),     // deprecated 6to4 relay anycast (RFC 7526)
    ([192, 168, 0, 0], 16),     // private
    ([198, 18, 0, 0], 15),      // benchmarking (and the gateway's synthetic names)
    ([198, 51, 100, 0], 24),    // documentation TEST-NET-2
    ([203, 0, 113, 0], 24),     // documentation TEST-NET-3
    ([224, 0, 0, 0], 4),        // multicast
    ([240, 0, 0, 0], 4),        // reserved
    ([255, 255, 255, 255], 32), // limited broadcast
];

/// IPv6 ranges inside global unicast (`2000::/3`) that are not globally reachable.
const V6_SPECIAL: &[(u128, u8)] = &[
    (0x2001_0000_0000_0000_0000_0000_0000_0000, 23), // IETF protocol assignments (Teredo, ORCHID, …)
    (0x2001_0db8_0000_0000_0000_0000_0000_0000, 32), // documentation
    (0x3fff_0000_0000_0000_0000_0000_0000_0000, 20), // documentation (RFC 9637)
];

/// Globally reachable exceptions inside [`V6_SPECIAL`]'s `2001::/23` (IANA registry).
const V6_GLOBAL_EXCEPTIONS: &[(u128, u8)] = &[
    (0x2001_0001_0000_0000_0000_0000_0000_0001, 128), // port control protocol anycast
    (0x2001_0001_0000_0000_0000_0000_0000_0002, 128), // TURN anycast
    (0x2001_0003_0000_0000_0000_0000_0000_0000, 32),  // AMT
    (0x2001_0004_0112_0000_0000_0000_0000_0000, 48),  // AS112-v6
    (0x2001_0020_0000_0000_0000_0000_0000_0000, 28),  // ORCHIDv2
    (0x2001_0030_0000_0000_0000_0000_0000_0000, 28),  // drone remote ID
];

fn in_v4(ip: Ipv4Addr, (net, len): ([u8; 4], u8)) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
    u32::from(ip) & mask == u32::from_be_bytes(net) & mask
}

fn in_v6(ip: Ipv6Addr, (net, len): (u128, u8)) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
    u128::from(ip) & mask == net & mask
}

/// The IPv4 address an IPv6 address stands for, where one is embedded and the address
/// would be translated to it (v4-mapped, v4-compatible, NAT64 well-known prefix, 6to4).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let bits = u128::from(ip);
    let low32 = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    if bits >> 32 == 0xffff || bits >> 32 == 0 {
        return Some(low32); // ::ffff:a.b.c.d and the deprecated ::a.b.c.d
    }
    if in_v6(ip, (0x0064_ff9b_0000_0000_0000_0000_0000_0000, 96)) {
        return Some(low32);
    }
    if in_v6(ip, (0x2002_0000_0000_0000_0000_0000_0000_0000, 16)) {
        return Some(Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32));
    }
    None
}

/// Is this address special-purpose (not globally reachable), so that reaching it needs
/// the operator's say-so? See the module documentation for the ranges.
pub fn is_special_purpose(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => V4_SPECIAL.iter().any(|r| in_v4(v4, *r)),
        IpAddr::V6(v6) => {
            if let Some(v4) = embedded_v4(v6) {
                // v4-mapped/compatible addresses are themselves not globally reachable;
                // NAT64 and 6to4 ones are exactly as reachable as the address they embed.
                let translated = !(u128::from(v6) >> 32 == 0xffff || u128::from(v6) >> 32 == 0);
                return !translated || is_special_purpose(IpAddr::V4(v4));
            }
            if !in_v6(v6, (0x2000_0000_0000_0000_0000_0000_0000_0000, 3)) {
                return true; // loopback, ULA, link-local, multicast, discard, unassigned…
            }
            V6_SPECIAL.iter().any(|r| in_v6(v6, *r))
                && !V6_GLOBAL_EXCEPTIONS.iter().any(|r| in_v6(v6, *r))
        }
    }
}

/// Every address assigned to an interface of this host right now.
pub fn host_addresses() -> std::io::Result<HashSet<IpAddr>> {
    let mut out = HashSet::new();
    for ifa in nix::ifaddrs::getifaddrs().map_err(std::io::Error::from)? {
        let Some(addr) = ifa.address else { continue };
        if let Some(v4) = addr.as_sockaddr_in() {
            out.insert(IpAddr::V4(v4.ip()));
        } else if let Some(v6) = addr.as_sockaddr_in6() {
            out.insert(IpAddr::V6(v6.ip()));
        }
    }
    Ok(out)
}

/// Does `ip` reach this host? True for an address of any interface (read now), for the
/// unspecified address, and — failing closed — whenever the interfaces cannot be read.
/// IPv6 addresses that embed an IPv4 address are judged by it too.
pub fn is_host_address(ip: IpAddr) -> bool {
    let Ok(own) = host_addresses() else {
        return true;
    };
    is_in(ip, &own)
}

pub(crate) fn is_in(ip: IpAddr, own: &HashSet<IpAddr>) -> bool {
    let v4 = match ip {
        IpAddr::V4(v4) => Some(v4),
        IpAddr::V6(v6) => embedded_v4(v6),
    };
    ip.is_unspecified()
        || own.contains(&ip)
        || v4.is_some_and(|v4| v4.is_unspecified() || own.contains(&IpAddr::V4(v4)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn special(a: &str) -> bool {
        is_special_purpose(a.parse().unwrap())
    }

    #[test]
    fn special_purpose_ranges() {
        for a in [
            "0.0.0.0",
            "0.1.2.3",
            "10.1.2.3",
            "100.64.0.1",
            "100.127.255.254",
            "127.0.0.1",
            "127.255.0.9",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.7",
            "192.88.99.1",
            "192.168.1.1",
            "198.18.0.5",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.7",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::127.0.0.1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:1.1.1.1",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::1",
            "2002:7f00:0001::1",
            "2002:c0a8:0101::1",
            "100::1",
            "2001::1",
            "2001:db8::1",
            "3fff::1",
            "5f00::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
        ] {
            assert!(special(a), "{a} should be special-purpose");
        }
        for a in [
            "1.1.1.1",
            "11.22.33.44",
            "93.184.216.34",
            "100.63.255.255",
            "100.128.0.0",
            "172.32.0.1",
            "192.0.1.1",
            "192.169.0.1",
            "198.20.0.1",
            "223.255.255.255",
            "2606:4700::1111",
            "2a00:1450::1",
            "64:ff9b::101:101",
            "2002:0101:0101::1",
            "2001:4:112::1",
            "2001:1::1",
        ] {
            assert!(!special(a), "{a} should be globally reachable");
        }
    }

    #[test]
    fn host_addresses_include_loopback_and_embeddings_are_seen_through() {
        let own = host_addresses().unwrap();
        assert!(own.contains(&"127.0.0.1".parse().unwrap()), "{own:?}");
        let mut own = HashSet::new();
        own.insert("11.22.33.44".parse().unwrap());
        for a in [
            "11.22.33.44",
            "::ffff:11.22.33.44",
            "64:ff9b::b16:212c",
            "2002:0b16:212c::1",
            "0.0.0.0",
            "::",
        ] {
            assert!(is_in(a.parse().unwrap(), &own), "{a}");
        }
        assert!(!is_in("11.22.33.45".parse().unwrap(), &own));
    }
}
