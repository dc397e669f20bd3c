//! TLS to an `https://` server: rustls (ring), ALPN h2, TCP_NODELAY. The server is
//! verified by a pinned sha256 of its certificate when given (`--server-cert-sha256`: the
//! certificate must be exactly that one; name and chain are not consulted), else against
//! `--ca-cert`, else the system's roots.

use std::path::Path;
use std::sync::Arc;

/// A tower connector for `Http2Connection::connect_with_connector`.
pub fn connector(
    authority: &str,
    ca_cert: Option<&Path>,
    pin: Option<&str>,
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
    let config = Arc::new(match pin {
        Some(pin) => pinned_config(pin)?,
        None => client_config(ca_cert)?,
    });
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

pub(crate) fn pinned_config(pin: &str) -> Result<rustls::ClientConfig, String> {
    let hex = pin
        .trim()
        .trim_start_matches("sha256:")
        .to_ascii_lowercase();
    let mut sha256 = [0u8; 32];
    if hex.len() != 64 {
        return Err("--server-cert-sha256 must be 64 hex digits".into());
    }
    for (i, b) in sha256.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)
            .map_err(|_| "--server-cert-sha256 must be 64 hex digits".to_string())?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(Pinned {
        sha256,
        provider: provider.clone(),
    });
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(config)
}

/// Accepts exactly the certificate whose DER has this sha256 (and still checks that the
/// server holds its key: the handshake signatures are verified normally).
#[derive(Debug)]
struct Pinned {
    sha256: [u8; 32],
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl rustls::client::danger::ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        use sha2::Digest;
        let got: [u8; 32] = sha2::Sha256::digest(end_entity.as_ref()).into();
        if got == self.sha256 {
            Ok(rustls::client::danger::ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(
                "the server's certificate does not match --server-cert-sha256".into(),
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// A TLS connection to `authority` that offers HTTP/1.1 only (ALPN `http/1.1`), verified
/// as [`connector`]'s: for an HTTP/1.1 Upgrade (`port-forward`), which HTTP/2 has not.
pub async fn connect_http1(
    authority: &str,
    ca_cert: Option<&Path>,
    pin: Option<&str>,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String> {
    let mut config = match pin {
        Some(pin) => pinned_config(pin)?,
        None => client_config(ca_cert)?,
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let host = match authority.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() => h,
        _ => authority,
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
        authority.to_string()
    } else {
        format!("{authority}:443")
    };
    let tcp = tokio::net::TcpStream::connect(&addr)
        .await
        .map_err(|e| format!("https://{authority}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("https://{authority}: {e}"))
}
