//! Credentials for tests: bearer tokens as the tokens file stores them, a CA with server and
//! client certificates for the server's own TLS listener, and a throwaway CA for TLS
//! upstreams (its PEM goes to `serve --upstream-ca`). Generated per test, never shared.

use std::path::{Path, PathBuf};

/// Hex sha256 of a token, as the tokens file stores it.
pub fn token_hash(token: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Write a tokens file (mode 600) of `(token, principal, role)` into `dir`.
pub fn write_tokens(dir: &Path, entries: &[(&str, &str, &str)]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let text: String = entries
        .iter()
        .map(|(t, p, r)| format!("sha256:{} {p} {r}\n", token_hash(t)))
        .collect();
    let path = dir.join("tokens");
    std::fs::write(&path, text).expect("tokens file");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    path
}

/// A CA plus a server certificate for 127.0.0.1/localhost and a client certificate for
/// `client_cn`, as PEM files in `dir`: (ca.pem, server.pem, server.key, client.pem,
/// client.key).
pub fn write_test_pki(dir: &Path, client_cn: &str) -> [PathBuf; 5] {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, SanType};
    let ca_key = KeyPair::generate().expect("key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "cleanroom test CA");
    let ca_cert = ca.self_signed(&ca_key).expect("ca");
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let srv_key = KeyPair::generate().expect("key");
    let mut srv = CertificateParams::new(vec!["localhost".to_string()]).expect("params");
    srv.subject_alt_names
        .push(SanType::IpAddress("127.0.0.1".parse().unwrap()));
    let srv_cert = srv.signed_by(&srv_key, &issuer).expect("server cert");
    let cli_key = KeyPair::generate().expect("key");
    let mut cli = CertificateParams::new(Vec::<String>::new()).expect("params");
    cli.distinguished_name.push(DnType::CommonName, client_cn);
    let cli_cert = cli.signed_by(&cli_key, &issuer).expect("client cert");
    let files = [
        ("ca.pem", ca_cert.pem()),
        ("server.pem", srv_cert.pem()),
        ("server.key", srv_key.serialize_pem()),
        ("client.pem", cli_cert.pem()),
        ("client.key", cli_key.serialize_pem()),
    ];
    files.map(|(name, pem)| {
        let p = dir.join(name);
        std::fs::write(&p, pem).expect("pem");
        p
    })
}

/// TLS upstreams for egress tests: rustls with ring and a throwaway CA (its PEM goes to
/// `serve --upstream-ca`).
pub fn provider() -> std::sync::Arc<rustls::crypto::CryptoProvider> {
    std::sync::Arc::new(rustls::crypto::ring::default_provider())
}

/// A test CA and a server certificate for `names`, signed by it.
pub fn test_pki(names: &[&str]) -> (String, rustls::ServerConfig) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca = CertificateParams::default();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "cleanroom test upstream CA");
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        .unwrap()
        .signed_by(&leaf_key, &ca)
        .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
        )
        .unwrap();
    (ca.pem(), config)
}
