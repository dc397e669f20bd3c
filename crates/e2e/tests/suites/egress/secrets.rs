//! Secrets, tokenizer-style, end to end: a real server holding a secret value from its
//! secrets file, a real sandbox that sees only a placeholder, and real upstreams on this
//! machine's loopback (reached through `--egress-resolve`): an HTTPS echo server with a
//! test CA (trusted by the server through `--upstream-ca`, never by the sandbox) and a
//! plain HTTP one. The value must reach the bound host in the bound header, and appear
//! nowhere else: not in the sandbox, its outputs, responses, events, logs or state.
//! Under both runtimes ([`both_runtimes!`]): under gvisor the same gateway sits behind
//! gVisor's netstack.

use cleanroom_e2e::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// Reads one request head; records it; answers with the head echoed back in the body and
/// the Authorization header echoed in a response header — the worst case for leaks.
fn echo<S: Read + Write>(stream: S, heads: &Mutex<Vec<String>>, tls: bool) {
    let mut r = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    heads.lock().unwrap().push(head.clone());
    let auth = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("authorization")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    let body = format!("echo tls={tls}\n{head}");
    let s = r.get_mut();
    let _ = write!(
        s,
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nX-Echo-Auth: {auth}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = s.flush();
}

/// An echo server; `tls` wraps each connection in the given server config.
struct Echo {
    port: u16,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Echo {
    fn start(tls: Option<rustls::ServerConfig>) -> Echo {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let h = heads.clone();
        let tls = tls.map(Arc::new);
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(10)));
                let (h, tls) = (h.clone(), tls.clone());
                std::thread::spawn(move || match tls {
                    Some(cfg) => {
                        let Ok(conn) = rustls::ServerConnection::new(cfg) else {
                            return;
                        };
                        let mut stream = rustls::StreamOwned::new(conn, s);
                        echo(&mut stream, &h, true);
                        stream.conn.send_close_notify();
                        let _ = stream.flush();
                    }
                    None => echo(s, &h, false),
                });
            }
        });
        Echo { port, heads }
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

/// Every regular file under `dir` that contains `needle`.
fn files_containing(dir: &std::path::Path, needle: &[u8]) -> Vec<String> {
    let mut hits = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return hits;
    };
    for e in entries.flatten() {
        let Ok(t) = e.file_type() else { continue };
        if t.is_dir() {
            hits.extend(files_containing(&e.path(), needle));
        } else if t.is_file() {
            if let Ok(data) = std::fs::read(e.path()) {
                if data.windows(needle.len()).any(|w| w == needle) {
                    hits.push(e.path().display().to_string());
                }
            }
        }
    }
    hits
}

fn sha256_file(path: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(std::fs::read(path).unwrap_or_default())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

both_runtimes!(
    a_secret_reaches_only_its_bound_host_and_appears_nowhere_else,
    secret_reaches_only_its_host_on
);
fn secret_reaches_only_its_host_on(rt: Runtime) {
    // A value unique to this run, so a hit can only come from this test.
    let value = format!(
        "sekrit-{:x}-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
        std::process::id()
    );
    let (ca_pem, tls_config) = test_pki(&["api.test", "other.test"]);
    let https = Echo::start(Some(tls_config));
    let plain = Echo::start(None);
    let (ps, pp) = (https.port, plain.port);

    let d = tempfile::tempdir().unwrap();
    let ca_file = write(&d, "upstream-ca.pem", &ca_pem);
    let secrets_file = write(&d, "secrets", &format!("# test secrets\nTOKEN={value}\n"));
    std::fs::set_permissions(
        &secrets_file,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let host_bundle = "/etc/ssl/certs/ca-certificates.crt";
    let host_bundle_before = sha256_file(host_bundle);

    let mut s = Server::start_with(&[
        "--secrets-file",
        &secrets_file,
        "--upstream-ca",
        &ca_file,
        "--egress-resolve",
        "api.test=127.0.0.1",
        "--egress-resolve",
        "other.test=127.0.0.1",
        "--egress-resolve",
        "plain.test=127.0.0.1",
    ]);
    let policy = write(
        &d,
        "cleanroom.yaml",
        &format!(
            "version: 1
sandbox:
  network:
    allow:
      - host: api.test
        ports: [{ps}]
      - host: other.test
        ports: [{ps}]
      - host: plain.test
        ports: [{pp}]
  secrets:
    TOKEN:
      hosts: [api.test]
      header: Authorization
      format: 'Bearer {{value}}'
"
        ),
    );
    let sbx = s.create_on(rt, &["--policy", &policy]);

    // Every request sends the placeholder; only the first two use it as bound.
    let script = format!(
        r#"
echo "placeholder=$TOKEN"
curl -sS -m 10 https://api.test:{ps}/proxied -H "Authorization: Bearer $TOKEN" -D -; echo
curl -sS -m 10 --noproxy '*' https://api.test:{ps}/direct -H "Authorization: Bearer $TOKEN" -D -; echo
curl -sS -m 10 -o /dev/null -w 'wrong-header=%{{http_code}}\n' https://api.test:{ps}/wrong-header -H "X-Token: $TOKEN"
curl -sS -m 10 -o /dev/null -w 'in-url=%{{http_code}}\n' "https://api.test:{ps}/in-url?t=$TOKEN"
curl -sS -m 10 -o /dev/null -w 'plain=%{{http_code}}\n' http://plain.test:{pp}/plain -H "Authorization: Bearer $TOKEN"
curl -sS -m 10 --noproxy '*' -o /dev/null -w 'plain-direct=%{{http_code}}\n' http://plain.test:{pp}/plain-direct -H "Authorization: Bearer $TOKEN"
curl -sSk -m 10 -o /dev/null -w 'other=%{{http_code}}\n' https://other.test:{ps}/other -H "Authorization: Bearer $TOKEN"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=x -keyout /tmp/k.pem -out /tmp/other-ca.pem 2>/dev/null
curl -sS -m 10 --noproxy '*' --cacert /tmp/other-ca.pem -o /dev/null https://api.test:{ps}/untrusting -H "Authorization: Bearer $TOKEN"; echo "untrusting=$?"
echo "cert-file=$SSL_CERT_FILE"
grep -c 'BEGIN CERTIFICATE' /run/cleanroom/sandbox-ca.crt
openssl x509 -in /run/cleanroom/sandbox-ca.crt -noout -ext nameConstraints | tr -d ' ' | grep '^DNS:' | sed 's/^/permitted=/'
# Look for the value everywhere a sandbox could: its environment, its processes, its files.
env | grep -F "$NEEDLE" && echo VALUE_IN_ENV
for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do
  c=$(tr '\0' ' ' < "$f" 2>/dev/null)
  case "$c" in *"$NEEDLE"*) echo "VALUE_IN_PROC $f";; esac
done
grep -rlF "$NEEDLE" /etc /run /tmp /root /workspace /home 2>/dev/null && echo VALUE_IN_FILES
echo finished"#
    );
    // The probe needs the value as a search needle, but the value must not travel to the
    // server in the request (its env is recorded): it goes in two halves, joined inside.
    // The needle lives in a shell variable, never in an environment or argv the probe reads
    // (except grep's own argv under /proc, which the file search does not cover).
    let (a, b) = value.split_at(value.len() / 2);
    let script_file = write(&d, "probe.sh", &script);
    let mut c = s.cli();
    c.args(["exec", "--in", &sbx])
        .args([
            "-e",
            &format!("NEEDLE_A={a}"),
            "-e",
            &format!("NEEDLE_B={b}"),
        ])
        .args([
            "--",
            "sh",
            "-c",
            "NEEDLE=\"$NEEDLE_A$NEEDLE_B\"; unset NEEDLE_A NEEDLE_B; eval \"$(cat)\"",
        ])
        .stdin(std::fs::File::open(&script_file).unwrap());
    let o = output_with_timeout(c, std::time::Duration::from_secs(120));
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(out.contains("finished"), "{out}\n{err}");

    // The guest saw a placeholder, trusted its sandbox CA, and got both bound requests
    // through — with the echoed credential masked in the response header and body.
    let placeholder = out
        .lines()
        .find_map(|l| l.strip_prefix("placeholder="))
        .unwrap_or_default()
        .to_string();
    assert!(
        placeholder.starts_with("cleanroom-secret-TOKEN-"),
        "{out}\n{err}"
    );
    assert!(
        out.contains("cert-file=/run/cleanroom/ca-bundle.crt"),
        "{out}"
    );
    // The sandbox CA vouches for the bound hosts only (X.509 name constraints).
    let permitted: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("permitted="))
        .collect();
    assert_eq!(permitted, ["DNS:api.test"], "{out}");
    assert_eq!(out.matches("echo tls=true").count(), 2, "{out}\n{err}");
    assert!(out.contains("GET /proxied"), "{out}");
    assert!(out.contains("GET /direct"), "{out}");
    let masked = format!("Bearer {}", "*".repeat(value.len()));
    assert!(
        out.matches(&masked).count() >= 4,
        "response header and body should show the masked value: {out}"
    );
    assert!(out.contains("wrong-header=403\n"), "{out}\n{err}");
    assert!(out.contains("in-url=403\n"), "{out}\n{err}");
    assert!(out.contains("plain=403\n"), "{out}\n{err}");
    assert!(out.contains("plain-direct=403\n"), "{out}\n{err}");
    assert!(out.contains("other=200\n"), "{out}\n{err}");
    // A client that does not trust its sandbox CA fails closed (curl 60: peer certificate
    // cannot be authenticated) and nothing reaches the upstream.
    assert!(out.contains("untrusting=60\n"), "{out}\n{err}");
    assert!(!out.contains("VALUE_IN_"), "{out}");

    // The bound host received the value, in the bound header, and only for bound uses.
    let heads = https.heads();
    let with_value: Vec<&String> = heads.iter().filter(|h| h.contains(&value)).collect();
    assert_eq!(with_value.len(), 2, "{heads:#?}");
    for h in &with_value {
        assert!(
            h.lines()
                .any(|l| l.to_ascii_lowercase().starts_with("authorization:")
                    && l.ends_with(&format!("Bearer {value}"))),
            "{h}"
        );
    }
    assert!(
        !heads.iter().any(|h| h.contains("/wrong-header")
            || h.contains("/in-url")
            || h.contains("/untrusting")),
        "{heads:#?}"
    );
    // TLS to a host no secret is bound to is not opened: the placeholder (worthless off
    // the gateway) is all it can carry.
    let other: Vec<&String> = heads.iter().filter(|h| h.contains("/other")).collect();
    assert_eq!(other.len(), 1, "{heads:#?}");
    assert!(other[0].contains(&placeholder), "{}", other[0]);
    assert!(plain.heads().is_empty(), "{:#?}", plain.heads());

    // Every misuse is a deny with the stable code; the bound use is an allow naming the
    // secret by id.
    let ev = stdout(&s.run(&["sandbox", "events", &sbx]));
    let events: Vec<serde_json::Value> = ev
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let scope_denies = events
        .iter()
        .filter(|e| {
            e["type"] == "egress.deny" && e["attributes"]["reason"] == "secret_scope_violation"
        })
        .count();
    assert_eq!(scope_denies, 4, "{ev}");
    let injected = events
        .iter()
        .filter(|e| {
            e["type"] == "egress.allow"
                && e["attributes"]["host"] == "api.test"
                && e["attributes"]["secrets"] == "TOKEN"
        })
        .count();
    assert_eq!(injected, 2, "{ev}");
    assert!(
        events.iter().any(|e| e["type"] == "egress.error"
            && e["attributes"]["reason"] == "tls_interception_failed"),
        "{ev}"
    );
    assert!(err.contains("secret_scope_violation"), "{err}");

    // The sandbox CA was trusted inside the sandbox only.
    assert_eq!(sha256_file(host_bundle), host_bundle_before);

    // Nowhere else: the client's output, the events, the server's log, and every file of
    // the server's state (database, execution logs) once the sandbox is gone.
    let rm = s.run(&["sandbox", "rm", &sbx]);
    assert!(rm.status.success(), "{}", stderr(&rm));
    s.stop();
    for (what, text) in [("stdout", &out), ("stderr", &err), ("events", &ev)] {
        assert!(!text.contains(&value), "value in {what}");
    }
    assert!(!s.log().contains(&value), "value in the server log");
    let hits = files_containing(&s.state_dir(), value.as_bytes());
    assert!(hits.is_empty(), "value in server state: {hits:?}");
}
