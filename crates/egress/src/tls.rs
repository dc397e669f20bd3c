//! TLS for secret injection.
//!
//! To put a secret into a request the gateway must read the request, so connections to
//! secret-bound hosts are terminated here. Each sandbox gets its own CA ([`SandboxCa`]),
//! generated in memory when the sandbox is created and never written anywhere: its
//! certificate is trusted inside that sandbox only (the backend adds it to the sandbox's
//! CA bundle), its key never leaves the server process, and it is name-constrained to the
//! hosts the sandbox's secrets are bound to, so even a copy of it vouches for nothing else.
//!
//! Towards the real host the gateway is an ordinary, verifying TLS client
//! ([`client_config`]): system roots plus any CA the operator adds.

use cleanroom_policy::HostPattern;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, GeneralSubtree, IsCa, KeyPair, KeyUsagePurpose, NameConstraints,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use time::{Duration, OffsetDateTime};

/// How long a sandbox CA and its leaf certificates are valid. Sandboxes do not outlive a
/// server process, and a server restart discards them; a year leaves ample room.
const VALIDITY: Duration = Duration::days(365);
/// Tolerated clock difference between the server and a sandbox's view of time.
const SKEW: Duration = Duration::hours(1);

/// Why TLS material could not be made or loaded.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("certificate generation failed: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("TLS configuration failed: {0}")]
    Config(#[from] rustls::Error),
    #[error("{0}")]
    Invalid(String),
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    // Explicit provider: other crates in the process may pull in a second one, and rustls
    // refuses to guess between them.
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A sandbox's private certificate authority, and the leaf certificates it minted.
pub struct SandboxCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
    permitted: Vec<HostPattern>,
    leaves: Mutex<HashMap<String, Arc<rustls::ServerConfig>>>,
}

impl std::fmt::Debug for SandboxCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxCa")
            .field("permitted", &self.permitted)
            .finish_non_exhaustive()
    }
}

impl SandboxCa {
    /// A fresh CA for one sandbox, constrained to `hosts` (the hosts its secrets are bound
    /// to; `*.suffix` patterns permit the suffix and every name below it).
    pub fn generate(sandbox_id: &str, hosts: &[HostPattern]) -> Result<SandboxCa, TlsError> {
        if hosts.is_empty() {
            return Err(TlsError::Invalid(
                "a sandbox CA needs at least one host".into(),
            ));
        }
        let now = OffsetDateTime::now_utc();
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::OrganizationName, "Cleanroom");
        dn.push(
            DnType::CommonName,
            format!("Cleanroom sandbox CA {sandbox_id}"),
        );
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params.not_before = now - SKEW;
        params.not_after = now + VALIDITY;
        let mut permitted = Vec::new();
        for h in hosts {
            let name = match h {
                HostPattern::Exact(n) | HostPattern::Suffix(n) => n.clone(),
            };
            permitted.push(GeneralSubtree::DnsName(name));
        }
        params.name_constraints = Some(NameConstraints {
            permitted_subtrees: permitted,
            excluded_subtrees: Vec::new(),
        });
        let key = KeyPair::generate()?;
        let issuer = CertifiedIssuer::self_signed(params, key)?;
        Ok(SandboxCa {
            issuer,
            permitted: hosts.to_vec(),
            leaves: Mutex::new(HashMap::new()),
        })
    }

    /// The CA certificate (PEM) the sandbox trusts.
    pub fn cert_pem(&self) -> String {
        self.issuer.pem()
    }

    /// A TLS server configuration presenting a certificate for `host` (minted once per
    /// host). HTTP/1.1 only: the gateway rewrites requests with an HTTP/1 parser.
    pub fn server_config(&self, host: &str) -> Result<Arc<rustls::ServerConfig>, TlsError> {
        if !self.permitted.iter().any(|p| p.matches(host)) {
            return Err(TlsError::Invalid(format!(
                "{host} is not a host this sandbox's secrets are bound to"
            )));
        }
        let mut leaves = self.leaves.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = leaves.get(host) {
            return Ok(c.clone());
        }
        let now = OffsetDateTime::now_utc();
        let mut params = CertificateParams::new(vec![host.to_string()])?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, host);
        params.distinguished_name = dn;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.use_authority_key_identifier_extension = true;
        params.not_before = now - SKEW;
        params.not_after = now + VALIDITY;
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        let chain = vec![cert.der().clone(), self.issuer.der().clone()];
        let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let mut config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(chain, key_der)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = Arc::new(config);
        leaves.insert(host.to_string(), config.clone());
        Ok(config)
    }
}

/// Parse every certificate in a PEM file's text.
pub fn parse_pem_certs(pem: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    use rustls::pki_types::pem::PemObject;
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Invalid(format!("not a PEM certificate file: {e}")))?;
    if certs.is_empty() {
        return Err(TlsError::Invalid("no certificate in the file".into()));
    }
    Ok(certs)
}

/// The gateway's TLS client towards real hosts: the system's roots plus `extra` (CAs the
/// operator trusts, e.g. a company proxy's or a test CA). Verification is never disabled.
pub fn client_config(
    extra: &[CertificateDer<'static>],
) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    let (added, _ignored) = roots.add_parsable_certificates(native.certs);
    for c in extra {
        roots
            .add(c.clone())
            .map_err(|e| TlsError::Invalid(format!("extra CA rejected: {e}")))?;
    }
    if added == 0 && extra.is_empty() {
        tracing::warn!("no system CA certificates found: upstream TLS will fail to verify");
    }
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(s: &str) -> HostPattern {
        HostPattern::parse(s).unwrap()
    }

    #[test]
    fn mints_leaves_only_for_bound_hosts_and_caches_them() {
        let ca =
            SandboxCa::generate("sbx_test", &[pattern("api.test"), pattern("*.svc.test")]).unwrap();
        assert!(ca.cert_pem().starts_with("-----BEGIN CERTIFICATE-----"));
        let a = ca.server_config("api.test").unwrap();
        let b = ca.server_config("api.test").unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert!(ca.server_config("x.svc.test").is_ok());
        assert!(ca.server_config("other.test").is_err());
    }

    #[tokio::test]
    async fn a_client_trusting_the_ca_completes_a_handshake() {
        let ca = SandboxCa::generate("sbx_test", &[pattern("api.test")]).unwrap();
        let server = ca.server_config("api.test").unwrap();
        let ca_der = parse_pem_certs(&ca.cert_pem()).unwrap();
        let client = client_config(&ca_der).unwrap();
        let (a, b) = tokio::io::duplex(16 * 1024);
        let accept = tokio::spawn(async move {
            tokio_rustls::TlsAcceptor::from(server)
                .accept(b)
                .await
                .is_ok()
        });
        let name = rustls::pki_types::ServerName::try_from("api.test").unwrap();
        let connected = tokio_rustls::TlsConnector::from(client)
            .connect(name, a)
            .await;
        assert!(connected.is_ok(), "{:?}", connected.err());
        assert!(accept.await.unwrap());
    }

    #[test]
    fn pem_parsing_rejects_garbage() {
        assert!(parse_pem_certs("hello").is_err());
        assert!(parse_pem_certs("").is_err());
    }
}
