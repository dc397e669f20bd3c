//! Transparent TCP: a connection the sandbox opened to an address our DNS handed out.
//!
//! The address names the host; the port comes from the SYN. Before any byte reaches the
//! upstream, the client's opening is read and judged ([`crate::sniff`]): an HTTP request
//! goes to the strict HTTP handling (each request checked and re-serialized), a TLS
//! ClientHello must name the connection's host, and an opening that stalls or does not
//! parse is refused. A client that sends nothing at first may be waiting for the server
//! (SSH, SMTP): the upstream is connected and whichever side speaks first decides.

use crate::closing::close_soon;
use crate::ctx::Ctx;
use crate::event::EgressEvent;
use crate::sniff::{peek, peek_from, Opening, Prefixed, Refused, FIRST_BYTE_WAIT};
use cleanroom_policy::{normalize_wire_host, DenyReason};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// Where a judged connection came from: a transparent connection to a name (upstream not
/// yet connected), or a CONNECT tunnel (its upstream already connected).
enum Via {
    Named,
    Tunnel,
}

impl Via {
    fn proto(&self, tls: bool) -> &'static str {
        match (self, tls) {
            (Via::Tunnel, _) => "connect",
            (Via::Named, true) => "tls",
            (Via::Named, false) => "tcp",
        }
    }
}

/// A client connection to `host:port` that policy already allowed: classify its opening,
/// then hand it to HTTP handling or splice it to the upstream.
pub(crate) async fn handle_named<S>(mut client: S, ctx: Arc<Ctx>, host: String, port: u16)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    match peek(&mut client, Some(FIRST_BYTE_WAIT)).await {
        Ok((Opening::Closed, _)) => {}
        Ok((Opening::Silent, _)) => server_first(client, None, ctx, host, port, Via::Named).await,
        Ok((opening, prefix)) => {
            decide(client, prefix, opening, None, ctx, host, port, Via::Named).await
        }
        Err(r) => refuse(client, &ctx, &host, port, "tcp", r).await,
    }
}

/// A tunnel (CONNECT) already connected upstream: judge the client's opening like a
/// transparent connection's (TLS SNI must name the tunnel's host, HTTP requests are checked
/// one by one), then splice.
pub(crate) async fn splice_checked<S>(
    mut client: S,
    upstream: TcpStream,
    ctx: Arc<Ctx>,
    host: String,
    port: u16,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    match peek(&mut client, Some(FIRST_BYTE_WAIT)).await {
        Ok((Opening::Closed, _)) => {}
        Ok((Opening::Silent, _)) => {
            server_first(client, Some(upstream), ctx, host, port, Via::Tunnel).await
        }
        Ok((opening, prefix)) => {
            decide(
                client,
                prefix,
                opening,
                Some(upstream),
                ctx,
                host,
                port,
                Via::Tunnel,
            )
            .await
        }
        Err(r) => refuse(client, &ctx, &host, port, "connect", r).await,
    }
}

/// Refuse a connection whose opening could not be judged: deny event, then close.
async fn refuse<S: AsyncWrite + Unpin>(
    mut client: S,
    ctx: &Ctx,
    host: &str,
    port: u16,
    proto: &'static str,
    r: Refused,
) {
    if let Refused::Deny(reason, msg) = r {
        ctx.events
            .emit(EgressEvent::deny(host, port, proto, reason, msg));
    }
    close_soon(&mut client).await;
}

/// Act on a judged opening. `upstream` is the already connected upstream, if any; it is
/// dropped unused (nothing was written to it) when the opening goes elsewhere.
#[allow(clippy::too_many_arguments)]
async fn decide<S>(
    mut client: S,
    prefix: Vec<u8>,
    opening: Opening,
    upstream: Option<TcpStream>,
    ctx: Arc<Ctx>,
    host: String,
    port: u16,
    via: Via,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let tls = match opening {
        Opening::Closed | Opening::Silent => return close_soon(&mut client).await,
        Opening::Http if ctx.registries.mediates(&host) => {
            ctx.events.emit(EgressEvent::deny(
                &host,
                port,
                via.proto(false),
                DenyReason::RegistryNotAllowed,
                format!("plain HTTP to registry host {host}: registries are served over TLS only"),
            ));
            return close_soon(&mut client).await;
        }
        Opening::Http => {
            drop(upstream);
            // On the kernel plane the sockets themselves can carry the bodies.
            let client = match crate::pass::kernel_stream(client) {
                Ok(k) => return crate::pass::serve(k, prefix, ctx, host, port).await,
                Err(client) => client,
            };
            let mode = crate::http::Mode::Fixed { host, port };
            return crate::http::serve_boxed(Prefixed::new(prefix, client), ctx, mode).await;
        }
        Opening::Tls { sni } => {
            // Without a name, only TLS the gateway terminates (and so checks Host in) or a
            // rule that explicitly allows it goes on.
            let terminated = ctx.registries.mediates(&host) || ctx.secrets.binds(&host);
            let nameless_ok = terminated || ctx.policy().allows_missing_sni(&host, port);
            if let Err((reason, msg)) = sni_matches(sni.as_deref(), &host, nameless_ok) {
                ctx.events
                    .emit(EgressEvent::deny(&host, port, via.proto(true), reason, msg));
                return close_soon(&mut client).await;
            }
            if ctx.registries.mediates(&host) {
                drop(upstream);
                crate::mediate::terminate(Prefixed::new(prefix, client), ctx, host, port).await;
                return;
            }
            if ctx.secrets.binds(&host) {
                drop(upstream);
                crate::intercept::terminate(Prefixed::new(prefix, client), ctx, host, port).await;
                return;
            }
            true
        }
        Opening::Opaque => false,
    };
    let proto = via.proto(tls);
    let up = match upstream {
        Some(up) => up,
        None => match ctx.upstream_connect(&host, port).await {
            Ok(up) => up,
            Err(e) => {
                ctx.report_upstream_error(&host, port, proto, e);
                return close_soon(&mut client).await;
            }
        },
    };
    ctx.events.emit(EgressEvent::allow(&host, port, proto));
    splice(Prefixed::new(prefix, client), up).await
}

/// The client sent nothing at first. Connect the upstream and see who speaks first: a
/// client's opening is judged as usual (nothing it sent has been forwarded); a server that
/// speaks first is not an HTTP or TLS server one could front through, so the connection is
/// spliced from then on.
async fn server_first<S>(
    mut client: S,
    upstream: Option<TcpStream>,
    ctx: Arc<Ctx>,
    host: String,
    port: u16,
    via: Via,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let proto = via.proto(false);
    let mut up = match upstream {
        Some(up) => up,
        None => match ctx.upstream_connect(&host, port).await {
            Ok(up) => up,
            Err(e) => {
                ctx.report_upstream_error(&host, port, proto, e);
                return close_soon(&mut client).await;
            }
        },
    };
    let (mut cbuf, mut ubuf) = ([0u8; 4096], [0u8; 4096]);
    tokio::select! {
        r = client.read(&mut cbuf) => match r {
            Ok(n) if n > 0 => match peek_from(&mut client, cbuf[..n].to_vec()).await {
                Ok((opening, prefix)) => {
                    decide(client, prefix, opening, Some(up), ctx, host, port, via).await
                }
                Err(r) => refuse(client, &ctx, &host, port, proto, r).await,
            },
            _ => close_soon(&mut client).await,
        },
        r = up.read(&mut ubuf) => match r {
            Ok(n) if n > 0 => {
                ctx.events.emit(EgressEvent::allow(&host, port, proto));
                if client.write_all(&ubuf[..n]).await.is_ok() {
                    splice(client, up).await;
                } else {
                    close_soon(&mut client).await;
                }
            }
            _ => close_soon(&mut client).await,
        },
    }
}

/// An SNI naming another host than the connection's is refused (`host_mismatch`). No SNI
/// is refused too (`sni_missing`) unless `nameless_ok`: the connection reaches `host`'s
/// address, but a front there may serve any virtual host to a client that names none.
fn sni_matches(
    sni: Option<&str>,
    host: &str,
    nameless_ok: bool,
) -> Result<(), (DenyReason, String)> {
    match sni {
        None if nameless_ok => Ok(()),
        None => Err((
            DenyReason::SniMissing,
            format!(
                "TLS without a server name (SNI) on a connection to {host}; its allow rule \
                 can permit it with allow_missing_sni: true"
            ),
        )),
        Some(s) if normalize_wire_host(s).as_deref() == Some(host) => Ok(()),
        Some(s) => Err((
            DenyReason::HostMismatch,
            format!("TLS server name {s:?} on a connection to {host}"),
        )),
    }
}

/// Bytes read at once from either side of an opaque flow: a full read becomes two full-sized
/// segments on the tun link ([`crate::link::MSS`]), where 64 KiB — a power of two just past
/// one segment — became a full one and a 41-byte one, and tokio's default 8 KiB cut segments
/// (and so packets through the stack) to an eighth.
const COPY_BUFFER: usize = 2 * crate::link::MSS;

/// Copy both ways until both sides are done.
pub(crate) async fn splice<A>(mut client: A, mut upstream: TcpStream)
where
    A: AsyncRead + AsyncWrite + Unpin,
{
    let _ = tokio::io::copy_bidirectional_with_sizes(
        &mut client,
        &mut upstream,
        COPY_BUFFER,
        COPY_BUFFER,
    )
    .await;
    let _ = upstream.shutdown().await;
    close_soon(&mut client).await;
}

#[cfg(test)]
mod tests {
    use super::sni_matches;

    #[test]
    fn sni_rules() {
        use cleanroom_policy::DenyReason::{HostMismatch, SniMissing};
        let reason = |sni, ok| sni_matches(sni, "a.test", ok).map_err(|(r, _)| r);
        assert_eq!(reason(None, false), Err(SniMissing));
        assert_eq!(reason(None, true), Ok(()));
        for ok in [false, true] {
            assert_eq!(reason(Some("A.test."), ok), Ok(()));
            assert_eq!(reason(Some("b.test"), ok), Err(HostMismatch));
            assert_eq!(reason(Some("10.0.0.1"), ok), Err(HostMismatch));
        }
    }
}
