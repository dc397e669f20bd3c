//! Serving a mediated Python package index: simple index pages filtered to the pinned
//! files, distribution files verified against the requirements' `--hash` values.
//!
//! Files are not taken from the shared cache: a cache entry is keyed by digest, and a
//! release's pins list several files (wheels, sdist) whose names the digest alone does not
//! tell apart.

use super::pypi::{self, PypiRequest};
use super::serve::{deny, fetch, passthrough, respond, upstream_bad, warned, PROTO};
use super::BoundRegistry;
use crate::event::EgressEvent;
use crate::http::Body;
use crate::Ctx;
use bytes::Bytes;
use cleanroom_policy::DenyReason;
use hyper::{Response, StatusCode};

/// Largest index page accepted from the upstream.
const MAX_INDEX_BYTES: usize = 16 << 20;
/// Largest distribution file accepted from the upstream.
const MAX_FILE_BYTES: usize = 256 << 20;

pub(super) async fn handle(
    ctx: &Ctx,
    reg: &BoundRegistry,
    path: &str,
    enforce: bool,
) -> Response<Body> {
    match pypi::classify(path) {
        PypiRequest::Index { name } => {
            if reg.pins.versions(&name).is_none() {
                let msg = format!("package {name} is not in the lockfile");
                if enforce {
                    return deny(ctx, reg, DenyReason::LockfileViolation, msg);
                }
                warned(ctx, reg, msg);
            }
            // HTML only: the page is rebuilt from its links.
            let accept = hyper::header::HeaderValue::from_static("text/html");
            let (status, ctype, body, held) =
                match fetch(ctx, reg, path, Some(accept), MAX_INDEX_BYTES).await {
                    Ok(r) => r,
                    Err(resp) => return resp,
                };
            if status != StatusCode::OK {
                return respond(status, &ctype, body, held);
            }
            let Ok(html) = std::str::from_utf8(&body) else {
                return upstream_bad(
                    ctx,
                    &reg.host,
                    reg.port,
                    format!("index of {name} is not UTF-8"),
                );
            };
            let page = pypi::filter_index(html, &name, enforce.then_some(&reg.pins));
            let mut ev = EgressEvent::allow(&reg.host, reg.port, PROTO);
            ev.message = format!("pypi index {name}");
            ctx.events.emit(ev);
            respond(StatusCode::OK, "text/html", Bytes::from(page), held)
        }
        PypiRequest::File { name, version } => {
            let digests = reg.pins.digests(&name, &version);
            if digests.is_empty() {
                let msg = format!("{name}=={version} is not pinned by the lockfile");
                if enforce {
                    return deny(ctx, reg, DenyReason::LockfileViolation, msg);
                }
                warned(ctx, reg, msg);
                return passthrough(ctx, reg, path, None).await;
            }
            let (status, ctype, body, held) =
                match fetch(ctx, reg, path, None, MAX_FILE_BYTES).await {
                    Ok(r) => r,
                    Err(resp) => return resp,
                };
            if status != StatusCode::OK {
                return respond(status, &ctype, body, held);
            }
            if !digests.iter().any(|d| super::cache::verify(d, &body)) {
                return deny(
                    ctx,
                    reg,
                    DenyReason::IntegrityMismatch,
                    format!("{name}=={version}: the upstream's file matches none of the lockfile's hashes"),
                );
            }
            let mut ev = EgressEvent::allow(&reg.host, reg.port, PROTO);
            ev.message = format!("pypi file {name}=={version}");
            ctx.events.emit(ev);
            respond(StatusCode::OK, "application/octet-stream", body, held)
        }
        PypiRequest::Other => {
            let msg = format!("GET {path} is not a package fetch the gateway serves");
            if enforce {
                return deny(ctx, reg, DenyReason::RegistryNotAllowed, msg);
            }
            warned(ctx, reg, msg);
            passthrough(ctx, reg, path, None).await
        }
    }
}
