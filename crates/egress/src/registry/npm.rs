//! The npm registry's URL scheme, and packument (metadata) filtering.
//!
//! Package managers fetch a packument (`GET /<name>`, `GET /@scope%2fname`) to resolve
//! versions and a tarball (`GET /<name>/-/<name>-<version>.tgz`) per package. Anything
//! else (publish, search, audit, login, dist-tag edits) is not a fetch of a pinned artifact.

use cleanroom_policy::lockfile::{valid_npm_name, Pins};
use serde_json::Value;

/// What one request path asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum NpmRequest {
    /// Metadata of a package.
    Packument { name: String },
    /// One version's tarball.
    Tarball { name: String, version: String },
    /// Anything else.
    Other,
}

/// Classify a request path (origin-form, without query: a query is `Other`).
pub fn classify(path_and_query: &str) -> NpmRequest {
    if path_and_query.contains('?') || path_and_query.contains('#') {
        return NpmRequest::Other;
    }
    let Some(p) = path_and_query.strip_prefix('/') else {
        return NpmRequest::Other;
    };
    // The scope separator may arrive encoded; nothing else may be.
    let p = p.replace("%2f", "/").replace("%2F", "/");
    if p.contains('%') || p.contains("//") {
        return NpmRequest::Other;
    }
    let segs: Vec<&str> = p.split('/').collect();
    let (name, rest): (String, &[&str]) = match segs.first() {
        Some(s) if s.starts_with('@') && segs.len() >= 2 => {
            (format!("{}/{}", s, segs[1]), &segs[2..])
        }
        Some(s) => (s.to_string(), &segs[1..]),
        None => return NpmRequest::Other,
    };
    if !valid_npm_name(&name) {
        return NpmRequest::Other;
    }
    match rest {
        [] => NpmRequest::Packument { name },
        ["-", file] => {
            let base = name.rsplit('/').next().unwrap_or_default();
            let version = file
                .strip_prefix(base)
                .and_then(|f| f.strip_prefix('-'))
                .and_then(|f| f.strip_suffix(".tgz"));
            match version {
                Some(v) if !v.is_empty() => NpmRequest::Tarball {
                    name,
                    version: v.to_string(),
                },
                _ => NpmRequest::Other,
            }
        }
        _ => NpmRequest::Other,
    }
}

/// The gateway's URL of a tarball: what the sandbox fetches it from.
pub fn tarball_url(origin: &str, name: &str, version: &str) -> String {
    let base = name.rsplit('/').next().unwrap_or(name);
    format!("{origin}/{name}/-/{base}-{version}.tgz")
}

/// npm's own calls beside an install that a mediated registry refuses (enforce mode) and
/// npm handles by itself: its audit (`POST /-/npm/v1/security/…`) and its update check
/// (the packument of `npm` itself, when the lockfile does not pin it). The refusal is
/// recorded but is not worth a warning on every `npm ci`; the reason is returned.
pub fn housekeeping(method: &hyper::Method, path: &str, pins: &Pins) -> Option<String> {
    if *method == hyper::Method::POST && path.starts_with("/-/npm/v1/security/") {
        return Some(format!(
            "POST {path}: npm's audit is not served through a mediated registry (npm skips it)"
        ));
    }
    if *method == hyper::Method::GET && path == "/npm" && pins.versions("npm").is_none() {
        return Some(
            "GET /npm: npm's update check is not served (npm is not in the lockfile)".into(),
        );
    }
    None
}

/// Rewrite a packument: every tarball URL points back through the gateway (`origin`, e.g.
/// `https://registry.test:8443`); with `pins`, only pinned versions remain (and the
/// dist-tags and times that name them), so a resolver can never choose another. Returns
/// how many versions were hidden.
pub fn filter_packument(
    doc: &mut Value,
    name: &str,
    origin: &str,
    pins: Option<&Pins>,
) -> Result<usize, String> {
    let obj = doc
        .as_object_mut()
        .ok_or("packument is not a JSON object")?;
    if obj
        .get("name")
        .and_then(Value::as_str)
        .is_some_and(|n| n != name)
    {
        return Err(format!("packument names another package than {name}"));
    }
    let versions = obj
        .get_mut("versions")
        .and_then(Value::as_object_mut)
        .ok_or("packument has no versions object")?;
    let before = versions.len();
    if let Some(pins) = pins {
        let keep = pins.versions(name);
        versions.retain(|v, _| keep.is_some_and(|k| k.contains_key(v)));
    }
    let hidden = before - versions.len();
    for (v, meta) in versions.iter_mut() {
        if let Some(dist) = meta.get_mut("dist").and_then(Value::as_object_mut) {
            dist.insert("tarball".into(), tarball_url(origin, name, v).into());
        }
    }
    let kept: Vec<String> = versions.keys().cloned().collect();
    if pins.is_none() {
        return Ok(hidden);
    }
    if let Some(tags) = obj.get_mut("dist-tags").and_then(Value::as_object_mut) {
        tags.retain(|_, v| v.as_str().is_some_and(|v| kept.iter().any(|k| k == v)));
        if !tags.contains_key("latest") {
            if let Some(last) = kept.last() {
                tags.insert("latest".into(), last.clone().into());
            }
        }
    }
    if let Some(times) = obj.get_mut("time").and_then(Value::as_object_mut) {
        times.retain(|k, _| k == "created" || k == "modified" || kept.iter().any(|v| v == k));
    }
    Ok(hidden)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        use NpmRequest::*;
        assert_eq!(
            classify("/left-pad"),
            Packument {
                name: "left-pad".into()
            }
        );
        assert_eq!(
            classify("/@s%2fpkg"),
            Packument {
                name: "@s/pkg".into()
            }
        );
        assert_eq!(
            classify("/@s%2Fpkg"),
            Packument {
                name: "@s/pkg".into()
            }
        );
        assert_eq!(
            classify("/left-pad/-/left-pad-1.3.0.tgz"),
            Tarball {
                name: "left-pad".into(),
                version: "1.3.0".into()
            }
        );
        assert_eq!(
            classify("/@s/pkg/-/pkg-2.0.0-rc.1.tgz"),
            Tarball {
                name: "@s/pkg".into(),
                version: "2.0.0-rc.1".into()
            }
        );
        for other in [
            "/",
            "/-/v1/search?text=x",
            "/-/npm/v1/security/advisories/bulk",
            "/left-pad?write=true",
            "/left-pad/-/other-1.0.0.tgz",
            "/left-pad/1.3.0",
            "/..%2f..%2fetc",
            "/a%20b",
            "/left-pad/-/left-pad-.tgz",
            "/@s",
            "left-pad",
        ] {
            assert_eq!(classify(other), Other, "{other}");
        }
    }

    #[test]
    fn packuments_are_filtered_to_pins_and_point_back() {
        let lock = br#"{"lockfileVersion":3,"packages":{"node_modules/p":{"version":"1.0.0","integrity":"sha1-qUqZ1H0ZlOR7i1x5n3cX5U2a3lc="}}}"#;
        let pins = cleanroom_policy::lockfile::parse_npm(lock).unwrap();
        let mut doc: Value = serde_json::from_str(
            r#"{"name":"p","dist-tags":{"latest":"2.0.0","old":"1.0.0"},
            "versions":{"1.0.0":{"dist":{"tarball":"http://elsewhere/p-1.0.0.tgz"}},"2.0.0":{"dist":{}}},
            "time":{"created":"x","1.0.0":"y","2.0.0":"z"}}"#,
        )
        .unwrap();
        assert_eq!(
            filter_packument(&mut doc, "p", "https://r.test", Some(&pins)).unwrap(),
            1
        );
        assert_eq!(doc["versions"].as_object().unwrap().len(), 1);
        assert_eq!(
            doc["versions"]["1.0.0"]["dist"]["tarball"],
            "https://r.test/p/-/p-1.0.0.tgz"
        );
        assert_eq!(doc["dist-tags"]["latest"], "1.0.0");
        assert!(doc["time"].get("2.0.0").is_none());
        let mut wrong: Value = serde_json::from_str(r#"{"name":"q","versions":{}}"#).unwrap();
        assert!(filter_packument(&mut wrong, "p", "https://r.test", Some(&pins)).is_err());
        assert!(filter_packument(&mut Value::Null, "p", "https://r.test", None).is_err());
    }

    #[test]
    fn npm_housekeeping_is_recognized() {
        use hyper::Method;
        let pins = cleanroom_policy::lockfile::Pins::default();
        assert!(housekeeping(&Method::POST, "/-/npm/v1/security/advisories/bulk", &pins).is_some());
        assert!(housekeeping(&Method::POST, "/-/npm/v1/security/audits/quick", &pins).is_some());
        assert!(housekeeping(&Method::GET, "/npm", &pins).is_some());
        assert!(housekeeping(&Method::GET, "/left-pad", &pins).is_none());
        assert!(housekeeping(&Method::PUT, "/npm", &pins).is_none());
        assert!(housekeeping(&Method::GET, "/-/npm/v1/security/advisories/bulk", &pins).is_none());
        let lock = br#"{"lockfileVersion":3,"packages":{"node_modules/npm":{"version":"10.0.0","integrity":"sha1-qUqZ1H0ZlOR7i1x5n3cX5U2a3lc="}}}"#;
        let pinned = cleanroom_policy::lockfile::parse_npm(lock).unwrap();
        assert!(housekeeping(&Method::GET, "/npm", &pinned).is_none());
    }
}
