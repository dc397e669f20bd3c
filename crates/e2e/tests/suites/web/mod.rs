//! The web console (docs/web.md) against a real server and real sandboxes: a unix-socket
//! server with `--ui-listen` on loopback and a tokens file, driven by Debian's headless
//! Chromium through Playwright for Python (`console.py`, from .tools/test-venv; the system
//! browser, nothing downloaded). The script logs in with a token and with a `cleanroom ui`
//! link, watches a sandbox made by the CLI appear and an execution's output arrive without
//! reloading, answers an ask request from the page (the sandbox's connection then goes
//! through), downloads a file, checks that hostile output, terminal escapes and a file
//! named with HTML stay text (no dialog, no injected element), that a state change without
//! the CSRF token is refused and that another principal sees nothing (nor may filter by
//! another owner), while an admin sees every principal's sandboxes with their owners and
//! filters them. `expose.py` exposes, opens and revokes a sandbox's port from its page.
//! The headers, the login rules and `cleanroom ui` without a TCP listener are checked here
//! with curl. `CLEANROOM_WEB_SCREENSHOTS=<dir>` saves the docs' screenshots.

mod client_cert;

use cleanroom_e2e::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const ALICE: &str = "alice-web-token-3c5e7a9b1d2f4e6a8c0b2d4f6e8a1c3b";
const BOB: &str = "bob-web-token-7e9a1c3b5d2f4e6a8c0b2d4f6e8a1c3d";
const CHROMIUM: &str = "/usr/bin/chromium";

/// The server: unix socket (root is an admin there) plus a loopback console listener.
fn server(dir: &Path) -> Server {
    let tokens = write_tokens(dir, &[(ALICE, "alice", "user"), (BOB, "bob", "user")]);
    Server::start_with(&[
        "--tokens-file",
        tokens.to_str().unwrap(),
        "--ui-listen",
        "http://127.0.0.1:0",
        "--egress-resolve",
        "api.test=127.0.0.1",
    ])
}

/// `http://127.0.0.1:PORT` of the console, from a `cleanroom ui` link (as root).
fn base_url(s: &Server) -> String {
    let o = s.run(&["ui", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("ui --json");
    let url = v["url"].as_str().expect("url").to_string();
    assert_eq!(v["principal"], "uid:0", "{v}");
    url.split("/ui/login?code=").next().unwrap().to_string()
}

#[test]
fn the_console_in_headless_chromium() {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} missing - run scripts/deps.sh"
    );
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path());
    let url = base_url(&s);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/suites/web/console.py");
    let mut c = Command::new(test_python());
    c.arg(&script)
        .env("CLEANROOM_BIN", BIN)
        .env("CLEANROOM_HOST", s.host())
        .env("WEB_URL", &url)
        .env("ALICE_TOKEN", ALICE)
        .env("BOB_TOKEN", BOB)
        .env("CHROMIUM", CHROMIUM)
        .env("UPSTREAM_HOST", "api.test");
    if let Ok(d) = std::env::var("CLEANROOM_WEB_SCREENSHOTS") {
        c.env("SCREENSHOTS", d);
    }
    let o = output_with_timeout(c, Duration::from_secs(400));
    assert!(
        o.status.success(),
        "console.py failed:\n{}\n{}",
        stdout(&o),
        stderr(&o)
    );
    eprintln!("{}", stdout(&o));
}

/// `curl -i` (headers and body) with extra arguments.
fn curl_i(args: &[&str]) -> String {
    let mut c = Command::new("curl");
    c.args(["-sS", "-i", "--max-time", "30"]).args(args);
    let o = output_with_timeout(c, Duration::from_secs(40));
    stdout(&o)
}

#[test]
fn console_headers_logins_and_a_server_without_tcp_listener() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path());
    let url = base_url(&s);
    // Every page carries the strict policy: nothing inline, nothing from elsewhere, never
    // framed.
    let page = curl_i(&[&format!("{url}/ui/sandboxes/sbx_x")]).to_ascii_lowercase();
    assert!(page.starts_with("http/1.1 200"), "{page}");
    assert!(
        page.contains("content-security-policy: default-src 'self'; script-src 'self'"),
        "{page}"
    );
    assert!(page.contains("frame-ancestors 'none'"), "{page}");
    assert!(
        !page.contains("unsafe-inline") && !page.contains("unsafe-eval"),
        "{page}"
    );
    assert!(page.contains("x-frame-options: deny"), "{page}");
    assert!(
        !page.contains("<script>"),
        "inline script in the shell: {page}"
    );
    // A good token: the session cookie's attributes.
    let login = |token: &str, origin: Option<&str>| {
        let mut a = vec![
            "-H".to_string(),
            "Content-Type: application/json".to_string(),
            "-d".to_string(),
            format!("{{\"token\": \"{token}\"}}"),
        ];
        if let Some(o) = origin {
            a.push("-H".into());
            a.push(format!("Origin: {o}"));
        }
        a.push(format!("{url}/ui/api/login"));
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        curl_i(&refs)
    };
    let ok = login(ALICE, Some(&url));
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    let cookie = ok
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .unwrap_or_else(|| panic!("no cookie: {ok}"));
    for attr in ["HttpOnly", "Secure", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(attr), "{cookie}");
    }
    assert!(!ok.contains(ALICE), "the token came back: {ok}");
    // A wrong token, another site's login, a used-up or made-up code: refused.
    let bad = login("not-a-token", None);
    assert!(
        bad.starts_with("HTTP/1.1 401") && bad.contains("\"unauthenticated\""),
        "{bad}"
    );
    let cross = login(ALICE, Some("http://evil.example"));
    assert!(
        cross.starts_with("HTTP/1.1 403") && cross.contains("\"permission_denied\""),
        "{cross}"
    );
    let code = curl_i(&[
        "-H",
        "Content-Type: application/json",
        "-d",
        "{\"code\": \"made-up\"}",
        &format!("{url}/ui/api/login"),
    ]);
    assert!(code.starts_with("HTTP/1.1 401"), "{code}");
    // No session: the live signal and the session are refused.
    let live = curl_i(&[&format!("{url}/ui/api/live")]);
    assert!(live.starts_with("HTTP/1.1 401"), "{live}");
    drop(s);

    // A server on its unix socket only: `cleanroom ui` says there is no console listener.
    let bare = Server::start_with(&[]);
    let o = bare.run(&["ui"]);
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert!(stderr(&o).contains("[unimplemented]"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no web console listener"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
}

/// Pages a sandbox serves through `sandbox expose` live on the main listener under
/// `/_sandbox/…`. On the console's origin such a page could fetch `/ui/`, read the session's
/// CSRF token and act as whoever is logged in; so the console has its own listener (another
/// origin) and the two never serve each other's routes. Before the split, `/ui/` answered
/// 200 on the main listener and `/_sandbox/…` reached the exposure router on the console's.
#[test]
fn the_console_and_exposed_sandbox_pages_never_share_an_origin() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path());
    let url = base_url(&s);
    let sock = s.socket();
    let main_ui = curl_i(&[
        "--unix-socket",
        sock.to_str().unwrap(),
        "http://localhost/ui/sandboxes",
    ]);
    assert!(!main_ui.starts_with("HTTP/1.1 200"), "{main_ui}");
    assert!(main_ui.contains("unimplemented"), "{main_ui}");
    let ui_expose = curl_i(&[&format!("{url}/_sandbox/exp_x/?cleanroom_token=x")]);
    assert!(
        !ui_expose.starts_with("HTTP/1.1 401"),
        "reached the exposure router: {ui_expose}"
    );
    assert!(ui_expose.contains("unimplemented"), "{ui_expose}");
    let ui_forward = curl_i(&[&format!("{url}/_portforward/sbx_x/80")]);
    assert!(ui_forward.contains("unimplemented"), "{ui_forward}");
    // The console itself still answers on its own listener.
    let page = curl_i(&[&format!("{url}/ui/sandboxes")]);
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
}

/// The sandbox page exposes a port (with a TTL), lists it (port, URL, expiry), opens it
/// in a new tab with `rel=noopener noreferrer` and revokes it (`expose.py`, Chromium). The
/// URL is on the main listener, not the console's: a server whose main listener is TCP.
#[test]
fn a_port_exposed_and_revoked_from_the_sandbox_page() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = write_tokens(dir.path(), &[(ALICE, "alice", "user")]);
    let s = TcpServer::start(
        "http",
        &[
            "--tokens-file",
            tokens.to_str().unwrap(),
            "--ui-listen",
            "http://127.0.0.1:0",
        ],
    );
    let mut console = String::new();
    assert!(
        eventually(Duration::from_secs(30), || {
            console = s
                .log()
                .lines()
                .find_map(|l| l.strip_prefix("cleanroom: web console on "))
                .map(|u| u.trim().trim_end_matches("/ui/").to_string())
                .unwrap_or_default();
            !console.is_empty()
        }),
        "no console listener: {}",
        s.log()
    );
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/suites/web/expose.py");
    let mut c = Command::new(test_python());
    c.arg(&script)
        .env("CLEANROOM_BIN", BIN)
        .env("CLEANROOM_HOST", s.host())
        .env("WEB_URL", &console)
        .env("ALICE_TOKEN", ALICE)
        .env("CHROMIUM", CHROMIUM);
    let o = output_with_timeout(c, Duration::from_secs(300));
    assert!(
        o.status.success(),
        "expose.py failed:\n{}\n{}",
        stdout(&o),
        stderr(&o)
    );
    eprintln!("{}", stdout(&o));
}
