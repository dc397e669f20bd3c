//! Lockfiles → the pinned set of a registry: which `name@version` may be fetched, and the
//! integrity hash each artifact must match.
//!
//! Parsed by the server from bytes the client read at the repository's committed HEAD:
//! hostile input, so sizes are bounded and anything unexpected is an error (the sandbox is
//! refused) rather than a silently smaller or larger pinned set.

use base64::Engine as _;
use std::collections::BTreeMap;

/// Most pinned packages one lockfile may hold.
pub const MAX_PINS: usize = 100_000;

/// Hash algorithms an integrity value may use (strongest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HashAlgo {
    Sha512,
    Sha256,
    Sha1,
}

impl HashAlgo {
    pub fn as_str(self) -> &'static str {
        match self {
            HashAlgo::Sha512 => "sha512",
            HashAlgo::Sha256 => "sha256",
            HashAlgo::Sha1 => "sha1",
        }
    }
}

/// An expected artifact digest.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest {
    pub algo: HashAlgo,
    pub bytes: Vec<u8>,
}

impl Digest {
    /// `algo-<hex>`: a file name for the content-addressed cache.
    pub fn key(&self) -> String {
        let hex: String = self.bytes.iter().map(|b| format!("{b:02x}")).collect();
        format!("{}-{hex}", self.algo.as_str())
    }
}

/// Parse a Subresource Integrity value (`sha512-<base64> [sha1-<base64>]`): the strongest
/// hash it names. Unknown algorithms are ignored; none known is an error.
pub fn parse_sri(s: &str) -> Result<Digest, String> {
    let mut best: Option<Digest> = None;
    for part in s.split_ascii_whitespace() {
        let Some((algo, b64)) = part.split_once('-') else {
            continue;
        };
        let (algo, len) = match algo {
            "sha512" => (HashAlgo::Sha512, 64),
            "sha256" => (HashAlgo::Sha256, 32),
            "sha1" => (HashAlgo::Sha1, 20),
            _ => continue,
        };
        let b64 = b64.split('?').next().unwrap_or_default();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| format!("integrity {part:?}: {e}"))?;
        if bytes.len() != len {
            return Err(format!("integrity {part:?}: wrong digest length"));
        }
        if best.as_ref().is_none_or(|b| algo < b.algo) {
            best = Some(Digest { algo, bytes });
        }
    }
    best.ok_or_else(|| format!("integrity {s:?} names no supported hash"))
}

/// The pinned set of one registry: name → version → expected digest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pins {
    by_name: BTreeMap<String, BTreeMap<String, Digest>>,
    /// Every accepted digest of a version (pip lists one `--hash` per file of a release:
    /// wheels and sdist); `by_name` keeps the first.
    all: BTreeMap<(String, String), Vec<Digest>>,
}

impl Pins {
    /// The expected digest of `name@version`, if pinned.
    pub fn get(&self, name: &str, version: &str) -> Option<&Digest> {
        self.by_name.get(name)?.get(version)
    }

    /// Every digest `name@version` may have (any file of the release).
    pub fn digests(&self, name: &str, version: &str) -> &[Digest] {
        self.all
            .get(&(name.to_string(), version.to_string()))
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// Is `d` the digest of some pinned file of `name` (any version)?
    pub fn has_digest(&self, name: &str, d: &Digest) -> bool {
        self.by_name
            .get(name)
            .is_some_and(|vs| vs.keys().any(|v| self.digests(name, v).contains(d)))
    }

    /// The pinned versions of `name` (empty when not pinned at all).
    pub fn versions(&self, name: &str) -> Option<&BTreeMap<String, Digest>> {
        self.by_name.get(name)
    }

    /// How many `name@version` pairs are pinned.
    pub fn len(&self) -> usize {
        self.by_name.values().map(BTreeMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// One more file of a release (pip): several digests per version are expected.
    fn insert_file(&mut self, name: String, version: String, d: Digest) {
        let all = self.all.entry((name.clone(), version.clone())).or_default();
        if !all.contains(&d) {
            all.push(d.clone());
        }
        self.by_name
            .entry(name)
            .or_default()
            .entry(version)
            .or_insert(d);
    }

    fn insert(&mut self, name: String, version: String, d: Digest) -> Result<(), String> {
        let all = self.all.entry((name.clone(), version.clone())).or_default();
        if !all.contains(&d) {
            all.push(d.clone());
        }
        let versions = self.by_name.entry(name.clone()).or_default();
        match versions.get(&version) {
            Some(old) if old.algo == d.algo && *old != d => Err(format!(
                "{name}@{version} is pinned twice with different integrity"
            )),
            Some(old) if old.algo <= d.algo => Ok(()),
            _ => {
                versions.insert(version, d);
                Ok(())
            }
        }
    }
}

/// An npm package name as the registry spells it: `name` or `@scope/name`, lower-case URL
/// safe characters only.
pub fn valid_npm_name(n: &str) -> bool {
    let ok = |s: &str| {
        !s.is_empty()
            && s.len() <= 214
            && !s.starts_with('.')
            && s.bytes().all(|b| {
                b.is_ascii_lowercase()
                    || b.is_ascii_digit()
                    || b"-._~".contains(&b)
                    || b.is_ascii_uppercase()
            })
    };
    match n.strip_prefix('@') {
        Some(rest) => match rest.split_once('/') {
            Some((scope, name)) => ok(scope) && ok(name),
            None => false,
        },
        None => ok(n),
    }
}

/// A version string as it appears in a lockfile and a tarball name.
fn valid_version(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 256
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.+_".contains(&b))
}

/// `package-lock.json` v2/v3 (`packages`): every entry fetched from a registry (it has
/// `integrity`) is pinned. Links, bundled and integrity-less entries (git, file) are not
/// registry artifacts and pin nothing.
pub fn parse_npm(content: &[u8]) -> Result<Pins, String> {
    let v: serde_json::Value =
        serde_json::from_slice(content).map_err(|e| format!("not JSON: {e}"))?;
    let version = v.get("lockfileVersion").and_then(|x| x.as_u64());
    if !matches!(version, Some(2 | 3)) {
        return Err(format!(
            "lockfileVersion {version:?} is not supported (2 or 3: npm 7 or later)"
        ));
    }
    let Some(packages) = v.get("packages").and_then(|p| p.as_object()) else {
        return Err("no \"packages\" object".into());
    };
    if packages.len() > MAX_PINS {
        return Err(format!("more than {MAX_PINS} packages"));
    }
    let mut pins = Pins::default();
    for (path, entry) in packages {
        if path.is_empty() {
            continue;
        }
        let Some(entry) = entry.as_object() else {
            return Err(format!("packages[{path:?}] is not an object"));
        };
        let flag = |k: &str| entry.get(k).and_then(|x| x.as_bool()).unwrap_or(false);
        if flag("link") || flag("inBundle") {
            continue;
        }
        let Some(integrity) = entry.get("integrity").and_then(|x| x.as_str()) else {
            continue;
        };
        let name = match entry.get("name").and_then(|x| x.as_str()) {
            Some(n) => n.to_string(),
            None => match path.rsplit_once("node_modules/") {
                Some((_, n)) => n.to_string(),
                None => return Err(format!("packages[{path:?}]: cannot tell the package name")),
            },
        };
        let ver = entry
            .get("version")
            .and_then(|x| x.as_str())
            .ok_or_else(|| format!("packages[{path:?}]: no version"))?;
        if !valid_npm_name(&name) || !valid_version(ver) {
            return Err(format!("packages[{path:?}]: unusable name or version"));
        }
        let d = parse_sri(integrity).map_err(|e| format!("packages[{path:?}]: {e}"))?;
        pins.insert(name, ver.to_string(), d)?;
    }
    Ok(pins)
}

/// A Python project name as PEP 503 normalizes it (lower case, runs of `-_.` as `-`).
pub fn normalize_pypi_name(n: &str) -> String {
    let mut out = String::with_capacity(n.len());
    let mut sep = false;
    for c in n.chars() {
        if matches!(c, '-' | '_' | '.') {
            sep = true;
            continue;
        }
        if sep && !out.is_empty() {
            out.push('-');
        }
        sep = false;
        out.push(c.to_ascii_lowercase());
    }
    out
}

fn valid_pypi_name(n: &str) -> bool {
    !n.is_empty() && n.len() <= 200 && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// `requirements.txt` in pip's hash-checking form: every requirement is `name==version`
/// with at least one `--hash=sha256:<hex>` (continuation lines joined). Anything pip would
/// resolve instead of pin (ranges, URLs, `-e`, `-r`, no hash) is an error: it cannot be
/// enforced.
pub fn parse_requirements(content: &[u8]) -> Result<Pins, String> {
    let text = std::str::from_utf8(content).map_err(|_| "not UTF-8".to_string())?;
    let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
    let mut pins = Pins::default();
    for (i, raw) in joined.lines().enumerate() {
        let line = raw.split(" #").next().unwrap_or_default().trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut parts = line.split_ascii_whitespace();
        let req = parts.next().unwrap_or_default();
        if req.starts_with('-') {
            return Err(format!("line {}: option {req:?} is not supported", i + 1));
        }
        let req = req.split(';').next().unwrap_or_default();
        let (name, version) = req
            .split_once("==")
            .ok_or_else(|| format!("line {}: {req:?} is not pinned with ==", i + 1))?;
        let name = normalize_pypi_name(name.split('[').next().unwrap_or_default());
        if !valid_pypi_name(&name) || !valid_version(version) {
            return Err(format!(
                "line {}: unusable name or version in {req:?}",
                i + 1
            ));
        }
        let mut hashes = 0;
        for opt in parts {
            let Some(h) = opt.strip_prefix("--hash=") else {
                return Err(format!("line {}: unsupported {opt:?}", i + 1));
            };
            let (algo, hex) = h
                .split_once(':')
                .ok_or_else(|| format!("line {}: bad hash {h:?}", i + 1))?;
            let (algo, len) = match algo {
                "sha256" => (HashAlgo::Sha256, 32),
                "sha512" => (HashAlgo::Sha512, 64),
                _ => return Err(format!("line {}: unsupported hash {algo:?}", i + 1)),
            };
            let bytes = (0..hex.len())
                .step_by(2)
                .map(|k| {
                    hex.get(k..k + 2)
                        .and_then(|b| u8::from_str_radix(b, 16).ok())
                })
                .collect::<Option<Vec<u8>>>()
                .filter(|b| b.len() == len && hex.len() == 2 * len)
                .ok_or_else(|| format!("line {}: bad hash {h:?}", i + 1))?;
            pins.insert_file(name.clone(), version.to_string(), Digest { algo, bytes });
            hashes += 1;
        }
        if hashes == 0 {
            return Err(format!("line {}: {req} has no --hash", i + 1));
        }
        if pins.len() > MAX_PINS {
            return Err(format!("more than {MAX_PINS} requirements"));
        }
    }
    Ok(pins)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sri_picks_the_strongest_and_rejects_garbage() {
        let d = parse_sri("sha1-qUqZ1H0ZlOR7i1x5n3cX5U2a3lc= sha512-XI5MPzVNApjAyhQzphX8BkmKsKUxD4LdyK24iZeQuQvbWnYDGBwP1OmIp1+tOLVqlGu8fHmDw1YHZgpmoMbgAQ==").unwrap();
        assert_eq!(d.algo, HashAlgo::Sha512);
        assert!(d.key().starts_with("sha512-5c8e4c"));
        assert_eq!(
            parse_sri("sha1-qUqZ1H0ZlOR7i1x5n3cX5U2a3lc=").unwrap().algo,
            HashAlgo::Sha1
        );
        for bad in ["", "md5-abc", "sha512-!!!", "sha512-AAAA"] {
            assert!(parse_sri(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn requirements_with_hashes() {
        let h = "a".repeat(64);
        let g = "b".repeat(64);
        let txt = format!(
            "# comment\nDemo_Pkg==1.0.0 \\\n    --hash=sha256:{h} \\\n    --hash=sha256:{g}\nother==2.0 --hash=sha256:{h}  # trailing\n"
        );
        let p = parse_requirements(txt.as_bytes()).unwrap();
        assert_eq!(p.digests("demo-pkg", "1.0.0").len(), 2);
        assert!(p.get("other", "2.0").is_some());
        for bad in [
            "a>=1.0 --hash=sha256:".to_string() + &h,
            "a==1.0".into(),
            "-r other.txt".into(),
            "a==1.0 --hash=md5:00".into(),
            "a==1.0 --hash=sha256:zz".into(),
            "a==1.0 --index-url=x".into(),
        ] {
            assert!(parse_requirements(bad.as_bytes()).is_err(), "{bad}");
        }
        assert_eq!(normalize_pypi_name("Foo.Bar__baz"), "foo-bar-baz");
    }

    #[test]
    fn npm_lockfiles() {
        let lock = br#"{"lockfileVersion":3,"packages":{
          "":{"name":"app"},
          "node_modules/a":{"version":"1.0.0","integrity":"sha1-qUqZ1H0ZlOR7i1x5n3cX5U2a3lc="},
          "node_modules/a/node_modules/@s/b":{"version":"2.0.0-rc.1","integrity":"sha1-qUqZ1H0ZlOR7i1x5n3cX5U2a3lc="},
          "node_modules/alias":{"name":"real","version":"3.0.0","integrity":"sha1-qUqZ1H0ZlOR7i1x5n3cX5U2a3lc="},
          "node_modules/linked":{"link":true,"resolved":"../x"},
          "node_modules/fromgit":{"version":"1.0.0","resolved":"git+ssh://x"}}}"#;
        let p = parse_npm(lock).unwrap();
        assert!(p.get("a", "1.0.0").is_some());
        assert!(p.get("@s/b", "2.0.0-rc.1").is_some());
        assert!(p.get("real", "3.0.0").is_some() && p.versions("alias").is_none());
        assert!(p.versions("linked").is_none() && p.versions("fromgit").is_none());
        assert_eq!(p.len(), 3);
        for bad in [
            &br#"{"lockfileVersion":1,"dependencies":{}}"#[..],
            br#"{"lockfileVersion":3}"#,
            br#"{"lockfileVersion":3,"packages":{"node_modules/a":{"integrity":"sha1-qUqZ1H0ZlOR7i1x5n3cX5U2a3lc="}}}"#,
            br#"{"lockfileVersion":3,"packages":{"node_modules/A B":{"version":"1","integrity":"sha1-qUqZ1H0ZlOR7i1x5n3cX5U2a3lc="}}}"#,
            br#"{"lockfileVersion":3,"packages":{"node_modules/a":{"version":"1/../x","integrity":"sha1-qUqZ1H0ZlOR7i1x5n3cX5U2a3lc="}}}"#,
            b"[]",
        ] {
            assert!(parse_npm(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
