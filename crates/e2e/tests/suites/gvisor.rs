//! The gvisor runtime, for real: sandboxes run under `runsc` (gVisor's user-space kernel),
//! behind the same egress gateway, limits and teardown as the linux runtime's. Every test
//! skips with a message when `runsc` is not installed (`scripts/deps.sh` installs it);
//! nothing here is a stub of runsc.

use cleanroom_e2e::*;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// `runsc` on PATH, or a message saying these tests are skipped.
fn have_runsc() -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("runsc").is_file()));
    if !found {
        eprintln!("SKIPPED: runsc (gVisor) is not installed; scripts/deps.sh installs it");
    }
    found
}

/// The host's kernel release (gVisor reports its own, not this one).
fn host_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn policy_file(dir: &tempfile::TempDir, yaml: &str) -> String {
    write(dir, "cleanroom.yaml", yaml)
}

#[test]
fn exec_runs_under_gvisor_with_stdout_stderr_and_exit_codes() {
    if !have_runsc() {
        return;
    }
    let s = Server::start();
    assert!(
        s.log().contains("runtime gvisor: runsc version"),
        "serve names the runsc it uses: {}",
        s.log()
    );
    let o = s.run(&[
        "exec",
        "--runtime",
        "gvisor",
        "--",
        "python3",
        "-c",
        "print(1)",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "1\n");
    // Under gVisor's kernel, not the host's: its own kernel release and exit codes kept.
    let o = s.run(&[
        "exec",
        "--runtime",
        "gvisor",
        "--",
        "sh",
        "-c",
        "uname -r; echo to-stderr >&2; exit 7",
    ]);
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    let release = stdout(&o).trim().to_string();
    assert!(!release.is_empty());
    assert_ne!(release, host_release(), "uname -r shows the host kernel");
    assert!(stderr(&o).contains("to-stderr"), "{}", stderr(&o));
    // A signalled process: 128 + signal, like the linux runtime.
    let o = s.run(&[
        "exec",
        "--runtime",
        "gvisor",
        "--",
        "sh",
        "-c",
        "kill -TERM $$",
    ]);
    assert_eq!(o.status.code(), Some(143), "{}", stderr(&o));
    // The same command on the linux runtime sees the host's kernel release.
    let o = s.run(&["exec", "--runtime", "linux", "--", "uname", "-r"]);
    assert_eq!(stdout(&o).trim(), host_release());
}

#[test]
fn inspect_shows_runtime_and_platform_and_the_policy_can_choose_gvisor() {
    if !have_runsc() {
        return;
    }
    let s = Server::start();
    let d = tempfile::tempdir().unwrap();
    let policy = policy_file(&d, "version: 1\nsandbox:\n  runtime: gvisor\n");
    let o = s.run(&["sandbox", "create", "--policy", &policy]);
    let id = stdout(&o).trim().to_string();
    assert!(id.starts_with("sbx_"), "{}", stderr(&o));
    let v = inspect(&s, &id);
    let text = v.to_string();
    assert!(text.contains("\"gvisor\""), "{text}");
    assert!(
        text.contains("systrap") || text.contains("ptrace"),
        "platform shown: {text}"
    );
    let o = s.sh_in(&id, "uname -r");
    assert_ne!(stdout(&o).trim(), host_release());
    // The signed statement names the sandbox's runtime and that runtime's capabilities.
    let att = d.path().join("att.json");
    let o = s.run(&["sandbox", "attest", &id, "--out", att.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let key = d.path().join("server.pub");
    let o = s.run(&["attestation", "pubkey", "--out", key.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = s.run(&[
        "attestation",
        "verify",
        att.to_str().unwrap(),
        "--key",
        key.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let st: serde_json::Value = serde_json::from_slice(&o.stdout).expect("statement json");
    let st = if st["statement"].is_object() {
        &st["statement"]
    } else {
        &st
    };
    assert_eq!(st["backend"], "gvisor", "{st}");
    let caps = st["capabilities"].to_string();
    assert!(caps.contains("network_default_deny"), "{caps}");
    assert!(caps.contains("pause_resume"), "{caps}");
    assert!(caps.contains("filesystem_snapshots"), "{caps}");
    // The statement names the runsc that ran it.
    let runsc = std::process::Command::new("runsc")
        .arg("--version")
        .output()
        .expect("runsc --version");
    let version = String::from_utf8_lossy(&runsc.stdout);
    let version = version.lines().next().unwrap_or_default().trim();
    assert!(
        st.to_string().contains(version),
        "the statement names {version:?}: {st}"
    );
    // And the platform it ran on, the one inspect shows.
    let platform = ["systrap", "ptrace"]
        .into_iter()
        .find(|p| text.contains(&format!("\"{p}\"")))
        .unwrap_or_else(|| panic!("no platform in inspect: {text}"));
    assert!(
        st.to_string().contains(&format!("platform {platform}")),
        "the statement names platform {platform}: {st}"
    );
    // A filesystem snapshot is taken inside the running sandbox, which stays usable
    // (snapshots::runtimes restores and forks them).
    let o = s.run(&["snapshot", "create", &id]);
    assert!(stdout(&o).starts_with("snap_"), "{}", stderr(&o));
    let o = s.sh_in(&id, "echo still-here");
    assert_eq!(stdout(&o), "still-here\n", "{}", stderr(&o));
    let o = s.run(&["sandbox", "rm", &id]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn egress_under_gvisor_goes_through_the_gateway_deny_by_default() {
    if !have_runsc() {
        return;
    }
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = seen.clone();
    let port = http_upstream(move |path| {
        log.lock().unwrap().push(path.to_string());
        format!("hello:{path}").into_bytes()
    });
    let s = Server::start_with(&[
        "--egress-resolve",
        "ok.test=127.0.0.1",
        "--egress-resolve",
        "other.test=127.0.0.1",
    ]);
    let d = tempfile::tempdir().unwrap();
    let policy = policy_file(
        &d,
        &format!(
            "version: 1\nsandbox:\n  runtime: gvisor\n  network:\n    allow:\n      - host: ok.test\n        ports: [{port}]\n"
        ),
    );
    let o = s.run(&["sandbox", "create", "--policy", &policy]);
    let id = stdout(&o).trim().to_string();
    assert!(id.starts_with("sbx_"), "{}", stderr(&o));
    let script = format!(
        r#"
curl -sS -m 10 --noproxy '*' http://ok.test:{port}/direct; echo
curl -sS -m 10 http://ok.test:{port}/proxied; echo
curl -sS -m 5 --noproxy '*' http://other.test:{port}/denied && echo NAME_LEAK
curl -sS -m 5 http://other.test:{port}/denied-proxied | grep -q hello && echo PROXY_LEAK
curl -sS -m 5 --noproxy '*' http://127.0.0.1:{port}/loopback && echo LOOPBACK_LEAK
curl -sS -m 5 --noproxy '*' http://203.0.113.7/ && echo RAW_LEAK
echo finished"#
    );
    let o = s.sh_in(&id, &script);
    let out = stdout(&o);
    assert!(out.contains("finished"), "{out}\n{}", stderr(&o));
    assert!(out.contains("hello:/direct\n"), "{out}\n{}", stderr(&o));
    assert!(out.contains("hello:/proxied\n"), "{out}\n{}", stderr(&o));
    assert!(!out.contains("LEAK"), "{out}\n{}", stderr(&o));
    // The upstream saw exactly the allowed requests (the sandbox's 127.0.0.1 is its own
    // loopback, not the host's); the gateway recorded the denials.
    let mut got = seen.lock().unwrap().clone();
    got.sort();
    assert_eq!(got, ["/direct", "/proxied"]);
    let o = s.run(&["sandbox", "events", &id]);
    let events = stdout(&o);
    let denied = |host: &str, reason: &str| {
        events
            .lines()
            .any(|l| l.contains("egress.deny") && l.contains(host) && l.contains(reason))
    };
    assert!(denied("other.test", "host_not_allowed"), "{events}");
    assert!(denied("203.0.113.7", "ip_literal_not_allowed"), "{events}");
}

#[test]
fn the_memory_limit_is_enforced_under_gvisor() {
    if !have_runsc() {
        return;
    }
    let s = Server::start();
    let o = s.run(&[
        "exec",
        "--runtime",
        "gvisor",
        "--memory-mb",
        "64",
        "--",
        "python3",
        "-c",
        "x = bytearray(256 << 20); print('ALLOCATED', len(x))",
    ]);
    assert!(!stdout(&o).contains("ALLOCATED"), "{}", stdout(&o));
    assert_eq!(o.status.code(), Some(137), "{}", stderr(&o));
    assert!(stderr(&o).contains("[oom_killed]"), "{}", stderr(&o));
    // Within the limit the same program runs.
    let o = s.run(&[
        "exec",
        "--runtime",
        "gvisor",
        "--memory-mb",
        "256",
        "--",
        "python3",
        "-c",
        "x = bytearray(32 << 20); print('ALLOCATED', len(x))",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("ALLOCATED 33554432"), "{}", stdout(&o));
}

/// The container's first process holds the stdio `runsc run` was given, and the sandbox's
/// own processes can write to it (`/proc/1/fd/2`). Nothing of that may land on the host:
/// it was a file in the bundle that grew by whatever the sandbox wrote, outside every limit
/// (20 MB here, before the fix).
#[test]
fn what_a_sandbox_writes_to_its_first_process_stdio_never_reaches_a_host_file() {
    if !have_runsc() {
        return;
    }
    let s = Server::start();
    let o = s.run(&["sandbox", "create", "--runtime", "gvisor"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let id = stdout(&o).trim().to_string();
    let o = s.run(&[
        "exec",
        "--in",
        &id,
        "--",
        "sh",
        "-c",
        "head -c 20000000 /dev/zero > /proc/1/fd/2; head -c 20000000 /dev/zero > /proc/1/fd/1; echo done",
    ]);
    assert!(stdout(&o).contains("done"), "{}{}", stdout(&o), stderr(&o));
    let mut big = Vec::new();
    let mut dirs = vec![s.state_dir().join("gvisor")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let Ok(m) = std::fs::symlink_metadata(e.path()) else {
                continue;
            };
            if m.is_dir() {
                dirs.push(e.path());
            } else if m.len() > 4 << 20 {
                big.push(format!("{} ({} bytes)", e.path().display(), m.len()));
            }
        }
    }
    assert!(
        big.is_empty(),
        "host files grew with the sandbox's writes: {big:?}"
    );
    let o = s.run(&["sandbox", "rm", &id]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// No container left in the server's runsc root, and no runsc process using it.
fn assert_no_runsc_state(s: &Server) {
    let root = s.state_dir().join("gvisor").join("runsc");
    let needle = root.to_string_lossy().into_owned();
    assert!(
        eventually(Duration::from_secs(15), || processes_mentioning(&needle)
            .is_empty()),
        "runsc processes left: {:?}",
        processes_mentioning(&needle)
    );
    let left: Vec<_> = std::fs::read_dir(&root)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        left.is_empty(),
        "runsc state left in {}: {left:?}",
        root.display()
    );
}

#[test]
fn a_gvisor_sandbox_leaves_nothing_after_rm_or_a_server_sigkill_and_restart() {
    if !have_runsc() {
        return;
    }
    let mut s = Server::start();
    let o = s.run(&["sandbox", "create", "--runtime", "gvisor"]);
    let id = stdout(&o).trim().to_string();
    assert!(id.starts_with("sbx_"), "{}", stderr(&o));
    assert!(
        !processes_mentioning(&id).is_empty(),
        "runsc runs the sandbox"
    );
    let o = s.sh_in(&id, "echo hi > /tmp/f && cat /tmp/f");
    assert_eq!(stdout(&o), "hi\n", "{}", stderr(&o));
    // The files API's in-sandbox helpers (runsc exec'd) leave nothing either.
    let tmp = tempfile::tempdir().unwrap();
    let (up, down) = (tmp.path().join("up"), tmp.path().join("down"));
    std::fs::write(&up, b"files").unwrap();
    let o = s.run(&["cp", up.to_str().unwrap(), &format!("{id}:/workspace/up")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = s.run(&["cp", &format!("{id}:/workspace/up"), down.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&down).unwrap(), b"files");
    let o = s.run(&["sandbox", "rm", &id]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_no_leftovers(&s.state_dir(), &id);
    assert!(!s.state_dir().join("gvisor/sandboxes").join(&id).exists());
    assert_no_runsc_state(&s);

    // A server killed with SIGKILL: the next start reclaims what its sandbox left.
    let o = s.run(&["sandbox", "create", "--runtime", "gvisor"]);
    let id = stdout(&o).trim().to_string();
    assert!(id.starts_with("sbx_"), "{}", stderr(&o));
    // An upload in flight (its helper session holds a temporary file in the sandbox)
    // when the server dies.
    let mut upload = s.cli();
    upload
        .args(["cp", "--raw", "-", &format!("{id}:/workspace/partial")])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut upload = upload.spawn().unwrap();
    {
        use std::io::Write;
        let stdin = upload.stdin.as_mut().unwrap();
        stdin.write_all(&vec![b'x'; 4 << 20]).unwrap();
        stdin.flush().unwrap();
    }
    assert!(
        eventually(Duration::from_secs(15), || {
            let o = s.sh_in(&id, "ls -a /workspace");
            stdout(&o).contains(".cleanroom-upload-")
        }),
        "the upload's helper session never started"
    );
    s.kill9();
    let _ = upload.kill();
    let _ = upload.wait();
    s.spawn();
    assert_no_leftovers(&s.state_dir(), &id);
    assert!(!s.state_dir().join("gvisor/sandboxes").join(&id).exists());
    assert_no_runsc_state(&s);
}

#[test]
fn an_unknown_or_absent_runtime_is_refused_never_replaced() {
    if !have_runsc() {
        return;
    }
    // A server whose runsc does not exist has no gvisor runtime.
    let s = Server::start_with(&["--runsc", "/nonexistent/runsc"]);
    assert!(
        s.log().contains("runtime gvisor unavailable"),
        "{}",
        s.log()
    );
    let o = s.run(&["exec", "--runtime", "gvisor", "--", "true"]);
    assert_code(&o, "runtime_unavailable");
    let d = tempfile::tempdir().unwrap();
    let policy = policy_file(&d, "version: 1\nsandbox:\n  runtime: gvisor\n");
    let o = s.run(&["sandbox", "create", "--policy", &policy]);
    assert_code(&o, "runtime_unavailable");
    let o = s.run(&["sandbox", "ls", "--all", "--json"]);
    assert!(
        !stdout(&o).contains("sbx_"),
        "nothing was made: {}",
        stdout(&o)
    );
    // The linux runtime still works there.
    let o = s.run(&["exec", "--runtime", "linux", "--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // An unknown runtime: refused by the CLI, by the policy and by the API.
    let o = s.run(&["exec", "--runtime", "firecracker", "--", "true"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("not a runtime"), "{}", stderr(&o));
    let policy = policy_file(&d, "version: 1\nsandbox:\n  runtime: firecracker\n");
    let o = s.run(&["sandbox", "create", "--policy", &policy]);
    assert_code(&o, "policy_invalid");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let err = rt.block_on(async {
        let c = s.client().await;
        c.sandboxes
            .create_sandbox(cleanroom_client::api::CreateSandboxRequest {
                runtime: "firecracker".into(),
                ..Default::default()
            })
            .await
            .map(|_| ())
    });
    let err = format!("{:?}", err.expect_err("unknown runtime refused"));
    assert!(err.contains("runtime_unavailable"), "{err}");
    // A server cannot default to a runtime it does not have.
    let bad = std::process::Command::new(BIN)
        .args(["serve", "--listen"])
        .arg(format!("unix://{}/other.sock", d.path().display()))
        .arg("--state-dir")
        .arg(d.path().join("state"))
        .args([
            "--default-runtime",
            "gvisor",
            "--runsc",
            "/nonexistent/runsc",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_ne!(bad.status.code(), Some(0));
    assert!(
        stderr(&bad).contains("default runtime gvisor is unavailable"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn a_gvisor_pool_serves_gvisor_execs_only() {
    if !have_runsc() {
        return;
    }
    use cleanroom_e2e::pools::{num, pool_create, stats, wait_ready};
    let s = Server::start();
    let pool = pool_create(&s, &["--runtime", "gvisor", "--min-ready", "1"]);
    wait_ready(&s, &pool, 1);
    // A linux exec with the same (default) policy is not served from the gvisor pool.
    let o = s.run(&["exec", "-n", "--runtime", "linux", "--", "uname", "-r"]);
    assert_eq!(stdout(&o).trim(), host_release(), "{}", stderr(&o));
    assert_eq!(num(&stats(&s, &pool), "claimsTotal"), 0);
    // A gvisor exec is, and runs under gVisor.
    let o = s.run(&["exec", "-n", "--runtime", "gvisor", "--", "uname", "-r"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_ne!(stdout(&o).trim(), host_release());
    assert_eq!(num(&stats(&s, &pool), "claimsTotal"), 1);
    // A pool of a runtime the server lacks is refused at once.
    let s2 = Server::start_with(&["--runsc", "/nonexistent/runsc"]);
    let o = s2.run(&["pool", "create", "--runtime", "gvisor", "--min-ready", "1"]);
    assert_code(&o, "runtime_unavailable");
}
