//! `serve --ui-listen`: a further TCP listener for browsers, and the addresses the web
//! console's login links name ([`crate::web`], docs/web.md).
//!
//! A server on its unix socket is reachable by no browser; this listener serves the same
//! service as the main one (console, REST, Connect, every request authenticated), so a
//! unix user can log in with the link `cleanroom ui` prints. It takes no credentials of
//! its own: a caller is a bearer token's, a client certificate's or a console session's
//! principal, or nobody. `--insecure-no-auth` makes every TCP caller an admin, so with it
//! the address must be loopback, as for `--listen`.
//!
//! `--metrics-listen` is bound the same way and serves `/metrics` alone (see
//! [`crate::web::WebService`]), authenticated as on every listener.

use super::listener::Transport;
use super::{AuthConfig, Listen, ServeError};

/// Bind `--ui-listen` (`http://` or `https://` with `--tls-cert`/`--tls-key`).
pub async fn bind(listen: &Listen, auth: &AuthConfig) -> Result<Transport, ServeError> {
    let (t, url) = bind_tcp(listen, auth, "--ui-listen").await?;
    eprintln!("cleanroom: web console on {url}/ui/");
    Ok(t)
}

/// Bind `--metrics-listen`: a listener of `/metrics` alone (docs/metrics.md), bound and
/// authenticated like `--ui-listen`.
pub async fn bind_metrics(listen: &Listen, auth: &AuthConfig) -> Result<Transport, ServeError> {
    let (t, url) = bind_tcp(listen, auth, "--metrics-listen").await?;
    eprintln!("cleanroom: metrics on {url}/metrics");
    Ok(t)
}

/// A further TCP listener (`flag` names it in refusals) and its `scheme://address`.
async fn bind_tcp(
    listen: &Listen,
    auth: &AuthConfig,
    flag: &str,
) -> Result<(Transport, String), ServeError> {
    let (addr, tls) = match listen {
        Listen::Unix(p) => {
            return Err(ServeError::Auth(format!(
                "{flag} must be http:// or https://, not unix://{}",
                p.display()
            )))
        }
        Listen::Tcp(a) => (a, None),
        Listen::Https(a) => {
            let (Some(cert), Some(key)) = (&auth.tls_cert, &auth.tls_key) else {
                return Err(ServeError::Auth(format!(
                    "{flag} https:// needs --tls-cert and --tls-key"
                )));
            };
            let acceptor = super::listener::tls_acceptor(cert, key, auth.client_ca.as_deref())
                .map_err(ServeError::Auth)?;
            (a, Some(acceptor))
        }
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| ServeError::Listen(addr.clone(), e))?;
    let local = listener
        .local_addr()
        .map_err(|e| ServeError::Listen(addr.clone(), e))?;
    if auth.insecure_no_auth && !local.ip().is_loopback() {
        return Err(ServeError::Auth(format!(
            "--insecure-no-auth is only allowed with a loopback {flag}, not {local}"
        )));
    }
    let scheme = if tls.is_some() { "https" } else { "http" };
    Ok((Transport::Tcp(listener, tls), format!("{scheme}://{local}")))
}

/// `http(s)://host:port` of a TCP transport, for login links (an unspecified address
/// becomes loopback: the link is for a browser on this host); `None` for a unix socket.
pub fn url_of(t: &Transport) -> Option<String> {
    let Transport::Tcp(l, tls) = t else {
        return None;
    };
    let mut a = l.local_addr().ok()?;
    if a.ip().is_unspecified() {
        a.set_ip(if a.is_ipv4() {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            std::net::Ipv6Addr::LOCALHOST.into()
        });
    }
    let scheme = if tls.is_some() { "https" } else { "http" };
    Some(format!("{scheme}://{a}"))
}
