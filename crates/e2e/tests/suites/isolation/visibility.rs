//! What a process inside a sandbox can see, and what is left after it is gone.

use cleanroom_e2e::*;

#[test]
fn sandbox_has_its_own_pid1_hostname_network_and_files() {
    let s = Server::start();
    // A host file outside the read-only view, and one in the host's /tmp.
    let marker = s.dir.join("host-secret.txt");
    std::fs::write(&marker, "secret").unwrap();
    let host_tmp = tempfile::NamedTempFile::new_in("/tmp").unwrap();
    let script = format!(
        "echo pid1=$(tr '\\0' ' ' < /proc/1/cmdline | cut -c1-300); \
         echo procs=$(ls /proc | grep -c '^[0-9]'); \
         echo host=$(hostname); \
         echo ifaces=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ,); \
         test -e {} && echo marker=visible || echo marker=hidden; \
         test -e {} && echo hosttmp=visible || echo hosttmp=hidden; \
         test -s /etc/shadow && echo shadow=readable || echo shadow=masked; \
         touch /usr/x 2>/dev/null && echo usr=writable || echo usr=readonly; \
         touch /workspace/x /tmp/x && echo scratch=writable",
        marker.display(),
        host_tmp.path().display()
    );
    let o = s.sh(&script);
    let out = stdout(&o);
    assert!(
        out.lines()
            .any(|l| l.starts_with("pid1=") && l.contains(" __sandbox-init")),
        "{out}"
    );
    // Nothing of the server's configuration (host paths) shows in pid 1's command line.
    let pid1 = out
        .lines()
        .find(|l| l.starts_with("pid1="))
        .unwrap_or_default();
    assert!(
        !pid1.contains(&*s.dir.to_string_lossy()) && !pid1.contains('{'),
        "{pid1}"
    );
    // Nor the host path of the binary, nor the sandbox id: a fixed name only.
    assert_eq!(
        pid1.trim_end(),
        "pid1=cleanroom-init __sandbox-init",
        "{out}"
    );
    // sh, its subshells, ls and grep plus pid 1: a handful, never the host's hundreds.
    let procs: usize = out
        .lines()
        .find_map(|l| l.strip_prefix("procs="))
        .unwrap()
        .parse()
        .unwrap();
    assert!(procs < 10, "{out}");
    assert!(out.contains("host=cleanroom\n"), "{out}");
    // Loopback plus the tun link to the egress gateway, nothing else.
    assert!(
        out.contains("ifaces=lo,cr0,\n") || out.contains("ifaces=cr0,lo,\n"),
        "{out}"
    );
    assert!(out.contains("marker=hidden\n"), "{out}");
    assert!(out.contains("hosttmp=hidden\n"), "{out}");
    assert!(out.contains("shadow=masked\n"), "{out}");
    assert!(out.contains("usr=readonly\n"), "{out}");
    assert!(out.contains("scratch=writable\n"), "{out}");
}

#[test]
fn user_processes_get_exactly_stdio_and_no_control_socket() {
    let s = Server::start();
    // Every fd a user process holds (`ls`'s own directory fd on /proc aside).
    let o = s.sh("exec ls -l /proc/self/fd/");
    let out = stdout(&o);
    let fds: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_once(" -> "))
        .filter(|(_, target)| !target.starts_with("/proc/"))
        .filter_map(|(left, _)| left.split_whitespace().last())
        .collect();
    assert_eq!(fds, ["0", "1", "2"], "{out}");
    // Neither pid 1's control socket nor anything the server had open.
    assert!(!out.contains("socket:"), "{out}");
    assert!(!out.contains(&*s.dir.to_string_lossy()), "{out}");
}

/// A command started without input (`-n`) reads the sandbox's own `/dev/null`, not a file
/// the server opened on the host: through `/proc/self/fd/0` a sandbox reaches the inode of
/// whatever it was given, and the host's `/dev/null` is everyone's (an inotify watch on it
/// saw the server open it for every other sandbox's command).
#[test]
fn a_command_without_input_reads_its_own_sandboxs_null_device() {
    let s = Server::start();
    let o = s.sh("stat -L -c %d:%i:%t:%T /proc/self/fd/0 /dev/null");
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}{}", stderr(&o));
    assert_eq!(
        lines[0], lines[1],
        "stdin is not the sandbox's /dev/null: {out}"
    );
    assert!(lines[0].ends_with(":1:3"), "not the null device: {out}");
}

#[test]
fn host_processes_are_invisible_and_unreachable() {
    let s = Server::start();
    // A host process with a recognizable command line.
    let mut sleeper = std::process::Command::new("sleep")
        .arg("4242.5")
        .spawn()
        .unwrap();
    let o = s.sh("for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done; kill -0 1 && echo init-visible");
    let out = stdout(&o);
    assert!(!out.contains("4242.5"), "host process visible: {out}");
    assert!(!out.contains("cleanroom serve"), "server visible: {out}");
    // The loopback is the only network: nothing outside answers.
    let o = s.sh("(exec 3<>/dev/tcp/127.0.0.1/1) 2>/dev/null; bash -c 'echo > /dev/tcp/10.0.0.1/80' 2>&1 | head -1; echo done");
    assert!(stdout(&o).contains("done"));
    sleeper.kill().unwrap();
    let _ = sleeper.wait();
}

#[test]
fn rm_leaves_nothing_behind() {
    let s = Server::start();
    let id = s.create();
    assert!(id.starts_with("sbx_"));
    // A background process that would outlive its execution if nothing cleaned up.
    let o = s.sh_in(&id, "setsid sleep 1000 >/dev/null 2>&1 & echo bg");
    assert_eq!(stdout(&o), "bg\n");
    assert!(
        !processes_mentioning(&id).is_empty(),
        "sandbox init should be running"
    );
    let runtime_dirs: Vec<_> = std::fs::read_dir("/run/cleanroom")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join(&id))
        .filter(|p| p.exists())
        .collect();
    assert_eq!(
        runtime_dirs.len(),
        1,
        "the live sandbox has one runtime dir"
    );
    let rm = s.run(&["sandbox", "rm", &id]);
    assert_eq!(rm.status.code(), Some(0), "{}", stderr(&rm));
    assert_no_leftovers(&s.state_dir(), &id);
    let i = s.run(&["sandbox", "inspect", &id]);
    assert!(stdout(&i).contains("STOPPED"), "{}", stdout(&i));
    // rm is idempotent; rm of an unknown id is a typed error.
    assert_eq!(s.run(&["sandbox", "rm", &id]).status.code(), Some(0));
    let bad = s.run(&["sandbox", "rm", "sbx_00000000000000000000000000000000"]);
    assert_eq!(bad.status.code(), Some(125));
    assert!(
        stderr(&bad).contains("[sandbox_not_found]"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn exec_tears_down_its_sandbox_unless_keep() {
    let s = Server::start();
    let o = s.run(&["exec", "-n", "--print-sandbox-id", "--", "true"]);
    let id = stderr(&o).lines().next().unwrap().to_string();
    assert_no_leftovers(&s.state_dir(), &id);
    let o = s.run(&["exec", "-n", "--keep", "--", "true"]);
    let id = stderr(&o).lines().next().unwrap().to_string();
    assert!(stdout(&s.run(&["sandbox", "inspect", &id])).contains("READY"));
    s.run(&["sandbox", "rm", &id]);
    assert_no_leftovers(&s.state_dir(), &id);
}

#[test]
fn graceful_server_stop_terminates_sandboxes_cleanly() {
    let mut s = Server::start();
    let id = s.create();
    let mut c = s.cli();
    c.args(["exec", "-n", "--in", &id, "--", "sleep", "1000"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut client = c.spawn().unwrap();
    assert!(eventually(std::time::Duration::from_secs(10), || stdout(
        &s.run(&["sandbox", "inspect", &id])
    )
    .contains("active_execution_id: exe_")));
    s.stop();
    let _ = client.wait();
    assert_no_leftovers(&s.state_dir(), &id);
    // The server's own runtime and cgroup directories go with it.
    let instance = cleanroom_backend::linux::cgroup::instance_key(&s.state_dir().join("sandboxes"));
    assert!(!std::path::Path::new("/run/cleanroom")
        .join(&instance)
        .exists());
    assert!(
        cgroups_named(&instance).is_empty(),
        "{:?}",
        cgroups_named(&instance)
    );
    s.spawn();
    let i = stdout(&s.run(&["sandbox", "inspect", &id]));
    assert!(i.contains("status:              STOPPED"), "{i}");
    let e = stdout(&s.run(&["execution", "inspect", "--sandbox-id", &id, "--last"]));
    assert!(e.contains("status:       CANCELED"), "{e}");
}

#[test]
fn sandbox_sees_none_of_the_hosts_identifiers() {
    let s = Server::start();
    let host_boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let host_machine = std::fs::read_to_string("/etc/machine-id").unwrap_or_default();
    // Block devices the host mounts (e.g. /dev/vda1): none may show in the sandbox.
    let host_devices: Vec<String> = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter_map(|l| {
            l.split(" - ")
                .nth(1)?
                .split_whitespace()
                .nth(1)
                .map(str::to_string)
        })
        .filter(|src| src.starts_with("/dev/") && src.len() > "/dev/".len())
        .collect();
    let o = s.sh("echo boot=$(cat /proc/sys/kernel/random/boot_id); \
         echo machine=$(cat /etc/machine-id 2>/dev/null); \
         echo cmdline=$(tr '\\0' ' ' < /proc/1/cmdline); \
         cat /proc/self/mountinfo");
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let boot = out.lines().find_map(|l| l.strip_prefix("boot=")).unwrap();
    assert_eq!(boot.len(), 36, "boot_id keeps its format: {out}");
    assert_ne!(boot, host_boot.trim(), "host boot_id visible");
    if !host_machine.trim().is_empty() {
        let machine = out
            .lines()
            .find_map(|l| l.strip_prefix("machine="))
            .unwrap();
        assert_eq!(machine.len(), 32, "machine-id keeps its format: {out}");
        assert_ne!(machine, host_machine.trim(), "host machine-id visible");
    }
    for dev in &host_devices {
        assert!(
            !out.contains(&format!(" {dev} ")),
            "host block device {dev} in mountinfo:\n{out}"
        );
    }
    assert!(!out.contains(BIN), "host binary path visible:\n{out}");
    assert!(
        !out.contains("/run/cleanroom/srv-"),
        "host runtime path visible:\n{out}"
    );
    // Two sandboxes get different identifiers too.
    let o2 = s.sh("cat /proc/sys/kernel/random/boot_id");
    assert_ne!(stdout(&o2).trim(), boot, "boot_id shared between sandboxes");
}

/// Whether sandbox `b` can take `path`'s lock (`flock -n`) while sandbox `a` holds it
/// (a holds it until told to let go, and is checked to still hold it after b's try).
fn lock_is_free_in_b_while_a_holds(s: &Server, a: &str, b: &str, path: &str) -> bool {
    let tag = path.replace('/', "-");
    let (held, release) = (format!("/tmp/held{tag}"), format!("/tmp/release{tag}"));
    let holder = std::thread::spawn({
        let mut c = s.cli();
        c.args(["exec", "-n", "--in", a, "--", "sh", "-c"]);
        c.arg(format!(
            "flock -x {path} -c 'echo locked > {held}; i=0; \
             while [ ! -e {release} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; \
             rm {held}'"
        ));
        move || c.output().unwrap()
    });
    let holding = || stdout(&s.sh_in(a, &format!("cat {held} 2>&1"))).contains("locked");
    assert!(
        eventually(std::time::Duration::from_secs(10), holding),
        "sandbox a never took its lock on {path}"
    );
    let o = s.sh_in(b, &format!("flock -n -x {path} -c true; echo rc=$?"));
    assert!(holding(), "a let go of {path} before b tried");
    s.sh_in(a, &format!("touch {release}"));
    holder.join().unwrap();
    stdout(&o).contains("rc=0")
}

/// Two sandboxes never share the inodes of the system files and devices they see: a lock
/// one holds on `/etc/hostname` or `/dev/null` does not block the other, and (where
/// python3 is there to ask) an inotify watch in one — on those files and on the stdin its
/// command was given — sees nothing of the other's commands, reads and writes. Shared inodes (a superblock two sandboxes share, e.g. one overlay, or a bind of
/// the host's file or device node) would let a sandbox watch which files another opens
/// and block its locks.
#[test]
fn sandboxes_share_no_inodes_of_system_files() {
    let s = Server::start();
    let (a, b) = (s.create(), s.create());
    for path in ["/etc/hostname", "/dev/null"] {
        assert!(
            lock_is_free_in_b_while_a_holds(&s, &a, &b, path),
            "a's lock on {path} blocks b"
        );
    }

    // The watcher reports "watching" once its watches are set and its own sandbox's noise
    // is drained, then whether anything arrived while b read and wrote.
    let watch = "command -v python3 >/dev/null || { echo no-python; exit 0; }; \
        exec 3<&0; python3 - <<'PY'\n\
import ctypes, os, select, time\n\
libc = ctypes.CDLL(None, use_errno=True)\n\
fd = libc.inotify_init1(os.O_NONBLOCK)\n\
assert libc.inotify_add_watch(fd, b'/etc/hostname', 0x1 | 0x20) >= 0\n\
assert libc.inotify_add_watch(fd, b'/dev/null', 0x1 | 0x2 | 0x20) >= 0\n\
assert libc.inotify_add_watch(fd, b'/proc/self/fd/3', 0x1 | 0x2 | 0x20) >= 0\n\
end = time.time() + 1\n\
while time.time() < end: select.select([fd], [], [], 0.1)[0] and os.read(fd, 65536)\n\
print('watching', flush=True)\n\
r, _, _ = select.select([fd], [], [], 6)\n\
print('events' if r else 'quiet', flush=True)\n\
PY";
    let mut watcher = s
        .cli()
        .args(["exec", "-n", "--in", &a, "--", "sh", "-c", watch])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Its lines through a channel, so a stuck exec fails the test instead of hanging it.
    let (tx, rx) = std::sync::mpsc::channel();
    let out = watcher.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(out)).map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let next = || {
        rx.recv_timeout(std::time::Duration::from_secs(60))
            .unwrap_or_default()
    };
    let first = next();
    if first != "no-python" {
        if first != "watching" {
            let mut err = String::new();
            let _ = std::io::Read::read_to_string(&mut watcher.stderr.take().unwrap(), &mut err);
            panic!("the watcher did not start: {first:?} {err}");
        }
        for _ in 0..3 {
            s.sh_in(&b, "cat /etc/hostname >/dev/null; echo x > /dev/null");
        }
        let out = next();
        assert_eq!(out, "quiet", "a sees b's reads or writes");
    }
    let _ = watcher.wait();
}

/// A device node that reaches a sandbox's `/dev` some other way than the binds the setup
/// made (here: host root puts one there, the most a future bug could do) does not open:
/// `/dev` is `nodev`, only the setup's own node binds are device mounts.
#[test]
fn a_device_node_placed_in_dev_does_not_open() {
    let s = Server::start();
    let id = s.create();
    let host_root = std::fs::metadata("/").unwrap();
    let pid1 = processes_mentioning(&id)
        .into_iter()
        .find(|p| {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(format!("/proc/{p}/root")).is_ok_and(|m| {
                (m.dev(), m.ino()) != (host_root.dev(), host_root.ino())
                    && std::path::Path::new(&format!("/proc/{p}/root/dev/shm")).is_dir()
            })
        })
        .expect("the sandbox's pid 1");
    let node = format!("/proc/{pid1}/root/dev/cleanroom-planted");
    nix::sys::stat::mknod(
        node.as_str(),
        nix::sys::stat::SFlag::S_IFCHR,
        nix::sys::stat::Mode::from_bits_truncate(0o666),
        nix::sys::stat::makedev(1, 3),
    )
    .expect("mknod in the sandbox's /dev");
    // Writable by anyone (mknod applied the umask), so only `nodev` can refuse it.
    std::fs::set_permissions(&node, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
    let o = s.sh_in(
        &id,
        "ls -l /dev/cleanroom-planted | cut -c1; echo x > /dev/cleanroom-planted && echo OPENED; \
         echo x > /dev/null && echo null-ok",
    );
    let out = stdout(&o);
    assert!(out.starts_with('c'), "{out} {}", stderr(&o));
    assert!(!out.contains("OPENED"), "a planted node opened: {out}");
    assert!(out.contains("null-ok"), "{out} {}", stderr(&o));
}
