//! An allowed upstream that cannot be reached is a warning on `cleanroom exec`'s stderr with
//! its reason — not only an `egress.error` event in `sandbox events` — on every path a
//! sandbox takes to it: transparent HTTP, TLS, opaque TCP and the HTTP proxy. Each command
//! fails at once and the exec ends right after it (no sleep): the warning must still be
//! there.

use cleanroom_e2e::*;
use std::net::TcpListener;

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    port
}

#[test]
fn an_unreachable_allowed_upstream_is_a_warning_on_exec() {
    let s = Server::start_with(&["--egress-resolve", "up.test=127.0.0.1"]);
    let port = closed_port();
    let d = tempfile::tempdir().unwrap();
    let policy = write(
        &d,
        "cleanroom.yaml",
        &format!(
            "version: 1\nsandbox:\n  network:\n    allow:\n      - host: up.test\n        ports: [{port}]\n"
        ),
    );
    let o = s.run(&["sandbox", "create", "--policy", &policy]);
    let sbx = stdout(&o).trim().to_string();
    assert!(sbx.starts_with("sbx_"), "{}", stderr(&o));
    let cases = [
        (
            "http",
            format!("curl -sS --noproxy '*' http://up.test:{port}/"),
        ),
        (
            "tls",
            format!("curl -sS --noproxy '*' https://up.test:{port}/"),
        ),
        ("tcp", format!("exec 3<>/dev/tcp/up.test/{port} && cat <&3")),
        ("http-proxy", format!("curl -sS http://up.test:{port}/")),
    ];
    for (proto, script) in cases {
        let o = s.run(&["exec", "-n", "--in", &sbx, "--", "bash", "-c", &script]);
        let err = stderr(&o);
        let want =
            format!("egress failed: up.test:{port} ({proto}): cannot connect to up.test:{port}");
        assert!(
            err.contains("cleanroom: warning [upstream_unreachable]: ")
                && err.contains(&want)
                && err.contains("Connection refused"),
            "{proto}: no warning naming the reason on stderr (exit {:?}, stdout {:?}):\n{err}",
            o.status.code(),
            stdout(&o)
        );
    }
    let o = s.run(&["sandbox", "rm", &sbx]);
    assert!(o.status.success(), "{}", stderr(&o));
}
