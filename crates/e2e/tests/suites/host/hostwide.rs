//! What several servers on one host must never share or leave behind: host id ranges of
//! live sandboxes, and the runtime dirs and cgroups of a server that was SIGKILLed.

use cleanroom_e2e::*;
use std::time::Duration;

/// The host uid that a sandbox's root maps to (second field of its uid_map).
fn host_root_uid(s: &Server, id: &str) -> String {
    let o = s.sh_in(id, "cat /proc/self/uid_map");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    out.split_whitespace()
        .nth(1)
        .unwrap_or_else(|| panic!("no uid map: {out}"))
        .to_string()
}

#[test]
fn two_servers_never_give_live_sandboxes_the_same_host_ids() {
    let a = Server::start();
    let b = Server::start();
    let ids_a: Vec<String> = (0..2).map(|_| a.create()).collect();
    let ids_b: Vec<String> = (0..2).map(|_| b.create()).collect();
    let mut uids: Vec<String> = ids_a
        .iter()
        .map(|id| host_root_uid(&a, id))
        .chain(ids_b.iter().map(|id| host_root_uid(&b, id)))
        .collect();
    let n = uids.len();
    uids.sort();
    uids.dedup();
    assert_eq!(
        uids.len(),
        n,
        "two live sandboxes share a host id range: {uids:?}"
    );
}

fn runtime_dirs_of(sandbox_id: &str) -> Vec<std::path::PathBuf> {
    std::fs::read_dir("/run/cleanroom")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join(sandbox_id))
        .filter(|p| p.exists())
        .collect()
}

/// The live sandbox's instance runtime dir (`/run/cleanroom/<instance>`): exactly one.
fn instance_dir_of(sandbox_id: &str) -> std::path::PathBuf {
    let dirs = runtime_dirs_of(sandbox_id);
    assert_eq!(dirs.len(), 1, "one runtime dir for the live sandbox");
    dirs[0].parent().unwrap().to_path_buf()
}

/// The host mount table's line of the mount at exactly `path` (mountinfo field 5), if any.
fn mount_at(path: &std::path::Path) -> Option<String> {
    let want = path.to_string_lossy();
    mounts_mentioning(&want)
        .into_iter()
        .find(|l| l.split(' ').nth(4) == Some(want.as_ref()))
}

/// Whether anything is mounted at `path` in this (the host's) mount namespace.
fn mounted_at(path: &std::path::Path) -> bool {
    mount_at(path).is_some()
}

/// The per-sandbox mountpoints live on a tmpfs (the server's own where `/run` is on disk:
/// no inode churn on the host's disk per create), and a clean stop leaves no mount.
#[test]
fn a_root_servers_mountpoints_are_on_a_tmpfs_and_a_stop_leaves_no_mount() {
    let mut s = Server::start();
    let id = s.create();
    let instance_dir = instance_dir_of(&id);
    assert!(
        cleanroom_backend::linux::runtime_fs::is_tmpfs(&instance_dir).unwrap(),
        "{} is not on a tmpfs",
        instance_dir.display()
    );
    // Where the server mounted it (`/run` on disk), only with its own options.
    if let Some(line) = mount_at(&instance_dir) {
        let opts = line.split(' ').nth(5).unwrap_or("");
        for o in ["nosuid", "nodev", "noexec"] {
            assert!(opts.split(',').any(|x| x == o), "{o} missing: {line}");
        }
        assert!(line.contains("mode=711"), "{line}");
    }
    let o = s.sh_in(&id, "echo alive");
    assert_eq!(stdout(&o), "alive\n", "{}", stderr(&o));
    s.stop();
    assert!(
        !mounted_at(&instance_dir),
        "a mount was left at {}",
        instance_dir.display()
    );
    assert!(!instance_dir.exists(), "{} left", instance_dir.display());
}

/// A start that fails after the backend was made (here: the socket is another live
/// server's) leaves no runtime dir and no mount behind.
#[test]
fn a_failed_start_leaves_no_runtime_dir_or_mount() {
    let a = Server::start();
    let other = tempfile::tempdir().unwrap();
    let state = other.path().join("state");
    let instance = cleanroom_backend::linux::cgroup::instance_key(&state.join("sandboxes"));
    let instance_dir = std::path::Path::new("/run/cleanroom").join(&instance);
    let out = std::process::Command::new(BIN)
        .args(["serve", "--listen", &a.host(), "--state-dir"])
        .arg(&state)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run a second server");
    assert!(
        !out.status.success(),
        "a second server on a live socket started"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("already listening"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !mounted_at(&instance_dir),
        "a failed start left a mount at {}",
        instance_dir.display()
    );
    assert!(
        !instance_dir.exists(),
        "a failed start left {}",
        instance_dir.display()
    );
}

#[test]
fn the_next_server_sweeps_what_a_killed_server_left_even_with_another_state_dir() {
    let mut a = Server::start();
    let id = a.create();
    let instance_dir = instance_dir_of(&id);
    assert!(!cgroups_named(&id).is_empty(), "the sandbox has cgroups");
    a.kill9();
    // The sandbox dies with its server (parent-death signals)...
    assert!(
        eventually(Duration::from_secs(10), || processes_mentioning(&id)
            .is_empty()),
        "sandbox outlived its server"
    );
    // ...but its directories stay until some server sweeps them.
    let b = Server::start();
    assert!(
        eventually(Duration::from_secs(30), || !instance_dir.exists()),
        "runtime dir of the dead server left behind: {}\n{}",
        instance_dir.display(),
        b.log()
    );
    assert!(
        !mounted_at(&instance_dir),
        "the dead server's runtime tmpfs is still mounted at {}",
        instance_dir.display()
    );
    assert!(
        eventually(Duration::from_secs(30), || cgroups_named(&id).is_empty()),
        "cgroups of the dead server left behind: {:?}",
        cgroups_named(&id)
    );
    // The live server is untouched by its own sweep.
    let o = b.sh("echo alive");
    assert_eq!(stdout(&o), "alive\n", "{}", stderr(&o));
}

/// A sandbox cgroup still there when a server stops (its last processes exiting, the
/// background retry of its removal gone with the server) is a leftover: the instance
/// keeps its lock file and the next server, whatever its state dir, sweeps it.
#[test]
fn a_cgroup_left_at_a_clean_stop_is_swept_by_the_next_server() {
    let mut a = Server::start();
    let id = a.create();
    let instance_cgroups: Vec<std::path::PathBuf> = cgroups_named(&id)
        .iter()
        .filter_map(|p| p.parent().map(|p| p.to_path_buf()))
        .collect();
    assert!(!instance_cgroups.is_empty(), "the sandbox has cgroups");
    // Stands for a sandbox cgroup whose removal was still being retried at the stop.
    let stray: Vec<std::path::PathBuf> = instance_cgroups
        .iter()
        .map(|d| d.join("sbx_left_at_stop"))
        .collect();
    for d in &stray {
        std::fs::create_dir(d).expect("make a stray sandbox cgroup");
    }
    let lock = std::path::Path::new("/run/cleanroom").join(format!(
        "{}.lock",
        cleanroom_backend::linux::cgroup::instance_key(&a.state_dir().join("sandboxes"))
    ));
    a.stop();
    // (Any server starting meanwhile, of this test suite too, may already have swept it.)
    assert!(
        lock.exists() || stray.iter().all(|d| !d.exists()),
        "a stop with cgroups left released the instance, so nothing would sweep them"
    );
    let _b = Server::start();
    let swept = || {
        stray.iter().all(|d| !d.exists())
            && instance_cgroups.iter().all(|d| !d.exists())
            && !lock.exists()
    };
    assert!(
        eventually(Duration::from_secs(30), swept),
        "cgroups left at a stop were never swept: {stray:?} (lock file {})",
        lock.display()
    );
}

#[test]
fn a_live_servers_directories_are_never_swept() {
    let a = Server::start();
    let id = a.create();
    let dirs = runtime_dirs_of(&id);
    assert_eq!(dirs.len(), 1);
    // Another server starts (and sweeps what it may) while the first one is alive.
    let b = Server::start();
    let _ = b.create();
    assert!(dirs[0].exists(), "a live server's runtime dir was swept");
    assert!(
        !cgroups_named(&id).is_empty(),
        "a live server's cgroups were swept"
    );
    let o = a.sh_in(&id, "echo still-here");
    assert_eq!(stdout(&o), "still-here\n", "{}", stderr(&o));
}

/// The cgroup2 superblock options other than favordynmods (and the VFS's rw/ro).
fn other_cgroup2_options() -> Vec<String> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    let line = text
        .lines()
        .find(|l| {
            l.split_once(" - ")
                .is_some_and(|(_, r)| r.starts_with("cgroup2 "))
        })
        .expect("a cgroup2 mount");
    let opts = line.split_once(" - ").map(|(_, r)| r).unwrap_or_default();
    let mut v: Vec<String> = opts
        .split(' ')
        .nth(2)
        .unwrap_or_default()
        .split(',')
        .filter(|o| !matches!(*o, "rw" | "ro" | "favordynmods" | ""))
        .map(String::from)
        .collect();
    v.sort();
    v
}

/// A root server turns cgroup2 `favordynmods` on (sandboxes then join their cgroups
/// without waiting for an RCU grace period: docs/performance.md) and changes no other
/// option of the mount; `--keep-cgroup-options` leaves the host alone. The flag is cleared
/// first so the test fails without the tuning (another test's server may turn it back on
/// meanwhile: that is the same code).
#[test]
fn a_root_server_turns_on_cgroup2_favordynmods_and_keeps_the_other_options() {
    use cleanroom_backend::linux::hosttune;
    if hosttune::favors_dynamic_cgroups().is_none() {
        eprintln!("no cgroup2 mount on this host: nothing to tune");
        return;
    }
    let before = other_cgroup2_options();
    hosttune::set_favor_dynmods(false).expect("clear favordynmods");
    // (Not asserted off here: another test's server may start and set it at any moment.)
    assert_eq!(
        other_cgroup2_options(),
        before,
        "clearing changed other options"
    );

    let mut kept = Server::start_with(&["--keep-cgroup-options"]);
    kept.create();
    kept.stop();
    assert!(
        !kept.log().contains("remounted with favordynmods"),
        "--keep-cgroup-options tuned the host: {}",
        kept.log()
    );

    let s = Server::start();
    assert_eq!(
        hosttune::favors_dynamic_cgroups(),
        Some(true),
        "server log: {}",
        s.log()
    );
    assert_eq!(
        other_cgroup2_options(),
        before,
        "the tuning changed other options"
    );
    let id = s.create();
    let o = s.sh_in(&id, "true");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// A sandbox's host ids are also locked the way `systemd-nspawn --private-users=pick`
/// leases its ranges (`/run/systemd/nspawn-uid/<64 Ki-aligned base>`, systemd's
/// `make_lock_file`: an exclusive open-file-description lock, `F_OFD_SETLK`), so nspawn
/// never picks a range a live sandbox uses. (A `flock` would not do: on Linux the two kinds
/// of lock never conflict.)
#[test]
fn a_sandboxs_host_ids_are_locked_against_systemd_nspawn() {
    if !std::path::Path::new("/run/systemd").is_dir() {
        eprintln!("skipped: no /run/systemd on this host (nspawn cannot run here)");
        return;
    }
    let s = Server::start();
    let id = s.create();
    let base: u32 = host_root_uid(&s, &id).parse().expect("host uid");
    let bases = [base & !0xFFFF, (base + 0xFFFF) & !0xFFFF];
    for b in bases {
        let path = format!("/run/systemd/nspawn-uid/{b}");
        assert!(
            !nspawn_would_lock(&path),
            "nspawn could lock {path} while sandbox {id} uses host ids {base}.."
        );
    }
    // One process holds each: the sandbox's shim (the parent of its pid 1), not the server
    // (its descriptors per sandbox stay three, docs/scale.md) and not pid 1.
    let server = s.child.as_ref().expect("server").id() as i32;
    let pids: Vec<i32> = std::fs::read_dir("/proc")
        .expect("proc")
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse().ok())
        .collect();
    let ppid = ppid_of;
    for b in bases {
        let path = std::path::PathBuf::from(format!("/run/systemd/nspawn-uid/{b}"));
        let holders: Vec<i32> = pids
            .iter()
            .copied()
            .filter(|p| {
                std::fs::read_dir(format!("/proc/{p}/fd"))
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|e| std::fs::read_link(e.path()).is_ok_and(|t| t == path))
            })
            .collect();
        // (Another server's lease may open a file for an instant and fail its lock.)
        assert!(
            !holders.contains(&server),
            "the server holds {}",
            path.display()
        );
        let shim = holders
            .iter()
            .copied()
            .find(|h| pids.iter().any(|p| ppid(*p) == Some(*h)))
            .unwrap_or_else(|| panic!("no shim holds {}: {holders:?}", path.display()));
        let pid1: Vec<i32> = pids
            .iter()
            .copied()
            .filter(|p| ppid(*p) == Some(shim))
            .collect();
        assert!(
            pid1.iter().all(|p| !holders.contains(p)),
            "pid 1 of the sandbox holds {}",
            path.display()
        );
    }
}

/// What nspawn does to lease a base (systemd's `make_lock_file`, `src/basic/lock-util.c`):
/// open `O_CREAT|O_RDWR|O_NOFOLLOW|O_CLOEXEC|O_NOCTTY`, then a non-blocking exclusive OFD
/// lock over the whole file. True if it would have got the lock (released again here).
fn nspawn_would_lock(path: &str) -> bool {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)
        .expect("open nspawn's lock file");
    let lock = libc::flock {
        l_type: libc::F_WRLCK as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: 0,
        l_len: 0,
        l_pid: 0,
    };
    // SAFETY: fcntl(2) on an open descriptor with a pointer to a live `flock`.
    unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &lock) == 0 }
}
