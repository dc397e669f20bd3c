//! A checkpoint runsc refuses to take leaves the sandbox as it was. gVisor cannot save a
//! TCP connection — even one its netstack still holds in TIME-WAIT for a minute after it
//! closed — and this runsc, asked to save without `--leave-running`, kills the sandbox after
//! such a refusal. So every save runs with `--leave-running` (a sandbox not to be left
//! running is frozen right after): the refusal is `checkpoint_refused` with runsc's reason
//! (not its goroutine dump), and the sandbox is READY with its files and processes. Real
//! server, real runsc; skipped with a message without it.

use cleanroom_e2e::*;

#[test]
fn a_refused_checkpoint_leaves_the_sandbox_running_and_says_why() {
    if !Runtime::Gvisor.available() {
        return;
    }
    let s = Server::start();
    let o = s.run(&["sandbox", "create", "--runtime", "gvisor"]);
    let id = stdout(&o).trim().to_string();
    assert!(id.starts_with("sbx_"), "{}", stderr(&o));
    let o = s.run(&[
        "exec",
        "--in",
        &id,
        "--",
        "sh",
        "-c",
        "echo kept > /tmp/state; curl -sS -m 5 http://denied.test/ || true",
    ]);
    assert!(
        stderr(&o).contains("host_not_allowed"),
        "a connection was made: {}",
        stderr(&o)
    );

    // Not left running, and refused: before the fix the sandbox was dead afterwards.
    let o = s.run(&["sandbox", "checkpoint", &id]);
    assert_code(&o, "checkpoint_refused");
    let err = stderr(&o);
    assert!(err.contains("connected state"), "runsc's reason: {err}");
    assert!(!err.contains("goroutine"), "no dump: {err}");

    let v = inspect(&s, &id);
    assert_eq!(v["status"], "SANDBOX_STATUS_READY", "{v}");
    let o = s.run(&["exec", "--in", &id, "--", "cat", "/tmp/state"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "the sandbox runs on: {}",
        stderr(&o)
    );
    assert_eq!(stdout(&o), "kept\n");
    let o = s.run(&["checkpoint", "ls", "-o", "json"]);
    assert!(
        !stdout(&o).contains("ckpt_"),
        "nothing half-stored: {}",
        stdout(&o)
    );

    assert_eq!(s.run(&["sandbox", "rm", &id]).status.code(), Some(0));
    assert_no_leftovers(&s.state_dir(), &id);
}

/// A checkpoint not left running whose image cannot be stored after runsc saved it (here:
/// something that is not a regular file appears in the image directory while runsc
/// writes, so describing the image fails) is no checkpoint, and the sandbox — which runsc
/// froze right after the save — is resumed: READY means running. Before the fix it stayed
/// frozen under runsc while the server showed READY, and every execution hung.
#[test]
fn a_checkpoint_that_cannot_be_stored_leaves_the_sandbox_running() {
    if !Runtime::Gvisor.available() {
        return;
    }
    let s = Server::start();
    let o = s.run(&[
        "sandbox",
        "create",
        "--runtime",
        "gvisor",
        "--memory-mb",
        "512",
    ]);
    let id = stdout(&o).trim().to_string();
    assert!(id.starts_with("sbx_"), "{}", stderr(&o));
    // A counter and 64 MiB of memory, so runsc's save takes long enough to plant into.
    let o = s.sh_in(
        &id,
        "cat > /tmp/w.py <<'EOF'\n\
         import os, time\n\
         buf = bytearray(os.urandom(1 << 20)) * 64\n\
         i = 0\n\
         while True:\n\
         \x20   i += 1\n\
         \x20   open('/tmp/count.new', 'w').write(str(i))\n\
         \x20   os.rename('/tmp/count.new', '/tmp/count')\n\
         \x20   time.sleep(0.02)\n\
         EOF\n\
         /run/cleanroom-init __gvisor-spawn python3 /tmp/w.py\n\
         for _ in $(seq 600); do [ -s /tmp/count ] && exit 0; sleep 0.1; done; exit 1",
    );
    assert!(o.status.success(), "workload: {}", stderr(&o));

    // The store's failure: a link appears in the image directory while runsc writes.
    let dir = s.state_dir().join("checkpoints");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let planter = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                    // Once runsc writes (its destination must be empty when it starts).
                    let image = e.path().join("image");
                    let writing = std::fs::read_dir(&image).is_ok_and(|mut d| d.next().is_some());
                    if e.file_name().to_string_lossy().starts_with(".tmp-")
                        && writing
                        && std::os::unix::fs::symlink("/etc/passwd", image.join("planted")).is_ok()
                    {
                        return true;
                    }
                }
                std::thread::sleep(std::time::Duration::from_micros(500));
            }
            false
        })
    };
    let o = s.run(&["sandbox", "checkpoint", &id]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(planter.join().unwrap(), "nothing planted: {}", stderr(&o));
    assert_code(&o, "internal");

    let v = inspect(&s, &id);
    assert_eq!(v["status"], "SANDBOX_STATUS_READY", "{v}");
    let read = |what: &str| {
        let mut c = s.cli();
        c.args(["exec", "-n", "--in", &id, "--", "cat", "/tmp/count"]);
        let o = output_with_timeout(c, std::time::Duration::from_secs(20));
        assert_eq!(o.status.code(), Some(0), "{what}: {}", stderr(&o));
        stdout(&o).trim().parse::<u64>().expect("a count")
    };
    let first = read("the sandbox is not frozen");
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(read("still running") > first, "the counter moves on");
    let o = s.run(&["checkpoint", "ls", "-o", "json"]);
    assert!(
        !stdout(&o).contains("ckpt_"),
        "nothing stored: {}",
        stdout(&o)
    );

    assert_eq!(s.run(&["sandbox", "rm", &id]).status.code(), Some(0));
    assert_no_leftovers(&s.state_dir(), &id);
}
