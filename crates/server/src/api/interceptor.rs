//! The Connect interceptor that authenticates every RPC: [`crate::identity::auth`] decides who is
//! calling; this puts the answer (or the refusal, as a Connect error with its detail)
//! into the request. Here, not in `auth`, so that `auth` needs nothing of the API.

use crate::api::to_connect;
use crate::identity::auth::{Authenticator, Peer, Principal, SessionPrincipal};
use crate::model::error::EngineError;
use std::sync::Arc;

/// The Connect interceptor that authenticates every RPC (unary and streaming) and puts
/// the [`Principal`] into the request's extensions for the handlers.
pub struct AuthInterceptor(pub Arc<Authenticator>);

impl AuthInterceptor {
    fn resolve(
        &self,
        ctx: &mut connectrpc::RequestContext,
    ) -> Result<(), connectrpc::ConnectError> {
        let principal = admit(
            &self.0,
            ctx.extensions(),
            ctx.header(http::header::AUTHORIZATION)
                .map(|v| v.as_bytes()),
        )
        .map_err(to_connect)?;
        ctx.extensions_mut().insert(principal);
        Ok(())
    }
}

/// The caller of a request that arrived with these extensions (the listener's [`Peer`] and
/// admission gate) and `Authorization` header. Every HTTP route authenticates here: the
/// Connect services through [`AuthInterceptor`], REST and `/metrics` in [`crate::rest`].
pub fn admit(
    auth: &Authenticator,
    extensions: &http::Extensions,
    authorization: Option<&[u8]>,
) -> Result<Principal, EngineError> {
    // A web console session stands for its principal (crate::web verified the cookie and
    // the CSRF token); an Authorization header on the same request still wins.
    let principal = match (extensions.get::<SessionPrincipal>(), authorization) {
        (Some(SessionPrincipal(p)), None) => p.clone(),
        _ => auth.authenticate(extensions.get::<Peer>(), authorization)?,
    };
    // The connection leaves the pre-authentication budget for the principal's share
    // (crate::budgets::admission); past the share the request is refused and the connection
    // closed.
    if let Some(gate) = extensions.get::<Arc<crate::budgets::admission::Gate>>() {
        gate.authenticate(&principal).map_err(|r| {
            EngineError::resource_exhausted(format!("connection refused: {r}"))
                .with("principal", principal.name.clone())
        })?;
    }
    Ok(principal)
}

#[connectrpc::async_trait]
impl connectrpc::Interceptor for AuthInterceptor {
    async fn intercept_unary(
        &self,
        mut req: connectrpc::interceptor::UnaryRequest,
        next: connectrpc::Next<'_>,
    ) -> Result<connectrpc::interceptor::UnaryResponse, connectrpc::ConnectError> {
        self.resolve(&mut req.ctx)?;
        next.run(req).await
    }

    async fn intercept_streaming(
        &self,
        mut req: connectrpc::interceptor::StreamRequest,
        inbound: connectrpc::PayloadStream,
        next: connectrpc::NextStream<'_>,
    ) -> Result<connectrpc::interceptor::StreamResponse, connectrpc::ConnectError> {
        self.resolve(&mut req.ctx)?;
        next.run(req, inbound).await
    }
}
