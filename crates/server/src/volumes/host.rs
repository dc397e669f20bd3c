//! What the server does on the host for a volume: make its sparse ext4 image, loop-mount
//! it once at a server-private mountpoint (nosuid, nodev), and unmount it. Mounts only:
//! the server never opens, lists or walks anything inside a volume's filesystem (its
//! contents are the sandboxes'). The image is made with `mkfs.ext4 -E root_owner=0:0`:
//! on disk the ids are the sandbox's own (0..65535), shifted per sandbox by the idmapped
//! mount the backend makes of the mountpoint, so files written by one sandbox belong to
//! the same user in the next.

use std::path::Path;
use std::process::{Command, Stdio};

fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("{what}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let err: String = err.trim().chars().take(400).collect();
    Err(format!("{what}: {} {err}", out.status))
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
    #[test]
    fn mountinfo_escapes_are_read() {
        assert_eq!(super::unescape(r"/a\040b"), "/a b");
        assert_eq!(super::unescape("/plain"), "/plain");
        assert_eq!(super::unescape(r"/x\"), r"/x\");
    }
}
