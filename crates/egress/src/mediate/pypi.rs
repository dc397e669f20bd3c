//! Serving a mediated Python package index: simple index pages filtered to the pinned
//! files and rewritten to point back through the gateway, distribution files verified
//! against the requirements' `--hash` values and cached by that digest.
//!
//! A public index links its files on another host. The gateway rewrites each kept link to
//! `https://<index>/_cleanroom/files/sha256/<hex>/<file>` and remembers where the file
//! lives; asked for that path, it serves the file from the shared cache or fetches it
//! server-side from the index host or a declared file host (redirects followed only
//! within those), verifies it against the pinned digest the path names, caches it and
//! serves it. The file hosts are mediated too (never a plain allow): a direct request
//! there is judged like one on the index host.

use super::fetch::{fetch_at, origin, respond, upstream_bad, warned, Fetched, PROTO};
use crate::body::{text, Body};
use crate::ctx::Ctx;
use crate::event::EgressEvent;
use crate::registry::budget::Held;
use crate::registry::pypi::{self, FileLink, PypiRequest};
use crate::registry::BoundRegistry;
use bytes::Bytes;
use cleanroom_policy::lockfile::Digest;
use cleanroom_policy::DenyReason;
use hyper::{Response, StatusCode};

/// Largest index page accepted from the upstream.
const MAX_INDEX_BYTES: usize = 16 << 20;
/// Largest distribution file accepted from the upstream.
const MAX_FILE_BYTES: usize = 256 << 20;
/// Most redirects followed for one file.
const MAX_REDIRECTS: usize = 5;

/// The connection a request came on (the index host or a file host).
struct On<'a> {
    ctx: &'a Ctx,
    reg: &'a BoundRegistry,
    host: &'a str,
    port: u16,
    enforce: bool,
}

impl On<'_> {
    fn deny(&self, r: DenyReason, msg: String) -> Response<Body> {
        crate::ctx::denied(self.ctx, self.host, self.port, PROTO, r, msg)
    }

    fn bad(&self, msg: String) -> Response<Body> {
        upstream_bad(self.ctx, self.host, self.port, msg)
    }

    fn allowed(&self, what: &str, source: &str) {
        let mut ev = EgressEvent::allow(self.host, self.port, PROTO);
        ev.message = format!("pypi {what} ({source})");
        self.ctx.events.emit(ev);
    }

    /// Outside the lockfile: refused in enforce mode, an event in warn mode.
    fn unpinned(&self, msg: String) -> Option<Response<Body>> {
        if self.enforce {
            return Some(self.deny(DenyReason::LockfileViolation, msg));
        }
        warned(self.ctx, self.reg, msg);
        None
    }
}

pub(super) async fn handle(
    ctx: &Ctx,
    reg: &BoundRegistry,
    host: &str,
    port: u16,
    path: &str,
    enforce: bool,
) -> Response<Body> {
    let on = On {
        ctx,
        reg,
        host,
        port,
        enforce,
    };
    if !reg.serves(host, port) {
        return on.deny(
            DenyReason::RegistryNotAllowed,
            format!("{host}:{port} is not the registry's port"),
        );
    }
    let on_index = host == reg.host && port == reg.port;
    match pypi::classify(path) {
        PypiRequest::Index { name } if on_index => index(&on, path, &name).await,
        PypiRequest::Pinned {
            sha256,
            name,
            version,
            file,
        } if on_index => pinned(&on, &sha256, &name, &version, &file).await,
        PypiRequest::File { name, version } => {
            let link = FileLink {
                host: host.to_string(),
                port,
                path: path.to_string(),
            };
            by_path(&on, link, &name, &version).await
        }
        _ => {
            let msg = format!("GET {path} is not a package fetch the gateway serves");
            if enforce {
                return on.deny(DenyReason::RegistryNotAllowed, msg);
            }
            warned(ctx, reg, msg);
            match fetch_at(ctx, host, port, path, None, MAX_FILE_BYTES).await {
                Ok(f) => respond(f.status, &f.ctype, f.body, f.held),
                Err(resp) => resp,
            }
        }
    }
}

async fn index(on: &On<'_>, path: &str, name: &str) -> Response<Body> {
    if on.reg.pins.versions(name).is_none() {
        if let Some(refused) = on.unpinned(format!("package {name} is not in the lockfile")) {
            return refused;
        }
    }
    match fetch_index(on, path, name).await {
        Ok((page, held)) => {
            on.allowed(&format!("index {name}"), "upstream");
            respond(StatusCode::OK, "text/html", page, held)
        }
        Err(resp) => resp,
    }
}

/// Fetch `name`'s index page, rebuild it (filtered, links rewritten) and remember where
/// its files live.
async fn fetch_index(on: &On<'_>, path: &str, name: &str) -> Result<(Bytes, Held), Response<Body>> {
    let (ctx, reg) = (on.ctx, on.reg);
    // HTML only: the page is rebuilt from its links.
    let accept = hyper::header::HeaderValue::from_static("text/html");
    let f = fetch_at(
        ctx,
        &reg.host,
        reg.port,
        path,
        Some(accept),
        MAX_INDEX_BYTES,
    )
    .await?;
    if f.status != StatusCode::OK {
        return Err(respond(f.status, &f.ctype, f.body, f.held));
    }
    let Ok(html) = std::str::from_utf8(&f.body) else {
        return Err(on.bad(format!("index of {name} is not UTF-8")));
    };
    let base = FileLink {
        host: reg.host.clone(),
        port: reg.port,
        path: path.to_string(),
    };
    let pins = on.enforce.then_some(&reg.pins);
    let page = pypi::filter_index(html, name, pins, &base, &origin(reg));
    ctx.registries.pypi_links().learn(page.links);
    // The rebuilt page replaces the fetched one: same budget.
    Ok((Bytes::from(page.html), f.held))
}

/// A file through the gateway's rewritten link: named by the sha256 it must have.
async fn pinned(on: &On<'_>, d: &Digest, name: &str, version: &str, file: &str) -> Response<Body> {
    let what = format!("file {name}=={version} ({file})");
    if !on.reg.pins.digests(name, version).contains(d) {
        let msg = format!(
            "{name}=={version} ({file}, {}) is not pinned by the lockfile",
            d.key()
        );
        if let Some(refused) = on.unpinned(msg) {
            return refused;
        }
    }
    if let Some(hit) = from_cache(on, d, &what).await {
        return hit;
    }
    let links = on.ctx.registries.pypi_links();
    let link = match links.get(d) {
        Some(l) => l,
        None => {
            // pip reads the index first; when the location is not known (yet), the
            // index page says it.
            if let Err(resp) = fetch_index(on, &format!("/simple/{name}/"), name).await {
                return resp;
            }
            match links.get(d) {
                Some(l) => l,
                None => return not_linked(name, file),
            }
        }
    };
    if link.file_name() != file {
        return not_linked(name, file);
    }
    fetch_verified(on, link, std::slice::from_ref(d), &what).await
}

fn not_linked(name: &str, file: &str) -> Response<Body> {
    text(
        StatusCode::NOT_FOUND,
        None,
        format!("cleanroom: the index of {name} links no {file} with that sha256\n"),
    )
}

/// A distribution file named by its path (on the index host or a file host).
async fn by_path(on: &On<'_>, link: FileLink, name: &str, version: &str) -> Response<Body> {
    let digests = on.reg.pins.digests(name, version).to_vec();
    if digests.is_empty() {
        let msg = format!("{name}=={version} is not pinned by the lockfile");
        if let Some(refused) = on.unpinned(msg) {
            return refused;
        }
        return match follow(on, link).await {
            Ok(f) => respond(f.status, &f.ctype, f.body, f.held),
            Err(resp) => resp,
        };
    }
    let what = format!("file {name}=={version} ({})", link.file_name());
    // An index page said which of the release's files this is: the cache can answer.
    let known = on.ctx.registries.pypi_links().digest_at(&link);
    if let Some(d) = known.filter(|d| digests.contains(d)) {
        if let Some(hit) = from_cache(on, &d, &what).await {
            return hit;
        }
    }
    fetch_verified(on, link, &digests, &what).await
}

/// The verified artifact from the shared cache, if there.
async fn from_cache(on: &On<'_>, d: &Digest, what: &str) -> Option<Response<Body>> {
    let data = on.ctx.registries.cache()?.get(d).await?;
    let held = match on.ctx.registries.budget().hold(data.len()).await {
        Ok(h) => h,
        Err(e) => return Some(on.bad(e)),
    };
    on.allowed(what, "cache");
    Some(respond(
        StatusCode::OK,
        "application/octet-stream",
        data.into(),
        held,
    ))
}

/// Fetch the file at `link` whole, serve it only if it matches one of `digests`, and
/// cache it under the digest it matched.
async fn fetch_verified(
    on: &On<'_>,
    link: FileLink,
    digests: &[Digest],
    what: &str,
) -> Response<Body> {
    let f = match follow(on, link).await {
        Ok(f) => f,
        Err(resp) => return resp,
    };
    if f.status != StatusCode::OK {
        return respond(f.status, &f.ctype, f.body, f.held);
    }
    let Some(d) = digests
        .iter()
        .find(|d| crate::registry::cache::verify(d, &f.body))
    else {
        return on.deny(
            DenyReason::IntegrityMismatch,
            format!("{what}: the upstream's file matches none of the lockfile's hashes"),
        );
    };
    if let Some(cache) = on.ctx.registries.cache() {
        cache.put(d, f.body.clone()).await;
    }
    on.allowed(what, "upstream");
    respond(StatusCode::OK, "application/octet-stream", f.body, f.held)
}

/// GET `link`, following redirects server-side, only to the registry's host and its
/// declared file hosts (HTTPS).
async fn follow(on: &On<'_>, mut link: FileLink) -> Result<Fetched, Response<Body>> {
    for _ in 0..=MAX_REDIRECTS {
        if !on.reg.serves(&link.host, link.port) {
            return Err(on.deny(
                DenyReason::RegistryNotAllowed,
                format!(
                    "{}:{} is neither the index host nor a declared file host (declare it: \
                     `files=` in --registry-upstream, or the policy entry's `files:`)",
                    link.host, link.port
                ),
            ));
        }
        let f = fetch_at(
            on.ctx,
            &link.host,
            link.port,
            &link.path,
            None,
            MAX_FILE_BYTES,
        )
        .await?;
        if !f.status.is_redirection() {
            return Ok(f);
        }
        let Some(next) = f.location.as_deref().and_then(|l| pypi::resolve(&link, l)) else {
            return Err(on.bad(format!(
                "{}: a redirect to {:?} the gateway does not follow (HTTPS paths only)",
                link.path, f.location
            )));
        };
        link = next;
    }
    Err(on.bad(format!("more than {MAX_REDIRECTS} redirects")))
}
