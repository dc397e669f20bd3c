//! The cluster's one routing seam (`serve --cluster`, docs/cluster.md): a Connect
//! interceptor after authentication and before every handler. It decides, per call, whether
//! this member serves it or the sandbox's host does, and does nothing else: the handlers
//! stay as they are, and the owning host's handlers check ownership themselves.
//!
//! - `CreateSandbox`: placement picks a host; the create runs there (as the caller), its
//!   binding is written to etcd with the owner's cluster-wide count, an idempotency key
//!   makes retries return the first sandbox (`super::cluster_create`).
//! - Calls that name a sandbox (`sandbox_id`, field 1 of every such request; `RunExecution`
//!   by its execution's): here when this host holds it, else on its host; `LOST` when the
//!   host is gone. A console ticket from another host names that host's QUIC endpoint.
//! - `ListSandboxes`: this host's, every other member's (as the caller), and the `LOST`
//!   ones the caller may see; `ListSnapshots` and `ListCheckpoints` likewise
//!   (`super::cluster_lists`).
//! - Anything else, and every call that came over the member link: served here.

use super::cluster_snapshots::{taken_id, BY_ARTIFACT};
use crate::api::to_connect;
use crate::cluster::peer::Forwarded;
use crate::cluster::route::{Route, RouteError};
use crate::cluster::{cluster_error, ClusterNode};
use crate::identity::auth::{principal_of, Principal};
use crate::model::error::EngineError;
use crate::model::owner::Owner;
use bytes::Bytes;
use cleanroom_cluster::Binding;
use cleanroom_proto::cleanroom::v1::*;
use cleanroom_vocab::ErrorCode;
use connectrpc::codec::CodecFormat;
use connectrpc::interceptor::{
    NextStream, PayloadStream, StreamRequest, StreamResponse, UnaryRequest, UnaryResponse,
};
use connectrpc::payload::Payload;
use connectrpc::{ConnectError, Next};
use futures::StreamExt;
use std::sync::Arc;

/// Unary methods whose request names a sandbox in field 1 (`sandbox_id`).
const UNARY: &[&str] = &[
    "SandboxService/GetSandbox",
    "SandboxService/DownloadSandboxFile",
    "SandboxService/TerminateSandbox",
    "ExecutionService/CreateExecution",
    "ExecutionService/AttachExecution",
    "ExecutionService/GetExecution",
    "ExecutionService/InspectExecution",
    "ExecutionService/CancelExecution",
    "ExecutionService/WriteExecutionStdin",
    "ExecutionService/CloseExecutionStdin",
    "ApprovalService/ListEgressRequests",
    "ApprovalService/DecideEgress",
    "AttestationService/GetAttestation",
    "FileService/WriteSandboxFile",
    "FileService/GetSandboxUpload",
    "FileService/CancelSandboxUpload",
    "FileService/StatSandboxFile",
    "FileService/ListSandboxFiles",
    "FileService/MakeSandboxDirectory",
    "FileService/RemoveSandboxFile",
    "InboundService/ExposeSandboxPort",
    "InboundService/UnexposeSandboxPort",
    "InboundService/ListSandboxExposures",
    "SandboxLifetimeService/SetSandboxTimeout",
    "NetworkService/UpdateSandboxNetwork",
    "WarmPoolService/ReleaseSandbox",
    "SnapshotService/PauseSandbox",
    "SnapshotService/ResumeSandbox",
    "SnapshotService/CreateSnapshot",
    "SnapshotService/CheckpointSandbox",
];

/// Server-streaming methods whose request names a sandbox in field 1.
const STREAMING: &[&str] = &[
    "SandboxService/StreamSandboxEvents",
    "ExecutionService/StreamExecution",
    "FileService/ReadSandboxFile",
    "FileService/ReadSandboxArchive",
];

const PACKAGE: &str = "/cleanroom.v1.";

fn method(path: &str) -> Option<&str> {
    path.strip_prefix(PACKAGE)
}

/// Calls that may name only an execution (field 2, `execution_id`, with no sandbox id):
/// routed to the host that holds the execution (`ClusterNode::route_execution`).
const BY_EXECUTION: &[&str] = &[
    "ExecutionService/AttachExecution",
    "ExecutionService/GetExecution",
    "ExecutionService/InspectExecution",
    "ExecutionService/CancelExecution",
    "ExecutionService/WriteExecutionStdin",
    "ExecutionService/CloseExecutionStdin",
    "ExecutionService/StreamExecution",
];

/// Field 1 of a message as a string: protobuf wire bytes or Connect JSON (`sandboxId`).
/// `None` when absent or unreadable (then the call is served here: the handler answers).
pub fn sandbox_id_of(bytes: &[u8], json: bool) -> Option<String> {
    string_field(bytes, json, 1, &["sandboxId", "sandbox_id"])
}

/// Field 2 (`execution_id`) of an execution call's request, like [`sandbox_id_of`].
pub fn execution_id_of(bytes: &[u8], json: bool) -> Option<String> {
    string_field(bytes, json, 2, &["executionId", "execution_id"])
}

/// String field `number` of a message (protobuf), or its JSON `names`; an empty one is
/// absent.
fn string_field(bytes: &[u8], json: bool, number: u64, names: &[&str]) -> Option<String> {
    if json {
        let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
        let s = names.iter().find_map(|n| v.get(*n))?.as_str()?;
        return Some(s.to_string()).filter(|s| !s.is_empty());
    }
    let mut b = bytes;
    let mut found = None;
    while !b.is_empty() {
        let (tag, rest) = varint(b)?;
        b = rest;
        let (field, wire) = (tag >> 3, tag & 7);
        match wire {
            0 => b = varint(b)?.1,
            1 => b = b.get(8..)?,
            5 => b = b.get(4..)?,
            2 => {
                let (len, rest) = varint(b)?;
                let len = usize::try_from(len).ok()?;
                let v = rest.get(..len)?;
                if field == number {
                    found = Some(std::str::from_utf8(v).ok()?.to_string());
                }
                b = rest.get(len..)?;
            }
            _ => return None,
        }
    }
    found.filter(|s| !s.is_empty())
}

fn varint(b: &[u8]) -> Option<(u64, &[u8])> {
    let mut v = 0u64;
    for (i, byte) in b.iter().enumerate().take(10) {
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, &b[i + 1..]));
        }
    }
    None
}

pub(super) fn is_json(f: CodecFormat) -> bool {
    matches!(f, CodecFormat::Json)
}

pub(super) fn routed(e: RouteError) -> ConnectError {
    match e {
        RouteError::Here(e) => to_connect(e),
        RouteError::Owner(e) => e,
    }
}

/// Can `who` see a sandbox whose binding names `owner`? (The same rule as on its host.)
pub(super) fn visible(who: &Principal, b: &Binding) -> bool {
    Owner::parse(&b.owner).is_ok_and(|o| who.can_see(&o))
}

fn lost_message(b: &Binding) -> String {
    format!(
        "host_lost: its host {} left the cluster (its membership lease expired)",
        b.host
    )
}

fn lost_sandbox(id: &str, b: &Binding) -> Sandbox {
    Sandbox {
        sandbox_id: id.to_string(),
        status: (SandboxStatus::SANDBOX_STATUS_LOST as i32).into(),
        message: lost_message(b),
        created_at: crate::api::ts(b.created_at),
        ..Default::default()
    }
}

fn lost_error(id: &str, b: &Binding) -> EngineError {
    EngineError::new(ErrorCode::HostLost, lost_message(b))
        .with("sandbox_id", id)
        .with("host", b.host.clone())
}

/// The routing interceptor (see the module docs).
pub struct ClusterRoute(pub Arc<ClusterNode>);

impl ClusterRoute {
    async fn list(
        &self,
        req: UnaryRequest,
        next: Next<'_>,
        who: Principal,
    ) -> Result<UnaryResponse, ConnectError> {
        let node = &self.0;
        let format = req.payload.format();
        let ask = req.payload.message::<ListSandboxesRequest>()?.clone();
        let path = req.ctx.path().unwrap_or_default().to_string();
        let mut out: ListSandboxesResponse = next.run(req).await?.body.take_message()?;
        let members = node.members().await.map_err(to_connect)?;
        let body = Bytes::from(buffa::Message::encode_to_vec(&ask));
        let others = members
            .iter()
            .filter(|m| m.info.name != node.node_name() && !m.info.peer.is_empty());
        let answers = futures::future::join_all(others.map(|m| {
            let body = body.clone();
            let (path, who) = (&path, &who);
            async move {
                let got = node
                    .forward_unary(&m.info.name, &m.info.peer, path, who, body, false)
                    .await;
                (m.info.name.clone(), got)
            }
        }))
        .await;
        for (host, got) in answers {
            match got.map(|b| buffa::Message::decode_from_slice(&b)) {
                Ok(Ok(ListSandboxesResponse { sandboxes, .. })) => out.sandboxes.extend(sandboxes),
                Ok(Err(e)) => {
                    tracing::warn!(host, error = %e, "unreadable sandbox list from a member")
                }
                Err(e) => {
                    // A member that cannot answer now: its sandboxes are missing from this
                    // list, and the caller is told so (not a silent partial answer).
                    return Err(routed(e));
                }
            }
        }
        // The sandboxes of members that are gone.
        let live: std::collections::HashSet<&str> =
            members.iter().map(|m| m.info.name.as_str()).collect();
        let bindings = node
            .bindings()
            .all()
            .await
            .map_err(|e| to_connect(cluster_error(e)))?;
        let me = who.owner().to_string();
        for (id, b) in bindings {
            let mine = b.owner == me;
            if live.contains(b.host.as_str())
                || !visible(&who, &b)
                || (ask.only_own && !mine)
                || !ask.labels.is_empty()
            {
                continue;
            }
            out.sandboxes.push(lost_sandbox(&id, &b));
        }
        Ok(UnaryResponse::new(Payload::from_message(out, format)))
    }

    /// A call for a sandbox on a host that is gone.
    fn lost(
        &self,
        m: &str,
        id: &str,
        b: &Binding,
        who: &Principal,
        format: CodecFormat,
    ) -> Result<Option<UnaryResponse>, ConnectError> {
        if !visible(who, b) {
            return Err(to_connect(EngineError::sandbox_not_found(id)));
        }
        match m {
            "SandboxService/GetSandbox" => Ok(Some(UnaryResponse::new(Payload::from_message(
                GetSandboxResponse {
                    sandbox: lost_sandbox(id, b).into(),
                    ..Default::default()
                },
                format,
            )))),
            _ => Err(to_connect(lost_error(id, b))),
        }
    }
}

/// A console ticket from owner `host`: naming the owner's endpoint (see
/// `crate::cluster::ticket`), or refused.
fn console_ticket(
    resp: UnaryResponse,
    host: &str,
    link: &str,
    format: CodecFormat,
) -> Result<UnaryResponse, ConnectError> {
    let mut t: AttachExecutionResponse = resp.body.take_message()?;
    t.quic_endpoint =
        crate::cluster::ticket::owner_endpoint(&t.quic_endpoint, host, link).map_err(to_connect)?;
    Ok(UnaryResponse::new(Payload::from_message(t, format)))
}

fn principal(ctx: &connectrpc::RequestContext) -> Result<Principal, ConnectError> {
    principal_of(ctx).map_err(to_connect)
}

#[connectrpc::async_trait]
impl connectrpc::Interceptor for ClusterRoute {
    async fn intercept_unary(
        &self,
        req: UnaryRequest,
        next: Next<'_>,
    ) -> Result<UnaryResponse, ConnectError> {
        if req.ctx.extensions().get::<Forwarded>().is_some() {
            return next.run(req).await;
        }
        let path = req.ctx.path().unwrap_or_default().to_string();
        let Some(m) = method(&path) else {
            return next.run(req).await;
        };
        if m == "SandboxService/CreateSandbox" {
            let who = principal(&req.ctx)?;
            return self.create(req, next, who).await;
        }
        if m == "SandboxService/ListSandboxes" {
            let who = principal(&req.ctx)?;
            return self.list(req, next, who).await;
        }
        if super::cluster_lists::EVERYWHERE.contains(&m) {
            let who = principal(&req.ctx)?;
            return self.list_everywhere(m, &path, req, next, who).await;
        }
        if BY_ARTIFACT.contains(&m) {
            let who = principal(&req.ctx)?;
            return self.by_artifact(m, &path, req, next, who).await;
        }
        if m.starts_with("WarmPoolService/") && m != "WarmPoolService/ReleaseSandbox" {
            let who = principal(&req.ctx)?;
            return self.pools(m, &path, req, next, who).await;
        }
        if !UNARY.contains(&m) {
            return next.run(req).await;
        }
        let format = req.payload.format();
        let body = req.payload.encoded()?;
        let who = principal(&req.ctx)?;
        let node = &self.0;
        let (id, route) = match sandbox_id_of(&body, is_json(format)) {
            Some(id) => {
                let r = node.route(&id).await;
                (id, r)
            }
            None => match execution_id_of(&body, is_json(format))
                .filter(|_| BY_EXECUTION.contains(&m))
            {
                Some(exe) => {
                    let r = node.route_execution(&exe, &who).await;
                    (exe, r)
                }
                None => return next.run(req).await,
            },
        };
        let terminate = m == "SandboxService/TerminateSandbox";
        let (resp, at) = match route.map_err(to_connect)? {
            Route::Local => (next.run(req).await?, None),
            Route::Forward { host, link } => {
                let b = node
                    .forward_unary(&host, &link, &path, &who, body, is_json(format))
                    .await
                    .map_err(routed)?;
                let resp = UnaryResponse::new(Payload::new(b, format));
                if m == "ExecutionService/AttachExecution" {
                    return console_ticket(resp, &host, &link, format);
                }
                (resp, Some((host, link)))
            }
            Route::Lost(b) if terminate && visible(&who, &b) => {
                // Forget it: its host is gone (a host that returns reclaims its own).
                node.bindings()
                    .unbind_counted(&id, Some(&b.owner))
                    .await
                    .map_err(|e| to_connect(cluster_error(e)))?;
                node.forget(&id);
                return Ok(UnaryResponse::new(Payload::from_message(
                    TerminateSandboxResponse {
                        sandbox: lost_sandbox(&id, &b).into(),
                        ..Default::default()
                    },
                    format,
                )));
            }
            Route::Lost(b) => match self.lost(m, &id, &b, &who, format)? {
                Some(r) => return Ok(r),
                None => return Err(to_connect(lost_error(&id, &b))),
            },
        };
        if let Some(taken) = taken_id(m, &resp)? {
            let (host, link) = match &at {
                Some((h, l)) => (h.as_str(), Some(l.as_str())),
                None => (node.node_name(), None),
            };
            self.record_taken(m, &taken, host, link, &who).await?;
        }
        let owner = node.known(&id).map(|b| b.owner);
        if terminate
            && node
                .bindings()
                .unbind_counted(&id, owner.as_deref())
                .await
                .is_ok()
        {
            node.forget(&id);
        }
        Ok(resp)
    }

    async fn intercept_streaming(
        &self,
        req: StreamRequest,
        mut inbound: PayloadStream,
        next: NextStream<'_>,
    ) -> Result<StreamResponse, ConnectError> {
        if req.ctx.extensions().get::<Forwarded>().is_some() {
            return next.run(req, inbound).await;
        }
        let path = req.ctx.path().unwrap_or_default().to_string();
        let m = method(&path).unwrap_or_default();
        let run = m == "ExecutionService/RunExecution";
        if !run && !STREAMING.contains(&m) {
            return next.run(req, inbound).await;
        }
        // Server streams: the one request message decides.
        let Some(first) = inbound.next().await else {
            return next.run(req, inbound).await;
        };
        let first = first?;
        let format = first.format();
        let id = if run {
            let r = first.message::<RunExecutionRequest>()?;
            // A create is placed like CreateSandbox (`super::cluster_run`).
            match r.create.as_option() {
                Some(_)
                    if r.execution
                        .as_option()
                        .is_none_or(|e| e.sandbox_id.is_empty()) =>
                {
                    let who = principal(&req.ctx)?;
                    return self.run_placed(req, first, next, who, &path).await;
                }
                Some(_) => None,
                None => r
                    .execution
                    .as_option()
                    .map(|e| e.sandbox_id.clone())
                    .filter(|s| !s.is_empty()),
            }
        } else {
            sandbox_id_of(&first.encoded()?, is_json(format))
        };
        let again =
            |p: Payload| -> PayloadStream { Box::pin(futures::stream::once(async move { Ok(p) })) };
        let exe = match &id {
            None if BY_EXECUTION.contains(&m) => {
                execution_id_of(&first.encoded()?, is_json(format))
            }
            _ => None,
        };
        let who = principal(&req.ctx)?;
        let (id, route) = match (id, exe) {
            (Some(id), _) => {
                let r = self.0.route(&id).await;
                (id, r)
            }
            (None, Some(exe)) => {
                let r = self.0.route_execution(&exe, &who).await;
                (exe, r)
            }
            (None, None) => return next.run(req, again(first)).await,
        };
        match route.map_err(to_connect)? {
            Route::Local => next.run(req, again(first)).await,
            Route::Forward { host, link } => {
                let body = first.encoded()?;
                let s = self
                    .0
                    .forward_stream(&host, &link, &path, &who, body, is_json(format))
                    .await
                    .map_err(routed)?;
                let out: PayloadStream =
                    Box::pin(s.map(move |r| r.map(|b| Payload::new(b, format)).map_err(routed)));
                Ok(StreamResponse::new(out))
            }
            Route::Lost(b) if visible(&who, &b) && m == "SandboxService/StreamSandboxEvents" => {
                let ev = SandboxEvent {
                    sandbox_id: id.clone(),
                    r#type: "host_lost".into(),
                    sandbox_status: (SandboxStatus::SANDBOX_STATUS_LOST as i32).into(),
                    message: lost_message(&b),
                    ..Default::default()
                };
                let p = Payload::from_message(ev, format);
                Ok(StreamResponse::new(again(p)))
            }
            Route::Lost(b) if visible(&who, &b) => Err(to_connect(lost_error(&id, &b))),
            Route::Lost(_) => Err(to_connect(EngineError::sandbox_not_found(&id))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sandbox_id_is_read_from_field_one_in_both_encodings() {
        let r = StreamExecutionRequest {
            sandbox_id: "sbx-1".into(),
            execution_id: "exe-2".into(),
            after_sequence: 300,
            ..Default::default()
        };
        let wire = buffa::Message::encode_to_vec(&r);
        assert_eq!(sandbox_id_of(&wire, false).as_deref(), Some("sbx-1"));
        let r = GetSandboxRequest::default();
        assert_eq!(
            sandbox_id_of(&buffa::Message::encode_to_vec(&r), false),
            None
        );
        assert_eq!(
            sandbox_id_of(br#"{"sandboxId":"sbx-3","path":"/x"}"#, true).as_deref(),
            Some("sbx-3")
        );
        assert_eq!(sandbox_id_of(b"\xff\xff", false), None);
        assert_eq!(sandbox_id_of(b"{", true), None);
    }
}
