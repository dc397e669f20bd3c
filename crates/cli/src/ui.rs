//! `cleanroom ui`: a one-time login link to the web console for the caller.
//!
//! The CLI asks the server (`POST /ui/api/login-code`) for a single-use, short-lived code
//! bound to the principal the server sees for this call — the unix user over the socket,
//! the token's principal over `http://` — and prints the link that spends it
//! (docs/web.md). One small HTTP/1.1 exchange over the same connection the API uses; the
//! code is printed once and never stored.

use crate::render::{self, EXIT_CLEANROOM_ERROR};
use clap::Args;
use cleanroom_client::endpoint::{Endpoint, Target};
use cleanroom_client::ErrorCode;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest answer read.
const MAX_ANSWER: u64 = 64 * 1024;

#[derive(Debug, Args)]
pub struct UiArgs {
    /// Print the answer as JSON ({url, principal, expiresInSeconds}) instead of the link
    #[arg(long)]
    pub json: bool,
}

async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    mut s: S,
    host: &str,
    token: Option<&str>,
) -> std::io::Result<Vec<u8>> {
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let req = format!(
        "POST /ui/api/login-code HTTP/1.1\r\nHost: {host}\r\n{auth}Content-Length: 0\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await?;
    let mut out = Vec::new();
    s.take(MAX_ANSWER).read_to_end(&mut out).await?;
    Ok(out)
}

/// The status and JSON body of a raw HTTP/1.1 answer (sized or chunked).
fn parse(raw: &[u8]) -> Option<(u16, serde_json::Value)> {
    let text = std::str::from_utf8(raw).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked")
    });
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_string()
    };
    Some((status, serde_json::from_str(body.trim()).ok()?))
}

fn dechunk(mut rest: &str) -> Option<String> {
    let mut out = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n")?;
        let n = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        if n == 0 {
            return Some(out);
        }
        out.push_str(after.get(..n)?);
        rest = after.get(n..)?.strip_prefix("\r\n")?;
    }
}

pub async fn run(target: &Target, args: UiArgs) -> i32 {
    let raw = match &target.endpoint {
        Endpoint::Unix(p) => match tokio::net::UnixStream::connect(p).await {
                Ok(s) => tokio::time::timeout(Duration::from_secs(30), exchange(s, "localhost", None)).await,
            Err(e) => {
                return render::fail(
                    ErrorCode::Unavailable,
                    format!("cannot connect to {}: {e}", target.endpoint.display()),
                )
            }
        },
        Endpoint::Http(a) => match tokio::net::TcpStream::connect(a).await {
                Ok(s) => tokio::time::timeout(
                    Duration::from_secs(30),
                    exchange(s, a, target.token.as_deref()),
                )
                .await,
            Err(e) => {
                return render::fail(
                    ErrorCode::Unavailable,
                    format!("cannot connect to {}: {e}", target.endpoint.display()),
                )
            }
        },
        Endpoint::Https(a) => {
            return render::fail(
                ErrorCode::InvalidArgument,
                format!("`cleanroom ui` asks over the server's unix socket or http://; for https://{a} open https://{a}/ui/ and log in with your token"),
            )
        }
    };
    let raw = match raw {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            return render::fail(ErrorCode::Unavailable, format!("asking the server: {e}"))
        }
        Err(_) => {
            return render::fail(
                ErrorCode::Unavailable,
                "the server did not answer within 30 s",
            )
        }
    };
    let Some((status, v)) = parse(&raw) else {
        return render::fail(
            ErrorCode::Unavailable,
            "the server's answer is not a login code (is it a cleanroom server with the web console?)",
        );
    };
    if status != 200 {
        let e = &v["error"];
        render::report(
            e["code"].as_str().unwrap_or("internal"),
            e["message"].as_str().unwrap_or("refused"),
            None,
        );
        return EXIT_CLEANROOM_ERROR;
    }
    if args.json {
        println!("{v}");
    } else {
        println!("{}", v["url"].as_str().unwrap_or_default());
        eprintln!(
            "cleanroom: one-time login link for {}, valid {} s",
            v["principal"].as_str().unwrap_or_default(),
            v["expiresInSeconds"].as_u64().unwrap_or_default()
        );
    }
    0
}
