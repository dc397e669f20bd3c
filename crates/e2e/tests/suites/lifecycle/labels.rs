//! Sandbox labels (issue 31 item 7): given at create, returned by inspect/ls, filtering
//! `sandbox ls --label`, and `sandbox rm --label` / `--all` on the caller's own sandboxes
//! only — never another principal's, also when root (an admin) asks.

use cleanroom_e2e::*;

fn json(o: &std::process::Output) -> serde_json::Value {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

fn ids(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s["sandboxId"].as_str().unwrap().to_string())
        .collect()
}

fn created(o: &std::process::Output) -> String {
    let id = stdout(o).trim().to_string();
    assert!(id.starts_with("sbx_"), "{}", stderr(o));
    id
}

#[test]
fn labels_are_returned_and_filter_ls() {
    let s = Server::start();
    let a = created(&s.run(&[
        "sandbox",
        "create",
        "--label",
        "team=search",
        "--label",
        "env=ci",
    ]));
    let b = created(&s.run(&["sandbox", "create", "--label", "team=search"]));
    let c = s.create();

    let v = json(&s.run(&["inspect", &a, "-o", "json"]));
    assert_eq!(v["labels"]["team"], "search", "{v}");
    assert_eq!(v["labels"]["env"], "ci", "{v}");
    let o = s.run(&["sandbox", "inspect", &a]);
    assert!(
        stdout(&o).contains("label:               env=ci"),
        "{}",
        stdout(&o)
    );

    let v = json(&s.run(&["sandbox", "ls", "-o", "json", "--label", "team=search"]));
    let mut got = ids(&v);
    got.sort();
    let mut want = vec![a.clone(), b.clone()];
    want.sort();
    assert_eq!(got, want);
    // Repeated filters are ANDed; the listed sandboxes carry their labels.
    let v = json(&s.run(&[
        "sandbox",
        "ls",
        "-o",
        "json",
        "--label",
        "team=search",
        "--label",
        "env=ci",
    ]));
    assert_eq!(ids(&v), vec![a.clone()]);
    assert_eq!(v[0]["labels"]["env"], "ci");
    let v = json(&s.run(&["sandbox", "ls", "-o", "json", "--label", "team=other"]));
    assert!(ids(&v).is_empty(), "{v}");
    let v = json(&s.run(&["sandbox", "ls", "-o", "json"]));
    assert!(ids(&v).contains(&c));

    // A malformed filter is refused locally, a bad label by the server naming the field.
    let o = s.run(&["sandbox", "ls", "--label", "team"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("KEY=VALUE"), "{}", stderr(&o));
    let o = s.run(&["sandbox", "create", "--label", "bad key=x"]);
    assert!(stderr(&o).contains("[invalid_argument]"), "{}", stderr(&o));
    assert!(stderr(&o).contains("labels"), "{}", stderr(&o));
    let long = format!("k={}", "v".repeat(300));
    let o = s.run(&["sandbox", "create", "--label", &long]);
    assert!(stderr(&o).contains("[invalid_argument]"), "{}", stderr(&o));
    assert!(stderr(&o).contains("labels.k"), "{}", stderr(&o));
}

#[test]
fn rm_by_label_and_all_touch_only_own_sandboxes() {
    let s = Server::start();
    open_socket_to_all(&s);
    let mine = created(&s.run(&["sandbox", "create", "--label", "job=1"]));
    let mine_other = created(&s.run(&["sandbox", "create", "--label", "job=2"]));
    let theirs = created(&as_uid(
        &s,
        65534,
        &["sandbox", "create", "--label", "job=1"],
    ));
    let theirs2 = created(&as_uid(&s, 65534, &["sandbox", "create"]));

    // Root is admin and sees theirs in `ls`, but `rm --label` takes only its own.
    let o = s.run(&["sandbox", "rm", "--label", "job=1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), mine, "{}", stderr(&o));
    assert_eq!(inspect(&s, &mine)["status"], "SANDBOX_STATUS_STOPPED");
    assert_eq!(inspect(&s, &theirs)["status"], "SANDBOX_STATUS_READY");
    assert_eq!(inspect(&s, &mine_other)["status"], "SANDBOX_STATUS_READY");

    // `--all`: every live sandbox of the caller, still none of another principal's.
    let o = s.run(&["sandbox", "rm", "--all"]);
    assert_eq!(stdout(&o).trim(), mine_other, "{}", stderr(&o));
    for id in [&theirs, &theirs2] {
        assert_eq!(inspect(&s, id)["status"], "SANDBOX_STATUS_READY");
    }
    // The other user's `rm --label` takes theirs.
    let o = as_uid(&s, 65534, &["sandbox", "rm", "--label", "job=1"]);
    assert_eq!(stdout(&o).trim(), theirs, "{}", stderr(&o));
    assert_eq!(inspect(&s, &theirs2)["status"], "SANDBOX_STATUS_READY");
    // ids and selectors do not mix; one of them is needed.
    let o = s.run(&["sandbox", "rm", &theirs2, "--all"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = s.run(&["sandbox", "rm"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
