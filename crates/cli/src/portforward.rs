//! `cleanroom port-forward ID [LOCAL:]REMOTE` (kubectl habits): a local TCP listener whose
//! every accepted connection becomes a tunnel through the server to port REMOTE on the
//! sandbox's loopback (an HTTP/1.1 Upgrade on the API listener, authenticated like every
//! call: [`cleanroom_client::tunnel`]). Runs until interrupted.

use cleanroom_client::api::GetSandboxRequest;
use cleanroom_client::endpoint::Target;
use cleanroom_client::{ApiError, Client};
use std::io::Write;

/// `cleanroom port-forward`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "8080:80 listens on local port 8080 for the sandbox's port 80; 80 alone uses \
the same port locally; :80 (or 0:80) picks a free local port. The line `Forwarding from \
ADDR:PORT -> REMOTE` says where. Each connection is refused or closed by the server with \
a reason when the sandbox's port does not accept (sandbox_port_closed) or the sandbox \
is not yours (sandbox_not_found)."
)]
pub struct PortForwardArgs {
    pub sandbox_id: String,
    /// LOCAL:REMOTE, or REMOTE (same port locally)
    #[arg(value_name = "[LOCAL:]REMOTE")]
    pub ports: String,
    /// Local address to listen on
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    pub address: String,
}

fn parse(spec: &str) -> Result<(u16, u16), ApiError> {
    let bad = || crate::request::invalid(format!("{spec:?}: expected [LOCAL:]REMOTE ports"));
    let (local, remote) = match spec.split_once(':') {
        Some(("", r)) => ("0", r),
        Some((l, r)) => (l, r),
        None => (spec, spec),
    };
    let local: u16 = local.parse().map_err(|_| bad())?;
    let remote: u16 = remote.parse().map_err(|_| bad())?;
    if remote == 0 {
        return Err(bad());
    }
    Ok((local, remote))
}

pub async fn run(ep: &Target, a: PortForwardArgs) -> Result<i32, ApiError> {
    let (local, remote) = parse(&a.ports)?;
    // The sandbox first: a wrong id fails here, not at the first connection.
    let client = Client::connect_target(ep).await?;
    client
        .sandboxes
        .get_sandbox(GetSandboxRequest {
            sandbox_id: a.sandbox_id.clone(),
            ..Default::default()
        })
        .await?;
    let listener = tokio::net::TcpListener::bind((a.address.as_str(), local))
        .await
        .map_err(|e| {
            crate::request::invalid(format!("cannot listen on {}:{local}: {e}", a.address))
        })?;
    let addr = listener
        .local_addr()
        .map_err(|e| crate::request::invalid(e.to_string()))?;
    println!("Forwarding from {addr} -> {remote}");
    let _ = std::io::stdout().flush();
    let path = format!("/_portforward/{}/{remote}", a.sandbox_id);
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = tokio::signal::ctrl_c() => return Ok(0),
        };
        let (mut conn, peer) = match accepted {
            Ok(c) => c,
            Err(e) => {
                eprintln!("cleanroom: accept: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = conn.set_nodelay(true);
        let (ep, path) = (ep.clone(), path.clone());
        tokio::spawn(async move {
            match cleanroom_client::tunnel::open(&ep, &path, "cleanroom-portforward").await {
                Ok(mut tunnel) => {
                    let _ = tokio::io::copy_bidirectional(&mut conn, &mut tunnel).await;
                }
                Err(e) => eprintln!(
                    "cleanroom: connection from {peer} refused: error [{}]: {}",
                    e.code, e.message
                ),
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn port_specs_follow_kubectl() {
        assert_eq!(parse("8080:80").unwrap(), (8080, 80));
        assert_eq!(parse("80").unwrap(), (80, 80));
        assert_eq!(parse(":80").unwrap(), (0, 80));
        assert_eq!(parse("0:80").unwrap(), (0, 80));
        for bad in ["", "x", "80:", "1:0", "70000", "1:2:3"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
