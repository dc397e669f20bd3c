//! `RunExecution` with a `create` through the cluster (docs/cluster.md "Placement"): the
//! sandbox it makes is placed like a `CreateSandbox`'s — placement picks the host (and reads
//! the owner's cluster-wide count with the members), the call runs there as the caller and
//! its stream is relayed — and is bound, with the owner's count, as soon as the stream's
//! first message (`started`) names it: routable through any member at once, not after the
//! host's reconciliation. A sandbox the cluster cannot record (the count is at the limit
//! after all, etcd does not answer) is removed again and the stream ends with that error.

use super::cluster_create::quota_reached;
use super::cluster_pin::{pin_of, CreateShape, Pinned};
use super::cluster_route::{is_json, routed, ClusterRoute};
use crate::api::to_connect;
use crate::cluster::{cluster_error, ClusterNode};
use crate::identity::auth::Principal;
use cleanroom_cluster::{Binding, Bound, Count, MemberInfo};
use cleanroom_proto::cleanroom::v1::*;
use connectrpc::interceptor::{NextStream, PayloadStream, StreamRequest, StreamResponse};
use connectrpc::payload::Payload;
use connectrpc::ConnectError;
use futures::StreamExt;
use std::sync::Arc;

/// What binding the sandbox named by the first `started` message needs.
struct Pending {
    node: Arc<ClusterNode>,
    host: MemberInfo,
    who: Principal,
    seen: Count,
}

impl Pending {
    /// Bind the sandbox `started` names; an error ends the stream (the sandbox is removed).
    async fn bind(self, msg: &Payload) -> Result<(), ConnectError> {
        let Ok(ev) = msg.message::<ExecutionStreamEvent>() else {
            return Ok(());
        };
        let Some(execution_stream_event::Payload::Started(started)) = &ev.payload else {
            return Ok(());
        };
        let Some(id) = started
            .sandbox
            .as_option()
            .map(|s| s.sandbox_id.clone())
            .filter(|s| !s.is_empty())
        else {
            return Ok(());
        };
        let node = &self.node;
        let binding = Binding {
            host: self.host.name.clone(),
            owner: self.who.owner().to_string(),
            created_at: crate::store::now_micros(),
        };
        let refused = match node
            .bindings()
            .bind_counted(&id, &binding, None, node.per_owner, self.seen)
            .await
        {
            Ok(Bound::Now | Bound::Already) => None,
            Ok(Bound::OverLimit { .. }) => Some(quota_reached(&self.who, node.per_owner)),
            Err(e) => Some(cluster_error(e)),
        };
        if let Some(e) = refused {
            ClusterRoute(node.clone())
                .undo(&id, &self.host, &self.who)
                .await;
            return Err(to_connect(e));
        }
        node.remember(&id, &binding);
        Ok(())
    }
}

impl ClusterRoute {
    /// A `RunExecution` whose `first` (and only) request message has a `create`.
    pub(super) async fn run_placed(
        &self,
        req: StreamRequest,
        first: Payload,
        next: NextStream<'_>,
        who: Principal,
        path: &str,
    ) -> Result<StreamResponse, ConnectError> {
        let node = &self.0;
        let format = first.format();
        let (runtime, shape) = {
            let create = first.message::<RunExecutionRequest>()?.create.as_option();
            (
                create.map(|c| c.runtime.clone()).filter(|r| !r.is_empty()),
                create.map(CreateShape::of),
            )
        };
        let pinned = match &shape {
            Some(shape) => pin_of(node, &who, shape).await.map_err(to_connect)?,
            None => Pinned::Any,
        };
        let owner = who.owner().to_string();
        let (host, seen) = node
            .place(runtime.as_deref(), &owner, pinned.pin())
            .await
            .map_err(to_connect)?;
        if seen.at_limit(node.per_owner) {
            return Err(to_connect(quota_reached(&who, node.per_owner)));
        }
        let resp: StreamResponse = if host.name == node.node_name() {
            let again: PayloadStream = Box::pin(futures::stream::once(async move { Ok(first) }));
            next.run(req, again).await?
        } else {
            let body = first.encoded()?;
            let s = node
                .forward_stream(&host.name, &host.peer, path, &who, body, is_json(format))
                .await
                .map_err(routed)?;
            let out: PayloadStream =
                Box::pin(s.map(move |r| r.map(|b| Payload::new(b, format)).map_err(routed)));
            StreamResponse::new(out)
        };
        let pending = Pending {
            node: node.clone(),
            host,
            who,
            seen,
        };
        Ok(resp.map_body(move |s| -> PayloadStream {
            Box::pin(futures::stream::unfold(
                (s, Some(pending), false),
                |(mut s, pending, done)| async move {
                    if done {
                        return None;
                    }
                    let item = s.next().await?;
                    match (item, pending) {
                        (Ok(msg), Some(p)) => match p.bind(&msg).await {
                            Ok(()) => Some((Ok(msg), (s, None, false))),
                            Err(e) => Some((Err(e), (s, None, true))),
                        },
                        (item, _) => Some((item, (s, None, false))),
                    }
                },
            ))
        }))
    }
}
