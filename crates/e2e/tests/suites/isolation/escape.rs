//! The escape suite: each attack runs as a program inside a real sandbox and the test
//! fails if it succeeds. Attack programs live in `attacks/` (beside this file) and print one
//! line per attempt: `ESCAPED: …` on success, `blocked: …` otherwise.
//! Resource bombs (fork, memory, disk) must stay inside their limits.

use cleanroom_e2e::*;

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
fn cannot_use_ptrace_bpf_perf_keyrings_modules_or_io_uring_natively_or_through_x32() {
    let s = Server::start();
    assert_blocked(&attack(&s, include_str!("attacks/syscalls.py"), &[]), 19);
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
fn setuid_binaries_grant_nothing() {
    let s = Server::start();
    assert_blocked(&attack(&s, include_str!("attacks/setuid.py"), &[]), 3);
}

#[test]
fn other_sandboxes_are_invisible() {
    let s = Server::start();
    let a = s.create();
    let o = s.sh_in(&a, "setsid sleep 777.25 >/dev/null 2>&1 & echo started");
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

/// Write a policy file and return its path (kept alive by the returned tempdir).
fn policy(yaml: &str) -> (tempfile::TempDir, String) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("cleanroom.yaml");
    std::fs::write(&p, yaml).unwrap();
    let s = p.display().to_string();
    (d, s)
}

#[test]
fn fork_bomb_is_bounded_by_the_pids_limit() {
    let s = Server::start();
    let (_d, p) = policy("version: 1\nsandbox:\n  resources:\n    pids: 64\n");
    let counter = "import os, time\nn = 0\nwhile True:\n    try:\n        pid = os.fork()\n    except OSError as e:\n        print(n, e.errno)\n        break\n    if pid == 0:\n        time.sleep(30)\n        os._exit(0)\n    n += 1\n";
    let o = s.run(&["exec", "-n", "--policy", &p, "--", "python3", "-c", counter]);
    let out = stdout(&o);
    let mut it = out.split_whitespace().map(|x| x.parse::<u64>().unwrap());
    let (forks, errno) = (it.next().unwrap(), it.next().unwrap());
    assert!(forks < 64, "forked {forks} processes past a 64-pid limit");
    assert_eq!(errno, libc::EAGAIN as u64);
    // A classic shell fork bomb: it either gives up on its own ("Cannot fork") or is ended
    // by the timeout; either way it is contained and fully reclaimed.
    let o = s.run(&[
        "exec",
        "-n",
        "--policy",
        &p,
        "--print-sandbox-id",
        "--timeout",
        "2",
        "--",
        "sh",
        "-c",
        "b() { b | b & }; b; sleep 60",
    ]);
    let err = stderr(&o);
    let tail = &err[err.len().saturating_sub(400)..];
    assert!(
        err.contains("Cannot fork") || err.contains("TIMED_OUT"),
        "bomb was not stopped: {tail}"
    );
    let id = stderr(&o).lines().next().unwrap().to_string();
    assert_no_leftovers(&s.state_dir(), &id);
    assert_eq!(stdout(&s.sh("echo host-fine")), "host-fine\n");
}

#[test]
fn memory_bomb_is_oom_killed_inside_the_sandbox_only() {
    let s = Server::start();
    let (_d, p) = policy("version: 1\nsandbox:\n  resources:\n    memory_mb: 64\n");
    let o = s.run(&[
        "exec",
        "-n",
        "--keep",
        "--policy",
        &p,
        "--",
        "python3",
        "-c",
        "x = bytearray(512 << 20); x[::4096] = b'x' * len(x[::4096]); print('survived')",
    ]);
    assert_eq!(o.status.code(), Some(137), "{}", stderr(&o));
    assert!(!stdout(&o).contains("survived"));
    let id = stderr(&o).lines().next().unwrap().to_string();
    let i = s.run(&["execution", "inspect", "--sandbox-id", &id, "--last"]);
    assert!(stdout(&i).contains("OOM killer"), "{}", stdout(&i));
    // The sandbox itself (pid 1) survived and still runs commands.
    let o = s.run(&["exec", "-n", "--in", &id, "--", "echo", "alive"]);
    assert_eq!(stdout(&o), "alive\n");
    s.run(&["sandbox", "rm", &id]);
}

#[test]
fn disk_fill_is_bounded() {
    let s = Server::start();
    let (_d, p) = policy("version: 1\nsandbox:\n  resources:\n    disk_mb: 32\n");
    for dir in ["/tmp", "/workspace", "/root"] {
        let o = s.run(&[
            "exec", "-n", "--policy", &p, "--", "sh", "-c",
            &format!("dd if=/dev/zero of={dir}/fill bs=1M count=200 2>&1 | grep -o 'No space left on device'; du -m {dir}/fill | cut -f1"),
        ]);
        let out = stdout(&o);
        assert!(out.contains("No space left on device"), "{dir}: {out}");
        let mb: u64 = out.lines().last().unwrap().trim().parse().unwrap();
        assert!(mb <= 32, "{dir}: wrote {mb} MiB past a 32 MiB cap");
    }
}

#[test]
fn resource_policy_is_validated_and_shown() {
    let s = Server::start();
    let (_d, bad) = policy("version: 1\nsandbox:\n  resources:\n    pids: 2\n");
    let o = s.run(&["sandbox", "create", "--policy", &bad]);
    assert_eq!(o.status.code(), Some(125));
    assert!(
        stderr(&o).contains("[policy_invalid]") && stderr(&o).contains("sandbox.resources.pids"),
        "{}",
        stderr(&o)
    );
    let (_d2, good) = policy("version: 1\nsandbox:\n  resources: {memory_mb: 256, pids: 100, cpu_millis: 500, disk_mb: 64}\n");
    let id = stdout(&s.run(&["sandbox", "create", "--policy", &good]))
        .trim()
        .to_string();
    let i = stdout(&s.run(&["sandbox", "inspect", &id]));
    assert!(
        i.contains("memory=256MiB pids=100 cpu=500m disk=64MiB"),
        "{i}"
    );
    assert!(i.contains("backend.cgroup: v"), "{i}");
    s.run(&["sandbox", "rm", &id]);
}

/// Host uid of a process (real uid from /proc/<pid>/status).
fn host_uid(pid: i32) -> Option<u32> {
    let st = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    st.lines()
        .find(|l| l.starts_with("Uid:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[test]
fn sandboxes_run_as_distinct_unprivileged_host_ids() {
    let s = Server::start();
    let a = s.create();
    let b = s.create();
    let mut uids = Vec::new();
    for id in [&a, &b] {
        // Inside: uid 0 of its own user namespace, mapped to a private host range.
        let o = s.sh_in(id, "id -u; cat /proc/self/uid_map");
        let out = stdout(&o);
        let mut lines = out.lines();
        assert_eq!(lines.next(), Some("0"));
        let map: Vec<u64> = lines
            .next()
            .unwrap()
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        assert_eq!(map[0], 0);
        assert!(
            map[1] >= 1_000_000_000,
            "sandbox root maps to a privileged host id: {map:?}"
        );
        // Outside: the sandbox's processes carry that unprivileged host uid.
        let pids = processes_mentioning(id);
        let init_uids: Vec<u32> = pids.iter().filter_map(|p| host_uid(*p)).collect();
        assert!(
            init_uids.contains(&(map[1] as u32)),
            "host uids {init_uids:?} vs map {map:?}"
        );
        uids.push(map[1]);
    }
    assert_ne!(uids[0], uids[1], "two sandboxes share a host id range");
    for id in [&a, &b] {
        s.run(&["sandbox", "rm", id]);
    }
}
