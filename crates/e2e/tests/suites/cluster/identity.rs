//! Cluster identity: `cleanroom cluster init|issue` make a CA and node identities (0600);
//! a server without an identity, with another node's, or with one from another CA does not
//! start (`cluster_identity_invalid`); the member link refuses a peer without a
//! certificate from the cluster CA and a request that carries no principal.

use super::hosts::{member, run_cli, Pki};
use cleanroom_e2e::*;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

fn serve_fails(args: &[&str]) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let mut c = std::process::Command::new(BIN);
    c.args(["serve", "--listen"])
        .arg(format!("unix://{}", dir.path().join("s.sock").display()))
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .args(args);
    let o = output_with_timeout(c, Duration::from_secs(60));
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
    o
}

/// `curl` to a member link as a member would (or would not) call it.
fn curl(
    link: &str,
    node: &str,
    cert: Option<&std::path::Path>,
    ca: &std::path::Path,
    headers: &[&str],
) -> (i32, String) {
    let port = link.rsplit(':').next().unwrap_or_default();
    let mut c = std::process::Command::new("curl");
    c.args([
        "-s",
        "--http2",
        "--max-time",
        "10",
        "-o",
        "-",
        "-w",
        "\n%{http_code}",
    ])
    .arg("--cacert")
    .arg(ca)
    .args(["--resolve", &format!("{node}:{port}:127.0.0.1")])
    .args(["-H", "content-type: application/json", "-d", "{}"]);
    if let Some(dir) = cert {
        c.arg("--cert")
            .arg(dir.join("node.crt"))
            .arg("--key")
            .arg(dir.join("node.key"));
    }
    for h in headers {
        c.args(["-H", h]);
    }
    c.arg(format!(
        "https://{node}:{port}/cleanroom.v1.SandboxService/ListSandboxes"
    ));
    let o = output_with_timeout(c, Duration::from_secs(30));
    (o.status.code().unwrap_or(-1), stdout(&o))
}

#[test]
fn identities_are_checked_at_start_and_on_every_member_link_connection() {
    let e = etcd::Etcd::start();
    let pki = Pki::new();
    let a_dir = pki.node("a");
    for f in ["node.key", "node.crt", "ca.crt"] {
        let mode = std::fs::metadata(a_dir.join(f))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{f}");
    }
    // A CA is never replaced in place.
    let ca = pki.dir.path().join("ca").display().to_string();
    let o = run_cli(&["cluster", "init", &ca]);
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("[cluster_identity_invalid]"),
        "{}",
        stderr(&o)
    );
    // No identity, another node's, another CA's: the server does not start.
    let cluster = e.cluster_arg();
    let base = [
        "--cluster",
        &cluster,
        "--node-name",
        "b",
        "--advertise",
        "https://b.test:1",
        "--cluster-listen",
        "127.0.0.1:0",
    ];
    let o = serve_fails(&base);
    assert!(
        stderr(&o).contains("cluster_identity_invalid"),
        "{}",
        stderr(&o)
    );
    let a_tls = a_dir.display().to_string();
    let o = serve_fails(&[&base[..], &["--cluster-tls", &a_tls]].concat());
    assert!(
        stderr(&o).contains("cluster_identity_invalid"),
        "{}",
        stderr(&o)
    );
    let other = Pki::new();
    let foreign = other.node("b");
    std::fs::remove_file(foreign.join("ca.crt")).unwrap();
    std::fs::copy(
        pki.dir.path().join("ca").join("ca.crt"),
        foreign.join("ca.crt"),
    )
    .unwrap();
    let foreign_tls = foreign.display().to_string();
    let o = serve_fails(&[&base[..], &["--cluster-tls", &foreign_tls]].concat());
    assert!(
        stderr(&o).contains("not signed by the cluster CA"),
        "{}",
        stderr(&o)
    );

    // The member link of a running member.
    let a = member(&e, &pki, "a");
    let link = a
        .args
        .iter()
        .skip_while(|x| *x != "--cluster-listen")
        .nth(1)
        .cloned()
        .expect("link");
    let ca_crt = pki.dir.path().join("ca").join("ca.crt");
    // A member's certificate and a principal: served.
    let b_dir = pki.node("b");
    let (rc, out) = curl(
        &link,
        "a",
        Some(&b_dir),
        &ca_crt,
        &[
            "cleanroom-forwarded-principal: uid:0",
            "cleanroom-forwarded-role: admin",
        ],
    );
    assert_eq!(rc, 0, "{out}");
    assert!(out.ends_with("200"), "{out}");
    // A member's certificate without a principal: unauthenticated.
    let (rc, out) = curl(&link, "a", Some(&b_dir), &ca_crt, &[]);
    assert_eq!(rc, 0, "{out}");
    assert!(out.contains("unauthenticated"), "{out}");
    // No client certificate, or one from another CA: the handshake fails.
    let (rc, out) = curl(
        &link,
        "a",
        None,
        &ca_crt,
        &[
            "cleanroom-forwarded-principal: uid:0",
            "cleanroom-forwarded-role: admin",
        ],
    );
    assert_ne!(rc, 0, "{out}");
    assert!(!out.contains("sandboxes"), "{out}");
    let stranger = other.node("a");
    let (rc, out) = curl(
        &link,
        "a",
        Some(&stranger),
        &ca_crt,
        &[
            "cleanroom-forwarded-principal: uid:0",
            "cleanroom-forwarded-role: admin",
        ],
    );
    assert_ne!(rc, 0, "{out}");
    // The server's certificate names its node: dialled as another name, refused.
    let (rc, _) = curl(&link, "b", Some(&b_dir), &ca_crt, &[]);
    assert_ne!(rc, 0);
}
