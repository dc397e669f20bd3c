//! `sandbox expose` over TCP with bearer tokens: the URL works with its token (HTTP/1.1
//! and HTTP/2), or with the owner's credentials and no token; it is refused without
//! either, with a forged token, to another principal (exposure_not_found, as a missing
//! one), once expired (exposure_expired) or removed (exposure_revoked); what the server
//! used to authenticate never reaches the app; inspect lists exposures; each connection is
//! an `inbound.open`/`inbound.close` event and each refusal an `inbound.refused`.

use super::*;
use cleanroom_e2e::*;
use std::time::Duration;

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789";

fn server() -> TcpServer {
    let d = tempfile::tempdir().unwrap();
    let tokens = write_tokens(d.path(), &[(ALICE, "alice", "user"), (BOB, "bob", "user")]);
    let s = TcpServer::start("http", &["--tokens-file", tokens.to_str().unwrap()]);
    drop(d);
    s
}

#[test]
fn an_exposed_port_is_reached_with_its_token_or_the_owners_credentials_only() {
    let s = server();
    let o = s.run(Some(ALICE), &["sandbox", "create"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let sbx = stdout(&o).trim().to_string();
    let run = |args: &[&str]| s.run(Some(ALICE), args);
    let o = run(&[
        "exec",
        "-n",
        "--in",
        &sbx,
        "--",
        "sh",
        "-c",
        "echo s3cret > /tmp/state",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    start_app(run, &sbx, 8000);

    let e = exposed(&run(&["sandbox", "expose", &sbx, "8000", "--json"]));
    let url = e["url"].as_str().unwrap().to_string();
    let id = e["id"].as_str().unwrap().to_string();
    let token = e["token"].as_str().unwrap().to_string();
    assert!(
        url.starts_with(&format!(
            "http://{}/_sandbox/{id}/?cleanroom_token=",
            s.addr
        )),
        "{url}"
    );
    let base = format!("http://{}/_sandbox/{id}", s.addr);

    // The token alone: the app answers with its state; our token is not passed on, and the
    // cookie that keeps relative links working is set for this exposure's path only.
    let (status, body) = hcurl(&["-i", &url]);
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("hello / s3cret"),
        "the app sees its own path: {body}"
    );
    let cookie_line = body
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .unwrap_or_else(|| panic!("no cookie: {body}"));
    assert!(
        cookie_line.contains(&format!("Path=/_sandbox/{id}/")),
        "{cookie_line}"
    );
    assert!(body.contains("auth=None cookie=None"), "{body}");
    // The cookie, the header, HTTP/2 (h2c) all work; a sub-path and query reach the app.
    let (status, body) = hcurl(&[
        "-b",
        &format!("cleanroom_token={token}"),
        &format!("{base}/a/b?x=1"),
    ]);
    assert_eq!(
        (status, body.contains("hello /a/b?x=1 s3cret")),
        (200, true),
        "{body}"
    );
    let (status, body) = hcurl(&[
        "-H",
        &format!("x-cleanroom-token: {token}"),
        "--http2-prior-knowledge",
        &format!("{base}/h2"),
    ]);
    assert_eq!(
        (status, body.contains("hello /h2 s3cret")),
        (200, true),
        "{body}"
    );
    // `/_sandbox/<id>` without its slash is redirected below the exposure.
    let (status, _) = hcurl(&[&base]);
    assert_eq!(status, 308);

    // The owner's bearer token, no URL token: in, and the Authorization header the server
    // used stays with the server.
    let (status, body) = hcurl(&[
        "-H",
        &format!("Authorization: Bearer {ALICE}"),
        &format!("{base}/owner"),
    ]);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("hello /owner s3cret auth=None"), "{body}");

    // Refused: no credentials at all, a forged token, another principal.
    let (status, body) = hcurl(&[&format!("{base}/")]);
    assert_eq!(
        (status, code_of(&body)),
        (401, "unauthenticated".into()),
        "{body}"
    );
    let forged = format!("{}x", &token);
    let (status, body) = hcurl(&[&format!("{base}/?cleanroom_token={forged}")]);
    assert_eq!(
        (status, code_of(&body)),
        (401, "unauthenticated".into()),
        "{body}"
    );
    let (status, body) = hcurl(&[
        "-H",
        &format!("Authorization: Bearer {BOB}"),
        &format!("{base}/"),
    ]);
    assert_eq!(
        (status, code_of(&body)),
        (404, "exposure_not_found".into()),
        "{body}"
    );
    // A token of another exposure id does not open this one.
    let (status, body) = hcurl(&[&format!(
        "http://{}/_sandbox/exp_{}/?cleanroom_token={token}",
        s.addr,
        "0".repeat(32)
    )]);
    assert_eq!(
        (status, code_of(&body)),
        (401, "unauthenticated".into()),
        "{body}"
    );
    // Bob cannot expose, list or remove alice's sandbox's ports.
    assert_code(
        &s.run(Some(BOB), &["sandbox", "expose", &sbx, "8000"]),
        "sandbox_not_found",
    );
    assert_code(
        &s.run(Some(BOB), &["sandbox", "unexpose", &sbx, "8000"]),
        "sandbox_not_found",
    );

    // Inspect lists it; exposing the same port again returns the same exposure.
    let v: serde_json::Value =
        serde_json::from_slice(&run(&["sandbox", "inspect", "--json", &sbx]).stdout).unwrap();
    assert_eq!(v["exposures"][0]["id"], id.as_str(), "{v}");
    assert_eq!(v["exposures"][0]["port"], 8000, "{v}");
    let again = exposed(&run(&["sandbox", "expose", &sbx, "8000", "--json"]));
    assert_eq!(again["id"], id.as_str());

    // Revoked: the very next request with the token is refused with its own code.
    let o = run(&["sandbox", "unexpose", &sbx, "8000"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (status, body) = hcurl(&[&url]);
    assert_eq!(
        (status, code_of(&body)),
        (401, "exposure_revoked".into()),
        "{body}"
    );
    assert_code(
        &run(&["sandbox", "unexpose", &sbx, &id]),
        "exposure_not_found",
    );

    // Expired: a one-second exposure, tried after it ended.
    let short = exposed(&run(&[
        "sandbox", "expose", &sbx, "8000", "--ttl", "1", "--json",
    ]));
    let (status, _) = hcurl(&[short["url"].as_str().unwrap()]);
    assert_eq!(status, 200);
    std::thread::sleep(Duration::from_millis(2100));
    let (status, body) = hcurl(&[short["url"].as_str().unwrap()]);
    assert_eq!(
        (status, code_of(&body)),
        (401, "exposure_expired".into()),
        "{body}"
    );
    // Nothing listens on 8999: a precise refusal, not a hang.
    let closed = exposed(&run(&["sandbox", "expose", &sbx, "8999", "--json"]));
    let (status, body) = hcurl(&[closed["url"].as_str().unwrap()]);
    assert_eq!(
        (status, code_of(&body)),
        (503, "sandbox_port_closed".into()),
        "{body}"
    );

    // Events: connections opened and closed, refusals with their reasons.
    let ev = run(&["sandbox", "events", &sbx]);
    let opened = events_of(&ev, "inbound.open");
    assert!(opened.len() >= 5, "{opened:?}");
    assert!(
        opened.iter().any(|e| e["attributes"]["via"] == "token"),
        "{opened:?}"
    );
    assert!(
        opened.iter().any(|e| e["attributes"]["via"] == "alice"),
        "{opened:?}"
    );
    let closed_ev = events_of(&ev, "inbound.close");
    assert!(!closed_ev.is_empty(), "{}", stdout(&ev));
    assert!(
        closed_ev
            .iter()
            .all(|e| e["attributes"]["bytes_from_sandbox"].as_u64().unwrap_or(0) > 0),
        "{closed_ev:?}"
    );
    let refused = events_of(&ev, "inbound.refused");
    assert!(
        refused
            .iter()
            .any(|e| e["attributes"]["reason"] == "sandbox_port_closed"),
        "{refused:?}"
    );
    assert_eq!(events_of(&ev, "inbound.exposed").len(), 3);
    assert_eq!(events_of(&ev, "inbound.unexposed").len(), 1);

    // Removed with the sandbox: its exposures go, their tokens say so.
    let live = exposed(&run(&["sandbox", "expose", &sbx, "8000", "--json"]));
    assert_eq!(run(&["sandbox", "rm", &sbx]).status.code(), Some(0));
    let (status, body) = hcurl(&[live["url"].as_str().unwrap()]);
    assert_eq!(
        (status, code_of(&body)),
        (401, "exposure_revoked".into()),
        "{body}"
    );
}
