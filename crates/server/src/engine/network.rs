//! Live egress rules (`UpdateSandboxNetwork`, `cleanroom sandbox network`): the owner of a
//! running sandbox (or an admin) adds allow and deny rules, or drops them all, and the
//! sandbox's gateway judges every new connection by the result at once; with `cut`,
//! established flows to destinations no longer allowed end too.
//!
//! The policy never changes: `policy_hash` stays the compiled policy's. The effective rule
//! set (policy plus live rules) has its own hash, `effective_rules_hash`: committed with
//! the rules, a `network.rules` event and a freshly signed attestation in one store commit
//! (`store::network`), then applied to the gateway. Parsing, precedence and the hash are
//! the policy crate's (`cleanroom_policy::live`), so a live rule means exactly what the
//! same rule in `cleanroom.yaml` means. Fails closed: a sandbox whose gateway is not
//! running is `sandbox_not_ready`, stored rules that do not decode refuse both the update
//! and a gateway start.

use crate::engine::{Engine, OwnedSandbox};
use crate::identity::attest::AgentBinding;
use crate::identity::auth::Principal;
use crate::model::error::{EngineError, ErrorCode};
use crate::model::status::sandbox as ss;
use crate::model::sync::lock;
use crate::store::{ClaimRow, EventRow, SandboxRow};
use cleanroom_policy::{CompiledPolicy, LiveChange, LiveRules, MAX_LIVE_RULES};

/// Event type of a change of a sandbox's live rules.
pub const RULES_EVENT: &str = "network.rules";

/// One `UpdateSandboxNetwork` request, as given (parsed here).
#[derive(Debug, Clone, Default)]
pub struct NetworkUpdate {
    /// `HOST[:PORT]` to allow.
    pub allow: Vec<String>,
    /// `HOST` to deny (every port).
    pub deny: Vec<String>,
    /// Drop every live rule first (back to the policy).
    pub reset: bool,
    /// Also end established flows the new rules deny.
    pub cut: bool,
}

/// A sandbox's live rules and the hash of its effective rule set.
#[derive(Debug, Clone)]
pub struct NetworkState {
    pub live: LiveRules,
    pub effective_rules_hash: String,
}

fn policy_error(e: cleanroom_policy::PolicyError) -> EngineError {
    EngineError::new(e.code(), e.to_string())
}

/// The rules after `u`, applied in order: reset, denies, allows.
fn next_rules(
    current: &LiveRules,
    base: &cleanroom_policy::NetworkPolicy,
    u: &NetworkUpdate,
) -> Result<LiveRules, EngineError> {
    if u.allow.is_empty() && u.deny.is_empty() && !u.reset {
        return Err(EngineError::invalid(
            "nothing to change: give allow, deny or reset",
        ));
    }
    if u.allow.len() + u.deny.len() > MAX_LIVE_RULES {
        return Err(EngineError::invalid(format!(
            "at most {MAX_LIVE_RULES} rules per request"
        )));
    }
    let mut next = if u.reset {
        LiveRules::default()
    } else {
        current.clone()
    };
    for d in &u.deny {
        next.apply(base, LiveChange::deny(d).map_err(policy_error)?)
            .map_err(policy_error)?;
    }
    for a in &u.allow {
        next.apply(base, LiveChange::allow(a).map_err(policy_error)?)
            .map_err(policy_error)?;
    }
    Ok(next)
}

fn rules_list(rules: &[cleanroom_policy::Rule]) -> Vec<String> {
    rules
        .iter()
        .map(|r| match r.ports.as_slice() {
            [] => r.host.to_string(),
            ports => {
                let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
                format!("{}:{}", r.host, ports.join(","))
            }
        })
        .collect()
}

impl NetworkState {
    /// Live allow rules as `host:port[,port]`.
    pub fn allow_list(&self) -> Vec<String> {
        rules_list(&self.live.allow)
    }

    /// Live deny rules (hosts; every port).
    pub fn deny_list(&self) -> Vec<String> {
        rules_list(&self.live.deny)
    }
}

impl Engine {
    /// The live rules a sandbox's gateway must start with (empty: none were ever given).
    /// Stored rules that do not decode are refused: the gateway is not started on a guess.
    pub(in crate::engine) fn stored_live_rules(
        &self,
        sandbox_id: &str,
    ) -> Result<LiveRules, EngineError> {
        match self.store.network_rules(sandbox_id)? {
            None => Ok(LiveRules::default()),
            Some(s) => s.rules.map_err(|why| {
                EngineError::internal(format!(
                    "the stored live egress rules of sandbox {sandbox_id} cannot be decoded: {why}"
                ))
            }),
        }
    }

    /// Live rules and effective hash of a sandbox (inspect). A policy that cannot be
    /// decoded has no effective rules to hash: `None`.
    pub fn network_state(&self, row: &SandboxRow) -> Result<Option<NetworkState>, EngineError> {
        let Ok(policy) = row.policy.get(&row.id) else {
            return Ok(None);
        };
        let live = self.stored_live_rules(&row.id)?;
        let effective_rules_hash = live.effective(&policy.network).rules_hash();
        Ok(Some(NetworkState {
            live,
            effective_rules_hash,
        }))
    }

    /// `UpdateSandboxNetwork` by `who` on a sandbox they may see.
    pub fn update_network(
        &self,
        who: &Principal,
        sbx: &OwnedSandbox,
        u: NetworkUpdate,
    ) -> Result<NetworkState, EngineError> {
        let row = sbx.row();
        let policy: std::sync::Arc<CompiledPolicy> = row.policy.get(&row.id)?.clone();
        // One change at a time per server: read, change, commit and apply stay in order.
        let _serial = lock(&self.egress.network_updates);
        // The row as it is now (the handle's may be older): a sandbox being torn down may
        // still have its gateway for a moment, and gets no new rules.
        let status = self.get_sandbox(&row.id)?.status;
        let running = matches!(status, ss::READY | ss::PAUSED);
        if !running || !self.egress.attached(&row.id) {
            return Err(EngineError::new(
                ErrorCode::SandboxNotReady,
                format!(
                    "sandbox {} has no running network (it is {}); live rules apply to a running sandbox",
                    row.id,
                    status.name()
                ),
            )
            .with("sandbox_id", &row.id));
        }
        let current = self.stored_live_rules(&row.id)?;
        let live = next_rules(&current, &policy.network, &u)?;
        let hash = live.effective(&policy.network).rules_hash();
        let state = NetworkState {
            live,
            effective_rules_hash: hash.clone(),
        };
        let attributes = serde_json::json!({
            "principal": who.name,
            "allow": u.allow.join(","),
            "deny": u.deny.join(","),
            "reset": u.reset,
            "cut": u.cut,
            "policy_hash": row.policy_hash,
            "effective_rules_hash": hash,
            "live_allow": state.allow_list().join(" "),
            "live_deny": state.deny_list().join(" "),
        });
        let mut what = Vec::new();
        if u.reset {
            what.push("reset".to_string());
        }
        what.extend(u.deny.iter().map(|d| format!("deny {d}")));
        what.extend(u.allow.iter().map(|a| format!("allow {a}")));
        if u.cut {
            what.push("cut".into());
        }
        let event = EventRow {
            sandbox_id: row.id.clone(),
            kind: RULES_EVENT.into(),
            message: format!(
                "{} changed the live egress rules: {}; effective rules {hash}",
                who.name,
                what.join(", ")
            ),
            attributes: attributes.to_string(),
            ..Default::default()
        };
        let claim = self.resigned_claim(row, &hash)?;
        let seq =
            self.store
                .set_network_rules(&row.id, &state.live, &hash, &event, claim.as_ref())?;
        self.events.committed(seq);
        // Committed: now the gateway. It may have stopped since the check above (a racing
        // teardown); the rules are then recorded for a sandbox that no longer runs.
        self.egress.replace_rules(&row.id, &state.live, u.cut);
        Ok(state)
    }

    /// The sandbox's claim row with its attestation signed again, now naming the effective
    /// rules' hash (`None`: this server signs nothing).
    fn resigned_claim(
        &self,
        row: &SandboxRow,
        rules_hash: &str,
    ) -> Result<Option<ClaimRow>, EngineError> {
        let Some(attestor) = self.attestor() else {
            return Ok(None);
        };
        let claim = self.store.get_claim(&row.id)?.unwrap_or_else(|| ClaimRow {
            sandbox_id: row.id.clone(),
            chain: "[]".into(),
            ..Default::default()
        });
        let chain: Vec<String> = serde_json::from_str(&claim.chain).unwrap_or_default();
        let binding = AgentBinding::parse(&claim.agent, &chain)?;
        let envelope = attestor
            .attest_with_rules(row, &binding, &claim.pool_id, rules_hash)
            .to_json();
        Ok(Some(ClaimRow { envelope, ..claim }))
    }
}
