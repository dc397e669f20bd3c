//! The front door of the API's listener, ahead of the console, exposures, REST and
//! Connect: what a browser may do there.
//!
//! - **Preview hosts** (`serve --preview-domain`, [`crate::inbound::preview`]): a
//!   request whose host is `exp-<hex>.DOMAIN` is that exposure's, whatever its path; any
//!   other name under the domain is no exposure and never reaches the API.
//! - **No browser-made API calls.** The API's clients (the CLI, the SDKs, curl) are not
//!   browsers; a request a browser makes on behalf of a page carries `Origin` (every
//!   cross-origin or state-changing fetch and form post), `Sec-Fetch-Site` (every
//!   request from a secure context) or a `Referer`. Such a request is refused, before authentication:
//!   a page — one an exposed sandbox serves on this very origin, or any site the user
//!   visits — must not use credentials the browser adds on its own (a TLS client
//!   certificate, for one) against the API. The console, the API's one browser client,
//!   has a listener of its own (`--ui-listen`) with sessions and CSRF tokens; exposures
//!   (path-routed ones included) are for browsers and pass. A URL typed into the address
//!   bar (`Sec-Fetch-Site: none`, no `Origin`) passes too: the user asked for it.

use crate::api::errors::ApiBody;
use crate::inbound::http::State as InboundState;
use crate::inbound::preview::PreviewDomain;
use crate::model::error::{EngineError, ErrorCode};
use crate::rest::error::RestError;
use http::{header, Request, Response};
use hyper::body::Incoming;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The listener's service.
#[derive(Clone)]
pub struct Front {
    inner: crate::web::WebService,
    /// The API listener's rules; `None` on the console's listener (its pages are the
    /// browser client, under their own session and CSRF rules).
    main: Option<Arc<Main>>,
}

struct Main {
    preview: Option<PreviewDomain>,
    inbound: Arc<InboundState>,
}

impl Front {
    /// The API listener's front.
    pub fn main(
        inner: crate::web::WebService,
        inbound: Arc<InboundState>,
        preview: Option<PreviewDomain>,
    ) -> Front {
        Front {
            inner,
            main: Some(Arc::new(Main { preview, inbound })),
        }
    }

    /// The console listener's (no rule of its own here).
    pub fn console(inner: crate::web::WebService) -> Front {
        Front { inner, main: None }
    }

    /// The metrics listener's (`--metrics-listen`: /metrics alone, no page, no rule here).
    pub fn metrics(inner: crate::web::WebService) -> Front {
        Front { inner, main: None }
    }
}

/// The host a request names: HTTP/2's `:authority`, else HTTP/1.1's `Host`.
fn host_of(req: &Request<Incoming>) -> Option<&str> {
    req.uri()
        .authority()
        .map(|a| a.as_str())
        .or_else(|| req.headers().get(header::HOST)?.to_str().ok())
}

pub use crate::web::browser_made;

fn browser_refused() -> EngineError {
    EngineError::new(
        ErrorCode::PermissionDenied,
        "the API does not take requests a browser makes for a web page (Origin / Sec-Fetch-Site): the web console has its own listener (serve --ui-listen)",
    )
    .with("reason", "browser_request")
}

impl tower::Service<Request<Incoming>> for Front {
    type Response = Response<ApiBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Incoming>) -> Self::Future {
        if let Some(main) = &self.main {
            if let (Some(p), Some(host)) = (&main.preview, host_of(&req)) {
                if let Some(id) = p.exposure_of(host) {
                    let st = main.inbound.clone();
                    return Box::pin(async move {
                        let r = crate::inbound::http::preview(st, req, &id).await;
                        Ok(r.unwrap_or_else(|e| RestError::from(e).into_response()))
                    });
                }
                if p.covers(host) {
                    let e = EngineError::new(
                        ErrorCode::ExposureNotFound,
                        format!("{host} is no exposure of this server"),
                    );
                    return Box::pin(async move { Ok(RestError::from(e).into_response()) });
                }
            }
            let exposure = req.uri().path().starts_with(crate::inbound::EXPOSE_PREFIX);
            if !exposure && browser_made(req.headers()) {
                let e = browser_refused();
                return Box::pin(async move { Ok(RestError::from(e).into_response()) });
            }
        }
        tower::Service::call(&mut self.inner, req)
    }
}
