//! The escape suite: each attack runs as a program inside a real sandbox and the test
//! fails if it succeeds. Attack programs live in `tests/attacks/` and print one line per
//! attempt: `ESCAPED: …` on success, `blocked: …` otherwise.
//! (Fork/memory/disk bombs need cgroup limits and are not covered yet.)

mod common;
use common::*;

const PRELUDE: &str = include_str!("attacks/prelude.py");

/// Run an attack program inside a fresh sandbox; return its stdout.
fn attack(s: &Server, program: &str, args: &[&str]) -> String {
    let code = format!("{PRELUDE}\n{program}");
    let mut argv = vec!["exec", "-n", "--", "python3", "-c", &code];
    argv.extend_from_slice(args);
    let o = s.run(&argv);
    let out = stdout(&o);
    assert!(
        o.status.success(),
        "attack program crashed: {}\n{}",
        out,
        stderr(&o)
    );
    out
}

fn assert_blocked(out: &str, expected_lines: usize) {
    assert!(!out.contains("ESCAPED"), "attack succeeded:\n{out}");
    assert_eq!(
        out.matches("blocked").count(),
        expected_lines,
        "not every attack ran:\n{out}"
    );
}

#[test]
fn cannot_read_server_state_socket_or_host_secrets() {
    let s = Server::start();
    let state = s.state_dir().display().to_string();
    let sock = s.socket().display().to_string();
    assert_blocked(
        &attack(&s, include_str!("attacks/secrets.py"), &[&state, &sock]),
        7,
    );
}

#[test]
fn cannot_write_outside_writable_paths() {
    let s = Server::start();
    assert_blocked(&attack(&s, include_str!("attacks/write.py"), &[]), 8);
}

#[test]
fn cannot_mount_unshare_setns_or_pivot_root() {
    let s = Server::start();
    assert_blocked(&attack(&s, include_str!("attacks/mount.py"), &[]), 10);
}

#[test]
fn cannot_use_ptrace_bpf_perf_keyrings_modules_or_io_uring() {
    let s = Server::start();
    assert_blocked(&attack(&s, include_str!("attacks/syscalls.py"), &[]), 13);
}

#[test]
fn cannot_reach_devices_host_processes_or_change_host_state() {
    let s = Server::start();
    let host_name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let server_pid = s.child.as_ref().unwrap().id().to_string();
    assert_blocked(
        &attack(&s, include_str!("attacks/devices.py"), &[&server_pid]),
        11,
    );
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap(),
        host_name
    );
}

#[test]
fn cannot_escape_via_proc_self_exe_or_inherited_fds() {
    let s = Server::start();
    assert_blocked(&attack(&s, include_str!("attacks/selfexe.py"), &[]), 8);
}

#[test]
fn other_sandboxes_are_invisible() {
    let s = Server::start();
    let a = stdout(&s.run(&["sandbox", "create"])).trim().to_string();
    let o = s.run(&[
        "exec",
        "-n",
        "--in",
        &a,
        "--",
        "sh",
        "-c",
        "setsid sleep 777.25 >/dev/null 2>&1 & echo started",
    ]);
    assert_eq!(stdout(&o), "started\n");
    let out = s.sh("for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done");
    assert!(!out.stdout.is_empty());
    assert!(
        !stdout(&out).contains("777.25"),
        "another sandbox's process is visible"
    );
    s.run(&["sandbox", "rm", &a]);
}

#[test]
fn benign_workloads_still_work() {
    let s = Server::start();
    let o = s.sh(
        "printf '#include <stdio.h>\\nint main(void){puts(\"compiled\");return 0;}\\n' > /tmp/a.c && cc -O2 -o /tmp/a /tmp/a.c && /tmp/a && \
         python3 -c 'import json, subprocess, threading, multiprocessing as m; print(json.dumps({\"py\": sum(range(10))}))' && \
         cd /workspace && git init -q . 2>/dev/null; echo done",
    );
    assert_eq!(
        stdout(&o),
        "compiled\n{\"py\": 45}\ndone\n",
        "{}",
        stderr(&o)
    );
}
