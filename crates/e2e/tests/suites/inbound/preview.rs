//! Host-based previews (`serve --preview-domain localhost`) and the API listener's refusal
//! of browser-made calls (docs/network.md "Inbound", `crate::serve::front`).
//!
//! Each exposure is its own origin, `exp-<hex>.localhost:<port>` (curl, like browsers,
//! resolves every `*.localhost` name to loopback); the app sees its own paths from `/`;
//! the token cookie belongs to that host alone; path routing is off; other names under the
//! domain never reach the API. On the API's own host, requests carrying what browsers add
//! for a page (`Origin`, `Sec-Fetch-Site` other than `none`) are refused before
//! authentication, so no page — an exposed sandbox's included — can spend credentials a
//! browser attaches by itself.

use super::*;
use cleanroom_e2e::*;

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789";

fn server(extra: &[&str]) -> TcpServer {
    let d = tempfile::tempdir().unwrap();
    let tokens = write_tokens(d.path(), &[(ALICE, "alice", "user"), (BOB, "bob", "user")]);
    let mut args = vec!["--tokens-file", tokens.to_str().unwrap()];
    args.extend_from_slice(extra);
    let s = TcpServer::start("http", &args);
    drop(d);
    s
}

fn port_of(addr: &str) -> &str {
    addr.rsplit_once(':').map(|(_, p)| p).unwrap_or_default()
}

#[test]
fn each_exposure_is_served_at_a_host_of_its_own() {
    let s = server(&["--preview-domain", "localhost"]);
    let run = |args: &[&str]| s.run(Some(ALICE), args);
    let o = run(&["sandbox", "create"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let sbx = stdout(&o).trim().to_string();
    let o = run(&[
        "exec",
        "-n",
        "--in",
        &sbx,
        "--",
        "sh",
        "-c",
        "echo s3 > /tmp/state",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    start_app(run, &sbx, 8000);
    start_app(run, &sbx, 8001);

    let e = exposed(&run(&["sandbox", "expose", &sbx, "8000", "--json"]));
    let (id, token) = (e["id"].as_str().unwrap(), e["token"].as_str().unwrap());
    let host = format!("exp-{}.localhost:{}", &id[4..], port_of(&s.addr));
    let url = e["url"].as_str().unwrap().to_string();
    assert_eq!(
        url,
        format!("http://{host}/?cleanroom_token={token}"),
        "{e}"
    );
    // The plain-text answer is the same URL; inspect names it.
    let text = stdout(&run(&["sandbox", "expose", &sbx, "8000"]));
    assert_eq!(text.trim(), url);
    let text = stdout(&run(&["sandbox", "inspect", &sbx]));
    assert!(text.contains(&url), "{text}");

    // The token: the app sees `/` and its own paths, no prefix; the cookie is host-only.
    let (status, body) = hcurl(&["-i", &url]);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("hello / s3 auth=None cookie=None"), "{body}");
    let cookie = body
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .unwrap_or_else(|| panic!("no cookie: {body}"));
    assert!(cookie.contains("Path=/;"), "{cookie}");
    assert!(!cookie.to_ascii_lowercase().contains("domain="), "{cookie}");
    assert!(!body.to_ascii_lowercase().contains("x-forwarded-prefix"));
    let (status, body) = hcurl(&[
        "-b",
        &format!("cleanroom_token={token}"),
        &format!("http://{host}/ui/v1/sandboxes?x=1"),
    ]);
    assert_eq!(
        status, 200,
        "the app's own /ui and /v1 paths are the app's: {body}"
    );
    assert!(body.contains("hello /ui/v1/sandboxes?x=1 s3"), "{body}");
    // HTTP/2 and the owner's credentials work there too.
    let (status, body) = hcurl(&[
        "-H",
        &format!("Authorization: Bearer {ALICE}"),
        "--http2-prior-knowledge",
        &format!("http://{host}/h2"),
    ]);
    assert_eq!(
        (status, body.contains("hello /h2 s3 auth=None")),
        (200, true),
        "{body}"
    );

    // Refused: no credential, another principal, this token on another exposure's host.
    let (status, body) = hcurl(&[&format!("http://{host}/")]);
    assert_eq!(
        (status, code_of(&body)),
        (401, "unauthenticated".into()),
        "{body}"
    );
    let (status, body) = hcurl(&[
        "-H",
        &format!("Authorization: Bearer {BOB}"),
        &format!("http://{host}/"),
    ]);
    assert_eq!(
        (status, code_of(&body)),
        (404, "exposure_not_found".into()),
        "{body}"
    );
    let other = exposed(&run(&["sandbox", "expose", &sbx, "8001", "--json"]));
    let other_host = format!(
        "exp-{}.localhost:{}",
        &other["id"].as_str().unwrap()[4..],
        port_of(&s.addr)
    );
    let (status, body) = hcurl(&[&format!("http://{other_host}/?cleanroom_token={token}")]);
    assert_eq!(
        (status, code_of(&body)),
        (401, "unauthenticated".into()),
        "{body}"
    );
    let (status, body) = hcurl(&[other["url"].as_str().unwrap()]);
    assert_eq!(status, 200, "{body}");

    // A name under the domain that is no exposure never reaches the API, even with the
    // API's credentials; nor does a path-routed exposure URL on the API's host.
    for h in ["localhost", "api.localhost", "x.exp-0.localhost"] {
        let (status, body) = hcurl(&[
            "-H",
            &format!("Authorization: Bearer {ALICE}"),
            &format!("http://{h}:{}/v1/sandboxes", port_of(&s.addr)),
        ]);
        assert_eq!(
            (status, code_of(&body)),
            (404, "exposure_not_found".into()),
            "{h}: {body}"
        );
    }
    let (status, body) = hcurl(&[&format!(
        "http://{}/_sandbox/{id}/?cleanroom_token={token}",
        s.addr
    )]);
    assert_eq!(
        (status, code_of(&body)),
        (404, "exposure_not_found".into()),
        "{body}"
    );
    assert!(body.contains("--preview-domain"), "{body}");
    // The API on its own address is unchanged for its clients.
    let (status, body) = hcurl(&[
        "-H",
        &format!("Authorization: Bearer {ALICE}"),
        &format!("http://{}/v1/sandboxes/{sbx}/status", s.addr),
    ]);
    assert_eq!(status, 200, "{body}");
    let o = run(&["sandbox", "rm", &sbx]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn the_api_refuses_what_a_browser_sends_for_a_page() {
    let s = server(&[]);
    let run = |args: &[&str]| s.run(Some(ALICE), args);
    let o = run(&["sandbox", "create"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let sbx = stdout(&o).trim().to_string();
    let auth = format!("Authorization: Bearer {ALICE}");
    let list = format!("http://{}/v1/sandboxes/{sbx}/status", s.addr);
    let kill = format!("http://{}/v1/sandboxes/{sbx}", s.addr);
    // What a page's fetch or form post carries, valid credentials or not: refused before
    // anything is done (the sandbox survives the DELETE).
    for headers in [
        vec!["Origin: http://evil.example"],
        vec![&format!("Origin: http://{}", s.addr) as &str],
        vec!["Sec-Fetch-Site: same-origin", "Sec-Fetch-Mode: cors"],
        vec!["Sec-Fetch-Site: cross-site"],
    ] {
        let mut args = vec!["-X", "DELETE", "-H", &auth];
        for h in &headers {
            args.extend(["-H", h]);
        }
        args.push(&kill);
        let (status, body) = hcurl(&args);
        assert_eq!(
            (status, code_of(&body)),
            (403, "permission_denied".into()),
            "{headers:?}: {body}"
        );
        assert!(body.contains("browser"), "{body}");
    }
    let o = run(&["sandbox", "inspect", &sbx]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "the refused DELETE removed it: {}",
        stderr(&o)
    );
    // The Connect API too (what the SDKs speak).
    let (status, body) = hcurl(&[
        "-H",
        &auth,
        "-H",
        "Origin: http://evil.example",
        "-H",
        "Content-Type: application/json",
        "-d",
        "{}",
        &format!(
            "http://{}/cleanroom.v1.SandboxService/ListSandboxes",
            s.addr
        ),
    ]);
    assert_eq!(status, 403, "{body}");
    // A URL the user typed (no Origin, `Sec-Fetch-Site: none`) and every non-browser
    // client pass.
    let (status, body) = hcurl(&["-H", &auth, "-H", "Sec-Fetch-Site: none", &list]);
    assert_eq!(status, 200, "{body}");
    let (status, body) = hcurl(&["-H", &auth, &list]);
    assert_eq!(status, 200, "{body}");
    // Path-routed exposures are for browsers: a page's own requests pass.
    start_app(run, &sbx, 8000);
    let e = exposed(&run(&["sandbox", "expose", &sbx, "8000", "--json"]));
    let (status, body) = hcurl(&[
        "-H",
        &format!("Origin: http://{}", s.addr),
        "-H",
        "Sec-Fetch-Site: same-origin",
        e["url"].as_str().unwrap(),
    ]);
    assert_eq!(status, 200, "{body}");
    let o = run(&["sandbox", "rm", &sbx]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn a_preview_domain_needs_a_tcp_listener_and_a_dns_name() {
    let d = tempfile::tempdir().unwrap();
    for (listen, domain, want) in [
        (
            format!("unix://{}/s.sock", d.path().display()),
            "localhost",
            "TCP API listener",
        ),
        (
            "http://127.0.0.1:0".to_string(),
            "bad_name.test",
            "not a DNS name",
        ),
    ] {
        let mut c = std::process::Command::new(BIN);
        c.args([
            "serve",
            "--listen",
            &listen,
            "--insecure-no-auth",
            "--state-dir",
            d.path().join("state").to_str().unwrap(),
            "--preview-domain",
            domain,
        ]);
        let o = output_with_timeout(c, std::time::Duration::from_secs(30));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(125), "{err}");
        assert!(
            err.contains(want) && err.contains("[invalid_argument]"),
            "{err}"
        );
    }
}

/// Two sandboxes' apps exposed on one server; a page of exposure A fetches exposure B in
/// headless Chromium (`origins.py`): readable under path routing (one origin, the
/// documented cost), blocked under a preview domain (an origin per exposure).
fn a_page_of_one_exposure_reading_another(mode: &str) {
    let extra: &[&str] = if mode == "host" {
        &["--preview-domain", "localhost"]
    } else {
        &[]
    };
    let s = server(extra);
    let run = |args: &[&str]| s.run(Some(ALICE), args);
    let mut urls = vec![];
    let mut sbxs = vec![];
    for name in ["A", "B"] {
        let o = run(&["sandbox", "create"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let sbx = stdout(&o).trim().to_string();
        let o = run(&[
            "exec",
            "-n",
            "--in",
            &sbx,
            "--",
            "sh",
            "-c",
            &format!("echo {name} > /tmp/state"),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        start_app(run, &sbx, 8000);
        let e = exposed(&run(&["sandbox", "expose", &sbx, "8000", "--json"]));
        urls.push((
            e["url"].as_str().unwrap().to_string(),
            e["id"].as_str().unwrap().to_string(),
        ));
        sbxs.push(sbx);
    }
    let b_root = match mode {
        "host" => format!(
            "http://exp-{}.localhost:{}/",
            &urls[1].1[4..],
            port_of(&s.addr)
        ),
        _ => format!("http://{}/_sandbox/{}/", s.addr, urls[1].1),
    };
    let script = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/suites/inbound/origins.py");
    let mut c = std::process::Command::new(cleanroom_e2e::web::test_python());
    c.arg(&script)
        .env("URL_A", &urls[0].0)
        .env("URL_B", &urls[1].0)
        .env("B_ROOT", &b_root)
        .env("MODE", mode)
        .env("CHROMIUM", "/usr/bin/chromium");
    let o = output_with_timeout(c, std::time::Duration::from_secs(120));
    assert!(
        o.status.success(),
        "origins.py ({mode}):\n{}\n{}",
        stdout(&o),
        stderr(&o)
    );
    for sbx in sbxs {
        let o = run(&["sandbox", "rm", &sbx]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
}

#[test]
fn in_chromium_a_preview_host_cannot_read_another_exposure() {
    a_page_of_one_exposure_reading_another("host");
}

#[test]
fn in_chromium_path_routed_exposures_share_an_origin_as_documented() {
    a_page_of_one_exposure_reading_another("path");
}
