//! The bindings a member read or wrote, remembered so that routing keeps working for them
//! while etcd has no quorum (a sandbox never moves) — bounded: at 5,000,000 sandboxes an
//! unbounded map could grow to most of a gigabyte on every member (docs/cluster.md sizing).
//! Least recently used entries go first; one that went is read from etcd again when next
//! routed (only without etcd's quorum is it then unreachable through this member).

use cleanroom_cluster::Binding;
use std::collections::HashMap;

/// Entries kept (~150 B each: ~10 MB).
pub(super) const KNOWN_MAX: usize = 65_536;

/// A map of sandbox id → binding with a least-recently-used bound.
pub(super) struct Known {
    map: HashMap<String, (Binding, u64)>,
    clock: u64,
    max: usize,
}

impl Known {
    pub(super) fn new(max: usize) -> Known {
        Known {
            map: HashMap::new(),
            clock: 0,
            max: max.max(4),
        }
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    pub(super) fn get(&mut self, id: &str) -> Option<Binding> {
        let now = self.tick();
        self.map.get_mut(id).map(|(b, used)| {
            *used = now;
            b.clone()
        })
    }

    pub(super) fn insert(&mut self, id: &str, b: &Binding) {
        let now = self.tick();
        self.map.insert(id.to_string(), (b.clone(), now));
        if self.map.len() > self.max {
            // Drop the least recently used quarter at once: amortized O(log n) per insert.
            let mut uses: Vec<u64> = self.map.values().map(|(_, u)| *u).collect();
            let k = self.map.len() - self.max * 3 / 4;
            let (_, cut, _) = uses.select_nth_unstable(k - 1);
            let cut = *cut;
            self.map.retain(|_, (_, u)| *u > cut);
        }
    }

    pub(super) fn remove(&mut self, id: &str) {
        self.map.remove(id);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(host: &str) -> Binding {
        Binding {
            host: host.into(),
            owner: "alice".into(),
            created_at: 0,
        }
    }

    #[test]
    fn the_least_recently_used_go_first_and_the_size_stays_bounded() {
        let mut k = Known::new(8);
        for i in 0..8 {
            k.insert(&format!("s{i}"), &b("a"));
        }
        assert_eq!(k.len(), 8);
        // s0 used again: it outlives s1..s2, the least recently used.
        assert!(k.get("s0").is_some());
        k.insert("s8", &b("b"));
        assert!(k.len() <= 8, "{}", k.len());
        assert!(k.get("s0").is_some());
        assert!(k.get("s8").is_some());
        assert!(k.get("s1").is_none() && k.get("s2").is_none());
        for i in 0..10_000 {
            k.insert(&format!("t{i}"), &b("c"));
            assert!(k.len() <= 8);
        }
        k.remove("t9999");
        assert!(k.get("t9999").is_none() && k.get("t9998").is_some());
    }
}
