//! Learn mode end to end: `cleanroom exec --learn` against loopback upstreams (reached only
//! through `serve --egress-resolve` overrides), the suggested policy it prints, the same
//! suggestion from `cleanroom policy suggest --from-sandbox`, and a normal run with that
//! policy: what was used works, anything else is still denied.

use cleanroom_e2e::*;

fn events(s: &Server, sbx: &str) -> Vec<serde_json::Value> {
    let o = s.run(&["sandbox", "events", sbx]);
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn learn_mode_suggests_a_policy_that_works_and_nothing_more() {
    let (p1, p2) = (hello_upstream(), hello_upstream());
    let s = Server::start_with(&[
        "--egress-resolve",
        "one.test=127.0.0.1",
        "--egress-resolve",
        "two.test=127.0.0.1",
        "--egress-resolve",
        "three.test=127.0.0.1",
    ]);
    let d = tempfile::tempdir().unwrap();
    let learned = d.path().join("learned.yaml");
    // Transparent to one.test, through the proxy to two.test (twice: recorded once), and a
    // direct address, which learn mode refuses like any policy does.
    let script = format!(
        "curl -sS -m 30 --noproxy '*' http://one.test:{p1}/a; echo; \
         curl -sS -m 30 http://two.test:{p2}/b; echo; curl -sS -m 30 http://two.test:{p2}/b2; echo; \
         curl -sS -m 5 --noproxy '*' http://203.0.113.7:{p1}/ || echo direct-refused; \
         curl -fsS -m 5 --noproxy '' --proxy http://100.96.0.1:3128 http://localhost:{p1}/ && echo INTERNAL_LEAK; true"
    );
    let learn_arg = format!("--learn={}", learned.display());
    let o = s.run(&[
        "exec", "-n", "--keep", &learn_arg, "--", "sh", "-c", &script,
    ]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        out.contains("hello:/a") && out.contains("hello:/b2"),
        "{out}"
    );
    assert!(out.contains("direct-refused"), "{out}");
    // A name that resolves to this host's own address stays refused, as without learn mode.
    assert!(!out.contains("INTERNAL_LEAK"), "{out}");
    let sbx = err
        .lines()
        .find(|l| l.starts_with("sbx_"))
        .expect("--keep prints the sandbox id")
        .trim()
        .to_string();
    let text = std::fs::read_to_string(&learned).unwrap();
    assert!(
        text.contains(&format!("  - host: \"one.test\"\n        ports: [{p1}]\n")),
        "{text}"
    );
    assert!(
        text.contains(&format!("  - host: \"two.test\"\n        ports: [{p2}]\n")),
        "{text}"
    );
    assert!(!text.contains("three.test"), "{text}");
    assert!(!text.contains("host: \"localhost\""), "{text}");
    assert!(
        text.contains(&format!(
            "#   localhost:{p1} (upstream_address_not_allowed)"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("#   203.0.113.7:{p1} (ip_literal_not_allowed)")),
        "{text}"
    );
    // First uses are events (each destination once).
    let ev = events(&s, &sbx);
    let learned_ev: Vec<_> = ev.iter().filter(|v| v["type"] == "egress.learn").collect();
    assert_eq!(learned_ev.len(), 3, "one.test, two.test, localhost: {ev:?}");
    // The same suggestion from the recorded events.
    let o = s.run(&["policy", "suggest", "--from-sandbox", &sbx]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), text);
    // The learn sandbox's policy says it learned: its hash is not the built-in policy's.
    let o = s.run(&["policy", "check", learned.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = s.run(&["sandbox", "rm", &sbx]);
    assert!(o.status.success());

    // A normal run with the suggested policy: what was used works...
    let policy = learned.to_str().unwrap();
    let o = s.run(&[
        "exec", "-n", "--policy", policy, "--", "sh", "-c",
        &format!(
            "curl -fsS -m 30 --noproxy '*' http://one.test:{p1}/c && echo && curl -fsS -m 30 http://two.test:{p2}/d"
        ),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("hello:/c") && stdout(&o).contains("hello:/d"));
    // ...and nothing else: another name, another port of a used name.
    let o = s.run(&["sandbox", "create", "--policy", policy]);
    let sbx = stdout(&o).trim().to_string();
    assert!(sbx.starts_with("sbx_"), "{}", stderr(&o));
    let o = s.sh_in(
        &sbx,
        &format!(
            "curl -fsS -m 10 --noproxy '*' http://three.test:{p1}/ && echo LEAK1; \
             curl -fsS -m 10 --noproxy '*' http://one.test:{p2}/ && echo LEAK2; \
             curl -fsS -m 10 http://three.test:{p1}/ && echo LEAK3; echo done"
        ),
    );
    assert!(stdout(&o).contains("done"), "{}", stderr(&o));
    assert!(!stdout(&o).contains("LEAK"), "{}", stdout(&o));
    let ev = events(&s, &sbx);
    let reasons: Vec<(String, String)> = ev
        .iter()
        .filter(|v| v["type"] == "egress.deny")
        .map(|v| {
            (
                v["attributes"]["host"].as_str().unwrap_or("").to_string(),
                v["attributes"]["reason"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert!(
        reasons.contains(&("three.test".into(), "host_not_allowed".into())),
        "{reasons:?}"
    );
    assert!(
        reasons.contains(&("one.test".into(), "port_not_allowed".into())),
        "{reasons:?}"
    );
    assert!(ev.iter().all(|v| v["type"] != "egress.learn"));
}

#[test]
fn learn_needs_a_new_sandbox() {
    let s = Server::start();
    let sbx = s.create();
    let o = s.run(&["exec", "-n", "--in", &sbx, "--learn", "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--learn"), "{}", stderr(&o));
}
