//! The Connect interceptor that authenticates every RPC: [`crate::identity::auth`] decides who is
//! calling; this puts the answer (or the refusal, as a Connect error with its detail)
//! into the request. Here, not in `auth`, so that `auth` needs nothing of the API.

use crate::api::to_connect;
use crate::identity::auth::{Authenticator, Peer};
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
        let principal = self
            .0
            .authenticate(
                ctx.extensions().get::<Peer>(),
                ctx.header(http::header::AUTHORIZATION)
                    .map(|v| v.as_bytes()),
            )
            .map_err(to_connect)?;
        // The connection leaves the pre-authentication budget for the principal's share
        // (crate::budgets::admission); past the share the request is refused and the connection
        // closed.
        if let Some(gate) = ctx
            .extensions()
            .get::<Arc<crate::budgets::admission::Gate>>()
        {
            gate.authenticate(&principal).map_err(|r| {
                to_connect(
                    EngineError::resource_exhausted(format!("connection refused: {r}"))
                        .with("principal", principal.name.clone()),
                )
            })?;
        }
        ctx.extensions_mut().insert(principal);
        Ok(())
    }
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
