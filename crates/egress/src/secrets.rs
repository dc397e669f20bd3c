//! Secrets as the sandbox sees them: opaque placeholders.
//!
//! The real values stay in the server. Each secret of a sandbox gets a random placeholder
//! (`cleanroom-secret-<ID>-<random>`) that the guest finds in its environment; the gateway
//! recognizes it on the wire. Sent anywhere the binding does not allow, it is refused with
//! `secret_scope_violation`.

use hyper::Request;

/// The placeholders of one sandbox.
#[derive(Debug, Clone, Default)]
pub struct Placeholders {
    /// (secret id, placeholder) pairs.
    pub entries: Vec<(String, String)>,
}

impl Placeholders {
    /// Which secret's placeholder occurs in `data`, if any.
    pub fn find_in(&self, data: &[u8]) -> Option<&str> {
        self.entries.iter().find_map(|(id, ph)| {
            data.windows(ph.len())
                .any(|w| w == ph.as_bytes())
                .then_some(id.as_str())
        })
    }

    /// A placeholder in the request line or any header value.
    pub fn placeholder_in_request<B>(&self, req: &Request<B>) -> Option<String> {
        if self.entries.is_empty() {
            return None;
        }
        if let Some(id) = self.find_in(req.uri().to_string().as_bytes()) {
            return Some(id.to_string());
        }
        req.headers()
            .values()
            .find_map(|v| self.find_in(v.as_bytes()))
            .map(str::to_string)
    }
}
