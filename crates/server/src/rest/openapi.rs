//! The OpenAPI 3 document of the REST routes, served at `/v1/openapi.json`. Written by
//! hand (`openapi.json` beside this file) and kept true by tests: the unit test below
//! checks that every route [`super::route`] knows is documented with the methods it takes
//! and nothing else is; the e2e suite `rest` validates the served document with a real
//! OpenAPI validator and calls every documented operation.

use serde_json::Value;

const DOCUMENT: &str = include_str!("openapi.json");

/// The document (parsed once).
pub fn document() -> Value {
    static DOC: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    DOC.get_or_init(|| serde_json::from_str(DOCUMENT).unwrap_or(Value::Null))
        .clone()
}

#[cfg(test)]
mod tests {
    use super::super::{accepts, route};
    use super::*;

    /// Every documented path and method, with `{param}` filled in.
    fn documented() -> Vec<(String, String)> {
        let doc = document();
        let paths = doc["paths"].as_object().expect("paths");
        let mut out = Vec::new();
        for (p, item) in paths {
            for m in ["get", "post", "delete", "put", "patch"] {
                if item.get(m).is_some() {
                    let filled = p
                        .split('/')
                        .map(|s| if s.starts_with('{') { "x1" } else { s })
                        .collect::<Vec<_>>()
                        .join("/");
                    out.push((filled, m.to_ascii_uppercase()));
                }
            }
        }
        out
    }

    #[test]
    fn the_document_names_exactly_the_routes_served() {
        let doc = documented();
        for (path, m) in &doc {
            let r = route(path).unwrap_or_else(|| panic!("documented but not routed: {path}"));
            let m = http::Method::from_bytes(m.as_bytes()).unwrap();
            assert!(accepts(&r, &m), "documented but not accepted: {m} {path}");
        }
        // Every route the router knows is documented (one sample path per route).
        for path in [
            "/metrics",
            "/v1/openapi.json",
            "/v1/sandboxes",
            "/v1/sandboxes/x1",
            "/v1/sandboxes/x1/status",
            "/v1/sandboxes/x1/exec",
            "/v1/sandboxes/x1/checkpoint",
            "/v1/checkpoints/x1/restore",
            "/v1/warm-pools",
            "/v1/warm-pools/x1",
            "/v1/warm-pools/x1/claim",
            "/v1/warm-pools/x1/release/x1",
            "/v1/warm-pools/x1/stats",
        ] {
            let r = route(path).unwrap_or_else(|| panic!("{path}"));
            for m in ["GET", "POST", "DELETE", "PUT", "PATCH"] {
                let documented = doc.iter().any(|(p, dm)| p == path && dm == m);
                let method = http::Method::from_bytes(m.as_bytes()).unwrap();
                assert_eq!(accepts(&r, &method), documented, "{m} {path}");
            }
        }
        for bad in [
            "/v1/",
            "/v1/sandboxes/",
            "/v1//x",
            "/v1/sandboxes/a/b/c",
            "/v2/x",
        ] {
            assert!(route(bad).is_none(), "{bad}");
        }
    }
}
