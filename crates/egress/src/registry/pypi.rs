//! The Python package index's URL scheme (PEP 503 simple API) and index filtering.
//!
//! pip fetches `GET /simple/<name>/` (an HTML page of links to files, each with a
//! `#sha256=` fragment) and then the files the links name (wheels, sdists). Only requests of
//! those shapes are package fetches.
//!
//! The links may point anywhere: a public index serves its pages on one host and its files
//! on another. The gateway rewrites every kept link to its own path on the index host,
//! named by the file's sha256 ([`FILES_PREFIX`]), and remembers where the file lives
//! upstream ([`Links`]); the file is then fetched server-side, verified and cached by that
//! digest. pip never needs to reach the file host itself.

use cleanroom_policy::lockfile::{normalize_pypi_name, Digest, HashAlgo, Pins};
use std::collections::HashMap;
use std::sync::Mutex;

/// The gateway's path of a file on the index host: `<prefix><sha256 hex>/<file name>`.
pub const FILES_PREFIX: &str = "/_cleanroom/files/sha256/";
/// Most file locations one sandbox remembers.
const MAX_LINKS: usize = 100_000;

/// Where a file lives upstream (HTTPS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileLink {
    pub host: String,
    pub port: u16,
    /// Origin-form path, normalized (no `..`, no query).
    pub path: String,
}

impl FileLink {
    /// The last path segment.
    pub fn file_name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or_default()
    }
}

/// What one sandbox's index pages said about where each linked file lives, by sha256.
#[derive(Debug, Default)]
pub struct Links(Mutex<HashMap<Vec<u8>, FileLink>>);

impl Links {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<u8>, FileLink>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Remember `entries` (bounded: beyond [`MAX_LINKS`], new digests are not recorded).
    pub fn learn(&self, entries: Vec<(Digest, FileLink)>) {
        let mut map = self.map();
        for (d, l) in entries {
            if map.len() >= MAX_LINKS && !map.contains_key(&d.bytes) {
                break;
            }
            map.insert(d.bytes, l);
        }
    }

    /// Where the file with sha256 `d` lives, if an index page linked it.
    pub fn get(&self, d: &Digest) -> Option<FileLink> {
        self.map().get(&d.bytes).cloned()
    }

    /// The sha256 an index page gave for the file at `link`.
    pub fn digest_at(&self, link: &FileLink) -> Option<Digest> {
        self.map()
            .iter()
            .find(|(_, l)| *l == link)
            .map(|(b, _)| Digest {
                algo: HashAlgo::Sha256,
                bytes: b.clone(),
            })
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn sha256_of_hex(hex: &str) -> Option<Digest> {
    if hex.len() != 64 || !hex.is_ascii() {
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

fn valid_segment(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-+!~".contains(&b))
}

/// Resolve a link (`href`, or a redirect's `Location`) against the URL it was found at.
/// Only HTTPS and paths of plain segments: anything else (`http:`, credentials, queries,
/// escapes, `..` above the root) is `None`.
pub fn resolve(base: &FileLink, href: &str) -> Option<FileLink> {
    let href = href.split('#').next().unwrap_or_default();
    let (host, port, joined) = if let Some(rest) = href
        .strip_prefix("https://")
        .or_else(|| href.strip_prefix("//"))
    {
        let (auth, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, "/"),
        };
        if auth.contains('@') {
            return None;
        }
        let (h, p) = cleanroom_policy::registries::split_upstream(auth).ok()?;
        (h, p, path.to_string())
    } else if href.starts_with('/') {
        (base.host.clone(), base.port, href.to_string())
    } else {
        if href.split('/').next().is_some_and(|s| s.contains(':')) {
            return None;
        }
        let dir = base
            .path
            .rsplit_once('/')
            .map(|(d, _)| d)
            .unwrap_or_default();
        (base.host.clone(), base.port, format!("{dir}/{href}"))
    };
    let mut segs: Vec<&str> = Vec::new();
    let trailing = joined.ends_with('/');
    for s in joined.split('/') {
        match s {
            "" | "." => {}
            ".." => {
                segs.pop()?;
            }
            s if valid_segment(s) => segs.push(s),
            _ => return None,
        }
    }
    let mut path = format!("/{}", segs.join("/"));
    if trailing && !segs.is_empty() {
        path.push('/');
    }
    Some(FileLink { host, port, path })
}

/// What one request path asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum PypiRequest {
    /// The simple index page of a project (normalized name).
    Index {
        name: String,
    },
    /// A file through the gateway's rewritten link ([`FILES_PREFIX`]), named by its sha256.
    Pinned {
        sha256: Digest,
        name: String,
        version: String,
        file: String,
    },
    /// One distribution file, named by its path.
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
    if let Some(rest) = path_and_query.strip_prefix(FILES_PREFIX) {
        let pinned = rest.split_once('/').and_then(|(h, file)| {
            let (name, version) = parse_filename(file)?;
            Some(PypiRequest::Pinned {
                sha256: sha256_of_hex(h)?,
                name,
                version,
                file: file.to_string(),
            })
        });
        return pinned.unwrap_or(PypiRequest::Other);
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
    sha256_of_hex(href.split_once("#sha256=")?.1)
}

/// A simple index page rebuilt by [`filter_index`], and where its files live upstream.
#[derive(Debug)]
pub struct Rebuilt {
    pub html: String,
    pub links: Vec<(Digest, FileLink)>,
}

/// Rebuild a simple index page (fetched from `base`) from its links: with `pins`, only
/// links whose `#sha256=` names a pinned file of `name` remain (a link without a hash
/// cannot be checked and is dropped). Every link with a hash and a usable HTTPS URL is
/// rewritten to the gateway's path under `origin` (the index host as the sandbox sees it);
/// without `pins` (warn mode), a link that cannot be rewritten stays as it was. Attributes
/// other than `href` are dropped.
pub fn filter_index(
    html: &str,
    name: &str,
    pins: Option<&Pins>,
    base: &FileLink,
    origin: &str,
) -> Rebuilt {
    let mut out = String::from("<!DOCTYPE html>\n<html><body>\n");
    let mut links = Vec::new();
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
        let digest = sha256_of_href(href);
        if let Some(pins) = pins {
            if !digest.as_ref().is_some_and(|d| pins.has_digest(name, d)) {
                continue;
            }
        }
        let target = resolve(base, href).filter(|l| parse_filename(l.file_name()).is_some());
        let href = match (digest, target) {
            (Some(d), Some(link)) => {
                let h = hex(&d.bytes);
                let rewritten =
                    format!("{origin}{FILES_PREFIX}{h}/{}#sha256={h}", link.file_name());
                links.push((d, link));
                rewritten
            }
            // Enforce mode serves only what it can fetch and verify.
            _ if pins.is_some() => continue,
            _ => href.to_string(),
        };
        out.push_str(&format!("<a href=\"{href}\">{text}</a><br/>\n"));
    }
    out.push_str("</body></html>\n");
    Rebuilt { html: out, links }
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
        let h = "0a".repeat(32);
        assert_eq!(
            classify(&format!(
                "{FILES_PREFIX}{h}/Demo_Pkg-1.0.0-py3-none-any.whl"
            )),
            Pinned {
                sha256: sha256_of_hex(&h).unwrap(),
                name: "demo-pkg".into(),
                version: "1.0.0".into(),
                file: "Demo_Pkg-1.0.0-py3-none-any.whl".into(),
            }
        );
        for other in [
            format!("{FILES_PREFIX}{}/x-1.0.tar.gz", "0a".repeat(31)),
            format!("{FILES_PREFIX}{h}/x.whl"),
            format!("{FILES_PREFIX}{h}/a/x-1.0.tar.gz"),
        ] {
            assert_eq!(classify(&other), Other, "{other}");
        }
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
    fn index_pages_keep_only_pinned_files_and_point_back() {
        let h = "ab".repeat(32);
        let other = "cd".repeat(32);
        let req = format!("demo==1.0 --hash=sha256:{h}\n");
        let pins = cleanroom_policy::lockfile::parse_requirements(req.as_bytes()).unwrap();
        let base = FileLink {
            host: "index.test".into(),
            port: 443,
            path: "/simple/demo/".into(),
        };
        let html = format!(
            "<html><body><a href=\"https://files.test:8443/packages/ab/demo-1.0.tar.gz#sha256={h}\" data-x=1>demo-1.0.tar.gz</a><br>\
             <a href=\"../../packages/demo-2.0.tar.gz#sha256={other}\">demo-2.0.tar.gz</a>\
             <a href=\"../../packages/demo-3.0.tar.gz\">demo-3.0.tar.gz</a></body></html>"
        );
        let out = filter_index(&html, "demo", Some(&pins), &base, "https://index.test");
        assert!(
            out.html.contains(&format!(
                "href=\"https://index.test{FILES_PREFIX}{h}/demo-1.0.tar.gz#sha256={h}\""
            )) && !out.html.contains("demo-2.0")
                && !out.html.contains("demo-3.0")
                && !out.html.contains("files.test"),
            "{}",
            out.html
        );
        assert_eq!(
            out.links,
            vec![(
                sha256_of_hex(&h).unwrap(),
                FileLink {
                    host: "files.test".into(),
                    port: 8443,
                    path: "/packages/ab/demo-1.0.tar.gz".into()
                }
            )]
        );
        let all = filter_index(&html, "demo", None, &base, "https://index.test");
        assert!(
            all.html
                .contains(&format!("{FILES_PREFIX}{other}/demo-2.0.tar.gz"))
                && all.html.contains("href=\"../../packages/demo-3.0.tar.gz\""),
            "{}",
            all.html
        );
        assert_eq!(all.links[1].1.path, "/packages/demo-2.0.tar.gz");
        assert_eq!(all.links[1].1.host, "index.test");
    }

    #[test]
    fn links_resolve_only_to_https_plain_paths() {
        let base = FileLink {
            host: "index.test".into(),
            port: 8443,
            path: "/simple/demo/".into(),
        };
        let at = |h: &str, p: u16, path: &str| {
            Some(FileLink {
                host: h.into(),
                port: p,
                path: path.into(),
            })
        };
        assert_eq!(
            resolve(&base, "../../packages/x-1.0.tar.gz#sha256=00"),
            at("index.test", 8443, "/packages/x-1.0.tar.gz")
        );
        assert_eq!(
            resolve(&base, "/p/x.whl"),
            at("index.test", 8443, "/p/x.whl")
        );
        assert_eq!(
            resolve(&base, "https://Files.Test/p/x.whl"),
            at("files.test", 443, "/p/x.whl")
        );
        assert_eq!(
            resolve(&base, "//files.test:444/p/x.whl"),
            at("files.test", 444, "/p/x.whl")
        );
        for bad in [
            "http://files.test/x.whl",
            "https://u:p@files.test/x.whl",
            "https://files.test/x.whl?a=b",
            "../../../../x.whl",
            "/p/%2e%2e/x.whl",
            "javascript:x",
            "ftp://files.test/x.whl",
        ] {
            assert_eq!(resolve(&base, bad), None, "{bad}");
        }
    }

    #[test]
    fn remembered_links_by_digest_and_location() {
        let links = Links::default();
        let d = sha256_of_hex(&"ef".repeat(32)).unwrap();
        let l = FileLink {
            host: "files.test".into(),
            port: 443,
            path: "/p/x-1.0.tar.gz".into(),
        };
        links.learn(vec![(d.clone(), l.clone())]);
        assert_eq!(links.get(&d), Some(l.clone()));
        assert_eq!(links.digest_at(&l), Some(d));
    }
}
