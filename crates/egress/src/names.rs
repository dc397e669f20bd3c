//! Synthetic addresses: the gateway's DNS answers every allowed name with an address from a
//! private pool and remembers which name it stands for.
//!
//! A connection to one of these addresses therefore names its host before a single byte is
//! sent, and a connection to any other address is a direct-IP bypass. The pool is the
//! benchmarking range 198.18.0.0/15, which is never routed on the internet.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::Mutex;

/// First address of the pool and its size.
const POOL_BASE: u32 = u32::from_be_bytes([198, 18, 0, 0]);
const POOL_SIZE: u32 = 1 << 17;

/// Name <-> synthetic address table of one sandbox.
#[derive(Default)]
pub struct Names {
    inner: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    by_name: HashMap<String, Ipv4Addr>,
    by_addr: HashMap<Ipv4Addr, String>,
}

impl Names {
    /// The address standing for `name`, allocating one on first use. `None` when the pool
    /// is exhausted (a sandbox resolving 131072 distinct names is hostile).
    pub fn address_for(&self, name: &str) -> Option<Ipv4Addr> {
        let mut t = self.inner.lock().ok()?;
        if let Some(a) = t.by_name.get(name) {
            return Some(*a);
        }
        let n = u32::try_from(t.by_name.len()).ok()?;
        if n >= POOL_SIZE - 2 {
            return None;
        }
        // Skip .0 of the pool so no answer looks like a network address.
        let addr = Ipv4Addr::from(POOL_BASE + n + 1);
        t.by_name.insert(name.to_string(), addr);
        t.by_addr.insert(addr, name.to_string());
        Some(addr)
    }

    /// The name an address was handed out for.
    pub fn name_of(&self, addr: Ipv4Addr) -> Option<String> {
        self.inner.lock().ok()?.by_addr.get(&addr).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_and_reversible() {
        let n = Names::default();
        let a = n.address_for("a.test").unwrap();
        let b = n.address_for("b.test").unwrap();
        assert_ne!(a, b);
        assert_eq!(n.address_for("a.test"), Some(a));
        assert_eq!(n.name_of(b).as_deref(), Some("b.test"));
        assert_eq!(n.name_of(Ipv4Addr::new(198, 18, 9, 9)), None);
        assert_eq!(a.octets()[0..2], [198, 18]);
    }
}
