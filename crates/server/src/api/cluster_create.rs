//! `CreateSandbox` through the cluster (docs/cluster.md "Placement", "Quota"): the
//! routing seam's create path, apart from the routing itself (`super::cluster_route`).
//! Placement picks the host and reads the owner's cluster-wide count in the same etcd
//! read; an idempotency key is claimed; a principal already at its limit is refused before
//! anything is made; the create runs on the host as the caller; then one etcd transaction
//! records the binding, counts it (again only below the limit: concurrent creates) and
//! finishes the claim. A sandbox the cluster could not record is removed again.

use super::cluster_pin::{pin_of, CreateShape};
use super::cluster_route::{is_json, routed, sandbox_id_of, ClusterRoute};
use crate::api::to_connect;
use crate::cluster::cluster_error;
use crate::cluster::route::Route;
use crate::identity::auth::Principal;
use crate::model::error::EngineError;
use bytes::Bytes;
use cleanroom_cluster::{Binding, Bound};
use cleanroom_proto::cleanroom::v1::*;
use cleanroom_vocab::ErrorCode;
use connectrpc::codec::CodecFormat;
use connectrpc::interceptor::{UnaryRequest, UnaryResponse};
use connectrpc::payload::Payload;
use connectrpc::{ConnectError, Next};
use std::time::Duration;

/// A principal at its cluster-wide limit: the single host's refusal (same code, same
/// `limit` detail), counted across every member.
pub(super) fn quota_reached(who: &Principal, limit: u32) -> EngineError {
    EngineError::resource_exhausted(format!(
        "{} already has {limit} live sandboxes across the cluster (serve --max-sandboxes-per-principal)",
        who.name
    ))
    .with("limit", limit.to_string())
}

impl ClusterRoute {
    pub(super) async fn create(
        &self,
        req: UnaryRequest,
        next: Next<'_>,
        who: Principal,
    ) -> Result<UnaryResponse, ConnectError> {
        let node = &self.0;
        let format = req.payload.format();
        let (key, runtime, shape) = {
            let m = req.payload.message::<CreateSandboxRequest>()?;
            (
                m.idempotency_key.clone(),
                Some(m.runtime.clone()).filter(|r| !r.is_empty()),
                CreateShape::of(m),
            )
        };
        // A restore goes where its files are; a warm pool here keeps it here.
        let pinned = pin_of(node, &who, &shape).await.map_err(to_connect)?;
        // Fails closed without etcd's quorum: nothing is placed blind. The owner's
        // cluster-wide count comes with the members (one read).
        let owner = who.owner().to_string();
        let (host, seen) = node
            .place(runtime.as_deref(), &owner, pinned.pin())
            .await
            .map_err(to_connect)?;
        let idem = (!key.is_empty()).then(|| (who.name.clone(), key.clone()));
        if let Some((owner, key)) = &idem {
            let mut waited = Duration::ZERO;
            loop {
                let claim = node
                    .bindings()
                    .claim(owner, key, &host.name, node.lease())
                    .await
                    .map_err(|e| to_connect(cluster_error(e)))?;
                match claim {
                    cleanroom_cluster::Claim::New => break,
                    cleanroom_cluster::Claim::Done { sandbox_id, .. } => {
                        return self.created_before(&sandbox_id, &who, format).await;
                    }
                    cleanroom_cluster::Claim::Pending { .. }
                        if waited < Duration::from_secs(30) =>
                    {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        waited += Duration::from_millis(200);
                    }
                    cleanroom_cluster::Claim::Pending { host } => {
                        return Err(to_connect(EngineError::new(
                            ErrorCode::Unavailable,
                            format!("a create with this idempotency key is still under way on {host}; retry"),
                        )));
                    }
                }
            }
        }
        // At the limit already: refused before anything is made (the binding's
        // transaction checks again, against concurrent creates).
        if seen.at_limit(node.per_owner) {
            if let Some((owner, key)) = &idem {
                let _ = node.bindings().release(owner, key).await;
            }
            return Err(to_connect(quota_reached(&who, node.per_owner)));
        }
        let made = if host.name == node.node_name() {
            next.run(req).await
        } else {
            let body = req.payload.encoded()?;
            let path = req.ctx.path().unwrap_or_default().to_string();
            node.forward_unary(&host.name, &host.peer, &path, &who, body, is_json(format))
                .await
                .map(|b| UnaryResponse::new(Payload::new(b, format)))
                .map_err(routed)
        };
        let resp = match made {
            Ok(r) => r,
            Err(e) => {
                if let Some((owner, key)) = &idem {
                    let _ = node.bindings().release(owner, key).await;
                }
                return Err(e);
            }
        };
        let id = resp
            .body
            .message::<CreateSandboxResponse>()?
            .sandbox
            .as_option()
            .map(|s| s.sandbox_id.clone())
            .unwrap_or_default();
        let binding = Binding {
            host: host.name.clone(),
            owner,
            created_at: crate::store::now_micros(),
        };
        let bound = node
            .bindings()
            .bind_counted(
                &id,
                &binding,
                idem.as_ref().map(|(o, k)| (o.as_str(), k.as_str())),
                node.per_owner,
                seen,
            )
            .await;
        let refused = match bound {
            Ok(Bound::Now | Bound::Already) => None,
            // Another create of this principal took the last slot meanwhile.
            Ok(Bound::OverLimit { .. }) => Some(quota_reached(&who, node.per_owner)),
            Err(e) => Some(cluster_error(e)),
        };
        if let Some(e) = refused {
            // Not recorded: nobody could reach it through the cluster. Undo (fail closed).
            self.undo(&id, &host, &who).await;
            if let Some((owner, key)) = &idem {
                let _ = node.bindings().release(owner, key).await;
            }
            return Err(to_connect(e));
        }
        node.remember(&id, &binding);
        Ok(resp)
    }

    /// Remove a sandbox just made on `host` that the cluster did not record.
    pub(super) async fn undo(
        &self,
        id: &str,
        host: &cleanroom_cluster::MemberInfo,
        who: &Principal,
    ) {
        let node = &self.0;
        if let Some(engine) = node
            .engine
            .upgrade()
            .filter(|_| host.name == node.node_name())
        {
            let _ = engine.terminate_sandbox(id).await;
            return;
        }
        let undo = TerminateSandboxRequest {
            sandbox_id: id.to_string(),
            background: true,
            ..Default::default()
        };
        let body = Bytes::from(buffa::Message::encode_to_vec(&undo));
        let path = "/cleanroom.v1.SandboxService/TerminateSandbox";
        let _ = node
            .forward_unary(&host.name, &host.peer, path, who, body, false)
            .await;
    }

    /// A retried create: the sandbox the first one made, as its host shows it now.
    async fn created_before(
        &self,
        id: &str,
        who: &Principal,
        format: CodecFormat,
    ) -> Result<UnaryResponse, ConnectError> {
        let req = GetSandboxRequest {
            sandbox_id: id.to_string(),
            ..Default::default()
        };
        let got = self
            .get_as(who, "/cleanroom.v1.SandboxService/GetSandbox", req)
            .await?;
        let got: GetSandboxResponse = buffa::Message::decode_from_slice(&got)
            .map_err(|e| ConnectError::internal(format!("member answer: {e}")))?;
        Ok(UnaryResponse::new(Payload::from_message(
            CreateSandboxResponse {
                sandbox: got.sandbox,
                ..Default::default()
            },
            format,
        )))
    }

    /// A unary call for a sandbox, by protobuf, wherever it lives (as `who`).
    async fn get_as<M: buffa::Message>(
        &self,
        who: &Principal,
        path: &str,
        req: M,
    ) -> Result<Bytes, ConnectError> {
        let body = Bytes::from(req.encode_to_vec());
        let id = sandbox_id_of(&body, false).unwrap_or_default();
        match self.0.route(&id).await.map_err(to_connect)? {
            Route::Forward { host, link } => self
                .0
                .forward_unary(&host, &link, path, who, body, false)
                .await
                .map_err(routed),
            Route::Local | Route::Lost(_) => {
                let engine = self.0.engine.upgrade().ok_or_else(|| {
                    to_connect(crate::cluster::unreachable("the server is stopping".into()))
                })?;
                let sbx = engine.sandbox(who, &id).map_err(to_connect)?;
                let out = GetSandboxResponse {
                    sandbox: crate::api::sandbox_msg(sbx.row()).into(),
                    ..Default::default()
                };
                Ok(Bytes::from(buffa::Message::encode_to_vec(&out)))
            }
        }
    }
}
