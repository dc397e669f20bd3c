//! `cleanroom exec` end to end: real server, real sandboxes, real processes.

use cleanroom_e2e::*;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::process::Stdio;
use std::time::Duration;

fn hex(d: impl AsRef<[u8]>) -> String {
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn exit_codes_are_the_guests() {
    let s = Server::start();
    assert_eq!(s.sh("exit 0").status.code(), Some(0));
    assert_eq!(s.sh("exit 3").status.code(), Some(3));
    let nf = s.run(&["exec", "-n", "--", "definitely-not-a-command"]);
    assert_eq!(nf.status.code(), Some(127), "{}", stderr(&nf));
    assert!(
        stderr(&nf).contains("definitely-not-a-command"),
        "{}",
        stderr(&nf)
    );
    let killed = s.sh("kill -9 $$");
    assert_eq!(killed.status.code(), Some(137), "{}", stderr(&killed));
}

#[test]
fn stdout_and_stderr_are_separate_and_byte_exact() {
    let s = Server::start();
    let o = s.sh("printf 'out1\\n'; printf 'err1\\n' >&2; printf 'out2'; printf 'err2' >&2");
    assert_eq!(o.stdout, b"out1\nout2");
    assert_eq!(o.stderr, b"err1\nerr2");

    // Binary data: 8 MiB of random bytes; the sandbox reports their hash on stderr.
    let o = s.sh(
        "head -c 8388608 /dev/urandom > /tmp/r; sha256sum /tmp/r | cut -d' ' -f1 >&2; cat /tmp/r",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(o.stdout.len(), 8 << 20);
    assert_eq!(hex(Sha256::digest(&o.stdout)), stderr(&o).trim());
}

#[test]
fn large_output_arrives_complete() {
    let s = Server::start();
    // 120 MiB of a known pattern on stdout, a marker on stderr.
    let total: usize = 120 << 20;
    let o = s.sh(&format!(
        "yes 0123456789abcdef | head -c {total}; echo done >&2"
    ));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(o.stdout.len(), total);
    let pattern = b"0123456789abcdef\n";
    let expected: Vec<u8> = pattern.iter().cycle().take(total).copied().collect();
    assert!(o.stdout == expected, "stdout differs from the pattern");
    assert_eq!(stderr(&o), "done\n");
}

#[test]
fn stdin_round_trip_through_cat() {
    let s = Server::start();
    let data: Vec<u8> = (0..3_000_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let mut c = s.cli();
    c.args(["exec", "--", "cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let d = data.clone();
    let w = std::thread::spawn(move || {
        stdin.write_all(&d).unwrap();
    });
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    w.join().unwrap();
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(0));
    assert!(
        out == data,
        "stdin round trip differs ({} vs {} bytes)",
        out.len(),
        data.len()
    );
}

#[test]
fn no_stdin_flag_gives_eof_at_once() {
    let s = Server::start();
    // Our stdin is a pipe that never closes; with -n, cat must still see EOF.
    let mut c = s.cli();
    c.args(["exec", "-n", "--", "sh", "-c", "cat; echo eof"])
        .stdin(Stdio::piped());
    let keep_open = c.stdin(Stdio::piped());
    let _ = keep_open;
    let out = output_with_timeout(c, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "eof\n");
}

#[test]
fn env_and_cwd_are_honoured() {
    let s = Server::start();
    let mut c = s.cli();
    c.env("FROM_CLIENT", "inherited value")
        .args([
            "exec",
            "-n",
            "--env",
            "FOO=bar baz",
            "--env",
            "FROM_CLIENT",
            "--cwd",
            "/tmp",
            "--",
        ])
        .args(["sh", "-c", "echo \"$FOO|$FROM_CLIENT|$(pwd)\""]);
    let o = output_with_timeout(c, Duration::from_secs(60));
    assert_eq!(
        stdout(&o),
        "bar baz|inherited value|/tmp\n",
        "{}",
        stderr(&o)
    );
    // Default cwd is the workspace; a client env var not passed does not leak in.
    let mut c = s.cli();
    c.env("SECRETISH", "x").args([
        "exec",
        "-n",
        "--",
        "sh",
        "-c",
        "pwd; echo \"[${SECRETISH:-}]\"",
    ]);
    let o = output_with_timeout(c, Duration::from_secs(60));
    assert_eq!(stdout(&o), "/workspace\n[]\n");
    // Bad env names and a missing cwd are clear errors.
    let o = s.run(&["exec", "-n", "--env", "1BAD=x", "--", "true"]);
    assert_eq!(o.status.code(), Some(125));
    assert!(stderr(&o).contains("invalid_argument"), "{}", stderr(&o));
    let o = s.run(&["exec", "-n", "--cwd", "/does/not/exist", "--", "true"]);
    assert_eq!(o.status.code(), Some(126), "{}", stderr(&o));
}

fn sandbox_id_from(stderr_text: &str) -> String {
    stderr_text
        .lines()
        .find(|l| l.starts_with("sbx_"))
        .expect("sandbox id printed")
        .trim()
        .to_string()
}

#[test]
fn timeout_ends_as_timed_out() {
    let s = Server::start();
    let o = s.run(&[
        "exec",
        "-n",
        "--keep",
        "--timeout",
        "1",
        "--",
        "sleep",
        "100",
    ]);
    assert_eq!(o.status.code(), Some(143), "{}", stderr(&o));
    assert!(stderr(&o).contains("TIMED_OUT"), "{}", stderr(&o));
    let id = sandbox_id_from(&stderr(&o));
    let i = s.run(&["execution", "inspect", "--sandbox-id", &id, "--last"]);
    assert!(
        stdout(&i).contains("status:       TIMED_OUT"),
        "{}",
        stdout(&i)
    );
    // A command that ignores SIGTERM is killed after the grace period.
    let o = s.run(&[
        "exec",
        "-n",
        "--timeout",
        "1",
        "--",
        "sh",
        "-c",
        "trap '' TERM; while :; do sleep 0.1; done",
    ]);
    assert_eq!(o.status.code(), Some(137), "{}", stderr(&o));
    s.run(&["sandbox", "rm", &id]);
}

/// Start `cleanroom exec ARGS` and return once the guest printed "started".
fn spawn_started(s: &Server, args: &[&str]) -> std::process::Child {
    let mut c = s.cli();
    c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut buf = [0u8; 8];
    let n = child.stdout.as_mut().unwrap().read(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"started\n");
    child
}

/// Send SIGINT `times` times (300 ms apart) and wait at most `limit` for the CLI to exit.
fn interrupt(child: std::process::Child, times: usize, limit: Duration) -> std::process::Output {
    for i in 0..times {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(300));
        }
        // SAFETY: kill(2) takes integers only; the pid is our own unreaped child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()).unwrap());
    rx.recv_timeout(limit)
        .expect("exec did not end after Ctrl-C")
        .unwrap()
}

/// The first Ctrl-C reaches the guest at once and as SIGINT, as a terminal's would (it
/// used to be SIGTERM after a 2 s window); the second detaches.
#[test]
fn ctrl_c_interrupts_then_detaches() {
    let s = Server::start();
    let script = "trap 'echo got-INT; exit 3' INT; trap 'echo got-TERM; exit 4' TERM; \
                  echo started; while :; do sleep 0.05; done";
    let child = spawn_started(&s, &["exec", "-n", "--keep", "--", "sh", "-c", script]);
    let o = interrupt(child, 1, Duration::from_secs(30));
    assert_eq!(stdout(&o), "got-INT\n", "{}", stderr(&o));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let id = sandbox_id_from(&stderr(&o));

    // A guest that dies of the SIGINT: 128 + 2, as in a terminal.
    let child = spawn_started(
        &s,
        &[
            "exec",
            "-n",
            "--in",
            &id,
            "--",
            "sh",
            "-c",
            "echo started; exec sleep 100",
        ],
    );
    let o = interrupt(child, 1, Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));

    // Second Ctrl-C detaches at once, even when the command ignores the interrupt.
    let script = "trap '' INT TERM; echo started; while :; do sleep 0.1; done";
    let child = spawn_started(&s, &["exec", "-n", "--in", &id, "--", "sh", "-c", script]);
    let o = interrupt(child, 2, Duration::from_secs(4));
    assert_eq!(o.status.code(), Some(130));
    assert!(stderr(&o).contains("detached"), "{}", stderr(&o));
    s.run(&["sandbox", "rm", &id]);
}

#[test]
fn concurrent_executions_in_one_and_many_sandboxes() {
    let s = Server::start();
    let created = s.run(&["sandbox", "create"]);
    let id = stdout(&created).trim().to_string();
    assert!(id.starts_with("sbx_"), "{}", stderr(&created));
    let handles: Vec<_> = (0..6)
        .map(|i| {
            let mut c = s.cli();
            c.args([
                "exec",
                "-n",
                "--in",
                &id,
                "--",
                "sh",
                "-c",
                &format!("sleep 0.3; echo one-{i}"),
            ]);
            std::thread::spawn(move || output_with_timeout(c, Duration::from_secs(60)))
        })
        .chain((0..6).map(|i| {
            let mut c = s.cli();
            c.args([
                "exec",
                "-n",
                "--",
                "sh",
                "-c",
                &format!("sleep 0.3; echo many-{i}"),
            ]);
            std::thread::spawn(move || output_with_timeout(c, Duration::from_secs(60)))
        }))
        .collect();
    let outs: Vec<String> = handles
        .into_iter()
        .map(|h| stdout(&h.join().unwrap()))
        .collect();
    for i in 0..6 {
        assert_eq!(outs[i], format!("one-{i}\n"));
        assert_eq!(outs[6 + i], format!("many-{i}\n"));
    }
    // The reused sandbox is still READY.
    let i = s.run(&["sandbox", "inspect", &id]);
    assert!(
        stdout(&i).contains("status:              READY"),
        "{}",
        stdout(&i)
    );
    s.run(&["sandbox", "rm", &id]);
}

#[test]
fn limit_flags_and_trace_id() {
    let s = Server::start();
    let o = s.run(&[
        "sandbox",
        "create",
        "--memory-mb",
        "300",
        "--pids",
        "99",
        "--cpu-millis",
        "700",
        "--disk-mb",
        "40",
    ]);
    let id = stdout(&o).trim().to_string();
    let i = stdout(&s.run(&["sandbox", "inspect", &id]));
    assert!(
        i.contains("memory=300MiB pids=99 cpu=700m disk=40MiB"),
        "{i}"
    );
    let o = s.sh_in(&id, "df -m /tmp | tail -1 | awk '{print $2}'");
    assert_eq!(stdout(&o).trim(), "40");
    s.run(&["sandbox", "rm", &id]);
    let o = s.run(&["exec", "-n", "--pids", "2", "--", "true"]);
    assert_eq!(o.status.code(), Some(125));
    assert!(stderr(&o).contains("[invalid_argument]"), "{}", stderr(&o));
    let o = s.run(&["exec", "-n", "--print-trace-id", "--", "true"]);
    let err = stderr(&o);
    let trace = err
        .lines()
        .find_map(|l| l.strip_prefix("trace_id: "))
        .expect("trace id printed");
    assert_eq!(trace.len(), 32, "{err}");
}

/// `exec --workdir-from DIR` (issue 31 item 8): a directory that is not a git repository is
/// copied as it is into the working directory before the command runs — files, nested
/// directories and links (as links: one naming a host file reads the sandbox's file, never
/// the host's); `--cwd` moves the destination; `--in` copies into an existing sandbox; a
/// path that is not a directory is refused before any command runs.
#[test]
fn workdir_from_copies_a_plain_directory_before_the_command() {
    let s = Server::start();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hello.txt"), "hello from the host\n").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/x"), "nested\n").unwrap();
    let secret = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(secret.path(), "HOST-ONLY-SECRET\n").unwrap();
    std::os::unix::fs::symlink(secret.path(), dir.path().join("link")).unwrap();
    let script = "pwd; cat hello.txt sub/x; readlink link; cat link 2>/dev/null || echo no-target";
    let mut c = s.cli();
    c.current_dir(dir.path()).args([
        "exec",
        "-n",
        "--workdir-from",
        ".",
        "--",
        "sh",
        "-c",
        script,
    ]);
    let o = output_with_timeout(c, Duration::from_secs(60));
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let want = format!(
        "/workspace\nhello from the host\nnested\n{}\nno-target\n",
        secret.path().display()
    );
    assert_eq!(stdout(&o), want, "{}", stderr(&o));
    assert!(!stdout(&o).contains("HOST-ONLY-SECRET"));
    // Without the flag the directory is not there (what a new user met).
    let mut c = s.cli();
    c.current_dir(dir.path())
        .args(["exec", "-n", "--", "cat", "hello.txt"]);
    let o = output_with_timeout(c, Duration::from_secs(60));
    assert!(!o.status.success(), "{}", stdout(&o));

    // --cwd moves the destination; --in copies into a sandbox that already runs.
    let made = s.run(&["sandbox", "create"]);
    let id = stdout(&made).trim().to_string();
    let dir_arg = dir.path().to_str().unwrap();
    let o = s.run(&[
        "exec",
        "--in",
        &id,
        "--workdir-from",
        dir_arg,
        "--cwd",
        "/tmp/w",
        "--",
        "cat",
        "sub/x",
    ]);
    assert_eq!(stdout(&o), "nested\n", "{}", stderr(&o));
    let o = s.run(&["exec", "--in", &id, "--", "cat", "/tmp/w/hello.txt"]);
    assert_eq!(stdout(&o), "hello from the host\n", "{}", stderr(&o));

    // Not a directory: refused with its code, the command never runs.
    let o = s.run(&[
        "exec",
        "--in",
        &id,
        "--workdir-from",
        secret.path().to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "echo ran",
    ]);
    assert_code(&o, "workdir_copy_failed");
    assert!(!stdout(&o).contains("ran"));
    s.run(&["sandbox", "rm", &id]);
    assert_no_leftovers(&s.state_dir(), &id);
}
