//! Host memory per idle sandbox (docs/memory.md): the writable directories are one private
//! filesystem per sandbox, and an idle sandbox's shim and pid 1 give back the page tables
//! of the code they ran during setup. Real server, real sandboxes.

use cleanroom_e2e::*;

/// /tmp, /root and /workspace are one filesystem of this sandbox alone: one disk cap for
/// the three, separate mounts (no hard link or rename between them), nothing of another
/// sandbox's files or usage visible, and the filesystem's own root never mounted inside.
#[test]
fn writable_dirs_share_one_private_filesystem_and_one_disk_cap() {
    let s = Server::start();
    let mk = || {
        let o = s.run(&["sandbox", "create", "--disk-mb", "16"]);
        let id = stdout(&o).trim().to_string();
        assert!(id.starts_with("sbx_"), "{}", stderr(&o));
        id
    };
    let (a, b) = (mk(), mk());
    let o = s.sh_in(
        &a,
        "dd if=/dev/zero of=/tmp/fill bs=1M count=12 2>/dev/null; echo tmp=$?; \
         dd if=/dev/zero of=/workspace/more bs=1M count=12 2>&1 | grep -o 'No space left on device'; \
         ln /tmp/fill /workspace/link 2>&1 | grep -o 'cross-device'; \
         ln /tmp/fill /root/link 2>&1 | grep -o 'cross-device'; \
         df -k /tmp /root /workspace | awk 'NR>1{print \"used=\" $3}'",
    );
    let out = stdout(&o);
    assert!(out.contains("tmp=0"), "{out}");
    // One cap for the three directories together (each had its own before).
    assert!(out.contains("No space left on device"), "{out}");
    assert_eq!(out.matches("cross-device").count(), 2, "{out}");
    let used: Vec<u64> = out
        .lines()
        .filter_map(|l| l.strip_prefix("used="))
        .map(|v| v.trim().parse().unwrap())
        .collect();
    assert_eq!(used.len(), 3, "{out}");
    assert!(
        used.iter().all(|u| *u == used[0] && *u >= 12 << 10),
        "{out}"
    );

    // The other sandbox: its own, empty filesystem (no file, no usage of the first).
    let o = s.sh_in(
        &b,
        "ls -A /tmp /root /workspace; df -k /tmp | awk 'NR>1{print \"used=\" $3}'",
    );
    let out = stdout(&o);
    assert!(!out.contains("fill") && !out.contains("more"), "{out}");
    let used: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("used="))
        .and_then(|v| v.trim().parse().ok())
        .expect("df");
    assert!(used < 1024, "another sandbox's usage is visible: {out}");

    // Mounted inside: exactly the three directories of that filesystem (mountinfo field 4
    // is the mount's root within its filesystem), never its root or the setup's mountpoint.
    let o = s.sh_in(
        &a,
        "dev=$(awk '$5==\"/tmp\"{print $3}' /proc/self/mountinfo); \
         awk -v d=\"$dev\" '$3==d{print $4, $5}' /proc/self/mountinfo",
    );
    let mut lines: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    lines.sort();
    assert_eq!(
        lines,
        ["/root /root", "/tmp /tmp", "/workspace /workspace"],
        "{}",
        stderr(&o)
    );
    // The setup's own files (host view: a directory of the read-only skeleton, no tmpfs of
    // their own any more) cannot be changed or added to.
    let o = s.sh_in(
        &a,
        "ls /run/cleanroom; for f in /run/cleanroom/x /run/cleanroom/resolv.conf; do \
         (echo evil > $f) 2>/dev/null && echo WROTE $f; done; \
         awk '$5==\"/run/cleanroom\"' /proc/self/mountinfo | wc -l",
    );
    let out = stdout(&o);
    assert!(!out.contains("WROTE"), "{out}");
    assert!(out.trim_end().ends_with('0'), "no mount of its own: {out}");
    // /dev and /dev/shm: two mounts of one small tmpfs, /dev/shm still nodev+noexec, the
    // devices still usable, nothing of the filesystem's root mounted. A root server's
    // sandbox gets its own device nodes on the same filesystem (devnodes.rs), each bound
    // from its `nodes` directory (never bound whole).
    let o = s.sh_in(
        &a,
        "dev=$(awk '$5==\"/dev\"{print $3}' /proc/self/mountinfo); \
         awk -v d=\"$dev\" '$3==d{print $4, $5}' /proc/self/mountinfo | grep -v -e /proc/ -e machine-id; \
         grep ' /dev/shm ' /proc/self/mountinfo | grep -c 'nodev,noexec'; \
         echo ok > /dev/shm/x && cat /dev/shm/x; head -c 4 /dev/zero | wc -c",
    );
    let out = stdout(&o);
    assert_eq!(
        out,
        "/dev /dev\n/dev_shm /dev/shm\n/nodes/null /dev/null\n/nodes/zero /dev/zero\n\
         /nodes/full /dev/full\n/nodes/random /dev/random\n/nodes/urandom /dev/urandom\n\
         /nodes/tty /dev/tty\n1\nok\n4\n",
        "{}",
        stderr(&o)
    );
    s.run(&["sandbox", "rm", &a, &b]);
}

/// Resident pages of the cleanroom binary's first mapping (its read-only data) in `pid`.
fn rodata_rss_kib(pid: i32) -> Option<u64> {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).ok()?;
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let exe = exe.to_string_lossy().to_string();
    let mut lines = smaps.lines();
    while let Some(l) = lines.next() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() >= 6 && f[1] == "r--p" && f[2] == "00000000" && f[5] == exe {
            return lines
                .find_map(|l| l.strip_prefix("Rss:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok());
        }
    }
    None
}

fn children(pid: i32) -> Vec<i32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|s| {
            s.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<i32>>()
        })
        .collect()
}

/// An idle sandbox's shim and pid 1 hold none of the read-only data pages the zygote they
/// were forked from has mapped (their page-table entries were given back), and the
/// sandbox still works afterwards (the pages fault back in).
#[test]
fn idle_shim_and_pid1_give_back_their_setup_mappings() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: reading other processes' smaps needs root");
        return;
    }
    let s = Server::start();
    let id = s.create();
    let server = s.child.as_ref().expect("server").id() as i32;
    let zygotes = children(server);
    let zygote = *zygotes
        .iter()
        .find(|z| !children(**z).is_empty())
        .expect("a zygote with a shim");
    let zygote_rss = rodata_rss_kib(zygote).expect("zygote rodata");
    assert!(zygote_rss > 0, "the zygote ran from its rodata");
    let shims = children(zygote);
    let mut checked = 0;
    for shim in &shims {
        for p in std::iter::once(*shim).chain(children(*shim)) {
            let rss = rodata_rss_kib(p).expect("rodata of a sandbox process");
            // Measured (release): without the trim the shim holds ~400 KiB and pid 1
            // ~600 KiB of it against the zygote's ~1,400; with it, 0 to a few pages.
            assert!(
                rss * 4 < zygote_rss,
                "process {p} still maps {rss} KiB of rodata (zygote: {zygote_rss} KiB)"
            );
            checked += 1;
        }
    }
    assert!(checked >= 2, "shim and pid 1 found: {checked}");
    let o = s.run(&["exec", "-n", "--in", &id, "--", "echo", "alive"]);
    assert_eq!(stdout(&o), "alive\n", "{}", stderr(&o));
    s.run(&["sandbox", "rm", &id]);
}
