//! Probes of the host a sandbox ran on: its processes, mounts, cgroups and directories
//! (what must be gone after a teardown), a sandbox's inspect JSON, and `eventually`, the
//! bounded wait every end-to-end check that races a server uses.

use crate::server::{stderr, Server};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Host processes whose command line or cgroup mentions `needle` (e.g. a sandbox id: every
/// process of a sandbox, its shim included, is charged to cgroups named after it).
/// The parent pid of `pid` (field 4 of `/proc/PID/stat`, after the command name), or
/// `None` once it is gone.
pub fn ppid_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

pub fn processes_mentioning(needle: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let mentions = ["cmdline", "cgroup"].iter().any(|f| {
            std::fs::read(format!("/proc/{pid}/{f}"))
                .is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle))
        });
        if mentions {
            found.push(pid);
        }
    }
    found
}

/// Lines of the host mount table mentioning `needle`.
pub fn mounts_mentioning(needle: &str) -> Vec<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(needle))
        .map(str::to_string)
        .collect()
}

/// What a server's named volumes may leave on the host (docs/volumes.md): mounts under
/// its state dir's `volumes/` and loop devices backed by a file there. Empty once the
/// server removed or unmounted them.
pub fn volume_leftovers(server_state: &Path) -> Vec<String> {
    let dir = server_state.join("volumes").display().to_string();
    let mut out = mounts_mentioning(&dir);
    for dev in std::fs::read_dir("/sys/block")
        .into_iter()
        .flatten()
        .flatten()
    {
        let backing = dev.path().join("loop/backing_file");
        if let Ok(f) = std::fs::read_to_string(&backing) {
            if f.trim().starts_with(&dir) {
                out.push(format!(
                    "{}: {}",
                    dev.file_name().to_string_lossy(),
                    f.trim()
                ));
            }
        }
    }
    out
}

/// `sandbox inspect --json ID` (which must succeed).
pub fn inspect(s: &Server, id: &str) -> serde_json::Value {
    let o = s.run(&["sandbox", "inspect", "--json", id]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("inspect json")
}

/// Wait (bounded) until the sandbox stopped; its inspect JSON.
pub fn stopped(s: &Server, id: &str) -> serde_json::Value {
    let mut last = serde_json::Value::Null;
    let ok = eventually(Duration::from_secs(60), || {
        last = inspect(s, id);
        last["status"] == "SANDBOX_STATUS_STOPPED"
    });
    assert!(ok, "sandbox did not stop: {last}");
    last
}

/// Wait until `f` is true or the limit passes.
pub fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if f() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// cgroup directories named after `needle` anywhere under /sys/fs/cgroup (bounded depth).
pub fn cgroups_named(needle: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, needle: &str, depth: u32, out: &mut Vec<PathBuf>) {
        if depth == 0 {
            return;
        }
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                if e.file_name().to_string_lossy() == needle {
                    out.push(p.clone());
                }
                walk(&p, needle, depth - 1, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(Path::new("/sys/fs/cgroup"), needle, 6, &mut out);
    out
}

/// Assert a sandbox left nothing on the host: no process, mount, cgroup (in every
/// hierarchy) or directory, and under gvisor no bundle and no runsc state.
/// `cleanroom exec` returns while its sandbox's teardown finishes in the server
/// (`TerminateSandbox{background}`), so each check allows that teardown some time.
pub fn assert_no_leftovers(server_state: &Path, sandbox_id: &str) {
    assert!(
        eventually(Duration::from_secs(10), || processes_mentioning(sandbox_id)
            .is_empty()),
        "processes of {sandbox_id} still alive: {:?}",
        processes_mentioning(sandbox_id)
    );
    assert!(
        eventually(Duration::from_secs(10), || mounts_mentioning(sandbox_id)
            .is_empty()),
        "mounts left: {:?}",
        mounts_mentioning(sandbox_id)
    );
    let dir = server_state.join("sandboxes").join(sandbox_id);
    assert!(
        eventually(Duration::from_secs(10), || !dir.exists()),
        "sandbox dir left behind: {}",
        dir.display()
    );
    // A root server keeps mountpoints under /run/cleanroom/<instance>/<sandbox>.
    for inst in std::fs::read_dir("/run/cleanroom")
        .into_iter()
        .flatten()
        .flatten()
    {
        let d = inst.path().join(sandbox_id);
        assert!(
            eventually(Duration::from_secs(10), || !d.exists()),
            "sandbox runtime dir left behind: {}",
            d.display()
        );
    }
    // After a crash, zombies wait for the host's init to reap them, and a cgroup cannot be
    // removed before that; the server keeps retrying, so allow it some time.
    assert!(
        eventually(Duration::from_secs(30), || cgroups_named(sandbox_id)
            .is_empty()),
        "cgroups left: {:?}",
        cgroups_named(sandbox_id)
    );
    // The gvisor runtime's: the sandbox's bundle directory and runsc's own state files
    // for its container (named after it) in the server's runsc root.
    let gvisor = server_state.join("gvisor");
    let bundle = gvisor.join("sandboxes").join(sandbox_id);
    assert!(
        eventually(Duration::from_secs(10), || !bundle.exists()),
        "gvisor bundle left behind: {}",
        bundle.display()
    );
    let runsc_state = || -> Vec<PathBuf> {
        std::fs::read_dir(gvisor.join("runsc"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains(sandbox_id))
            .map(|e| e.path())
            .collect()
    };
    assert!(
        eventually(Duration::from_secs(10), || runsc_state().is_empty()),
        "runsc state left behind: {:?}",
        runsc_state()
    );
}
