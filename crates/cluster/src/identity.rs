//! Cluster identity: a cluster CA (`cleanroom cluster init DIR`), per-node certificates it
//! signs (`cleanroom cluster issue --ca DIR --node NAME OUT`), and the TLS settings members
//! use to talk to each other with them: both sides present a certificate from the cluster
//! CA (mutual TLS), the server side refuses a client without one, and the client side
//! checks that the server's certificate names the member it meant to reach (the node name
//! is the certificate's first DNS name). A member trusts a forwarded caller's principal
//! only from a peer that proved it holds a node certificate of its own cluster.
//!
//! Files: `ca.crt` + `ca.key` in the CA directory; `node.crt`, `node.key` and a copy of
//! `ca.crt` in a node's directory (what `serve --cluster-tls DIR` reads). Keys are 0600
//! and refused at start when group/other can read them or another user owns them: a bad
//! or missing identity stops the server (fail closed).

use crate::{ClusterError, NodeName};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Arc;

/// File names in a CA directory and a node directory.
pub const CA_CERT: &str = "ca.crt";
pub const CA_KEY: &str = "ca.key";
pub const NODE_CERT: &str = "node.crt";
pub const NODE_KEY: &str = "node.key";

/// How long certificates are valid: the CA ten years, a node's certificate one.
const CA_DAYS: i64 = 3650;
const NODE_DAYS: i64 = 365;

fn invalid(what: impl std::fmt::Display) -> ClusterError {
    ClusterError::Identity(what.to_string())
}

/// Write `bytes` to a new file of mode 0600 (never over an existing one: an identity is
/// not replaced by accident).
fn write_new(path: &Path, bytes: &[u8]) -> Result<(), ClusterError> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| invalid(format!("{}: {e}", path.display())))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| invalid(format!("{}: {e}", path.display())))
}

fn make_dir(dir: &Path) -> Result<(), ClusterError> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(invalid(format!("{}: {e}", dir.display()))),
    }
}

/// Read a key file: a regular file owned by this uid with no group/other access.
fn read_private(path: &Path) -> Result<String, ClusterError> {
    let fail = |m: String| invalid(format!("{}: {m}", path.display()));
    let meta = std::fs::symlink_metadata(path).map_err(|e| fail(e.to_string()))?;
    if !meta.is_file() {
        return Err(fail("not a regular file".into()));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(fail(format!(
            "mode {:o} lets other users read the key; chmod 600 it",
            meta.mode() & 0o777
        )));
    }
    let me = nix_uid();
    if meta.uid() != me {
        return Err(fail(format!(
            "owned by uid {}, not by this uid {me}",
            meta.uid()
        )));
    }
    std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))
}

fn nix_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn validity(params: &mut rcgen::CertificateParams, days: i64) {
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + time::Duration::days(days);
}

/// `cleanroom cluster init DIR`: a new cluster CA (an ECDSA P-256 key and a self-signed
/// certificate) in `DIR/ca.key` and `DIR/ca.crt`, both 0600. Refused when either exists.
pub fn init_ca(dir: &Path) -> Result<(), ClusterError> {
    make_dir(dir)?;
    let key = rcgen::KeyPair::generate().map_err(invalid)?;
    let mut params = rcgen::CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "cleanroom cluster CA");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Constrained(0));
    params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    validity(&mut params, CA_DAYS);
    let cert = params.self_signed(&key).map_err(invalid)?;
    for name in [CA_CERT, CA_KEY] {
        if dir.join(name).exists() {
            return Err(invalid(format!(
                "{} exists: a cluster CA is never replaced in place",
                dir.join(name).display()
            )));
        }
    }
    write_new(&dir.join(CA_KEY), key.serialize_pem().as_bytes())?;
    write_new(&dir.join(CA_CERT), cert.pem().as_bytes())
}

/// `cleanroom cluster issue --ca DIR --node NAME [--san S…] OUT`: a key and a certificate
/// for node `NAME` signed by the CA in `ca_dir`, usable as TLS server and client; its
/// first DNS name is the node name (then `sans`: DNS names or IP addresses). Writes
/// `OUT/node.key`, `OUT/node.crt` and `OUT/ca.crt`, 0600.
pub fn issue(
    ca_dir: &Path,
    node: &NodeName,
    sans: &[String],
    out: &Path,
) -> Result<(), ClusterError> {
    let ca_key = rcgen::KeyPair::from_pem(&read_private(&ca_dir.join(CA_KEY))?)
        .map_err(|e| invalid(format!("{}: {e}", ca_dir.join(CA_KEY).display())))?;
    let ca_pem = std::fs::read_to_string(ca_dir.join(CA_CERT))
        .map_err(|e| invalid(format!("{}: {e}", ca_dir.join(CA_CERT).display())))?;
    let issuer = rcgen::Issuer::from_ca_cert_pem(&ca_pem, ca_key)
        .map_err(|e| invalid(format!("{}: {e}", ca_dir.join(CA_CERT).display())))?;
    let mut names = vec![node.to_string()];
    names.extend(sans.iter().cloned());
    let mut params = rcgen::CertificateParams::new(names).map_err(invalid)?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, node.as_str());
    params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![
        rcgen::ExtendedKeyUsagePurpose::ServerAuth,
        rcgen::ExtendedKeyUsagePurpose::ClientAuth,
    ];
    params.use_authority_key_identifier_extension = true;
    validity(&mut params, NODE_DAYS);
    let key = rcgen::KeyPair::generate().map_err(invalid)?;
    let cert = params.signed_by(&key, &issuer).map_err(invalid)?;
    make_dir(out)?;
    write_new(&out.join(NODE_KEY), key.serialize_pem().as_bytes())?;
    write_new(&out.join(NODE_CERT), cert.pem().as_bytes())?;
    write_new(&out.join(CA_CERT), ca_pem.as_bytes())
}

/// This member's identity, loaded and checked at start: its certificate chain and key,
/// and the cluster CA it trusts peers by.
#[derive(Clone)]
pub struct NodeIdentity {
    node: NodeName,
    certs: Vec<CertificateDer<'static>>,
    key: Arc<PrivateKeyDer<'static>>,
    roots: Arc<rustls::RootCertStore>,
}

impl std::fmt::Debug for NodeIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeIdentity")
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl NodeIdentity {
    /// Load `dir/node.crt`, `dir/node.key` (0600, ours) and `dir/ca.crt`; refused unless
    /// the certificate verifies against that CA and names `node` as its first DNS name.
    pub fn load(dir: &Path, node: &NodeName) -> Result<NodeIdentity, ClusterError> {
        let path = |n: &str| dir.join(n);
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path(NODE_CERT))
            .and_then(|i| i.collect::<Result<_, _>>())
            .map_err(|e| invalid(format!("{}: {e}", path(NODE_CERT).display())))?;
        let Some(leaf) = certs.first().cloned() else {
            return Err(invalid(format!(
                "{}: no certificate",
                path(NODE_CERT).display()
            )));
        };
        let key = PrivateKeyDer::from_pem_slice(read_private(&path(NODE_KEY))?.as_bytes())
            .map_err(|e| invalid(format!("{}: {e}", path(NODE_KEY).display())))?;
        let mut roots = rustls::RootCertStore::empty();
        for c in CertificateDer::pem_file_iter(path(CA_CERT))
            .map_err(|e| invalid(format!("{}: {e}", path(CA_CERT).display())))?
        {
            let c = c.map_err(|e| invalid(format!("{}: {e}", path(CA_CERT).display())))?;
            roots
                .add(c)
                .map_err(|e| invalid(format!("{}: {e}", path(CA_CERT).display())))?;
        }
        if roots.is_empty() {
            return Err(invalid(format!(
                "{}: no CA certificate",
                path(CA_CERT).display()
            )));
        }
        match node_of(&leaf) {
            Some(n) if n == node.as_str() => {}
            other => {
                return Err(invalid(format!(
                    "{} is for node {:?}, not for --node-name {node}",
                    path(NODE_CERT).display(),
                    other.unwrap_or_default()
                )))
            }
        }
        let me = NodeIdentity {
            node: node.clone(),
            certs,
            key: Arc::new(key),
            roots: Arc::new(roots),
        };
        // The chain must verify against the cluster CA, as a peer would check it.
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            me.roots.clone(),
            provider(),
        )
        .build()
        .map_err(invalid)?;
        verifier
            .verify_client_cert(&leaf, &me.certs[1..], rustls::pki_types::UnixTime::now())
            .map_err(|e| {
                invalid(format!(
                    "{} is not signed by the cluster CA in {}: {e}",
                    path(NODE_CERT).display(),
                    path(CA_CERT).display()
                ))
            })?;
        let _ = me.server_config()?;
        Ok(me)
    }

    pub fn node(&self) -> &NodeName {
        &self.node
    }

    /// The member link's server side: TLS 1.3, a client certificate from the cluster CA
    /// required (a peer without one fails the handshake), HTTP/2 only.
    pub fn server_config(&self) -> Result<rustls::ServerConfig, ClusterError> {
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            self.roots.clone(),
            provider(),
        )
        .build()
        .map_err(invalid)?;
        let mut c = rustls::ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(invalid)?
            .with_client_cert_verifier(verifier)
            .with_single_cert(self.certs.clone(), self.key.clone_key())
            .map_err(invalid)?;
        c.alpn_protocols = vec![b"h2".to_vec()];
        Ok(c)
    }

    /// The member link's client side: presents this node's certificate and accepts only a
    /// server certificate from the cluster CA for the node it dials ([`server_name`]).
    pub fn client_config(&self) -> Result<rustls::ClientConfig, ClusterError> {
        let mut c = rustls::ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(invalid)?
            .with_root_certificates(self.roots.clone())
            .with_client_auth_cert(self.certs.clone(), self.key.clone_key())
            .map_err(invalid)?;
        c.alpn_protocols = vec![b"h2".to_vec()];
        Ok(c)
    }
}

/// The TLS name a member is dialled by: its node name (a DNS label).
pub fn server_name(node: &NodeName) -> Result<ServerName<'static>, ClusterError> {
    ServerName::try_from(node.to_string()).map_err(invalid)
}

/// The node a verified peer certificate names: its first DNS name.
pub fn node_of(der: &CertificateDer<'_>) -> Option<String> {
    use x509_parser::prelude::*;
    let (_, cert) = X509Certificate::from_der(der.as_ref()).ok()?;
    let san = cert.subject_alternative_name().ok().flatten()?;
    san.value.general_names.iter().find_map(|n| match n {
        GeneralName::DNSName(d) => NodeName::parse(d).ok().map(|n| n.to_string()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_node_identity_loads_only_for_its_node_and_its_ca() {
        let t = tempfile::tempdir().unwrap();
        let ca = t.path().join("ca");
        init_ca(&ca).unwrap();
        for f in [CA_CERT, CA_KEY] {
            let mode = std::fs::metadata(ca.join(f)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{f}");
        }
        // Never replaced in place.
        assert!(init_ca(&ca).is_err());
        let a = NodeName::parse("a").unwrap();
        issue(&ca, &a, &["127.0.0.1".into()], &t.path().join("a")).unwrap();
        let id = NodeIdentity::load(&t.path().join("a"), &a).unwrap();
        assert_eq!(id.node().as_str(), "a");
        // Another node's name: refused.
        let b = NodeName::parse("b").unwrap();
        let e = NodeIdentity::load(&t.path().join("a"), &b).unwrap_err();
        assert_eq!(e.code().as_str(), "cluster_identity_invalid", "{e}");
        // A certificate from another CA (with the right CA file swapped in): refused.
        let other = t.path().join("other");
        init_ca(&other).unwrap();
        issue(&other, &a, &[], &t.path().join("a2")).unwrap();
        std::fs::remove_file(t.path().join("a2").join(CA_CERT)).unwrap();
        std::fs::copy(ca.join(CA_CERT), t.path().join("a2").join(CA_CERT)).unwrap();
        let e = NodeIdentity::load(&t.path().join("a2"), &a).unwrap_err();
        assert!(
            e.to_string().contains("not signed by the cluster CA"),
            "{e}"
        );
        // A readable key: refused.
        let key = t.path().join("a").join(NODE_KEY);
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = NodeIdentity::load(&t.path().join("a"), &a).unwrap_err();
        assert!(e.to_string().contains("chmod 600"), "{e}");
        // Missing: refused.
        assert!(NodeIdentity::load(&t.path().join("none"), &a).is_err());
    }
}
