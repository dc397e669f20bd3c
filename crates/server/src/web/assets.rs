//! The console's files, compiled into the binary (`include_str!`): one HTML shell for
//! every page (the module routes on the path), five ES modules, one stylesheet. No build
//! step, no framework, nothing fetched from elsewhere at run time (docs/web.md says why).

use super::full;
use crate::api::errors::ApiBody;
use http::{header, Response, StatusCode};

/// The shell every page path answers with.
pub const INDEX: &str = include_str!("static/index.html");
/// The page logic (an ES module: no inline script anywhere).
pub const APP_JS: &str = include_str!("static/app.js");
/// API calls, DOM building and output neutralising the pages share.
pub const LIB_JS: &str = include_str!("static/lib.js");
/// The sandboxes page (a live list that re-reads what changed).
pub const SANDBOXES_JS: &str = include_str!("static/sandboxes.js");
/// The approvals and pools pages.
pub const LISTS_JS: &str = include_str!("static/lists.js");
/// The sandbox page.
pub const SANDBOX_JS: &str = include_str!("static/sandbox.js");
pub const APP_CSS: &str = include_str!("static/app.css");

/// The answer to `GET path` under `/ui/`.
pub fn serve(path: &str) -> Response<ApiBody> {
    let (ct, body) = match path {
        "/ui/static/app.js" => ("text/javascript; charset=utf-8", APP_JS),
        "/ui/static/lib.js" => ("text/javascript; charset=utf-8", LIB_JS),
        "/ui/static/sandboxes.js" => ("text/javascript; charset=utf-8", SANDBOXES_JS),
        "/ui/static/lists.js" => ("text/javascript; charset=utf-8", LISTS_JS),
        "/ui/static/sandbox.js" => ("text/javascript; charset=utf-8", SANDBOX_JS),
        "/ui/static/app.css" => ("text/css; charset=utf-8", APP_CSS),
        p if p.starts_with("/ui/static/") => {
            return Response::builder()
                .status(StatusCode::NOT_FOUND)
                .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
                .body(full("not found"))
                .unwrap_or_else(|_| Response::new(ApiBody::default()));
        }
        _ => ("text/html; charset=utf-8", INDEX),
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, ct)
        .body(full(body))
        .unwrap_or_else(|_| Response::new(ApiBody::default()))
}
