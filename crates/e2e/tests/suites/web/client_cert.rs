//! A browser's client certificate is no credential for a page (docs/web.md "Reaching it").
//!
//! Browsers attach a TLS client certificate to every request to a server that asks for one
//! (`https://` with `--client-ca`), whichever page made it: a page an exposed sandbox
//! serves under `/_sandbox/…` on the main listener, or any site, could otherwise call the
//! API as the visitor with a form post or a no-cors fetch — on the main listener (same
//! origin as the exposure) or on the console's (same site). Both listeners refuse what a
//! browser sends for a page (`Origin`, `Referer`, `Sec-Fetch-Site` other than `none`)
//! before authentication — the console's takes such a call only from its own page with
//! its session — while the certificate keeps working for API clients (curl here). The
//! headers are exactly what Chromium sends for each case; curl presents the certificate
//! the browser would.

use super::*;

/// The `https://host:port` of the console listener, from the server's log.
fn console_url(s: &TcpServer) -> String {
    let mut url = String::new();
    let found = eventually(Duration::from_secs(30), || {
        let log = s.log();
        match log
            .lines()
            .find_map(|l| l.strip_prefix("cleanroom: web console on "))
        {
            Some(u) => {
                url = u.trim().trim_end_matches("/ui/").to_string();
                true
            }
            None => false,
        }
    });
    assert!(found, "no console listener: {}", s.log());
    url
}

/// The stable code of a REST error body (`{"error": {"code": …}}`).
fn code_of(body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    v["error"]["code"].as_str().unwrap_or_default().to_string()
}

/// `curl` over TLS to the test CA with the client certificate: `(status, body)`.
fn curl_cert(tls: &[String], extra: &[&str]) -> (u16, String) {
    let mut c = Command::new("curl");
    c.args(["-sS", "-m", "30", "-w", "\n%{http_code}"])
        .args(tls)
        .args(extra);
    let o = output_with_timeout(c, Duration::from_secs(40));
    let text = stdout(&o);
    let (body, status) = text.rsplit_once('\n').unwrap_or(("", &text));
    let status = status
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("curl {extra:?}: {text} {}", stderr(&o)));
    (status, body.to_string())
}

#[test]
fn a_page_cannot_spend_the_visitors_client_certificate_on_either_listener() {
    let tmp = tempfile::tempdir().unwrap();
    let [ca, cert, key, client, client_key] = write_test_pki(tmp.path(), "carol");
    let p = |p: &Path| p.display().to_string();
    let tokens = write_tokens(tmp.path(), &[(ALICE, "alice", "user")]);
    let s = TcpServer::start(
        "https",
        &[
            "--tls-cert",
            &p(&cert),
            "--tls-key",
            &p(&key),
            "--client-ca",
            &p(&ca),
            "--tokens-file",
            &p(&tokens),
            "--ui-listen",
            "https://127.0.0.1:0",
        ],
    );
    let main = format!("https://{}", s.addr);
    let console = console_url(&s);
    assert!(console.starts_with("https://127.0.0.1:"), "{console}");
    let tls: Vec<String> = [
        "--cacert",
        &p(&ca),
        "--cert",
        &p(&client),
        "--key",
        &p(&client_key),
    ]
    .map(String::from)
    .to_vec();
    // The certificate is carol's credential for API clients, on both listeners.
    let (status, body) = curl_cert(
        &tls,
        &["-d", r#"{"spec": {}}"#, &format!("{main}/v1/sandboxes")],
    );
    assert_eq!(status, 201, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let sbx = v["sandboxId"].as_str().unwrap().to_string();
    for base in [&main, &console] {
        let (status, body) = curl_cert(&tls, &[&format!("{base}/v1/sandboxes/{sbx}/status")]);
        assert_eq!(status, 200, "{base}: {body}");
    }
    let exposure_page = format!("{main}/_sandbox/exp_0123456789abcdef/");
    let refused = |base: &str, headers: &[String]| {
        let mut args: Vec<&str> = vec!["-X", "DELETE"];
        for h in headers {
            args.extend(["-H", h.as_str()]);
        }
        let url = format!("{base}/v1/sandboxes/{sbx}");
        args.push(&url);
        let (status, body) = curl_cert(&tls, &args);
        assert_eq!(
            (status, code_of(&body)),
            (403, "permission_denied".to_string()),
            "{base} {headers:?}: {body}"
        );
        assert!(body.contains("browser_request"), "{body}");
    };
    // The main listener, from a page an exposure serves on its own origin: Chromium's
    // fetch, its form post, and a browser without fetch metadata following a link.
    refused(
        &main,
        &[
            format!("Origin: {main}"),
            "Sec-Fetch-Site: same-origin".into(),
            "Sec-Fetch-Mode: cors".into(),
        ],
    );
    refused(&main, &["Sec-Fetch-Site: same-origin".into()]);
    refused(&main, &[format!("Referer: {exposure_page}")]);
    // The console's listener (same site, another origin): the exposure's page, or any
    // site; and a same-origin-looking call without the console's session.
    refused(
        &console,
        &[
            format!("Origin: {main}"),
            "Sec-Fetch-Site: same-site".into(),
            "Sec-Fetch-Mode: no-cors".into(),
        ],
    );
    refused(
        &console,
        &[
            "Origin: https://elsewhere.example".into(),
            "Sec-Fetch-Site: cross-site".into(),
        ],
    );
    refused(&console, &[format!("Referer: {exposure_page}")]);
    refused(
        &console,
        &[
            format!("Origin: {console}"),
            "Sec-Fetch-Site: same-origin".into(),
        ],
    );
    // Connect too, and no page asks the console's listener for a login code.
    let (status, body) = curl_cert(
        &tls,
        &[
            "-H",
            "Content-Type: application/json",
            "-H",
            &format!("Origin: {main}"),
            "-H",
            "Sec-Fetch-Site: same-site",
            "-d",
            "{}",
            &format!("{console}/cleanroom.v1.SandboxService/ListSandboxes"),
        ],
    );
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains("browser_request") && !body.contains(&sbx),
        "{body}"
    );
    let (status, body) = curl_cert(
        &tls,
        &[
            "-X",
            "POST",
            "-H",
            "Sec-Fetch-Site: same-site",
            &format!("{console}/ui/api/login-code"),
        ],
    );
    assert_eq!(status, 403, "{body}");
    assert!(!body.contains("code="), "{body}");
    // Nothing was done: the sandbox is there, and the certificate alone still ends it.
    let (status, body) = curl_cert(&tls, &[&format!("{main}/v1/sandboxes/{sbx}/status")]);
    assert_eq!(status, 200, "the refused DELETEs removed it: {body}");
    let (status, body) = curl_cert(
        &tls,
        &["-X", "DELETE", &format!("{console}/v1/sandboxes/{sbx}")],
    );
    assert_eq!(status, 204, "{body}");
}
