//! Egress approvals on the server: each sandbox's [`Approvals`] (shared with its gateway),
//! `DecideEgress` / `ListEgressRequests` for the sandbox's owner or an admin, decisions as
//! `egress.decision` events, and the effective allow set derived from those events.
//!
//! The policy never changes: `policy_hash` stays the hash of the compiled policy. What a
//! principal allowed for the whole sandbox (`remember: sandbox`) is derived state — the
//! sandbox's `egress.decision` events — shown by `GetSandbox` next to the hash.

use crate::engine::Engine;
use crate::engine::OwnedSandbox;
use crate::identity::auth::Principal;
use crate::model::error::{EngineError, ErrorCode};
use crate::model::sync::lock;
use crate::store::{EventRow, Store};
use cleanroom_egress::approval::{PendingRequest, Remember};
use cleanroom_egress::Approvals;
use cleanroom_policy::NetworkPolicy;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Event type of a principal's answer to an approval request.
pub const DECISION_EVENT: &str = "egress.decision";

/// Server-wide approval settings (`cleanroom serve --approval-timeout`,
/// `--max-pending-approvals`).
#[derive(Debug, Clone, Copy)]
pub struct ApprovalSettings {
    /// How long an asked connection waits when its policy sets no
    /// `approval_timeout_seconds`.
    pub timeout: Duration,
    /// Most open approval requests per sandbox (beyond: `approval_queue_full`).
    pub max_pending: usize,
}

impl Default for ApprovalSettings {
    fn default() -> Self {
        ApprovalSettings {
            timeout: cleanroom_egress::approval::DEFAULT_TIMEOUT,
            max_pending: cleanroom_egress::approval::DEFAULT_MAX_PENDING,
        }
    }
}

/// Every running sandbox's approvals.
#[derive(Default)]
pub struct ApprovalHub {
    settings: Mutex<ApprovalSettings>,
    by_sandbox: Mutex<HashMap<String, Arc<Approvals>>>,
}

impl ApprovalHub {
    /// Apply the server's settings (before any sandbox starts).
    pub fn configure(&self, s: ApprovalSettings) {
        *lock(&self.settings) = ApprovalSettings {
            timeout: s.timeout.max(Duration::from_secs(1)),
            max_pending: s.max_pending.max(1),
        };
    }

    /// The approvals of a sandbox whose gateway is starting with `policy`.
    pub fn open(&self, sandbox_id: &str, policy: &NetworkPolicy) -> Arc<Approvals> {
        let s = *lock(&self.settings);
        let timeout = policy
            .approval_timeout_secs
            .map(|t| Duration::from_secs(t.into()))
            .unwrap_or(s.timeout);
        let a = Arc::new(Approvals::new(timeout, s.max_pending));
        lock(&self.by_sandbox).insert(sandbox_id.to_string(), a.clone());
        a
    }

    /// Forget a sandbox (its gateway stopped; waiting connections are gone with it).
    pub fn close(&self, sandbox_id: &str) {
        lock(&self.by_sandbox).remove(sandbox_id);
    }

    fn get(&self, sandbox_id: &str) -> Option<Arc<Approvals>> {
        lock(&self.by_sandbox).get(sandbox_id).cloned()
    }
}

/// Open requests and remembered answers of one sandbox.
pub struct Listing {
    pub requests: Vec<PendingRequest>,
    pub approved: Vec<String>,
    pub refused: Vec<String>,
}

fn not_found(request_id: &str) -> EngineError {
    EngineError::new(
        ErrorCode::ApprovalNotFound,
        format!("no open approval request {request_id:?} in this sandbox (never asked, already answered, or timed out)"),
    )
    .with("request_id", request_id)
}

impl Engine {
    /// `ListEgressRequests` for `who` (the owner or an admin; others: `sandbox_not_found`).
    pub fn list_egress_requests(&self, sbx: &OwnedSandbox) -> Result<Listing, EngineError> {
        let sandbox_id = sbx.id();
        let (approved, refused) = effective_egress(&self.store, sandbox_id)?;
        let requests = self
            .egress
            .approvals
            .get(sandbox_id)
            .map(|a| a.pending())
            .unwrap_or_default();
        Ok(Listing {
            requests,
            approved,
            refused,
        })
    }

    /// `DecideEgress` for `who`: answer one open request and record the answer as an
    /// `egress.decision` event (who, what, for how long).
    pub fn decide_egress(
        &self,
        who: &Principal,
        sbx: &OwnedSandbox,
        request_id: &str,
        allow: bool,
        remember: Remember,
    ) -> Result<PendingRequest, EngineError> {
        let (row, sandbox_id) = (sbx.row(), sbx.id());
        let approvals = self
            .egress
            .approvals
            .get(sandbox_id)
            .ok_or_else(|| not_found(request_id))?;
        let req = approvals
            .decide(request_id, allow, remember)
            .ok_or_else(|| not_found(request_id))?;
        let verdict = if allow { "allow" } else { "deny" };
        let attributes = serde_json::json!({
            "request_id": req.request_id,
            "host": req.host,
            "port": req.port,
            "protocol": req.protocol,
            "verdict": verdict,
            "remember": remember.as_str(),
            "principal": who.name,
            "policy_hash": row.policy_hash,
        });
        self.events.record(EventRow {
            sandbox_id: sandbox_id.to_string(),
            kind: DECISION_EVENT.into(),
            message: format!(
                "{} {verdict} {}:{} ({}, remember {})",
                who.name,
                req.host,
                req.port,
                req.request_id,
                remember.as_str()
            ),
            attributes: attributes.to_string(),
            ..Default::default()
        });
        Ok(req)
    }

    /// (approved, refused) `host:port` for the whole sandbox, derived from its decision
    /// events (what `GetSandbox` shows).
    pub(in crate::engine) fn effective_egress(
        &self,
        sandbox_id: &str,
    ) -> Result<(Vec<String>, Vec<String>), EngineError> {
        effective_egress(&self.store, sandbox_id)
    }
}

/// The remembered answers of a sandbox, from its `egress.decision` events.
fn effective_egress(
    store: &Store,
    sandbox_id: &str,
) -> Result<(Vec<String>, Vec<String>), EngineError> {
    let mut approved = BTreeSet::new();
    let mut refused = BTreeSet::new();
    for e in store.events_of_kind(sandbox_id, DECISION_EVENT)? {
        let Ok(a) = serde_json::from_str::<serde_json::Value>(&e.attributes) else {
            continue;
        };
        if a["remember"] != "sandbox" {
            continue;
        }
        let dest = format!("{}:{}", a["host"].as_str().unwrap_or(""), a["port"]);
        if a["verdict"] == "allow" {
            approved.insert(dest);
        } else {
            refused.insert(dest);
        }
    }
    Ok((
        approved.into_iter().collect(),
        refused.into_iter().collect(),
    ))
}
