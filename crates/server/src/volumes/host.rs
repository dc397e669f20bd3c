//! What the server does on the host for a volume: make its sparse ext4 image, loop-mount
//! it once at a server-private mountpoint (nosuid, nodev), and unmount it. Mounts only:
//! the server never opens, lists or walks anything inside a volume's filesystem (its
//! contents are the sandboxes'). The image is made with `mkfs.ext4 -E root_owner=0:0`:
//! on disk the ids are the sandbox's own (0..65535), shifted per sandbox by the idmapped
//! mount the backend makes of the mountpoint, so files written by one sandbox belong to
//! the same user in the next.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one host command (mkfs, mount, umount) may take. They run under the volume
/// create lock and in blocking threads: a wedged loop device or a hung filesystem must
/// not hold either forever (rule 4). Past the deadline the command is killed and the
/// operation fails (the caller cleans up as for any other failure).
const DEADLINE: Duration = Duration::from_secs(60);

fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    run_within(cmd, what, DEADLINE)
}

fn run_within(cmd: &mut Command, what: &str, deadline: Duration) -> Result<(), String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{what}: {e}"))?;
    // Drain stderr on its own thread (bounded), so a chatty command cannot block on a
    // full pipe while we wait for it.
    let stderr = child.stderr.take().map(|mut pipe| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = (&mut pipe).take(16 << 10).read_to_end(&mut buf);
            let _ = std::io::copy(&mut pipe, &mut std::io::sink());
            buf
        })
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() >= deadline => {
                let _ = child.kill();
                // Reaped on a thread of its own: a mount stuck in the kernel (D state)
                // ignores SIGKILL, and waiting for it here would hold the caller (and the
                // volume create lock) forever.
                std::thread::spawn(move || {
                    let _ = child.wait();
                });
                return Err(format!("{what}: did not finish within {deadline:?}"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(format!("{what}: {e}")),
        }
    };
    let err = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
    if status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&err);
    let err: String = err.trim().chars().take(400).collect();
    Err(format!("{what}: {status} {err}"))
}

/// Create `image` as a sparse file of `size` bytes holding an empty ext4 filesystem (no
/// reserved blocks: the size is the volume's quota, all of it the sandbox's).
pub fn make_image(image: &Path, size: u64) -> Result<(), String> {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(image)
        .map_err(|e| format!("create {}: {e}", image.display()))?;
    f.set_len(size)
        .map_err(|e| format!("size {}: {e}", image.display()))?;
    drop(f);
    run(
        Command::new("mkfs.ext4")
            .args(["-q", "-F", "-m", "0", "-E", "root_owner=0:0,nodiscard"])
            .arg(image),
        "mkfs.ext4",
    )
}

/// Loop-mount `image` at `mnt` (the loop device is released when it is unmounted).
pub fn mount(image: &Path, mnt: &Path) -> Result<(), String> {
    run(
        Command::new("mount")
            .args(["-t", "ext4", "-o", "loop,nosuid,nodev,noatime"])
            .arg(image)
            .arg(mnt),
        "mount volume",
    )
}

/// Unmount `mnt` (lazily when busy: the loop device goes with the last reference).
pub fn unmount(mnt: &Path) -> Result<(), String> {
    if !is_mounted(mnt) {
        return Ok(());
    }
    if run(Command::new("umount").arg(mnt), "umount").is_ok() {
        return Ok(());
    }
    run(Command::new("umount").arg("-l").arg(mnt), "umount -l")
}

/// Is something mounted at `mnt` in the server's mount namespace?
pub fn is_mounted(mnt: &Path) -> bool {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let want = mnt.to_string_lossy();
    info.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .any(|p| unescape(p) == want)
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c));
        if b[i] == b'\\' && octal {
            let d = |k: usize| u32::from(b[i + k] - b'0');
            out.push((d(1) * 64 + d(2) * 8 + d(3)) as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_past_its_deadline_is_killed_and_fails() {
        let start = Instant::now();
        let r = run_within(
            Command::new("sleep").arg("30"),
            "sleep",
            Duration::from_millis(200),
        );
        let e = r.expect_err("a command past its deadline fails");
        assert!(e.contains("did not finish"), "{e}");
        assert!(start.elapsed() < Duration::from_secs(20), "it was killed");
    }

    #[test]
    fn a_failing_command_reports_its_stderr() {
        let e = run(
            Command::new("sh").args(["-c", "echo nope >&2; exit 3"]),
            "sh",
        )
        .expect_err("exit 3 fails");
        assert!(e.contains("nope"), "{e}");
        run(&mut Command::new("true"), "true").expect("true succeeds");
    }

    #[test]
    fn mountinfo_escapes_are_read() {
        assert_eq!(unescape(r"/a\040b"), "/a b");
        assert_eq!(unescape("/plain"), "/plain");
        assert_eq!(unescape(r"/x\"), r"/x\");
    }
}
