//! Where the server is: `--host` > `CLEANROOM_HOST` > config `control_host` > default socket.
//! How to authenticate to it: `--token` > `CLEANROOM_TOKEN` > config `token`, and which CA
//! verifies an `https://` server: `--ca-cert` > `CLEANROOM_CA_CERT` > config `ca_cert`
//! (default: the system's roots), or a pinned server certificate: `--server-cert-sha256` >
//! `CLEANROOM_SERVER_CERT_SHA256` > config `server_cert_sha256`. The config file is
//! `$XDG_CONFIG_HOME/cleanroom/config.json` (else `~/.config/cleanroom/config.json`).

use std::path::{Path, PathBuf};

/// A parsed server address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `unix:///path/to.sock`
    Unix(PathBuf),
    /// `http://host:port` (h2c / HTTP/1.1)
    Http(String),
    /// `https://host:port`
    Https(String),
}

/// Invalid endpoint strings.
#[derive(Debug, thiserror::Error)]
#[error("invalid endpoint {0:?}: expected unix:///path, http://host:port or https://host:port")]
pub struct EndpointError(pub String);

impl Endpoint {
    /// Parse `unix:///…`, `http://…`, `https://…`, or a bare absolute socket path.
    pub fn parse(s: &str) -> Result<Endpoint, EndpointError> {
        let s = s.trim();
        if let Some(p) = s.strip_prefix("unix://") {
            if p.starts_with('/') {
                return Ok(Endpoint::Unix(PathBuf::from(p)));
            }
        } else if s.starts_with('/') {
            return Ok(Endpoint::Unix(PathBuf::from(s)));
        } else if let Some(rest) = s.strip_prefix("http://") {
            let auth = rest.trim_end_matches('/');
            if !auth.is_empty() && !auth.contains('/') {
                return Ok(Endpoint::Http(auth.to_string()));
            }
        } else if let Some(rest) = s.strip_prefix("https://") {
            let auth = rest.trim_end_matches('/');
            if !auth.is_empty() && !auth.contains('/') {
                return Ok(Endpoint::Https(auth.to_string()));
            }
        }
        Err(EndpointError(s.to_string()))
    }

    /// The `unix://`/`http://` form, for messages.
    pub fn display(&self) -> String {
        match self {
            Endpoint::Unix(p) => format!("unix://{}", p.display()),
            Endpoint::Http(a) => format!("http://{a}"),
            Endpoint::Https(a) => format!("https://{a}"),
        }
    }
}

/// System-wide socket used when it exists (a root server).
pub const SYSTEM_SOCKET: &str = "/var/run/cleanroom/cleanroom.sock";

/// Per-user socket: `$XDG_RUNTIME_DIR/cleanroom/cleanroom.sock`, else `/tmp/cleanroom-$UID/…`.
pub fn user_socket() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d).join("cleanroom/cleanroom.sock"),
        // SAFETY: getuid never fails.
        _ => PathBuf::from(format!("/tmp/cleanroom-{}/cleanroom.sock", unsafe {
            libc::getuid()
        })),
    }
}

/// Default endpoint a server listens on: the system socket for root, the user socket otherwise.
pub fn default_listen() -> Endpoint {
    // SAFETY: geteuid never fails.
    if unsafe { libc::geteuid() } == 0 {
        Endpoint::Unix(PathBuf::from(SYSTEM_SOCKET))
    } else {
        Endpoint::Unix(user_socket())
    }
}

/// Client-side resolution order. `flag` is `--host`; the config file is
/// `$XDG_CONFIG_HOME/cleanroom/config.json` with a `control_host` field.
pub fn resolve(flag: Option<&str>) -> Result<Endpoint, EndpointError> {
    if let Some(f) = flag.filter(|f| !f.is_empty()) {
        return Endpoint::parse(f);
    }
    if let Ok(h) = std::env::var("CLEANROOM_HOST") {
        if !h.is_empty() {
            return Endpoint::parse(&h);
        }
    }
    if let Some(h) = config_control_host() {
        return Endpoint::parse(&h);
    }
    if Path::new(SYSTEM_SOCKET).exists() {
        return Ok(Endpoint::Unix(PathBuf::from(SYSTEM_SOCKET)));
    }
    Ok(Endpoint::Unix(user_socket()))
}

fn config_control_host() -> Option<String> {
    config_field("control_host")
}

fn config_field(name: &str) -> Option<String> {
    let dir = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    let text = std::fs::read_to_string(dir.join("cleanroom/config.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get(name)?.as_str().map(str::to_string)
}

/// A server plus the credentials to present to it.
#[derive(Debug, Clone)]
pub struct Target {
    pub endpoint: Endpoint,
    /// Bearer token sent on TCP/TLS endpoints (never over the unix socket, where the
    /// kernel's peer credentials identify the caller).
    pub token: Option<String>,
    /// PEM CA that verifies an `https://` server instead of the system's roots.
    pub ca_cert: Option<PathBuf>,
    /// Hex sha256 of the `https://` server's certificate (DER): accept exactly that one.
    pub server_cert_sha256: Option<String>,
    /// W3C `traceparent` sent with every call, so the server continues the caller's trace
    /// (docs/traces.md); `None` sends none (the server starts a trace of its own).
    pub traceparent: Option<String>,
}

impl From<Endpoint> for Target {
    fn from(endpoint: Endpoint) -> Self {
        Target {
            endpoint,
            token: None,
            ca_cert: None,
            server_cert_sha256: None,
            traceparent: None,
        }
    }
}

/// [`resolve`] plus the token and CA: flag > environment > config file.
pub fn resolve_target(
    host: Option<&str>,
    token: Option<&str>,
    ca_cert: Option<&Path>,
    server_cert_sha256: Option<&str>,
) -> Result<Target, EndpointError> {
    let endpoint = resolve(host)?;
    let pick = |flag: Option<String>, env: &str, field: &str| {
        flag.filter(|v| !v.is_empty())
            .or_else(|| std::env::var(env).ok().filter(|v| !v.is_empty()))
            .or_else(|| config_field(field))
    };
    Ok(Target {
        endpoint,
        token: pick(token.map(str::to_string), "CLEANROOM_TOKEN", "token")
            .map(|t| t.trim().to_string()),
        ca_cert: pick(
            ca_cert.map(|p| p.display().to_string()),
            "CLEANROOM_CA_CERT",
            "ca_cert",
        )
        .map(PathBuf::from),
        server_cert_sha256: pick(
            server_cert_sha256.map(str::to_string),
            "CLEANROOM_SERVER_CERT_SHA256",
            "server_cert_sha256",
        ),
        traceparent: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_forms() {
        assert_eq!(
            Endpoint::parse("unix:///a/b.sock").unwrap(),
            Endpoint::Unix("/a/b.sock".into())
        );
        assert_eq!(
            Endpoint::parse("/a/b.sock").unwrap(),
            Endpoint::Unix("/a/b.sock".into())
        );
        assert_eq!(
            Endpoint::parse("http://127.0.0.1:7777").unwrap(),
            Endpoint::Http("127.0.0.1:7777".into())
        );
        assert_eq!(
            Endpoint::parse("https://h:1/").unwrap(),
            Endpoint::Https("h:1".into())
        );
        for bad in [
            "",
            "unix://rel",
            "ftp://x",
            "http://",
            "http://a/b",
            "tcp://1.2.3.4:5",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
    }
}
