//! The one place that knows when a sandbox was last used.
//!
//! Idle expiry ([`crate::engine::lifetimes`]) reads it, and anything else that needs
//! "idle" (auto-pause) should too, so every notion of idle agrees. A sandbox counts as
//! *active* while an execution runs in it (the engine's live map says so) and is *touched*
//! when it becomes READY, when an execution starts or ends, and on every API call that acts
//! on it (stdin, files, timeout changes). Reads (get, list, inspect, logs, events) do not
//! touch: looking at a sandbox does not keep it alive. In memory only: sandboxes do not
//! survive a server restart.

use crate::model::sync::lock;
use std::collections::HashMap;
use std::sync::Mutex;

/// Last activity per sandbox, microseconds since the epoch.
#[derive(Debug, Default)]
pub struct Activity {
    last: Mutex<HashMap<String, i64>>,
}

impl Activity {
    /// `sandbox_id` was used now.
    pub fn touch(&self, sandbox_id: &str) {
        self.touch_at(sandbox_id, crate::store::now_micros());
    }

    /// `sandbox_id` was used at `micros` (never moves backwards).
    pub fn touch_at(&self, sandbox_id: &str, micros: i64) {
        let mut m = lock(&self.last);
        let e = m.entry(sandbox_id.to_string()).or_insert(micros);
        *e = (*e).max(micros);
    }

    /// When `sandbox_id` was last used (`None`: never touched since the server started).
    pub fn last(&self, sandbox_id: &str) -> Option<i64> {
        lock(&self.last).get(sandbox_id).copied()
    }

    /// The sandbox is gone: forget it.
    pub fn forget(&self, sandbox_id: &str) {
        lock(&self.last).remove(sandbox_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touch_only_moves_forward() {
        let a = Activity::default();
        assert_eq!(a.last("sbx_a"), None);
        a.touch_at("sbx_a", 100);
        a.touch_at("sbx_a", 50);
        assert_eq!(a.last("sbx_a"), Some(100));
        a.touch_at("sbx_a", 200);
        assert_eq!(a.last("sbx_a"), Some(200));
        a.forget("sbx_a");
        assert_eq!(a.last("sbx_a"), None);
    }
}
