//! The escape suite: each attack runs as a program inside a real sandbox and the test
//! fails if it succeeds. Attack programs live in `attacks/` (beside this file) and print one
//! line per attempt: `ESCAPED: …` on success, `blocked: …` otherwise.
//! Resource bombs (fork, memory, disk) must stay inside their limits. The attacks and the
//! bombs run under both runtimes ([`both_runtimes!`]); where gVisor answers differently by
//! design the test says so.

use cleanroom_e2e::*;

const PRELUDE: &str = include_str!("attacks/prelude.py");

/// Run an attack program inside a fresh sandbox; return its stdout.
fn attack(s: &Server, rt: Runtime, program: &str, args: &[&str]) -> String {
    let code = format!("{PRELUDE}\n{program}");
    let mut argv = vec![
        "exec",
        "-n",
        "--runtime",
        rt.name(),
        "--",
        "python3",
        "-c",
        &code,
    ];
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

/// [`assert_blocked`] under linux; under gvisor the attempts named in `by_design` (each
/// `ESCAPED: <name>…` line) are answered by gVisor's own kernel instead of being refused,
/// which is its boundary working (the caller says why), and every other one is blocked.
fn assert_blocked_on(rt: Runtime, out: &str, expected_lines: usize, by_design: &[&str]) {
    if rt == Runtime::Linux {
        return assert_blocked(out, expected_lines);
    }
    let mut attempts = 0;
    for line in out.lines() {
        if let Some(what) = line.strip_prefix("ESCAPED: ") {
            assert!(
                by_design.iter().any(|d| what.starts_with(d)),
                "attack succeeded under gvisor: {line}\n{out}"
            );
            attempts += 1;
        } else if line.starts_with("blocked: ") {
            attempts += 1;
        }
    }
    assert_eq!(attempts, expected_lines, "not every attack ran:\n{out}");
}

both_runtimes!(
    cannot_read_server_state_socket_or_host_secrets,
    cannot_read_server_state_socket_or_host_secrets_on
);
fn cannot_read_server_state_socket_or_host_secrets_on(rt: Runtime) {
    let s = Server::start();
    let state = s.state_dir().display().to_string();
    let sock = s.socket().display().to_string();
    // gvisor: pid 1 is the idle init, a process like the sandbox's own (uid 0, no
    // capabilities) whose environment is `PATH` alone; there is nothing to protect in it.
    assert_blocked_on(
        rt,
        &attack(&s, rt, include_str!("attacks/secrets.py"), &[&state, &sock]),
        7,
        &["read /proc/1/environ"],
    );
}

both_runtimes!(
    cannot_write_outside_writable_paths,
    cannot_write_outside_writable_paths_on
);
fn cannot_write_outside_writable_paths_on(rt: Runtime) {
    let s = Server::start();
    // gvisor: /proc/self/oom_score_adj is the sentry's own bookkeeping; the host's OOM
    // killer sees only the sentry (one process) and its score is not the sandbox's.
    let out = attack(&s, rt, include_str!("attacks/write.py"), &[]);
    assert_blocked_on(rt, &out, 8, &["write /proc/self/oom_score_adj"]);
}

both_runtimes!(
    cannot_mount_unshare_setns_or_pivot_root,
    cannot_mount_unshare_setns_or_pivot_root_on
);
fn cannot_mount_unshare_setns_or_pivot_root_on(rt: Runtime) {
    let s = Server::start();
    // gvisor: namespaces and chroot are the sentry's own objects (it lets a process make a
    // user namespace and, inside it, the others); no host namespace or mount is touched.
    // Mounting over the sandbox's own tree and unmounting /proc stay refused.
    let out = attack(&s, rt, include_str!("attacks/mount.py"), &[]);
    assert_blocked_on(
        rt,
        &out,
        10,
        &["unshare(", "setns", "chroot", "clone(CLONE_NEWUSER)"],
    );
}

both_runtimes!(
    cannot_use_ptrace_bpf_perf_keyrings_modules_or_io_uring_natively_or_through_x32,
    ptrace_bpf_perf_on
);
fn ptrace_bpf_perf_on(rt: Runtime) {
    let s = Server::start();
    // gvisor: these calls reach the sentry, never the host kernel; the sentry implements
    // ptrace and process_vm_readv among the sandbox's own processes, answers the rest with
    // its own errors (EACCES, ENODEV, EOPNOTSUPP, EINVAL) and has no x32 ABI at all
    // (ENOSYS: nothing to filter). bpf, keyctl, modules, io_uring, userfaultfd and kexec
    // stay refused.
    let out = attack(&s, rt, include_str!("attacks/syscalls.py"), &[]);
    assert_blocked_on(
        rt,
        &out,
        19,
        &[
            "ptrace(TRACEME)",
            "process_vm_readv",
            "perf_event_open",
            "add_key",
            "open_by_handle_at",
            "personality(READ_IMPLIES_EXEC)",
            "x32 ",
        ],
    );
}

both_runtimes!(
    cannot_reach_devices_host_processes_or_change_host_state,
    cannot_reach_devices_host_processes_or_change_host_state_on
);
fn cannot_reach_devices_host_processes_or_change_host_state_on(rt: Runtime) {
    let s = Server::start();
    let host_name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let server_pid = s.child.as_ref().unwrap().id().to_string();
    assert_blocked(
        &attack(&s, rt, include_str!("attacks/devices.py"), &[&server_pid]),
        11,
    );
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap(),
        host_name
    );
}

both_runtimes!(
    cannot_escape_via_proc_self_exe_or_inherited_fds,
    cannot_escape_via_proc_self_exe_or_inherited_fds_on
);
fn cannot_escape_via_proc_self_exe_or_inherited_fds_on(rt: Runtime) {
    let s = Server::start();
    // gvisor: no_new_privs is set (the spec asks for it; `prctl(PR_GET_NO_NEW_PRIVS)` says
    // 1 inside) but the sentry's /proc/self/status has no `NoNewPrivs` line to show it.
    let out = attack(&s, rt, include_str!("attacks/selfexe.py"), &[]);
    assert_blocked_on(rt, &out, 8, &["no_new_privs set"]);
}

both_runtimes!(
    setuid_binaries_grant_nothing,
    setuid_binaries_grant_nothing_on
);
fn setuid_binaries_grant_nothing_on(rt: Runtime) {
    let s = Server::start();
    // gvisor: processes already run as uid 0 of the sentry with every capability set empty
    // (bounding set included), so a setuid-root binary has nothing to grant; the image or
    // host-view root is mounted without `nosuid` inside the sentry and /proc/self/status
    // does not show no_new_privs (set, see above).
    let out = attack(&s, rt, include_str!("attacks/setuid.py"), &[]);
    assert_blocked_on(
        rt,
        &out,
        3,
        &["mount without nosuid: /", "no_new_privs for setuid exec"],
    );
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

both_runtimes!(
    fork_bomb_is_bounded_by_the_pids_limit,
    fork_bomb_is_bounded_on
);
/// The pids limit counts the sandbox's own processes and threads under both runtimes:
/// `fork` fails with EAGAIN at the limit and a shell fork bomb is contained, the host and
/// the server unharmed. (Under gvisor: `RLIMIT_NPROC` on every process of the sandbox,
/// see docs/runtimes.md; gVisor's own pids controller sees only some forks.)
fn fork_bomb_is_bounded_on(rt: Runtime) {
    let s = Server::start();
    let (_d, p) = policy("version: 1\nsandbox:\n  resources:\n    pids: 64\n");
    let counter = "import os, time\nn = 0\nwhile True:\n    try:\n        pid = os.fork()\n    except OSError as e:\n        print(n, e.errno)\n        break\n    if pid == 0:\n        time.sleep(30)\n        os._exit(0)\n    n += 1\n";
    let o = s.run(&rt.args(
        1,
        &["exec", "-n", "--policy", &p, "--", "python3", "-c", counter],
    ));
    let out = stdout(&o);
    let mut it = out.split_whitespace().map(|x| x.parse::<u64>().unwrap());
    let (forks, errno) = (it.next().unwrap(), it.next().unwrap());
    assert!(forks < 64, "forked {forks} processes past a 64-pid limit");
    assert_eq!(errno, libc::EAGAIN as u64);
    // A classic shell fork bomb: it either gives up on its own ("Cannot fork") or is ended
    // by the timeout; either way it is contained and fully reclaimed.
    let o = s.run(&rt.args(
        1,
        &[
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
        ],
    ));
    let err = stderr(&o);
    let tail = &err[err.len().saturating_sub(400)..];
    assert!(
        err.contains("Cannot fork") || err.contains("TIMED_OUT"),
        "bomb was not stopped: {tail}"
    );
    let id = stderr(&o).lines().next().unwrap().to_string();
    assert_no_leftovers(&s.state_dir(), &id);
    assert_eq!(stdout(&s.sh("echo host-fine")), "host-fine\n");
    if rt == Runtime::Gvisor {
        gvisor_escape_from_the_sentry_limit_is_bounded_by_the_host(&s, &p, counter);
    }
}

/// Under gvisor the EAGAIN above comes from `RLIMIT_NPROC`, which is not a boundary: a
/// process with capabilities in a user namespace of its own is exempt from it (and may
/// mount gVisor's cgroupfs there and move itself to its root cgroup, out of the pids
/// cgroup too). Then the host cgroup's limit holds: the fork bomb ends the
/// sandbox (the sentry cannot make a host task), the host and the server are unharmed.
fn gvisor_escape_from_the_sentry_limit_is_bounded_by_the_host(s: &Server, p: &str, bomb: &str) {
    let escape = format!(
        "mkdir /tmp/c && mount -t cgroup -o pids none /tmp/c && echo $$ > /tmp/c/cgroup.procs \
         && grep ':pids:' /proc/self/cgroup && exec python3 -c \"{bomb}\""
    );
    let o = s.run(&[
        "exec",
        "-n",
        "--runtime",
        "gvisor",
        "--policy",
        p,
        "--print-sandbox-id",
        "--timeout",
        "60",
        "--",
        "unshare",
        "-Urm",
        "sh",
        "-c",
        &escape,
    ]);
    let out = stdout(&o);
    // Out of the sandbox's own cgroup: the escape works, so the sentry's limit is not
    // what bounds it.
    let first = out.lines().next().unwrap_or_default();
    assert!(first.ends_with(":pids:/"), "{out}\n{}", stderr(&o));
    assert_ne!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    let id = stderr(&o).lines().next().unwrap_or_default().to_string();
    assert!(id.starts_with("sbx_"), "{}", stderr(&o));
    assert_no_leftovers(&s.state_dir(), &id);
    assert_eq!(stdout(&s.sh("echo host-fine")), "host-fine\n");
}

/// Linux only: under gvisor the sentry is one host process, so the memory limit's OOM
/// kill ends the whole sandbox by design (`gvisor::the_memory_limit_is_enforced_under_gvisor`).
#[test]
fn memory_bomb_is_oom_killed_inside_the_sandbox_only() {
    let rt = Runtime::Linux;
    let s = Server::start();
    let (_d, p) = policy("version: 1\nsandbox:\n  resources:\n    memory_mb: 64\n");
    let o = s.run(&rt.args(
        1,
        &[
            "exec",
            "-n",
            "--keep",
            "--policy",
            &p,
            "--",
            "python3",
            "-c",
            "x = bytearray(512 << 20); x[::4096] = b'x' * len(x[::4096]); print('survived')",
        ],
    ));
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

both_runtimes!(disk_fill_is_bounded, disk_fill_is_bounded_on);
fn disk_fill_is_bounded_on(rt: Runtime) {
    let s = Server::start();
    let (_d, p) = policy("version: 1\nsandbox:\n  resources:\n    disk_mb: 32\n");
    for dir in ["/tmp", "/workspace", "/root"] {
        let cmd = format!("dd if=/dev/zero of={dir}/fill bs=1M count=200 2>&1 | grep -o 'No space left on device'; du -m {dir}/fill | cut -f1");
        let o = s.run(&rt.args(1, &["exec", "-n", "--policy", &p, "--", "sh", "-c", &cmd]));
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
