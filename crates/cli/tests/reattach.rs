//! Re-attach: the second Ctrl-C of `cleanroom exec` detaches and leaves the execution and
//! its sandbox running; `cleanroom execution logs [-f] [--since-seq N]` replays and follows
//! it to the end with its exit code. Background executions started through the API are
//! followed the same way. Real SIGINTs to the real CLI process.

use cleanroom_e2e::*;
use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

/// A ~30 s job: a line a second, a line on stderr at the end, a chosen exit code.
const JOB: &str = "trap 'echo interrupted >&2' INT; echo started; i=1; while [ $i -le 30 ]; do echo line $i; i=$((i+1)); sleep 1; done; echo finished >&2; exit 7";

fn expected_stdout() -> String {
    let mut s = String::from("started\n");
    for i in 1..=30 {
        s.push_str(&format!("line {i}\n"));
    }
    s
}

fn sigint(pid: u32) {
    // SAFETY: kill(2) takes integers only; the pid is our own unreaped child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
}

/// The first `exe_…` / `sbx_…` token in `text`.
fn id(text: &str, prefix: &str) -> String {
    text.split(|c: char| c.is_whitespace())
        .find(|w| w.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix} id in: {text}"))
        .to_string()
}

#[test]
fn second_ctrl_c_detaches_and_logs_follow_reattaches() {
    let s = Server::start();
    let mut c = s.cli();
    c.args(["exec", "-n", "--", "sh", "-c", JOB])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut first = [0u8; 8];
    let n = child.stdout.as_mut().unwrap().read(&mut first).unwrap();
    assert_eq!(&first[..n], b"started\n");
    // stderr lines as they come.
    let (tx, rx) = mpsc::channel::<String>();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // Ctrl-C once: the CLI interrupts the guest (which traps it) and says how to detach ...
    sigint(child.id());
    let announced = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the CLI answers the first Ctrl-C");
    assert!(announced.contains("Ctrl-C again to detach"), "{announced}");
    // ... and a second Ctrl-C detaches: execution and sandbox left running.
    sigint(child.id());
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || done_tx.send(child.wait()).unwrap());
    let status = done_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("exec ends after the second Ctrl-C")
        .unwrap();
    assert_eq!(status.code(), Some(130));
    let mut text = String::new();
    while let Ok(l) = rx.recv_timeout(Duration::from_secs(5)) {
        text.push_str(&l);
        text.push('\n');
    }
    assert!(text.contains("detached"), "{text}");
    assert!(text.contains("keeps running"), "{text}");
    let exe = id(&text, "exe_");
    let sbx = id(&text, "sbx_");
    assert!(
        text.contains(&format!("re-attach: cleanroom execution logs -f {exe}")),
        "{text}"
    );
    // The sandbox was not torn down and the execution is still running.
    let i = s.run(&["sandbox", "inspect", "--json", &sbx]);
    let v: serde_json::Value = serde_json::from_slice(&i.stdout).unwrap();
    assert_eq!(v["status"], "SANDBOX_STATUS_READY", "{v}");
    assert_eq!(v["activeExecutionId"], exe.as_str(), "{v}");

    // Re-attach from the start: the whole output, exactly, and the job's own exit code.
    let mut c = s.cli();
    c.args(["execution", "logs", "-f", &exe]);
    let o = output_with_timeout(c, Duration::from_secs(120));
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    assert_eq!(stdout(&o), expected_stdout());
    assert_eq!(stderr(&o), "interrupted\nfinished\n");

    // Replay at an offset: the JSON form gives each event's sequence; everything after
    // sequence K is exactly the rest.
    let o = s.run(&["execution", "logs", "--json", &exe]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let events: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let last = events.last().unwrap();
    assert_eq!(last["exit"]["exitCode"], 7, "{last}");
    let k = events[10]["sequence"].as_u64().unwrap();
    let rest: String = events[11..]
        .iter()
        .filter_map(|e| e["stdout"].as_str())
        .collect();
    let o = s.run(&["execution", "logs", "--since-seq", &k.to_string(), &exe]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), rest);
    assert!(expected_stdout().ends_with(&rest) && rest.len() < expected_stdout().len());

    // The sandbox is still there for more work, until removed.
    let o = s.run(&["exec", "-n", "--in", &sbx, "--", "echo", "again"]);
    assert_eq!(stdout(&o), "again\n", "{}", stderr(&o));
    s.run(&["sandbox", "rm", &sbx]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_executions_from_the_api_are_followed() {
    use cleanroom_client::api::*;
    let s = Server::start();
    let sbx = s.create();
    // Start and return, as a program would.
    let exe = {
        let c = s.client().await;
        let req = CreateExecutionRequest {
            sandbox_id: sbx.clone(),
            command: vec![
                "sh".into(),
                "-c".into(),
                "echo one; sleep 3; echo two; exit 3".into(),
            ],
            ..Default::default()
        };
        let r = c
            .executions
            .create_execution(req)
            .await
            .unwrap()
            .into_owned();
        r.execution.as_option().unwrap().execution_id.clone()
    };
    let (s2, exe2) = (s.host(), exe.clone());
    let out = tokio::task::spawn_blocking(move || {
        // Without -f: what is retained now, and return at once while it runs.
        let mut c = std::process::Command::new(BIN);
        c.env("CLEANROOM_HOST", &s2)
            .args(["execution", "logs", &exe2]);
        let now = output_with_timeout(c, Duration::from_secs(60));
        let mut c = std::process::Command::new(BIN);
        c.env("CLEANROOM_HOST", &s2)
            .args(["execution", "logs", "-f", &exe2]);
        (now, output_with_timeout(c, Duration::from_secs(60)))
    })
    .await
    .unwrap();
    let (now, followed) = out;
    assert_eq!(now.status.code(), Some(0), "{}", stderr(&now));
    assert!("one\ntwo\n".starts_with(&stdout(&now)), "{}", stdout(&now));
    assert_eq!(followed.status.code(), Some(3), "{}", stderr(&followed));
    assert_eq!(stdout(&followed), "one\ntwo\n");

    // Another local user cannot read it (not found, as for every object not theirs).
    open_socket_to_all(&s);
    let o = as_uid(&s, 65534, &["execution", "logs", &exe]);
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("execution_not_found") || stderr(&o).contains("sandbox_not_found"),
        "{}",
        stderr(&o)
    );
    assert!(!stdout(&o).contains("one"));
    // Unknown ids: a clean error with a stable code.
    let o = s.run(&["execution", "logs", "-f", "exe_nope"]);
    assert_eq!(o.status.code(), Some(125));
    assert!(stderr(&o).contains("execution_not_found"), "{}", stderr(&o));
}
