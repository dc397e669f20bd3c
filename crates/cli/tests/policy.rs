//! `cleanroom policy check|show` and how the server treats policies it cannot honour.

use cleanroom_e2e::*;

const EGRESS: &str = "version: 1
sandbox:
  network:
    allow:
      - host: api.github.com
        ports: [443]
";

#[test]
fn check_and_show_print_hash_or_path_of_the_error() {
    let s = Server::start();
    let d = tempfile::tempdir().unwrap();
    let a = write(&d, "a.yaml", EGRESS);
    let b = write(
        &d,
        "b.yaml",
        "{version: 1, sandbox: {network: {allow: [{host: API.GITHUB.COM., ports: [443, 443]}]}}}",
    );
    let ha = stdout(&s.run(&["policy", "check", &a]));
    let hb = stdout(&s.run(&["policy", "check", &b]));
    let hash = |t: &str| t.split_whitespace().last().unwrap_or_default().to_string();
    assert!(ha.contains(": ok sha256:"), "{ha}");
    assert_eq!(
        hash(&ha),
        hash(&hb),
        "same policy written two ways hashes differently"
    );
    let show = stdout(&s.run(&["policy", "show", &a]));
    assert!(
        show.contains("\"api.github.com\"")
            && show.contains("requires:")
            && show.contains("network_host_port_filtering"),
        "{show}"
    );
    let bad = write(&d, "bad.yaml", "version: 1\nsandbox:\n  network:\n    allow:\n      - host: ok.example\n      - host: 'x.*.example'\n");
    let o = s.run(&["policy", "check", &bad]);
    assert_eq!(o.status.code(), Some(125));
    assert!(
        stderr(&o).contains("[policy_invalid]")
            && stderr(&o).contains("sandbox.network.allow[1].host"),
        "{}",
        stderr(&o)
    );
    let conflict = write(&d, "c.yaml", "version: 1\nsandbox:\n  network:\n    allow: [{host: a.example.com}]\n    deny: [{host: '*.example.com'}]\n");
    assert!(stderr(&s.run(&["policy", "check", &conflict])).contains("[policy_conflict]"));
}

/// Capability mismatches themselves are tested in the engine against a backend that
/// declares less (every capability a policy can require, this Linux backend has); here: a
/// policy whose secret this server holds no value for is refused before anything runs.
#[test]
fn launch_fails_closed_when_the_server_cannot_meet_the_policy() {
    let s = Server::start();
    let d = tempfile::tempdir().unwrap();
    let p = write(
        &d,
        "cleanroom.yaml",
        &format!("{EGRESS}  secrets:\n    TOKEN:\n      hosts: [api.github.com]\n"),
    );
    let show = stdout(&s.run(&["policy", "show", &p]));
    assert!(show.contains("secret_isolation"), "{show}");
    let o = s.run(&["exec", "-n", "--policy", &p, "--", "echo", "should not run"]);
    assert_eq!(o.status.code(), Some(125));
    assert!(stdout(&o).is_empty());
    let err = stderr(&o);
    assert!(
        err.contains("[secret_unavailable]") && err.contains("TOKEN"),
        "{err}"
    );
    // Tag-only image refs are refused before any capability question.
    let o = s.run(&["sandbox", "create", "--image", "alpine:latest"]);
    assert!(stderr(&o).contains("[policy_invalid]"), "{}", stderr(&o));
    // Nothing was provisioned for either attempt.
    assert!(stdout(&s.run(&["sandbox", "ls", "-a"])).lines().count() <= 1);
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.email=t@example.invalid", "-c", "user.name=t"])
        .args(args)
        .output()
        .unwrap();
    assert!(ok.status.success(), "git {args:?}: {}", stderr(&ok));
}

/// `repository.path` gets the committed checkout (not uncommitted edits, with a warning)
/// and is the workload's directory; `sandbox.dependencies.command` runs there first, its
/// output on stderr; a failing one stops the workload.
#[test]
fn repository_checkout_and_dependencies_run_before_the_workload() {
    let s = Server::start();
    let repo = tempfile::tempdir().unwrap();
    let r = repo.path();
    std::fs::create_dir(r.join("src")).unwrap();
    std::fs::write(r.join("src/hello.txt"), "hi from the repo\n").unwrap();
    let policy = "version: 1
repository:
  path: /workspace/app
sandbox:
  dependencies:
    command: [sh, -c, 'echo installing; echo deps-ran > .deps']
";
    std::fs::write(r.join("cleanroom.yaml"), policy).unwrap();
    git(r, &["init", "-q"]);
    git(r, &["add", "."]);
    git(r, &["commit", "-q", "-m", "init"]);
    std::fs::write(r.join("src/hello.txt"), "uncommitted edit\n").unwrap();
    let file = r.join("cleanroom.yaml").display().to_string();
    let o = s.run(&[
        "exec",
        "-n",
        "--policy",
        &file,
        "--",
        "sh",
        "-c",
        "pwd; cat src/hello.txt; cat .deps",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "/workspace/app\nhi from the repo\ndeps-ran\n",
        "{}",
        stderr(&o)
    );
    let err = stderr(&o);
    assert!(err.contains("[repository_dirty]"), "{err}");
    assert!(err.contains("installing"), "{err}");

    // A failing dependencies command: the workload never runs.
    std::fs::write(
        r.join("cleanroom.yaml"),
        "version: 1\nrepository: {}\nsandbox:\n  dependencies:\n    command: [sh, -c, 'exit 3']\n",
    )
    .unwrap();
    let o = s.run(&[
        "exec",
        "-n",
        "--policy",
        &file,
        "--",
        "echo",
        "workload ran",
    ]);
    assert_eq!(o.status.code(), Some(125));
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("[dependencies_failed]"),
        "{}",
        stderr(&o)
    );

    // repository.path outside any git repository is an error, not an empty checkout.
    let plain = tempfile::tempdir().unwrap();
    let p = write(
        &plain,
        "cleanroom.yaml",
        "version: 1\nrepository:\n  path: /workspace/x\n",
    );
    let o = s.run(&["exec", "-n", "--policy", &p, "--", "echo", "workload ran"]);
    assert_eq!(o.status.code(), Some(125));
    assert!(
        stderr(&o).contains("[repository_unavailable]"),
        "{}",
        stderr(&o)
    );
    // Every sandbox these made is torn down: `exec` returns once its sandbox is STOPPING
    // and the server finishes the teardown, so the listing is asked until it is empty.
    let mut ls = String::new();
    let gone = eventually(std::time::Duration::from_secs(10), || {
        ls = stdout(&s.run(&["sandbox", "ls"]));
        ls.lines().count() <= 1
    });
    assert!(gone, "{ls}");
}
