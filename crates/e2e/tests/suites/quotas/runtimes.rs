//! Limits that must hold the same under both runtimes (each test runs once per runtime,
//! [`both_runtimes!`]): the disk limit bounds `/tmp`, `/root` and `/workspace` together,
//! and a timed-out execution's whole process group goes, not only its first process.

use cleanroom_e2e::*;
use std::time::Duration;

/// 16 MiB for the three writable directories together: 12 MiB in /tmp leaves no room for
/// 12 MiB more in /workspace or /root; each is its own mount (no hard link across); `df`
/// shows one filesystem of the cap's size. (Under gvisor each directory was a tmpfs of
/// the whole limit: 48 MiB in all.)
fn disk_limit_is_one_cap(rt: Runtime) {
    let s = Server::start();
    let id = s.create_on(rt, &["--disk-mb", "16"]);
    let o = s.sh_in(
        &id,
        "dd if=/dev/zero of=/tmp/fill bs=1M count=12 2>/dev/null; echo tmp=$?; \
         for d in /workspace /root; do \
           dd if=/dev/zero of=$d/more bs=1M count=12 2>&1 | grep -o 'No space left on device'; \
         done; \
         ln /tmp/fill /workspace/link 2>&1 | grep -o 'cross-device'; \
         cat /tmp/fill /workspace/more /root/more 2>/dev/null | wc -c; \
         df -k /workspace | awk 'NR>1{print \"size=\" $2}'",
    );
    let out = stdout(&o);
    assert!(out.contains("tmp=0"), "{out}\n{}", stderr(&o));
    assert_eq!(out.matches("No space left on device").count(), 2, "{out}");
    assert!(out.contains("cross-device"), "{out}");
    // What the three files hold together (the line after the two refusals and the link's).
    let total: u64 = out
        .lines()
        .filter_map(|l| l.trim().parse::<u64>().ok())
        .next()
        .unwrap_or_else(|| panic!("wc: {out}"));
    assert!(
        total <= 16 << 20,
        "{total} bytes written past a 16 MiB cap: {out}"
    );
    let size: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("size="))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("df: {out}"));
    // Under gvisor the three are directories of the sentry's overlay (its filestore is on
    // the capped tmpfs, so the cap holds, as above), and `df` shows the overlay's own
    // unbounded size, not the cap.
    if rt == Runtime::Linux {
        assert_eq!(size, 16 << 10, "{out}");
    }
    // Freed space is usable again, in any of the three.
    let o = s.sh_in(
        &id,
        "rm -f /tmp/fill /workspace/more /root/more; \
         dd if=/dev/zero of=/root/again bs=1M count=12 2>/dev/null; echo root=$?",
    );
    assert!(stdout(&o).contains("root=0"), "{}", stdout(&o));
    s.run(&["sandbox", "rm", &id]);
    assert_no_leftovers(&s.state_dir(), &id);
}
both_runtimes!(
    the_disk_limit_bounds_tmp_root_and_workspace_together,
    disk_limit_is_one_cap
);

/// `exec --timeout`: SIGTERM then SIGKILL go to the execution's process group (where the
/// linux runtime's pid 1 sends them), so a shell's background children go with it and the
/// command returns at the timeout, not when they finish.
fn timeout_kills_the_group(rt: Runtime) {
    let s = Server::start();
    let id = s.create_on(rt, &[]);
    let started = std::time::Instant::now();
    let o = s.run(&[
        "exec",
        "-n",
        "--in",
        &id,
        "--timeout",
        "2",
        "--",
        "sh",
        "-c",
        "trap '' TERM; sleep 300 & sleep 301 & wait",
    ]);
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the execution outlived its timeout: {:?}",
        started.elapsed()
    );
    // No sleeper is left in the sandbox.
    let probe = "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f 2>/dev/null; echo; done \
                 | grep -c '^sleep 30[01]' || true";
    assert!(
        eventually(Duration::from_secs(10), || stdout(&s.sh_in(&id, probe))
            .trim()
            == "0"),
        "the timed-out execution's children still run: {}",
        stdout(&s.sh_in(&id, probe))
    );
    s.run(&["sandbox", "rm", &id]);
}
both_runtimes!(
    a_timed_out_execution_loses_its_whole_process_group,
    timeout_kills_the_group
);
