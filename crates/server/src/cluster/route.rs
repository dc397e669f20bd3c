//! Where a call for a sandbox goes, and carrying it there.
//!
//! A sandbox lives on one host. A call for it on another member is sent to that host over
//! the member link as the caller ([`crate::cluster::peer`]), in the caller's own encoding
//! (Connect, protobuf or JSON: the bytes pass through untouched), and the owner's answer —
//! its messages or its error with the stable code — comes back as it was given. A sandbox
//! whose host's lease expired is `LOST`. Placement picks the host of a new sandbox
//! (`cleanroom_cluster::placement`).
//!
//! The decision: here when this host holds the sandbox (no etcd read at all: calls to a
//! host keep working without quorum); else etcd's binding says where; a binding this
//! member already read and the member links it last saw keep routing when etcd does not
//! answer; nothing known and etcd silent is `cluster_unavailable` (fail closed).

use crate::cluster::{cluster_error, ClusterNode};
use crate::identity::auth::Principal;
use crate::model::error::EngineError;
use bytes::{Buf, Bytes, BytesMut};
use cleanroom_cluster::{Binding, MemberInfo};
use futures::Stream;
use http::{HeaderValue, Request};
use http_body_util::{BodyExt, Full, Limited};

/// The largest answer or stream message taken from a member (the API's own bound).
const MAX_MESSAGE: usize = 256 << 20;

/// Where a sandbox's calls go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Served here (this host holds it, or nobody does: the local answer is not-found).
    Local,
    /// On member `host`, reached at `link`.
    Forward { host: String, link: String },
    /// Its host is no longer a member.
    Lost(Binding),
}

/// Where a new sandbox must (or should) go, whatever placement would pick.
#[derive(Debug, Clone, Copy)]
pub enum Pin<'a> {
    /// Placement decides.
    Any,
    /// This host when it fits (runtime, room, not drained): a warm pool of the caller's
    /// has a READY sandbox there.
    Prefer(&'a str),
    /// Only this host (it holds the snapshot restored from, whose files are nowhere else),
    /// drained or not; gone: `host_lost`, saying `why` (what is there).
    Must { host: &'a str, why: &'a str },
}

/// Why a forwarded call failed: here, or the owner's own answer.
#[derive(Debug)]
pub enum RouteError {
    Here(EngineError),
    Owner(connectrpc::ConnectError),
}

impl From<EngineError> for RouteError {
    fn from(e: EngineError) -> Self {
        RouteError::Here(e)
    }
}

fn unavailable(m: String) -> EngineError {
    crate::cluster::unreachable(m)
}

/// Connect's error JSON (a unary error body, a stream's end message's `error`).
fn owner_error(body: &[u8], host: &str) -> RouteError {
    match serde_json::from_slice::<connectrpc::ConnectError>(body) {
        Ok(e) => RouteError::Owner(e),
        Err(_) => RouteError::Here(unavailable(format!(
            "member {host} answered something that is not a Connect error"
        ))),
    }
}

impl ClusterNode {
    /// Where calls for sandbox `id` go.
    pub async fn route(&self, id: &str) -> Result<Route, EngineError> {
        if let Some(engine) = self.engine.upgrade() {
            if engine.store.get_sandbox(id)?.is_some() {
                return Ok(Route::Local);
            }
        }
        let b = match self.known(id) {
            Some(b) => b,
            None => match self.bindings().lookup(id).await.map_err(cluster_error)? {
                Some(b) => b,
                None => return Ok(Route::Local),
            },
        };
        self.remember(id, &b);
        self.route_to(b).await
    }

    /// Where calls for an execution that only its id names go (`console --attach exe_…`,
    /// `execution inspect exe_…` through any member): here when this host holds it; else
    /// the host this member found it on before; else every other live member is asked
    /// (`GetExecution`, as the caller: a host answers only what the caller may see there)
    /// and the one that has it is remembered. None: here (the local answer is
    /// `execution_not_found`). Asking every member costs one call each, once per
    /// execution per front door: fine for tens of hosts; an execution id that names its
    /// host would make it free (docs/cluster.md).
    pub async fn route_execution(&self, exe: &str, who: &Principal) -> Result<Route, EngineError> {
        if let Some(engine) = self.engine.upgrade() {
            if engine.store.get_execution(exe)?.is_some() {
                return Ok(Route::Local);
            }
        }
        if let Some(b) = self.known(exe) {
            return self.route_to(b).await;
        }
        let members = self.routing_members().await?;
        let ask = cleanroom_proto::cleanroom::v1::GetExecutionRequest {
            execution_id: exe.to_string(),
            ..Default::default()
        };
        let body = Bytes::from(buffa::Message::encode_to_vec(&ask));
        let path = "/cleanroom.v1.ExecutionService/GetExecution";
        let others = members
            .iter()
            .filter(|m| m.info.name != self.node_name() && !m.info.peer.is_empty());
        let found = futures::future::join_all(others.map(|m| {
            let body = body.clone();
            async move {
                self.forward_unary(&m.info.name, &m.info.peer, path, who, body, false)
                    .await
                    .ok()
                    .map(|_| m.info.name.clone())
            }
        }))
        .await
        .into_iter()
        .flatten()
        .next();
        let Some(host) = found else {
            return Ok(Route::Local);
        };
        let b = Binding {
            host,
            owner: who.owner().to_string(),
            created_at: 0,
        };
        self.remember(exe, &b);
        self.route_to(b).await
    }

    /// Where calls for something bound to `b.host` go (its member link, or `LOST`).
    async fn route_to(&self, b: Binding) -> Result<Route, EngineError> {
        if b.host == self.node_name() {
            return Ok(Route::Local);
        }
        match self.routing_members().await {
            Ok(ms) => Ok(
                match ms
                    .into_iter()
                    .find(|m| m.info.name == b.host && !m.info.peer.is_empty())
                {
                    Some(m) => Route::Forward {
                        host: b.host,
                        link: m.info.peer,
                    },
                    None => Route::Lost(b),
                },
            ),
            // etcd silent: a member link seen before still works (the owner decides).
            Err(e) => match self.link_of(&b.host) {
                Some(link) => Ok(Route::Forward { host: b.host, link }),
                None => Err(e),
            },
        }
    }

    /// The host for a new sandbox of `runtime`, and `owner`'s cluster-wide count read in
    /// the same transaction (fails closed without etcd's quorum). `pin`: a host the
    /// sandbox must go to, or should when it fits ([`Pin`]).
    pub async fn place(
        &self,
        runtime: Option<&str>,
        owner: &str,
        pin: Pin<'_>,
    ) -> Result<(MemberInfo, cleanroom_cluster::Count), EngineError> {
        let (members, count) = self.members_and_count(Some(owner)).await?;
        let members: Vec<MemberInfo> = members.into_iter().map(|m| m.info).collect();
        match pin {
            Pin::Any => {}
            Pin::Prefer(name) => {
                let fit = members.iter().find(|m| {
                    m.name == name
                        && cleanroom_cluster::placement::fits(m, runtime, self.recent(name))
                });
                if let Some(m) = fit {
                    self.placed(&m.name);
                    return Ok((m.clone(), count));
                }
            }
            Pin::Must { host, why } => {
                return match members.into_iter().find(|m| m.name == host && !m.peer.is_empty()) {
                    Some(m) => {
                        self.placed(&m.name);
                        Ok((m, count))
                    }
                    None => Err(EngineError::new(
                        cleanroom_vocab::ErrorCode::HostLost,
                        format!("{why} is on host {host}, which left the cluster (its membership lease expired)"),
                    )
                    .with("host", host)),
                };
            }
        }
        let seed = std::collections::hash_map::RandomState::new();
        let mut n = 0u64;
        let random = || {
            use std::hash::BuildHasher;
            n += 1;
            seed.hash_one(n)
        };
        let chosen =
            cleanroom_cluster::placement::choose(&members, runtime, |h| self.recent(h), random)
                .cloned()
                .ok_or_else(|| {
                    EngineError::resource_exhausted(format!(
                        "no cluster member can take a sandbox{}: none offers it or all are full",
                        runtime
                            .map(|r| format!(" of runtime {r}"))
                            .unwrap_or_default()
                    ))
                })?;
        self.placed(&chosen.name);
        Ok((chosen, count))
    }

    /// Send a unary call (`body` in the caller's encoding) to `host` as `who`.
    pub async fn forward_unary(
        &self,
        host: &str,
        link: &str,
        path: &str,
        who: &Principal,
        body: Bytes,
        json: bool,
    ) -> Result<Bytes, RouteError> {
        let ct = if json {
            "application/json"
        } else {
            "application/proto"
        };
        let req = request(link, path, ct, body)?;
        let resp = self.peers.send(host, link, who, req).await?;
        let ok = resp.status() == http::StatusCode::OK;
        let body = Limited::new(resp.into_body(), MAX_MESSAGE)
            .collect()
            .await
            .map_err(|e| unavailable(format!("member {host}: {e}")))?
            .to_bytes();
        if ok {
            Ok(body)
        } else {
            Err(owner_error(&body, host))
        }
    }

    /// Open a server stream (its one request message `first`) on `host` as `who`: its
    /// messages, then its error if it ended with one.
    pub async fn forward_stream(
        &self,
        host: &str,
        link: &str,
        path: &str,
        who: &Principal,
        first: Bytes,
        json: bool,
    ) -> Result<impl Stream<Item = Result<Bytes, RouteError>> + Send + 'static, RouteError> {
        let ct = if json {
            "application/connect+json"
        } else {
            "application/connect+proto"
        };
        let mut framed = BytesMut::with_capacity(first.len() + 5);
        framed.extend_from_slice(&[0]);
        framed.extend_from_slice(&(first.len() as u32).to_be_bytes());
        framed.extend_from_slice(&first);
        let req = request(link, path, ct, framed.freeze())?;
        let resp = self.peers.send(host, link, who, req).await?;
        if resp.status() != http::StatusCode::OK {
            let body = Limited::new(resp.into_body(), MAX_MESSAGE)
                .collect()
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            return Err(owner_error(&body, host));
        }
        let host = host.to_string();
        let state = (resp.into_body(), BytesMut::new(), false);
        Ok(futures::stream::unfold(
            state,
            move |(mut body, mut buf, done)| {
                let host = host.clone();
                async move {
                    if done {
                        return None;
                    }
                    loop {
                        if buf.len() >= 5 {
                            let flags = buf[0];
                            let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
                            if len > MAX_MESSAGE || flags & 0x01 != 0 {
                                let e = unavailable(format!(
                                    "member {host}: a stream message over the bound or compressed"
                                ));
                                return Some((Err(RouteError::Here(e)), (body, buf, true)));
                            }
                            if buf.len() >= 5 + len {
                                buf.advance(5);
                                let msg = buf.split_to(len).freeze();
                                if flags & 0x02 != 0 {
                                    // The end of the stream: an error, or none.
                                    let end: serde_json::Value =
                                        serde_json::from_slice(&msg).unwrap_or_default();
                                    return end.get("error").map(|e| {
                                        (
                                            Err(owner_error(e.to_string().as_bytes(), &host)),
                                            (body, buf, true),
                                        )
                                    });
                                }
                                return Some((Ok(msg), (body, buf, false)));
                            }
                        }
                        match body.frame().await {
                            Some(Ok(f)) => {
                                if let Ok(d) = f.into_data() {
                                    buf.extend_from_slice(&d);
                                }
                            }
                            Some(Err(e)) => {
                                let e =
                                    unavailable(format!("member {host}: the stream broke: {e}"));
                                return Some((Err(RouteError::Here(e)), (body, buf, true)));
                            }
                            None => {
                                let e =
                                    unavailable(format!("member {host}: the stream ended early"));
                                return Some((Err(RouteError::Here(e)), (body, buf, true)));
                            }
                        }
                    }
                }
            },
        ))
    }
}

fn request(
    link: &str,
    path: &str,
    ct: &'static str,
    body: Bytes,
) -> Result<Request<Full<Bytes>>, EngineError> {
    let uri = format!("{}{}", link.trim_end_matches('/'), path);
    let mut req = Request::post(uri)
        .body(Full::new(body))
        .map_err(|e| EngineError::internal(format!("member request: {e}")))?;
    let h = req.headers_mut();
    h.insert(http::header::CONTENT_TYPE, HeaderValue::from_static(ct));
    h.insert("connect-protocol-version", HeaderValue::from_static("1"));
    Ok(req)
}
