//! Hints that lead somewhere (issue 31 item 14): a sandbox id that names nothing points at
//! the list, not at `sandbox inspect` of the same id; the bad-token hint says where tokens
//! come from (the tokens file holds only hashes); `https://` against a plain-HTTP server
//! says so instead of a TLS parser's `InvalidContentType`.

use cleanroom_e2e::*;

#[test]
fn an_unknown_sandbox_points_at_the_list() {
    let s = Server::start();
    for args in [
        vec!["exec", "-n", "--in", "sbx_nope", "--", "true"],
        vec!["sandbox", "inspect", "sbx_nope"],
        vec!["sandbox", "rm", "sbx_nope"],
    ] {
        let o = s.run(&args);
        let err = stderr(&o);
        assert!(err.contains("[sandbox_not_found]"), "{args:?}: {err}");
        assert!(err.contains("cleanroom sandbox ls"), "{args:?}: {err}");
        assert!(!err.contains("sandbox inspect sbx_nope"), "{args:?}: {err}");
    }
}

#[test]
fn the_bad_token_hint_says_where_tokens_come_from() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = write_tokens(dir.path(), &[("right", "alice", "user")]);
    let s = TcpServer::start("http", &["--tokens-file", tokens.to_str().unwrap()]);
    let o = s.run(Some("wrong"), &["sandbox", "ls"]);
    let err = stderr(&o);
    assert!(err.contains("[unauthenticated]"), "{err}");
    assert!(err.contains("only `sha256:` hashes"), "{err}");
    assert!(
        err.contains("whoever created that file has the tokens"),
        "{err}"
    );
    assert!(
        !err.contains("a token from the server's --tokens-file"),
        "{err}"
    );
}

#[test]
fn https_against_a_plain_http_server_says_use_http() {
    let s = TcpServer::start("http", &["--insecure-no-auth"]);
    let mut c = s.cli(None);
    // (`exec`: the filter commands run with SIGPIPE at its default, and a write to the
    // connection the plain-HTTP server closed can end them with it first.)
    c.env("CLEANROOM_HOST", format!("https://{}", s.addr))
        .args(["exec", "-n", "--", "true"]);
    let o = output_with_timeout(c, std::time::Duration::from_secs(60));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(125), "{err}");
    assert!(
        err.contains(&format!(
            "the server at https://{} does not speak TLS",
            s.addr
        )) && err.contains(&format!("use http://{}", s.addr)),
        "{err}"
    );
    assert!(!err.contains("InvalidContentType"), "{err}");
    assert!(!err.contains("cleanroom serve"), "{err}");
}
