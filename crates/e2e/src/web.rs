//! Plain HTTP against a server's REST routes and `/metrics` with the real `curl`, and the
//! third-party checkers of `.tools/test-venv` (scripts/deps.sh) that judge what comes back.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// One answer: HTTP status and body.
#[derive(Debug)]
pub struct HttpReply {
    pub status: u16,
    pub body: String,
}

impl HttpReply {
    /// The body as JSON (panics with the body when it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }

    /// The stable code of an error answer (`{"error": {"code": …}}`).
    pub fn code(&self) -> String {
        self.json()["error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}

/// `curl -X method http://addr{path}` with an optional bearer token and JSON body.
pub fn curl(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> HttpReply {
    let mut c = Command::new("curl");
    c.args([
        "-sS",
        "--max-time",
        "120",
        "-X",
        method,
        "-w",
        "\n%{http_code}",
    ])
    .arg(format!("http://{addr}{path}"));
    if let Some(t) = token {
        c.args(["-H", &format!("Authorization: Bearer {t}")]);
    }
    if let Some(b) = body {
        c.args(["-H", "Content-Type: application/json", "--data-binary", b]);
    }
    let o = crate::output_with_timeout(c, Duration::from_secs(150));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap_or(("", text.as_str()));
    HttpReply {
        status: status
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("curl {method} {path}: {text} {}", crate::stderr(&o))),
        body: body.to_string(),
    }
}

/// The python of `.tools/test-venv` (the e2e checkers), or a panic saying how to get it.
pub fn test_python() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.tools/test-venv/bin/python");
    assert!(p.exists(), "{} missing - run scripts/deps.sh", p.display());
    p
}

/// Run `script` with the test venv's python, `input` on stdin; its stdout (panics on
/// failure with stderr).
pub fn python(script: &str, input: &str) -> String {
    use std::io::Write;
    let mut child = Command::new(test_python())
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write");
    let o = child.wait_with_output().expect("python");
    assert!(
        o.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}
