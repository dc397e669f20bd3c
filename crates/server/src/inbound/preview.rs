//! Host-based previews (`serve --preview-domain DOMAIN[:PORT]`, docs/network.md
//! "Inbound"): each exposure is served at a host name of its own,
//! `exp-<32 hex>.DOMAIN`, at the root of its own path space.
//!
//! Why: a browser's security boundary is the origin (scheme, host, port). Under path
//! routing (`/_sandbox/<id>/…` on the API's listener) every exposure shares one origin
//! with every other and with the API, so a page one sandbox serves could read another
//! exposure's pages with the visitor's cookie for it, and could send the visitor's
//! ambient credentials (a TLS client certificate) to the API. A host per exposure makes
//! each one its own origin; with a preview domain set, path routing is off.
//!
//! `localhost` works as a domain with no DNS set-up: browsers (and curl) resolve every
//! `*.localhost` name to the loopback address.

use super::EXPOSE_PREFIX;

/// The label an exposure's host name starts with: `exp-` and the id's 32 hex digits
/// (an exposure id's `_` is not allowed in a host name).
const LABEL_PREFIX: &str = "exp-";

/// A checked `--preview-domain`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviewDomain {
    /// Lower case, no trailing dot.
    domain: String,
    /// The port URLs name (what clients connect to, e.g. a reverse proxy's 443); `None`:
    /// the API listener's own.
    public_port: Option<u16>,
}

impl PreviewDomain {
    /// `DOMAIN[:PORT]`: DNS labels of `a-z 0-9 -` (1–63 each, no leading or trailing `-`).
    pub fn parse(s: &str) -> Result<PreviewDomain, String> {
        let (host, port) = match s.rsplit_once(':') {
            Some((h, p)) => {
                let port = p
                    .parse::<u16>()
                    .ok()
                    .filter(|p| *p != 0)
                    .ok_or_else(|| format!("--preview-domain {s:?}: {p:?} is not a port"))?;
                (h, Some(port))
            }
            None => (s, None),
        };
        let domain = host.trim_end_matches('.').to_ascii_lowercase();
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        };
        // An exposure's label (37 bytes) and a dot must fit in a 253-byte name.
        if domain.is_empty() || domain.len() > 253 - 38 || !domain.split('.').all(label_ok) {
            return Err(format!(
                "--preview-domain {s:?}: not a DNS name (labels of a-z, 0-9 and -)"
            ));
        }
        Ok(PreviewDomain {
            domain,
            public_port: port,
        })
    }

    /// The exposure a request's host (`Host` or `:authority`, port optional) names, if it
    /// is one of this domain's preview hosts. Anything else under the domain, or a name
    /// with more labels, is not.
    pub fn exposure_of(&self, host: &str) -> Option<String> {
        let name = strip_port(host)?.trim_end_matches('.').to_ascii_lowercase();
        let label = name.strip_suffix(&self.domain)?.strip_suffix('.')?;
        let hex = label.strip_prefix(LABEL_PREFIX)?;
        (hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| format!("exp_{hex}"))
    }

    /// Whether `host` is under this domain at all (a preview host or not).
    pub fn covers(&self, host: &str) -> bool {
        strip_port(host)
            .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
            .is_some_and(|h| h == self.domain || h.ends_with(&format!(".{}", self.domain)))
    }

    /// The base URLs are made with, once the API listener is bound.
    pub fn base(&self, scheme: &'static str, listener_port: u16) -> PreviewBase {
        PreviewBase {
            domain: self.clone(),
            scheme,
            port: self.public_port.unwrap_or(listener_port),
        }
    }
}

/// `host[:port]` or `[v6]:port` → the host part; `None` for an IPv6 literal (never a
/// preview host).
fn strip_port(host: &str) -> Option<&str> {
    if host.starts_with('[') {
        return None;
    }
    Some(host.rsplit_once(':').map_or(host, |(h, _)| h))
}

/// Makes the URL of each exposure.
#[derive(Debug, Clone)]
pub struct PreviewBase {
    pub domain: PreviewDomain,
    scheme: &'static str,
    port: u16,
}

impl PreviewBase {
    /// `scheme://exp-<hex>.DOMAIN[:port]/?cleanroom_token=…` (the port left out when it
    /// is the scheme's default).
    pub fn url(&self, exposure_id: &str, token: &str) -> String {
        let hex = exposure_id.strip_prefix("exp_").unwrap_or(exposure_id);
        let default = matches!((self.scheme, self.port), ("http", 80) | ("https", 443));
        let port = if default {
            String::new()
        } else {
            format!(":{}", self.port)
        };
        format!(
            "{}://{LABEL_PREFIX}{hex}.{}{port}/?{}={token}",
            self.scheme,
            self.domain.domain,
            super::TOKEN_PARAM
        )
    }
}

/// The refusal of a path-routed exposure request on a server with a preview domain.
pub fn path_routing_off() -> crate::model::error::EngineError {
    crate::model::error::EngineError::new(
        crate::model::error::ErrorCode::ExposureNotFound,
        format!(
            "this server serves exposures at host names of their own (--preview-domain), not under {EXPOSE_PREFIX}: use the exposure's url"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn domains_are_checked() {
        assert!(PreviewDomain::parse("localhost").is_ok());
        assert!(PreviewDomain::parse("Preview.Example.test.:8443").is_ok());
        for bad in [
            "", ".", "a..b", "-a.test", "a_b.test", "a.test:0", "a.test:x", "ä.test",
        ] {
            assert!(PreviewDomain::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_an_exposure_label_directly_under_the_domain_is_a_preview_host() {
        let d = PreviewDomain::parse("preview.test").unwrap();
        let id = format!("exp_{HEX}");
        assert_eq!(
            d.exposure_of(&format!("exp-{HEX}.preview.test")),
            Some(id.clone())
        );
        assert_eq!(
            d.exposure_of(&format!("EXP-{HEX}.Preview.TEST.:8080")),
            Some(id)
        );
        for not in [
            "preview.test".to_string(),
            format!("x.exp-{HEX}.preview.test"),
            format!("exp-{HEX}.preview.test.evil"),
            format!("exp-{HEX}xpreview.test"),
            format!("exp-{}.preview.test", &HEX[1..]),
            format!("exp-{HEX}g.preview.test"),
            "[::1]:80".to_string(),
            "127.0.0.1:80".to_string(),
        ] {
            assert_eq!(d.exposure_of(&not), None, "{not}");
        }
        assert!(d.covers("a.preview.test:1"));
        assert!(!d.covers("apreview.test"));
    }

    #[test]
    fn urls_name_the_public_port_unless_it_is_the_default() {
        let id = format!("exp_{HEX}");
        let d = PreviewDomain::parse("localhost").unwrap();
        assert_eq!(
            d.base("http", 7000).url(&id, "t"),
            format!("http://exp-{HEX}.localhost:7000/?cleanroom_token=t")
        );
        let d = PreviewDomain::parse("p.test:443").unwrap();
        assert_eq!(
            d.base("https", 7000).url(&id, "t"),
            format!("https://exp-{HEX}.p.test/?cleanroom_token=t")
        );
    }
}
