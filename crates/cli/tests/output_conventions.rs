//! One output convention (issue 31 item 15, docs/api.md "Output conventions"): `-o json`
//! is the proto3 JSON mapping's lowerCamelCase everywhere, also in the objects the CLI
//! composes itself; human text shows times as RFC 3339 UTC, never raw Unix numbers.

use cleanroom_e2e::pools::*;
use cleanroom_e2e::*;

/// Every object key in `v` (recursively) that is not lowerCamelCase. The keys of free-form
/// maps are data, not field names, and are not checked: `labels` (the caller's own) and
/// the `google.protobuf.Struct`s `backendInfo`, `observability` and event `attributes`.
fn snake_keys(v: &serde_json::Value, path: &str, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                if k.contains('_') {
                    out.push(format!("{path}.{k}"));
                }
                if !["labels", "backendInfo", "observability", "attributes"].contains(&k.as_str()) {
                    snake_keys(x, &format!("{path}.{k}"), out);
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| snake_keys(x, path, out)),
        _ => {}
    }
}

fn json_of(o: &std::process::Output) -> Vec<serde_json::Value> {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    let text = stdout(o);
    // One document, or one per line.
    serde_json::from_str(&text)
        .map(|v| vec![v])
        .unwrap_or_else(|_| {
            text.lines()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
                .collect()
        })
}

fn is_utc(s: &str) -> bool {
    let b = s.as_bytes();
    s.len() == 20 && b[4] == b'-' && b[10] == b'T' && s.ends_with('Z')
}

#[test]
fn json_is_camel_case_and_text_times_are_utc() {
    let s = Server::start();
    let state = tempfile::tempdir().unwrap();
    let sbx = s.create();
    let o = s.sh_in(&sbx, "echo hi; exit 3");
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let exe = inspect(&s, &sbx)["lastExecutionId"]
        .as_str()
        .unwrap()
        .to_string();
    let snap = stdout(&s.run(&["snapshot", "create", &sbx]))
        .trim()
        .to_string();
    assert!(snap.starts_with("snap_"), "{snap}");
    let pool = pool_create(&s, &["--min-ready", "1"]);
    wait_ready(&s, &pool, 1);
    let mut c = s.cli();
    c.env("XDG_STATE_HOME", state.path())
        .args(["exec", "-n", "--", "true"]);
    assert_eq!(
        output_with_timeout(c, std::time::Duration::from_secs(60))
            .status
            .code(),
        Some(0)
    );

    let mut bad = Vec::new();
    let commands: Vec<Vec<&str>> = vec![
        vec!["sandbox", "inspect", &sbx],
        vec!["sandbox", "ls"],
        vec!["inspect", &exe],
        vec!["execution", "logs", &exe],
        vec!["snapshot", "inspect", &snap],
        vec!["snapshot", "ls"],
        vec!["pool", "stats", &pool],
        vec!["pool", "ls"],
        vec!["pool", "claim", &pool],
        vec!["status", "--last"],
    ];
    for args in &commands {
        let mut c = s.cli();
        c.env("XDG_STATE_HOME", state.path())
            .args(args.iter())
            .args(["-o", "json"]);
        let o = output_with_timeout(c, std::time::Duration::from_secs(60));
        for v in json_of(&o) {
            snake_keys(&v, &args.join(" "), &mut bad);
        }
    }
    assert!(bad.is_empty(), "snake_case keys in -o json: {bad:?}");
    // The exit line of `execution logs --json` names the exit code the mapping's way.
    let logs = json_of(&s.run(&["execution", "logs", "--json", &exe]));
    assert_eq!(logs.last().unwrap()["exit"]["exitCode"], 3);

    // Text: times as RFC 3339 UTC.
    let o = s.run(&["snapshot", "inspect", &snap]);
    let text = stdout(&o);
    assert!(!text.contains("unix"), "{text}");
    let created = text
        .lines()
        .find_map(|l| l.strip_prefix("created_at:"))
        .unwrap_or_else(|| panic!("{text}"))
        .trim();
    assert!(is_utc(created), "{text}");
}
