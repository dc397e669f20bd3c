//! The Python package index's URL scheme (PEP 503 simple API) and index filtering.
//!
//! pip fetches `GET /simple/<name>/` (an HTML page of links to files, each with a
//! `#sha256=` fragment) and then the files the links name (wheels, sdists). Only requests of
//! those two shapes are package fetches.

use cleanroom_policy::lockfile::{normalize_pypi_name, Digest, HashAlgo, Pins};

/// What one request path asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum PypiRequest {
    /// The simple index page of a project (normalized name).
    Index {
        name: String,
    },
    /// One distribution file.
    File {
        name: String,
        version: String,
    },
    Other,
}

fn valid_file(f: &str) -> bool {
    !f.is_empty()
        && f.len() <= 255
        && f.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-+!".contains(&b))
}

/// (normalized name, version) of a wheel or sdist file name.
pub fn parse_filename(f: &str) -> Option<(String, String)> {
    if !valid_file(f) {
        return None;
    }
    let (name, version) = if let Some(stem) = f.strip_suffix(".whl") {
        let parts: Vec<&str> = stem.split('-').collect();
        if parts.len() < 5 {
            return None;
        }
        (parts[0], parts[1])
    } else {
        let stem = f
            .strip_suffix(".tar.gz")
            .or_else(|| f.strip_suffix(".zip"))?;
        stem.rsplit_once('-')?
    };
    if name.is_empty() || version.is_empty() {
        return None;
    }
    Some((normalize_pypi_name(name), version.to_string()))
}

/// Classify a request path (origin-form; a query is `Other`).
pub fn classify(path_and_query: &str) -> PypiRequest {
    if path_and_query.contains(['?', '#', '%']) || path_and_query.contains("//") {
        return PypiRequest::Other;
    }
    let segs: Vec<&str> = path_and_query.trim_start_matches('/').split('/').collect();
    match segs.as_slice() {
        ["simple", name] | ["simple", name, ""] if valid_file(name) => PypiRequest::Index {
            name: normalize_pypi_name(name),
        },
        [.., file] if !segs.contains(&"..") => match parse_filename(file) {
            Some((name, version)) => PypiRequest::File { name, version },
            None => PypiRequest::Other,
        },
        _ => PypiRequest::Other,
    }
}

fn sha256_of_href(href: &str) -> Option<Digest> {
    let hex = href.split_once("#sha256=")?.1;
    if hex.len() != 64 {
        return None;
    }
    let bytes = (0..64)
        .step_by(2)
        .map(|k| u8::from_str_radix(&hex[k..k + 2], 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    Some(Digest {
        algo: HashAlgo::Sha256,
        bytes,
    })
}

/// Rebuild a simple index page from its links: with `pins`, only links whose `#sha256=`
/// names a pinned file of `name` remain (a link without a hash cannot be checked and is
/// dropped). Attributes other than `href` are dropped too.
pub fn filter_index(html: &str, name: &str, pins: Option<&Pins>) -> String {
    let mut out = String::from("<!DOCTYPE html>\n<html><body>\n");
    let mut rest = html;
    while let Some(start) = rest.find("<a ") {
        let tail = &rest[start..];
        let Some(end) = tail.find("</a>") else { break };
        let anchor = &tail[..end];
        rest = &tail[end + 4..];
        let Some(href) = anchor
            .split_once("href=\"")
            .and_then(|(_, h)| h.split_once('"'))
            .map(|(h, _)| h)
        else {
            continue;
        };
        let text = anchor.rsplit_once('>').map(|(_, t)| t).unwrap_or_default();
        if href.contains(['<', '>', '\'']) || text.contains(['<', '&']) {
            continue;
        }
        if let Some(pins) = pins {
            match sha256_of_href(href) {
                Some(d) if pins.has_digest(name, &d) => {}
                _ => continue,
            }
        }
        out.push_str(&format!("<a href=\"{href}\">{text}</a><br/>\n"));
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        use PypiRequest::*;
        assert_eq!(
            classify("/simple/Demo_Pkg/"),
            Index {
                name: "demo-pkg".into()
            }
        );
        assert_eq!(
            classify("/packages/demo_pkg-1.0.0-py3-none-any.whl"),
            File {
                name: "demo-pkg".into(),
                version: "1.0.0".into()
            }
        );
        assert_eq!(
            classify("/packages/demo-pkg-1.0.0.tar.gz"),
            File {
                name: "demo-pkg".into(),
                version: "1.0.0".into()
            }
        );
        for other in [
            "/simple/",
            "/simple/x/?format=json",
            "/packages/../x-1.0.tar.gz",
            "/packages/x.whl",
            "/packages/x%2f-1.0.tar.gz",
            "/",
        ] {
            assert_eq!(classify(other), Other, "{other}");
        }
    }

    #[test]
    fn index_pages_keep_only_pinned_files() {
        let h = "ab".repeat(32);
        let other = "cd".repeat(32);
        let req = format!("demo==1.0 --hash=sha256:{h}\n");
        let pins = cleanroom_policy::lockfile::parse_requirements(req.as_bytes()).unwrap();
        let html = format!(
            "<html><body><a href=\"../../packages/demo-1.0.tar.gz#sha256={h}\" data-x=1>demo-1.0.tar.gz</a><br>\
             <a href=\"../../packages/demo-2.0.tar.gz#sha256={other}\">demo-2.0.tar.gz</a>\
             <a href=\"../../packages/demo-3.0.tar.gz\">demo-3.0.tar.gz</a></body></html>"
        );
        let out = filter_index(&html, "demo", Some(&pins));
        assert!(
            out.contains("demo-1.0.tar.gz")
                && !out.contains("demo-2.0")
                && !out.contains("demo-3.0"),
            "{out}"
        );
        let all = filter_index(&html, "demo", None);
        assert!(
            all.contains("demo-2.0") && all.contains("demo-3.0"),
            "{all}"
        );
    }
}
