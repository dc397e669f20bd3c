//! Git smart HTTP (`sandbox.git`): only the four endpoints of the smart protocol, only for
//! declared repositories; `git-receive-pack` (push) only where `access: push`.
//!
//! * `GET <repo>/info/refs?service=git-upload-pack`, `POST <repo>/git-upload-pack`: fetch.
//! * `GET <repo>/info/refs?service=git-receive-pack`, `POST <repo>/git-receive-pack`: push.
//!
//! Everything else on a git host (the dumb protocol's object paths, web pages, other
//! repositories) is `registry_not_allowed`. Request bodies are bounded and re-sent with a
//! length; responses stream back unchanged.

use super::fetch::{open_upstream, upstream_bad, PROTO};
use crate::body::Body;
use crate::ctx::Ctx;
use crate::event::EgressEvent;
use cleanroom_policy::git::{repo_key, GitAccess};
use cleanroom_policy::DenyReason;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response};

/// Largest request body forwarded (a push's pack is buffered before it is sent on).
const MAX_GIT_BODY: usize = 128 << 20;

/// Which side of the protocol a request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    UploadPack,
    ReceivePack,
}

/// A smart-HTTP request: the repository path it names and its service.
#[derive(Debug, PartialEq, Eq)]
pub struct GitCall {
    pub repo: String,
    pub service: Service,
}

/// Classify a request as a smart-HTTP call; `None` for anything else.
pub fn classify(method: &Method, path_and_query: &str) -> Option<GitCall> {
    let (path, query) = match path_and_query.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path_and_query, None),
    };
    if path.contains('%') {
        return None;
    }
    let (repo, service) = match (method, query) {
        (&Method::GET, Some(q)) => {
            let repo = path.strip_suffix("/info/refs")?;
            let service = match q {
                "service=git-upload-pack" => Service::UploadPack,
                "service=git-receive-pack" => Service::ReceivePack,
                _ => return None,
            };
            (repo, service)
        }
        (&Method::POST, None) => {
            if let Some(r) = path.strip_suffix("/git-upload-pack") {
                (r, Service::UploadPack)
            } else {
                (
                    path.strip_suffix("/git-receive-pack")?,
                    Service::ReceivePack,
                )
            }
        }
        _ => return None,
    };
    Some(GitCall {
        repo: repo_key(repo).to_string(),
        service,
    })
}

/// Judge a smart-HTTP call against the declared repositories and forward it.
pub(super) async fn serve(
    req: Request<Incoming>,
    call: GitCall,
    ctx: &Ctx,
    host: &str,
    port: u16,
) -> Response<Body> {
    let refuse = |r: DenyReason, msg: String| crate::ctx::denied(ctx, host, port, PROTO, r, msg);
    let declared = ctx
        .registries
        .git_repos(host, port)
        .find(|g| g.path == call.repo);
    let Some(rule) = declared else {
        return refuse(
            DenyReason::RegistryNotAllowed,
            format!(
                "git repository https://{host}:{port}{} is not declared in sandbox.git",
                call.repo
            ),
        );
    };
    if call.service == Service::ReceivePack && rule.access != GitAccess::Push {
        return refuse(
            DenyReason::GitPushNotAllowed,
            format!(
                "git push to https://{host}:{port}{}: the repository is declared with access: fetch",
                call.repo
            ),
        );
    }
    let (parts, body) = req.into_parts();
    let (body, _held) = match ctx.registries.budget().collect(body, MAX_GIT_BODY).await {
        Ok(b) => b,
        Err(e) => {
            return refuse(
                DenyReason::RequestMalformed,
                format!("git request body: {e} (limit {MAX_GIT_BODY} bytes)"),
            )
        }
    };
    let mut sender = match open_upstream(ctx, host, port).await {
        Ok(s) => s,
        Err(resp) => return resp,
    };
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    let authority = if port == 443 {
        host.to_string()
    } else {
        format!("{host}:{port}")
    };
    let mut b = Request::builder()
        .method(parts.method.clone())
        .uri(&path)
        .header(hyper::header::HOST, authority);
    // Only what the protocol needs; credentials are never forwarded.
    for name in [
        "content-type",
        "content-encoding",
        "accept",
        "git-protocol",
        "user-agent",
    ] {
        for v in parts.headers.get_all(name) {
            b = b.header(name, v);
        }
    }
    let upstream_req = match b.body(Full::new(body).map_err(|n| match n {}).boxed()) {
        Ok(r) => r,
        Err(e) => return upstream_bad(ctx, host, port, e.to_string()),
    };
    match sender.send_request(upstream_req).await {
        Ok(resp) => {
            let mut ev = EgressEvent::allow(host, port, PROTO);
            ev.message = format!(
                "git {} {}",
                match call.service {
                    Service::UploadPack => "fetch",
                    Service::ReceivePack => "push",
                },
                call.repo
            );
            ctx.events.emit(ev);
            resp.map(|b| crate::relay::FlushFirst::new(b.map_err(Into::into)).boxed())
        }
        Err(e) => upstream_bad(ctx, host, port, e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smart_http_only() {
        let c = |m: &Method, p: &str| classify(m, p);
        assert_eq!(
            c(
                &Method::GET,
                "/org/app.git/info/refs?service=git-upload-pack"
            ),
            Some(GitCall {
                repo: "/org/app".into(),
                service: Service::UploadPack
            })
        );
        assert_eq!(
            c(&Method::POST, "/org/app/git-receive-pack").map(|g| g.service),
            Some(Service::ReceivePack)
        );
        assert_eq!(
            c(&Method::GET, "/org/app/info/refs?service=git-receive-pack").map(|g| g.service),
            Some(Service::ReceivePack)
        );
        for (m, p) in [
            (Method::GET, "/org/app/info/refs"),
            (Method::GET, "/org/app/HEAD"),
            (Method::GET, "/org/app/objects/info/packs"),
            (Method::POST, "/org/app/info/refs?service=git-upload-pack"),
            (Method::GET, "/org/app/git-upload-pack"),
            (Method::POST, "/org/app/git-upload-pack?x=1"),
            (
                Method::GET,
                "/org/app/info/refs?service=git-upload-pack&x=1",
            ),
            (Method::GET, "/org%2fapp/info/refs?service=git-upload-pack"),
        ] {
            assert_eq!(c(&m, p), None, "{m} {p}");
        }
    }
}
