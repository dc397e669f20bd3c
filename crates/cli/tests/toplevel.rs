//! Seed 000's top-level verbs: `cleanroom create` (keeps the sandbox, prints its id),
//! `cleanroom inspect <typeid>` (dispatch on the prefix), `-o json` on read commands.

mod common;
use common::*;

fn json(o: &std::process::Output) -> serde_json::Value {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

#[test]
fn create_inspect_and_output_json() {
    let s = Server::start();
    let dir = tempfile::tempdir().unwrap();
    // No repository policy here: the built-in one; the sandbox stays READY.
    let mut c = s.cli();
    c.current_dir(dir.path()).args(["create"]);
    let o = output_with_timeout(c, std::time::Duration::from_secs(60));
    let sbx = stdout(&o).trim().to_string();
    assert!(sbx.starts_with("sbx_"), "{}", stderr(&o));

    let o = s.run(&["inspect", &sbx, "-o", "json"]);
    let v = json(&o);
    assert_eq!(v["sandboxId"], sbx.as_str());
    assert_eq!(v["status"], "SANDBOX_STATUS_READY");
    let o = s.run(&["inspect", &sbx]);
    assert!(stdout(&o).contains(&sbx), "{}", stdout(&o));

    let o = s.sh_in(&sbx, "echo typed");
    assert_eq!(stdout(&o), "typed\n");
    let o = s.run(&["-o", "json", "sandbox", "inspect", &sbx]);
    let exe = json(&o)["lastExecutionId"].as_str().unwrap().to_string();
    let v = json(&s.run(&["inspect", &exe, "-o", "json"]));
    assert_eq!(v["execution"]["executionId"], exe.as_str());
    assert_eq!(v["stdout"], "typed\n");
    let o = s.run(&["inspect", &exe]);
    assert!(stdout(&o).contains("typed"), "{}", stdout(&o));

    // -o json on the list commands too.
    let v = json(&s.run(&["sandbox", "ls", "-o", "json"]));
    assert!(v
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x["sandboxId"] == sbx.as_str()));
    assert!(json(&s.run(&["image", "ls", "-o", "json"])).is_array());

    // Unknown prefixes and unknown ids: stable codes.
    let o = s.run(&["inspect", "snap_123"]);
    assert_eq!(o.status.code(), Some(125));
    assert!(stderr(&o).contains("[invalid_argument]"), "{}", stderr(&o));
    let o = s.run(&["inspect", "sbx_0000"]);
    assert!(stderr(&o).contains("[sandbox_not_found]"), "{}", stderr(&o));
    let o = s.run(&["inspect", "exe_0000"]);
    assert!(
        stderr(&o).contains("[execution_not_found]"),
        "{}",
        stderr(&o)
    );
    s.run(&["sandbox", "rm", &sbx]);
}
