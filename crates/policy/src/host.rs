//! Host names and patterns as the egress policy understands them.

use serde::{Deserialize, Serialize};

/// An allow/deny target: an exact host, or every subdomain of a suffix (`*.example.com`,
/// which does not match `example.com` itself).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub enum HostPattern {
    Exact(String),
    Suffix(String),
}

impl HostPattern {
    /// Normalize: trim, lowercase, strip one trailing dot, IDNA to ASCII (punycode), and
    /// validate each label. IP literals are refused: policy names hosts, never addresses.
    pub fn parse(raw: &str) -> Result<HostPattern, String> {
        let s = raw.trim();
        let (suffix, name) = match s.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, s),
        };
        if name.contains('*') {
            return Err(format!(
                "{raw:?}: only a leading \"*.\" wildcard is supported"
            ));
        }
        if let Some((scheme, _)) = name.split_once("://") {
            return Err(format!(
                "{raw:?}: host must be a host name like api.example.com, not a URL; drop the scheme `{scheme}://`{}",
                if name.split_once("://").is_some_and(|(_, r)| r.contains('/')) { " and the path" } else { "" }
            ));
        }
        if name.contains('/') {
            return Err(format!(
                "{raw:?}: host must be a host name only, without a path (like api.example.com)"
            ));
        }
        if name.contains(':') {
            return Err(format!(
                "{raw:?}: give the port in `ports`, not in the host"
            ));
        }
        let name = name.strip_suffix('.').unwrap_or(name);
        if name.is_empty() {
            return Err(format!("{raw:?}: empty host name"));
        }
        let ascii =
            idna::domain_to_ascii(name).map_err(|_| format!("{raw:?}: not a valid host name"))?;
        if ascii.parse::<std::net::Ipv4Addr>().is_ok() || name.parse::<std::net::Ipv6Addr>().is_ok()
        {
            return Err(format!(
                "{raw:?}: IP addresses are not allowed; name the host"
            ));
        }
        if ascii.len() > 253 {
            return Err(format!("{raw:?}: host name longer than 253 characters"));
        }
        for label in ascii.split('.') {
            let ok = !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !ok {
                return Err(format!("{raw:?}: invalid label {label:?}"));
            }
        }
        if suffix && !ascii.contains('.') {
            return Err(format!(
                "{raw:?}: a wildcard must cover a registrable suffix (e.g. \"*.example.com\")"
            ));
        }
        Ok(if suffix {
            HostPattern::Suffix(ascii)
        } else {
            HostPattern::Exact(ascii)
        })
    }

    /// Does this pattern match a normalized host name?
    pub fn matches(&self, host: &str) -> bool {
        match self {
            HostPattern::Exact(h) => h == host,
            HostPattern::Suffix(s) => {
                host.len() > s.len() + 1
                    && host.ends_with(s.as_str())
                    && host[..host.len() - s.len()].ends_with('.')
            }
        }
    }

    /// Could some host match both patterns?
    pub fn overlaps(&self, other: &HostPattern) -> bool {
        match (self, other) {
            (HostPattern::Exact(a), _) => other.matches(a),
            (_, HostPattern::Exact(b)) => self.matches(b),
            (HostPattern::Suffix(a), HostPattern::Suffix(b)) => {
                a == b
                    || HostPattern::Suffix(a.clone()).matches(b)
                    || HostPattern::Suffix(b.clone()).matches(a)
            }
        }
    }
}

impl std::fmt::Display for HostPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostPattern::Exact(h) => write!(f, "{h}"),
            HostPattern::Suffix(s) => write!(f, "*.{s}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_case_trailing_dot_and_idna() {
        assert_eq!(
            HostPattern::parse(" API.GitHub.com. ").unwrap(),
            HostPattern::Exact("api.github.com".into())
        );
        assert_eq!(
            HostPattern::parse("*.NPMJS.org").unwrap(),
            HostPattern::Suffix("npmjs.org".into())
        );
        assert_eq!(
            HostPattern::parse("bücher.example").unwrap(),
            HostPattern::Exact("xn--bcher-kva.example".into())
        );
    }

    #[test]
    fn rejects_bad_patterns() {
        for bad in [
            "",
            "*",
            "*.com",
            "a.*.com",
            "foo*.com",
            "1.2.3.4",
            "::1",
            "[::1]",
            "host:443",
            "-bad.com",
            "a..b",
            "ex ample.com",
        ] {
            assert!(HostPattern::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn suffix_matching() {
        let p = HostPattern::parse("*.npmjs.org").unwrap();
        assert!(p.matches("registry.npmjs.org"));
        assert!(p.matches("a.b.npmjs.org"));
        assert!(!p.matches("npmjs.org"));
        assert!(!p.matches("evilnpmjs.org"));
        assert!(p.overlaps(&HostPattern::parse("evil.npmjs.org").unwrap()));
        assert!(!p.overlaps(&HostPattern::parse("npmjs.com").unwrap()));
    }
}
