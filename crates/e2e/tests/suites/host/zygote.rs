//! The sandbox launcher ("zygote"): one process per server forks every sandbox's shim.
//! Its death or the server's ends every sandbox; nothing of its (or the server's) signal
//! state reaches a sandbox; the server survives its death and starts a new one.

use cleanroom_e2e::*;
use std::time::Duration;

const ZYGOTE_CMDLINE: &[u8] = b"cleanroom-init\0__sandbox-init\0";

/// `/proc/PID/status` field (e.g. "SigBlk") as a bit mask.
fn status_mask(pid: i32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} for {pid}"));
    u64::from_str_radix(line.trim(), 16).unwrap()
}

fn children_of(parent: i32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
        .filter(|p| ppid_of(*p) == Some(parent))
        .collect()
}

/// The server's zygotes (children running as `cleanroom-init __sandbox-init`).
fn zygotes_of(server: &Server) -> Vec<i32> {
    let pid = server.child.as_ref().unwrap().id() as i32;
    children_of(pid)
        .into_iter()
        .filter(|c| std::fs::read(format!("/proc/{c}/cmdline")).is_ok_and(|b| b == ZYGOTE_CMDLINE))
        .collect()
}

/// Host pids of the sandbox's shim (child of the zygote) and pid 1 (child of the shim).
fn shim_and_pid1(id: &str, zygote: i32) -> (i32, i32) {
    let procs = processes_mentioning(id);
    let shim = *procs
        .iter()
        .find(|p| ppid_of(**p) == Some(zygote))
        .unwrap_or_else(|| panic!("no shim of {id} under zygote {zygote}: {procs:?}"));
    let pid1 = *procs
        .iter()
        .find(|p| ppid_of(**p) == Some(shim))
        .unwrap_or_else(|| panic!("no pid 1 of {id} under shim {shim}: {procs:?}"));
    (shim, pid1)
}

const SIGBIT: fn(i32) -> u64 = |sig| 1u64 << (sig - 1);

#[test]
fn one_zygote_forks_every_shim_and_leaks_no_signal_state() {
    // Hostile variant: the server starts with a signal ignored and one blocked (inherited
    // across exec into the zygote). Neither may reach a sandbox. (nextest runs each test
    // in its own process, and the server inherits this thread's mask.)
    // SAFETY: signal(2)/sigprocmask with constants, before any server thread exists.
    unsafe {
        libc::signal(libc::SIGUSR2, libc::SIG_IGN);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGUSR1);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    let s = Server::start();
    let ids: Vec<String> = (0..3).map(|_| s.create()).collect();
    let zygotes = zygotes_of(&s);
    assert_eq!(zygotes.len(), 1, "exactly one zygote: {zygotes:?}");
    let z = zygotes[0];
    // The zygote did inherit the server's state (so the check below means something)...
    assert_ne!(status_mask(z, "SigIgn") & SIGBIT(libc::SIGUSR2), 0);
    assert_ne!(status_mask(z, "SigBlk") & SIGBIT(libc::SIGCHLD), 0);
    let pipe = SIGBIT(libc::SIGPIPE);
    for id in &ids {
        let (shim, pid1) = shim_and_pid1(id, z);
        // ...the shim sheds it: only SIGPIPE ignored (as any Rust program), and only the
        // SIGTERM it reads through its signalfd blocked (the server's "end this sandbox",
        // shimwait.rs; blocked after pid 1 was forked, so pid 1 does not inherit it).
        assert_eq!(
            status_mask(shim, "SigBlk"),
            SIGBIT(libc::SIGTERM),
            "shim {shim} of {id}"
        );
        assert_eq!(status_mask(shim, "SigIgn"), pipe, "shim {shim} of {id}");
        // Pid 1 blocks only the SIGCHLD it reads through its signalfd.
        assert_eq!(
            status_mask(pid1, "SigBlk"),
            SIGBIT(libc::SIGCHLD),
            "pid1 of {id}"
        );
        assert_eq!(status_mask(pid1, "SigIgn"), pipe, "pid1 of {id}");
        // Env and fds: none of the zygote's (an empty environment; stdio + control only).
        let env = std::fs::read(format!("/proc/{pid1}/environ")).unwrap();
        assert!(env.is_empty(), "pid 1 environment: {env:?}");
    }
    // A user process: nothing blocked, nothing ignored.
    let o = s.sh_in(&ids[0], "grep -E '^Sig(Blk|Ign)' /proc/self/status");
    assert_eq!(
        stdout(&o),
        "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n",
        "{}",
        stderr(&o)
    );
}

#[test]
fn killing_the_zygote_ends_its_sandboxes_and_the_server_starts_a_new_one() {
    let s = Server::start();
    let id = s.create();
    let zygotes = zygotes_of(&s);
    assert_eq!(zygotes.len(), 1, "{zygotes:?}");
    let (shim, pid1) = shim_and_pid1(&id, zygotes[0]);
    // SAFETY: kill(2) with integers; the pid is the zygote we just found (a test race
    // with pid reuse within these lines is not a concern).
    unsafe { libc::kill(zygotes[0], libc::SIGKILL) };
    assert!(
        eventually(Duration::from_secs(10), || processes_mentioning(&id)
            .is_empty()),
        "sandbox outlived its zygote: {:?}",
        processes_mentioning(&id)
    );
    for p in [shim, pid1] {
        assert!(
            eventually(Duration::from_secs(10), || ppid_of(p) != Some(zygotes[0])),
            "{p} still a child of the dead zygote"
        );
    }
    // The old sandbox's exec fails instead of hanging...
    let mut c = s.cli();
    c.args(["exec", "-n", "--in", &id, "--", "true"]);
    let o = output_with_timeout(c, Duration::from_secs(60));
    assert!(!o.status.success(), "exec in a dead sandbox succeeded");
    // ...and a new sandbox gets a new zygote.
    let o = s.sh("echo alive");
    assert_eq!(stdout(&o), "alive\n", "{}\n{}", stderr(&o), s.log());
    let now = zygotes_of(&s);
    assert_eq!(now.len(), 1, "{now:?}");
    assert_ne!(now[0], zygotes[0]);
}

#[test]
fn killing_the_server_leaves_no_zygote_shim_sandbox_or_mount() {
    let mut s = Server::start();
    let id = s.create();
    let z = zygotes_of(&s);
    assert_eq!(z.len(), 1, "{z:?}");
    let (shim, pid1) = shim_and_pid1(&id, z[0]);
    s.kill9();
    assert!(
        eventually(Duration::from_secs(10), || {
            [z[0], shim, pid1].iter().all(|p| ppid_of(*p).is_none())
                && processes_mentioning(&id).is_empty()
                && mounts_mentioning(&id).is_empty()
        }),
        "left behind: processes {:?}, mounts {:?}",
        processes_mentioning(&id),
        mounts_mentioning(&id)
    );
}

/// Start address of the zygote's executable mapping (its ASLR base).
fn exe_base(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .unwrap_or_default()
        .lines()
        .next()
        .and_then(|l| l.split('-').next())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn zygotes_rotate_and_a_retired_one_lives_exactly_as_long_as_its_sandboxes() {
    // Must match ROTATE_EVERY in crates/backend/src/linux/zygote.rs.
    const ROTATE_EVERY: usize = 128;
    let s = Server::start_with(&["--max-sandboxes", "0", "--max-sandboxes-per-principal", "0"]);
    let first: Vec<String> = (0..ROTATE_EVERY).map(|_| s.create()).collect();
    let old = zygotes_of(&s);
    assert_eq!(old.len(), 1, "{old:?}");
    let next = s.create();
    let both = zygotes_of(&s);
    assert_eq!(
        both.len(),
        2,
        "a fresh zygote after {ROTATE_EVERY} forks: {both:?}"
    );
    let new = *both.iter().find(|z| **z != old[0]).unwrap();
    // A fresh exec: its own address-space layout.
    assert_ne!(
        exe_base(new),
        exe_base(old[0]),
        "same layout for two zygotes"
    );
    shim_and_pid1(&next, new);
    shim_and_pid1(&first[0], old[0]);
    // The retired zygote stays while one of its sandboxes lives...
    let mut args = vec!["sandbox", "rm"];
    args.extend(first[1..].iter().map(String::as_str));
    let o = s.run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        zygotes_of(&s).contains(&old[0]),
        "retired zygote left early"
    );
    assert!(s.sh_in(&first[0], "true").status.success());
    // ...and goes with the last one, while the new one keeps serving.
    let o = s.run(&["sandbox", "rm", &first[0]]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        eventually(Duration::from_secs(10), || zygotes_of(&s) == vec![new]),
        "zygotes: {:?}",
        zygotes_of(&s)
    );
    assert!(s.sh_in(&next, "true").status.success());
}

/// An fd the server inherited without close-on-exec (from whoever started it) stays the
/// server's: the zygote (and so no sandbox) holds a copy. The zygote holds its socket, its
/// signalfd and the shared system views (mount fds), nothing else.
#[test]
fn fds_the_server_inherited_never_reach_the_zygote() {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    const INHERITED: i32 = 77;
    let mut s = Server::start();
    s.stop();
    let (_r, w) = nix::unistd::pipe().unwrap();
    let raw = w.as_raw_fd();
    s.spawn_with(|cmd| {
        // SAFETY: dup2 only (async-signal-safe); the copy has no close-on-exec flag.
        unsafe {
            cmd.pre_exec(move || {
                if libc::dup2(raw, INHERITED) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    });
    let server = s.child.as_ref().unwrap().id();
    assert!(
        std::fs::read_link(format!("/proc/{server}/fd/{INHERITED}")).is_ok(),
        "the test's fd did not reach the server"
    );
    s.create();
    let zygote = *zygotes_of(&s).first().expect("a zygote");
    let fds: Vec<String> = std::fs::read_dir(format!("/proc/{zygote}/fd"))
        .unwrap()
        .flatten()
        .map(|e| {
            let target = std::fs::read_link(e.path()).unwrap_or_default();
            format!(
                "{} -> {}",
                e.file_name().to_string_lossy(),
                target.display()
            )
        })
        .collect();
    assert!(
        !fds.iter().any(|f| f.starts_with(&format!("{INHERITED} "))),
        "{fds:?}"
    );
    for f in &fds {
        let target = f.split(" -> ").nth(1).unwrap_or_default();
        let ok = target == "/dev/null"
            || target.ends_with("server.log")
            || target.starts_with("socket:")
            || target == "anon_inode:[signalfd]"
            || target == "/";
        assert!(ok, "unexpected fd in the zygote: {f} (all: {fds:?})");
    }
}
