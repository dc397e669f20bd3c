//! TLS to an `https://` server: rustls (ring), ALPN h2, TCP_NODELAY. The server is
//! verified against `--ca-cert` when given, else the system's roots.

use std::path::Path;
use std::sync::Arc;

/// A tower connector for `Http2Connection::connect_with_connector`.
pub fn connector(
    authority: &str,
    ca_cert: Option<&Path>,
) -> Result<
    impl tower::Service<
            http::Uri,
            Response = hyper_util::rt::TokioIo<
                tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
            >,
            Error = std::io::Error,
            Future = impl Send,
        > + Clone
        + Send
        + 'static,
    String,
> {
    let config = Arc::new(client_config(ca_cert)?);
    let authority = authority.to_string();
    let host = match authority.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() => h.to_string(),
        _ => authority.clone(),
    };
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let name = rustls::pki_types::ServerName::try_from(host)
        .map_err(|e| format!("https://{authority}: {e}"))?;
    let addr = if authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        authority
    } else {
        format!("{authority}:443")
    };
    Ok(tower::service_fn(move |_uri: http::Uri| {
        let (config, name, addr) = (config.clone(), name.clone(), addr.clone());
        async move {
            let tcp = tokio::net::TcpStream::connect(&addr).await?;
            tcp.set_nodelay(true)?;
            let tls = tokio_rustls::TlsConnector::from(config)
                .connect(name, tcp)
                .await?;
            Ok(hyper_util::rt::TokioIo::new(tls))
        }
    }))
}

fn client_config(ca_cert: Option<&Path>) -> Result<rustls::ClientConfig, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    match ca_cert {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|i| i.collect::<Result<Vec<_>, _>>())
                .map_err(|e| format!("--ca-cert {}: {e}", path.display()))?;
            if certs.is_empty() {
                return Err(format!("--ca-cert {}: no certificate", path.display()));
            }
            for c in certs {
                roots
                    .add(c)
                    .map_err(|e| format!("--ca-cert {}: {e}", path.display()))?;
            }
        }
        None => {
            for c in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(c);
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(config)
}
