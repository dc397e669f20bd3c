//! Keeping secret values out of everything a secret-bound host sends back to the sandbox.
//!
//! Every byte the sandbox receives from a bound host passes through here: the status line's
//! reason phrase, header names and values, the body, and trailers. The values are searched
//! for as sent and in their common encodings ([`crate::secrets::encodings`]). A body the gateway was not
//! told is compressed is still searched through its decompressions: gzip, zlib and zstd
//! by their magic, raw deflate by trial (whatever Content-Encoding says), and a body in a
//! compression format the gateway cannot open (xz, bzip2, lz4) is refused with
//! `response_not_inspectable` before any of it is sent.

use crate::body::BoxError;
use crate::secrets::Redactor;
use crate::trial::{Trials, Verdict};
use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::Response;
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

/// Body bytes looked at before the response head is passed on (compression magic).
const SNIFF: usize = 8;
/// Most output held back while a decompressed view ends in the start of a value; beyond
/// that the body is refused.
const HOLD_MAX: usize = 1 << 20;

/// Called with a message when a response is refused as not inspectable.
pub(crate) type OnRefuse = Arc<dyn Fn(String) + Send + Sync>;

/// Mask values in every header name and value. A name that masking would make invalid is
/// dropped with its value.
pub(crate) fn redact_headers(redactor: &Redactor, headers: &mut HeaderMap) {
    let old = std::mem::take(headers);
    let mut name: Option<HeaderName> = None;
    for (n, mut value) in old {
        if let Some(n) = n {
            name = match redactor.mask_whole(n.as_str().as_bytes()) {
                Some(masked) => HeaderName::from_bytes(&masked).ok(),
                None => Some(n),
            };
        }
        let Some(name) = name.clone() else { continue };
        if let Some(masked) = redactor.mask_whole(value.as_bytes()) {
            match HeaderValue::from_bytes(&masked) {
                Ok(v) => value = v,
                Err(_) => continue,
            }
        }
        headers.append(name, value);
    }
}

/// Compression formats the gateway cannot open, by magic.
fn unopenable(prefix: &[u8]) -> Option<&'static str> {
    if prefix.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        Some("xz")
    } else if prefix.len() >= 4 && prefix.starts_with(b"BZh") && prefix[3].is_ascii_digit() {
        Some("bzip2")
    } else if prefix.starts_with(&[0x04, 0x22, 0x4d, 0x18]) {
        Some("lz4")
    } else if prefix.starts_with(&[0xce, 0xb2, 0xcf, 0x81]) {
        Some("framed brotli")
    } else {
        None
    }
}

/// A response from a bound host with every secret value masked in the status line,
/// headers, body and trailers. `Err` (with the reason) when it cannot be checked: a
/// Content-Encoding, or a body in a compression format the gateway cannot open.
pub(crate) async fn redact_response(
    resp: Response<Incoming>,
    redactor: Redactor,
    on_refuse: OnRefuse,
) -> Result<Response<crate::body::Body>, String> {
    let encoded = resp
        .headers()
        .get_all(hyper::header::CONTENT_ENCODING)
        .iter()
        .any(|v| !v.as_bytes().eq_ignore_ascii_case(b"identity"));
    if encoded {
        return Err("the upstream compressed its response although asked not to".into());
    }
    let (mut parts, mut body) = resp.into_parts();
    redact_headers(&redactor, &mut parts.headers);
    if let Some(reason) = parts.extensions.get::<hyper::ext::ReasonPhrase>() {
        if let Some(masked) = redactor.mask_whole(reason.as_bytes()) {
            match hyper::ext::ReasonPhrase::try_from(masked) {
                Ok(r) => parts.extensions.insert(r),
                Err(_) => parts.extensions.remove::<hyper::ext::ReasonPhrase>(),
            };
        }
    }
    // Read the body's first bytes: they say whether it is compressed.
    let mut early = VecDeque::new();
    let mut prefix = Vec::new();
    let mut ended = false;
    let mut failed = None;
    while prefix.len() < SNIFF {
        match http_body_util::BodyExt::frame(&mut body).await {
            None => {
                ended = true;
                break;
            }
            Some(Err(e)) if early.is_empty() => {
                return Err(format!("reading the response body: {e}"))
            }
            Some(Err(e)) => {
                // What arrived is passed on; the error then cuts the body (see `failed`).
                failed = Some(e.into());
                break;
            }
            Some(Ok(f)) => {
                let is_data = f.is_data();
                if let Some(d) = f.data_ref() {
                    prefix.extend_from_slice(&d[..d.len().min(SNIFF)]);
                }
                early.push_back(f);
                if !is_data {
                    break;
                }
            }
        }
    }
    if let Some(format) = unopenable(&prefix) {
        return Err(format!(
            "the body is {format}-compressed, which the gateway cannot search"
        ));
    }
    // What was read ahead is searched now, so a value found in it is a clean 502 rather
    // than a body cut off after the head went out.
    let mut probe = Trials::start(&prefix, &redactor);
    for d in early.iter().filter_map(|f| f.data_ref()) {
        if let Verdict::Refuse(msg) = probe.feed(d) {
            return Err(msg);
        }
    }
    // The stream's own trials see the read-ahead frames again, in order.
    let trials = Trials::start(&prefix, &redactor);
    let body = Redacted {
        inner: body,
        early,
        ended,
        failed,
        redactor,
        trials: Mutex::new(trials),
        held: Vec::new(),
        pending: None,
        done: false,
        on_refuse,
    };
    Ok(Response::from_parts(
        parts,
        http_body_util::BodyExt::boxed(body),
    ))
}

/// A body stream passed through a [`Redactor`] and the trial decompressions.
struct Redacted {
    inner: Incoming,
    /// Frames read before the head was passed on (compression sniffing).
    early: VecDeque<Frame<Bytes>>,
    /// The inner body ended while sniffing.
    ended: bool,
    /// The inner body failed (while sniffing, or while held-back bytes went out first): the
    /// error to end with once everything received before it was passed on. An upstream
    /// that closes TLS without close_notify under a close-delimited body lands here: every
    /// byte it sent reaches the sandbox, and the cut tells the sandbox the response may be
    /// incomplete (RFC 9112 section 9.8: such a body is complete only with a closure alert).
    failed: Option<BoxError>,

    redactor: Redactor,
    trials: Mutex<Trials>,
    /// Redacted output held back (see [`Verdict::Hold`]).
    held: Vec<u8>,
    /// A trailers frame that arrived while held-back bytes still had to go out first.
    pending: Option<Frame<Bytes>>,
    done: bool,
    on_refuse: OnRefuse,
}

impl Redacted {
    /// The next frame: the read-ahead ones first.
    fn next_inner(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Some(f) = self.early.pop_front() {
            return Poll::Ready(Some(Ok(f)));
        }
        if let Some(e) = self.failed.take() {
            return Poll::Ready(Some(Err(e)));
        }
        if self.ended {
            return Poll::Ready(None);
        }
        Pin::new(&mut self.inner)
            .poll_frame(cx)
            .map(|o| o.map(|r| r.map_err(Into::into)))
    }

    /// Check a data chunk through the trial decompressions; `Ok(true)` holds its output
    /// back, `Err` cuts the body.
    fn check(&mut self, data: &[u8]) -> Result<bool, BoxError> {
        let mut verdict = match self.trials.lock() {
            Ok(mut t) => t.feed(data),
            Err(_) => Verdict::Refuse("internal: trial state poisoned".into()),
        };
        if matches!(verdict, Verdict::Hold) && self.held.len() > HOLD_MAX {
            verdict = Verdict::Refuse("a decompressed view keeps ending in a value's start".into());
        }
        match verdict {
            Verdict::Clean => Ok(false),
            Verdict::Hold => Ok(true),
            Verdict::Refuse(msg) => {
                self.done = true;
                (self.on_refuse)(msg.clone());
                Err(msg.into())
            }
        }
    }
}

impl Body for Redacted {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Some(f) = self.pending.take() {
            return Poll::Ready(Some(Ok(f)));
        }
        loop {
            if self.done {
                return Poll::Ready(None);
            }
            match self.next_inner(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Err(e))) => {
                    // Everything received before the error goes out first (masked like at
                    // a clean end), then the error cuts the body.
                    let mut rest = std::mem::take(&mut self.held);
                    rest.extend(self.redactor.finish());
                    if rest.is_empty() {
                        self.done = true;
                        return Poll::Ready(Some(Err(e)));
                    }
                    self.failed = Some(e);
                    return Poll::Ready(Some(Ok(Frame::data(Bytes::from(rest)))));
                }
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => {
                        let hold = match self.check(&data) {
                            Ok(h) => h,
                            Err(e) => return Poll::Ready(Some(Err(e))),
                        };
                        let out = self.redactor.push(&data);
                        self.held.extend_from_slice(&out);
                        if !hold && !self.held.is_empty() {
                            let out = std::mem::take(&mut self.held);
                            return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
                        }
                    }
                    Err(other) => {
                        let other = match other.into_trailers() {
                            Ok(mut trailers) => {
                                redact_headers(&self.redactor, &mut trailers);
                                Frame::trailers(trailers)
                            }
                            Err(f) => f,
                        };
                        let mut rest = std::mem::take(&mut self.held);
                        rest.extend(self.redactor.finish());
                        if rest.is_empty() {
                            return Poll::Ready(Some(Ok(other)));
                        }
                        self.pending = Some(other);
                        return Poll::Ready(Some(Ok(Frame::data(Bytes::from(rest)))));
                    }
                },
                Poll::Ready(None) => {
                    self.done = true;
                    let mut rest = std::mem::take(&mut self.held);
                    rest.extend(self.redactor.finish());
                    if !rest.is_empty() {
                        return Poll::Ready(Some(Ok(Frame::data(Bytes::from(rest)))));
                    }
                }
            }
        }
    }

    fn size_hint(&self) -> SizeHint {
        // Masking keeps lengths, so the upstream's exact length is still exact (plus what
        // was read ahead and not yet passed on).
        let inner = if self.failed.is_some() {
            SizeHint::new()
        } else if self.ended {
            SizeHint::with_exact(0)
        } else {
            self.inner.size_hint()
        };
        let ahead: u64 = self
            .early
            .iter()
            .filter_map(|f| f.data_ref().map(|d| d.len() as u64))
            .sum();
        let mut hint = SizeHint::new();
        hint.set_lower(inner.lower() + ahead);
        if let Some(u) = inner.upper() {
            hint.set_upper(u + ahead);
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE};
    use base64::Engine;

    const VALUE: &[u8] = b"sk+live/0123?456789~abc";

    fn redactor() -> Redactor {
        crate::secrets::test_redactor(VALUE)
    }

    /// Every form an upstream might echo the value in, embedded in other text.
    fn echoed_forms() -> Vec<Vec<u8>> {
        let mut forms = vec![VALUE.to_vec()];
        let hex: String = VALUE.iter().map(|b| format!("{b:02x}")).collect();
        forms.push(hex.clone().into_bytes());
        forms.push(hex.to_uppercase().into_bytes());
        let pct: String = VALUE
            .iter()
            .map(|&b| {
                if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        forms.push(pct.clone().into_bytes());
        forms.push(pct.to_lowercase().into_bytes());
        forms.push(
            VALUE
                .iter()
                .flat_map(|b| format!("%{b:02x}").into_bytes())
                .collect(),
        );
        for lead in [&b""[..], b"x", b"xy"] {
            for tail in [&b""[..], b"z", b"zw"] {
                let mut data = lead.to_vec();
                data.extend_from_slice(VALUE);
                data.extend_from_slice(tail);
                for e in [&STANDARD, &URL_SAFE] {
                    let enc = e.encode(&data);
                    forms.push(enc.clone().into_bytes());
                    forms.push(enc.trim_end_matches('=').as_bytes().to_vec());
                }
            }
        }
        forms
    }

    /// The value can still be read out of `text` in some form.
    fn leaks(text: &[u8]) -> bool {
        let t = String::from_utf8_lossy(text);
        if t.contains(std::str::from_utf8(VALUE).unwrap()) {
            return true;
        }
        // Decode every base64/hex-looking run and look again.
        for word in t.split(|c: char| !(c.is_ascii_alphanumeric() || "+/-_=%".contains(c))) {
            for e in [&STANDARD, &URL_SAFE] {
                for cut in 0..4 {
                    let w = &word[cut.min(word.len())..];
                    let w = &w[..w.len() - w.len() % 4];
                    if let Ok(d) = e.decode(w) {
                        if d.windows(VALUE.len()).any(|x| x == VALUE) {
                            return true;
                        }
                    }
                }
            }
        }
        false
    }

    #[test]
    fn every_common_encoding_is_masked_at_any_alignment() {
        for form in echoed_forms() {
            let mut text = b"echo: [".to_vec();
            text.extend_from_slice(&form);
            text.extend_from_slice(b"] done");
            let mut r = redactor();
            let mut out = r.push(&text);
            out.extend(r.finish());
            assert_eq!(out.len(), text.len());
            assert!(
                !leaks(&out) && out.contains(&b'*'),
                "{} -> {}",
                String::from_utf8_lossy(&text),
                String::from_utf8_lossy(&out)
            );
        }
        // Unrelated text is left alone.
        assert_eq!(redactor().mask_whole(b"hello world 0123"), None);
    }

    #[test]
    fn header_names_and_values_are_masked() {
        let mut h = HeaderMap::new();
        let name = format!("x-{}", hex_lower(VALUE));
        h.insert(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            "1".parse().unwrap(),
        );
        h.append("x-echo", HeaderValue::from_bytes(VALUE).unwrap());
        h.append("x-echo", "fine".parse().unwrap());
        redact_headers(&redactor(), &mut h);
        let all = format!("{h:?}");
        assert!(!all.contains(&hex_lower(VALUE)), "{all}");
        assert!(!all.contains(std::str::from_utf8(VALUE).unwrap()), "{all}");
        assert_eq!(h.get_all("x-echo").iter().count(), 2);
        assert_eq!(h.len(), 3);
    }

    fn hex_lower(v: &[u8]) -> String {
        v.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn formats_the_gateway_cannot_open_are_named() {
        assert_eq!(
            unopenable(&[0xfd, b'7', b'z', b'X', b'Z', 0, 0, 4]),
            Some("xz")
        );
        assert_eq!(unopenable(b"BZh91AY&"), Some("bzip2"));
        assert_eq!(unopenable(&[0x04, 0x22, 0x4d, 0x18, 0, 0]), Some("lz4"));
        assert_eq!(unopenable(b"BZh is a word"), None);
        assert_eq!(unopenable(b"{\"a\":1}"), None);
    }
}
