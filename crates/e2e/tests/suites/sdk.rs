//! The Python and TypeScript SDKs (sdk/python, sdk/typescript) against REAL servers: one on
//! a unix socket and one on TCP with a tokens file, started here with the common helpers;
//! the SDKs' own suites (pytest, node --test) run with CLEANROOM_HOST pointing at them and
//! this test fails when they fail (lifetimes, usage through a loopback upstream, TLS with a
//! CA and with a certificate pin, transfers resumed after a dropped connection, the whole
//! API surface, egress approvals answered by SDK callbacks, and offline installs into a
//! fresh venv from the repository path and from the artifacts of scripts/sdk-dist.sh). The
//! tools come from scripts/deps.sh (.tools/venv, sdk/typescript/node_modules). Also: the
//! committed generated code is fresh.

use cleanroom_e2e::*;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

const TOKEN: &str = "sdk-test-token-4b9e2c7a1f3d5e8b0a6c4f2e9d1b3a5c";
/// A second principal on the same TCP server: must not see the first one's sandboxes.
const OTHER: &str = "sdk-other-token-8d1f3b5a7c9e2d4f6a8b0c1e3f5a7d9b";
/// A name the unix server resolves to loopback for sandboxes (`--egress-resolve`): the
/// usage tests download from an upstream the suite starts there.
const EGRESS_NAME: &str = "usage.sdk.test";

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace")
}

fn need(path: PathBuf) -> PathBuf {
    assert!(
        path.exists(),
        "{} missing - run scripts/deps.sh",
        path.display()
    );
    path
}

/// The servers (unix socket; plain TCP and TLS with a bearer token), and the environment
/// an SDK suite runs with: no ambient credentials or config, only what the test hands it.
struct Servers {
    unix: Server,
    tcp: TcpServer,
    tls: TcpServer,
    ca: PathBuf,
    /// Hex sha256 of the TLS server's certificate (DER), for the pinning tests.
    cert_sha256: String,
    home: tempfile::TempDir,
}

/// Hex sha256 of the DER of the first certificate in a PEM file.
fn cert_sha256(pem: &std::path::Path) -> String {
    use rustls::pki_types::pem::PemObject;
    use sha2::Digest;
    let der = rustls::pki_types::CertificateDer::from_pem_file(pem).expect("certificate PEM");
    sha2::Sha256::digest(der.as_ref())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Servers {
    fn start() -> Servers {
        let unix = Server::start_with(&["--egress-resolve", &format!("{EGRESS_NAME}=127.0.0.1")]);
        let tmp = tempfile::tempdir().unwrap();
        let tokens = write_tokens(
            tmp.path(),
            &[(TOKEN, "sdk-user", "user"), (OTHER, "sdk-other", "user")],
        );
        let tokens = tokens.display().to_string();
        let tcp = TcpServer::start("http", &["--tokens-file", &tokens]);
        let [ca, cert, key, _, _] = write_test_pki(tmp.path(), "sdk-client");
        let tls = TcpServer::start(
            "https",
            &[
                "--tls-cert",
                &cert.display().to_string(),
                "--tls-key",
                &key.display().to_string(),
                "--tokens-file",
                &tokens,
            ],
        );
        Servers {
            unix,
            tcp,
            tls,
            ca,
            cert_sha256: cert_sha256(&cert),
            home: tmp,
        }
    }

    fn command(&self, program: PathBuf) -> Command {
        let mut c = Command::new(program);
        c.env("CLEANROOM_HOST", self.unix.host())
            .env("CLEANROOM_TEST_TCP_HOST", self.tcp.host())
            .env("CLEANROOM_TEST_TOKEN", TOKEN)
            .env("CLEANROOM_TEST_OTHER_TOKEN", OTHER)
            .env("CLEANROOM_TEST_TLS_HOST", self.tls.host())
            .env("CLEANROOM_TEST_CA_CERT", &self.ca)
            .env("CLEANROOM_TEST_TLS_CERT_SHA256", &self.cert_sha256)
            .env("CLEANROOM_TEST_EGRESS_NAME", EGRESS_NAME)
            .env_remove("CLEANROOM_TOKEN")
            .env_remove("CLEANROOM_CA_CERT")
            .env_remove("CLEANROOM_SERVER_CERT_SHA256")
            .env("XDG_CONFIG_HOME", self.home.path().join("config"))
            .env("CLEANROOM_REPO", workspace());
        c
    }

    fn run(&self, what: &str, c: Command) {
        let o = output_with_timeout(c, Duration::from_secs(600));
        let out = stdout(&o);
        let err = stderr(&o);
        println!("{out}\n{err}");
        assert!(
            o.status.success(),
            "{what} failed ({:?}):\n{out}\n{err}\nunix server log:\n{}\ntcp server log:\n{}\ntls server log:\n{}",
            o.status,
            self.unix.log(),
            self.tcp.log(),
            self.tls.log()
        );
    }
}

#[test]
fn python_sdk_suite() {
    let s = Servers::start();
    let root = workspace();
    let mut c = s.command(need(root.join(".tools/venv/bin/python")));
    // This checkout's SDK, not whichever one the shared venv's editable install names (a
    // worktree links its `.tools` to the main checkout's).
    c.env("PYTHONPATH", root.join("sdk/python/src"));
    c.current_dir(root.join("sdk/python")).args([
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "tests",
    ]);
    s.run("pytest sdk/python/tests", c);
}

#[test]
fn typescript_sdk_suite() {
    let s = Servers::start();
    let root = workspace();
    let dir = root.join("sdk/typescript");
    let tsc = need(dir.join("node_modules/.bin/tsc"));
    let mut build = Command::new(tsc);
    build.current_dir(&dir).args(["-p", "."]);
    s.run("tsc (sdk/typescript)", build);
    let mut c = s.command(PathBuf::from("node"));
    c.current_dir(&dir)
        .args(["--test", "--test-concurrency=1", "dist/test/"]);
    s.run("node --test (sdk/typescript)", c);
}

#[test]
fn generated_sdk_code_is_fresh() {
    let root = workspace();
    let mut c = Command::new(need(root.join("sdk/gen.sh")));
    c.arg("--check");
    let o = output_with_timeout(c, Duration::from_secs(300));
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
}
