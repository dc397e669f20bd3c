//! Secrets, tokenizer-style: the sandbox holds placeholders, the gateway holds values.
//!
//! Each secret of a sandbox gets a random placeholder (`cleanroom-secret-<ID>-<random>`)
//! that the guest finds in its environment. The real value lives only in the server
//! process. When the guest sends a request to a host the secret is bound to, with the
//! placeholder in the binding's header, the gateway (which terminated that TLS connection)
//! writes the header anew from the binding's format and the real value. Anything else — the
//! placeholder in another header, in the URL, towards another host, over plain HTTP — is
//! refused with `secret_scope_violation`.
//!
//! Responses from bound hosts pass through a [`Redactor`] so an upstream that echoes the
//! header back (many do, in errors or debug endpoints) cannot hand the value to the guest.

use cleanroom_policy::SecretBinding;
use hyper::header::{HeaderName, HeaderValue};
use hyper::Request;
use zeroize::Zeroizing;

/// One secret as the gateway holds it.
pub struct Secret {
    pub id: String,
    /// What the guest sees instead of the value.
    pub placeholder: String,
    pub binding: SecretBinding,
    value: Zeroizing<String>,
}

impl Secret {
    pub fn new(id: String, placeholder: String, binding: SecretBinding, value: String) -> Self {
        Secret {
            id,
            placeholder,
            binding,
            value: Zeroizing::new(value),
        }
    }

    fn bound_to(&self, host: &str) -> bool {
        self.binding.hosts.iter().any(|p| p.matches(host))
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secret")
            .field("id", &self.id)
            .field("binding", &self.binding)
            .field("value", &"<redacted>")
            .finish_non_exhaustive()
    }
}

/// A request refused because it would use a secret out of scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeViolation {
    pub secret_id: String,
    pub message: String,
}

/// The secrets of one sandbox.
#[derive(Debug, Default)]
pub struct Secrets {
    entries: Vec<Secret>,
}

impl Secrets {
    pub fn new(entries: Vec<Secret>) -> Self {
        Secrets { entries }
    }

    /// (secret id, placeholder) pairs: the guest's environment entries.
    pub fn placeholders(&self) -> Vec<(String, String)> {
        self.entries
            .iter()
            .map(|s| (s.id.clone(), s.placeholder.clone()))
            .collect()
    }

    /// Is any secret bound to `host`? Then TLS to it is terminated by the gateway.
    pub fn binds(&self, host: &str) -> bool {
        self.entries.iter().any(|s| s.bound_to(host))
    }

    fn found_in(&self, data: &[u8]) -> Vec<&Secret> {
        self.entries
            .iter()
            .filter(|s| contains(data, s.placeholder.as_bytes()))
            .collect()
    }

    /// A placeholder in the request line or any header value (requests the gateway will not
    /// rewrite: plain HTTP, or hosts no secret is bound to).
    pub fn placeholder_in_request<B>(&self, req: &Request<B>) -> Option<String> {
        if self.entries.is_empty() {
            return None;
        }
        let uri = req.uri().to_string();
        if let Some(s) = self.found_in(uri.as_bytes()).first().copied() {
            return Some(s.id.clone());
        }
        req.headers()
            .values()
            .find_map(|v| self.found_in(v.as_bytes()).first().copied())
            .map(|s| s.id.clone())
    }

    /// Rewrite a request to `host` (TLS terminated by the gateway): every header carrying a
    /// placeholder is written anew from its binding. Returns the ids of the secrets used.
    pub fn inject<B>(
        &self,
        req: &mut Request<B>,
        host: &str,
    ) -> Result<Vec<String>, ScopeViolation> {
        if self.entries.is_empty() {
            return Ok(Vec::new());
        }
        let uri = req.uri().to_string();
        if let Some(s) = self.found_in(uri.as_bytes()).first().copied() {
            return Err(violation(
                s,
                "in the request URL: only its header may carry it",
            ));
        }
        let mut rewrites: Vec<(HeaderName, &Secret)> = Vec::new();
        for (name, value) in req.headers() {
            let found = self.found_in(value.as_bytes());
            let Some(&s) = found.first() else { continue };
            if found.len() > 1 {
                return Err(violation(s, "in a header together with another secret"));
            }
            if !s.bound_to(host) {
                return Err(violation(
                    s,
                    &format!("sent to {host}, which it is not bound to"),
                ));
            }
            if !name.as_str().eq_ignore_ascii_case(&s.binding.header) {
                return Err(violation(
                    s,
                    &format!(
                        "in header {name}: it may only be sent in {}",
                        s.binding.header
                    ),
                ));
            }
            if rewrites.iter().any(|(n, _)| n == name) {
                return Err(violation(s, &format!("in more than one {name} header")));
            }
            rewrites.push((name.clone(), s));
        }
        let mut used = Vec::new();
        for (name, s) in rewrites {
            let value = Zeroizing::new(s.binding.format.replace("{value}", &s.value));
            let mut header = HeaderValue::from_str(&value)
                .map_err(|_| violation(s, "its value cannot be written into an HTTP header"))?;
            header.set_sensitive(true);
            req.headers_mut().insert(name, header);
            used.push(s.id.clone());
        }
        Ok(used)
    }

    /// A redactor for responses of this sandbox's bound hosts.
    pub fn redactor(&self) -> Redactor {
        Redactor::new(
            self.entries
                .iter()
                .flat_map(|s| encodings(s.value.as_bytes()))
                .collect(),
        )
    }
}

fn violation(s: &Secret, what: &str) -> ScopeViolation {
    ScopeViolation {
        secret_id: s.id.clone(),
        message: format!("placeholder of secret {} {what}", s.id),
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// Masks secret values (and their common encodings, see [`encodings`]) in a
/// byte stream, across chunk boundaries: each occurrence becomes a run of `*` of the same
/// length (so `Content-Length` stays true).
#[derive(Clone)]
pub struct Redactor {
    values: Vec<Zeroizing<Vec<u8>>>,
    /// Bytes held back because a value may start in them and end in the next chunk.
    carry: Zeroizing<Vec<u8>>,
    keep: usize,
}

impl Redactor {
    fn new(values: Vec<Zeroizing<Vec<u8>>>) -> Self {
        let keep = values
            .iter()
            .map(|v| v.len())
            .max()
            .unwrap_or(1)
            .saturating_sub(1);
        Redactor {
            values: values.into_iter().filter(|v| !v.is_empty()).collect(),
            carry: Zeroizing::new(Vec::new()),
            keep,
        }
    }

    /// Mask every occurrence in `buf`; whether there was one.
    fn mask(&self, buf: &mut [u8]) -> bool {
        let mut found = false;
        for v in &self.values {
            let n = v.len();
            let mut i = 0;
            while i + n <= buf.len() {
                // Jump to the next occurrence of the value's first byte (values are never
                // empty): a scan per form stays fast on large bodies.
                match memchr::memchr(v[0], &buf[i..=buf.len() - n]) {
                    Some(k) => i += k,
                    None => break,
                }
                if &buf[i..i + n] == v.as_slice() {
                    buf[i..i + n].fill(b'*');
                    found = true;
                    i += n;
                } else {
                    i += 1;
                }
            }
        }
        found
    }

    /// Does the stream fed so far (chunk by chunk) contain a value? For decoded views of a
    /// body that are searched, not passed on.
    pub fn found_in_next(&mut self, chunk: &[u8]) -> bool {
        if self.values.is_empty() {
            return false;
        }
        let mut buf = std::mem::take(&mut *self.carry);
        buf.extend_from_slice(chunk);
        let found = self.mask(&mut buf);
        let cut = buf.len().saturating_sub(self.keep);
        *self.carry = buf.split_off(cut);
        found
    }

    /// Mask a self-contained value (a header).
    pub fn mask_whole(&self, data: &[u8]) -> Option<Vec<u8>> {
        let mut buf = data.to_vec();
        self.mask(&mut buf).then_some(buf)
    }

    /// Feed the next chunk; returns what can be passed on now.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        if self.values.is_empty() {
            return chunk.to_vec();
        }
        let mut buf = std::mem::take(&mut *self.carry);
        buf.extend_from_slice(chunk);
        self.mask(&mut buf);
        let cut = buf.len().saturating_sub(self.keep);
        *self.carry = buf.split_off(cut);
        buf
    }

    /// Does what was fed so far end with the start of a value (or of an encoding of it)?
    /// Then the bytes that encode that start should not be passed on yet.
    pub fn ends_in_partial(&self) -> bool {
        self.values
            .iter()
            .any(|v| (1..v.len().min(self.carry.len() + 1)).any(|k| self.carry.ends_with(&v[..k])))
    }

    /// The end of the stream: whatever was held back.
    pub fn finish(&mut self) -> Vec<u8> {
        let mut buf = std::mem::take(&mut *self.carry);
        self.mask(&mut buf);
        buf
    }
}

/// One secret bound to `a.test` with `value`, for the redaction unit tests.
/// Shortest encoded form searched for: shorter ones would mask unrelated text.
const MIN_FORM: usize = 6;
/// The forms of `value` searched for: as is; hex (lower, upper); percent-encoded (reserved
/// bytes only, and every byte; upper- and lower-case hex); base64 and base64url at each of
/// the three alignments, as the characters that depend only on the value (so padded and
/// unpadded, and any surrounding data, are all covered).
pub fn encodings(value: &[u8]) -> Vec<Zeroizing<Vec<u8>>> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    use base64::Engine;
    let mut out: Vec<Zeroizing<Vec<u8>>> = vec![Zeroizing::new(value.to_vec())];
    let mut add = |form: Vec<u8>| {
        let form = Zeroizing::new(form);
        if form.len() >= MIN_FORM && !out.contains(&form) {
            out.push(form);
        }
    };
    let hex = |upper: bool| {
        value
            .iter()
            .flat_map(|b| {
                if upper {
                    format!("{b:02X}")
                } else {
                    format!("{b:02x}")
                }
                .into_bytes()
            })
            .collect::<Vec<u8>>()
    };
    add(hex(false));
    add(hex(true));
    for upper in [true, false] {
        for all in [false, true] {
            let mut pct = Vec::new();
            for &b in value {
                if !all && (b.is_ascii_alphanumeric() || b"-._~".contains(&b)) {
                    pct.push(b);
                } else if upper {
                    pct.extend(format!("%{b:02X}").bytes());
                } else {
                    pct.extend(format!("%{b:02x}").bytes());
                }
            }
            add(pct);
        }
    }
    for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        for align in 0..3usize {
            // `align` bytes before the value: the characters covering only value bits are
            // [ceil(8a/6), floor(8(a+n)/6)).
            let mut data = Zeroizing::new(vec![0u8; align]);
            data.extend_from_slice(value);
            let enc = Zeroizing::new(engine.encode(&*data).into_bytes());
            let start = (8 * align).div_ceil(6);
            let end = (8 * (align + value.len())) / 6;
            if end > start {
                add(enc[start..end].to_vec());
            }
        }
    }
    out
}

#[cfg(test)]
pub(crate) fn test_redactor(value: &[u8]) -> Redactor {
    Secrets::new(vec![Secret::new(
        "T".into(),
        "cleanroom-secret-T-x".into(),
        cleanroom_policy::SecretBinding {
            hosts: vec![cleanroom_policy::HostPattern::parse("a.test").unwrap()],
            header: "Authorization".into(),
            format: "{value}".into(),
        },
        String::from_utf8(value.to_vec()).unwrap(),
    )])
    .redactor()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cleanroom_policy::HostPattern;

    const VALUE: &str = "s3cr3t-value-0123456789";

    fn secrets() -> Secrets {
        Secrets::new(vec![
            Secret::new(
                "TOKEN".into(),
                "cleanroom-secret-TOKEN-aaaa".into(),
                SecretBinding {
                    hosts: vec![HostPattern::parse("api.test").unwrap()],
                    header: "Authorization".into(),
                    format: "Bearer {value}".into(),
                },
                VALUE.into(),
            ),
            Secret::new(
                "OTHER".into(),
                "cleanroom-secret-OTHER-bbbb".into(),
                SecretBinding {
                    hosts: vec![HostPattern::parse("*.other.test").unwrap()],
                    header: "X-Api-Key".into(),
                    format: "{value}".into(),
                },
                "other-value-987654321".into(),
            ),
        ])
    }

    fn req(uri: &str, headers: &[(&str, &str)]) -> Request<()> {
        let mut b = Request::builder().uri(uri);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap()
    }

    #[test]
    fn injects_into_the_bound_header_only() {
        let s = secrets();
        let mut r = req(
            "/x",
            &[("authorization", "Bearer cleanroom-secret-TOKEN-aaaa")],
        );
        assert_eq!(s.inject(&mut r, "api.test").unwrap(), vec!["TOKEN"]);
        assert_eq!(r.headers()["authorization"], format!("Bearer {VALUE}"));
        assert!(r.headers()["authorization"].is_sensitive());
        // The binding's format wins over whatever the guest wrapped around the placeholder.
        let mut r = req(
            "/",
            &[("authorization", "token cleanroom-secret-TOKEN-aaaa")],
        );
        s.inject(&mut r, "api.test").unwrap();
        assert_eq!(r.headers()["authorization"], format!("Bearer {VALUE}"));
        // No placeholder: untouched.
        let mut r = req("/", &[("authorization", "Bearer mine")]);
        assert!(s.inject(&mut r, "api.test").unwrap().is_empty());
        assert_eq!(r.headers()["authorization"], "Bearer mine");
    }

    #[test]
    fn out_of_scope_uses_are_violations() {
        let s = secrets();
        for (host, uri, headers) in [
            // wrong host
            (
                "x.other.test",
                "/",
                vec![("authorization", "Bearer cleanroom-secret-TOKEN-aaaa")],
            ),
            // wrong header
            (
                "api.test",
                "/",
                vec![("x-token", "cleanroom-secret-TOKEN-aaaa")],
            ),
            // in the URL
            ("api.test", "/?t=cleanroom-secret-TOKEN-aaaa", vec![]),
            // another secret's placeholder to this host
            (
                "api.test",
                "/",
                vec![("x-api-key", "cleanroom-secret-OTHER-bbbb")],
            ),
            // two placeholders in one header
            (
                "api.test",
                "/",
                vec![(
                    "authorization",
                    "cleanroom-secret-TOKEN-aaaa cleanroom-secret-OTHER-bbbb",
                )],
            ),
        ] {
            let mut r = req(uri, &headers);
            let e = s.inject(&mut r, host).unwrap_err();
            assert!(e.message.contains("placeholder of secret"), "{e:?}");
        }
        assert_eq!(
            s.placeholder_in_request(&req("/", &[("x", "cleanroom-secret-OTHER-bbbb")])),
            Some("OTHER".into())
        );
        assert!(s.binds("api.test") && s.binds("a.other.test") && !s.binds("other.test"));
    }

    #[test]
    fn redactor_masks_across_chunk_boundaries() {
        let s = secrets();
        let text = format!("echo: Bearer {VALUE} and again {VALUE}!");
        for split in 0..text.len() {
            let mut r = s.redactor();
            let mut out = r.push(&text.as_bytes()[..split]);
            out.extend(r.push(&text.as_bytes()[split..]));
            out.extend(r.finish());
            let out = String::from_utf8(out).unwrap();
            assert_eq!(out.len(), text.len());
            assert!(!out.contains(VALUE), "split at {split}: {out}");
            assert!(out.starts_with("echo: Bearer ****"));
        }
        // Byte by byte.
        let mut r = s.redactor();
        let mut out = Vec::new();
        for b in text.as_bytes() {
            out.extend(r.push(std::slice::from_ref(b)));
        }
        out.extend(r.finish());
        assert!(!String::from_utf8(out).unwrap().contains(VALUE));
        assert_eq!(s.redactor().mask_whole(b"nothing here"), None);
    }
}
